"""SseTransport: one MCP session over Streamable HTTP, driven by ASGI requests.

``McpHttpServer`` and the ASGI app use it for every session; embedders who
route MCP themselves drive it directly:

>>> transport = SseTransport(session_id=my_session_id)  # doctest: +SKIP
>>> await server.connect(transport)  # doctest: +SKIP
>>> await transport.handle_post(scope, receive, send)  # a POST to the endpoint  # doctest: +SKIP
>>> await transport.handle_get(scope, receive, send)  # returns when the stream closes  # doctest: +SKIP

Routing of outbound messages: a message related to an in-flight request
goes on that request's POST stream (its response last, which ends it); an
unrelated one goes on the standalone GET stream, or waits in the backlog
until a GET attaches. Whoever embeds the transport does what the app does
around it: origin checks, session lookup, the initialize-only gate, limits.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Final, Protocol, TypeAlias, cast

from ...jsonrpc import (
    CONNECTION_CLOSED,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
    encode_message,
    parse_message,
)
from ..base import MessageSink, Transport
from .asgi import Message, Receive, Scope, Send
from .errors import HttpError, error_body
from .events import BufferedEvent, EventBuffer, EventBufferFactory, MemoryEventBuffer
from .limits import DEFAULT_LIMITS, HttpLimits
from .sse import POST_SSE_HEADERS, frame, parse_event_id
from .streams import KeepaliveTicker, SseStream

__all__ = ["ClientDisconnected", "SseTransport", "read_body", "read_json_rpc_post"]

logger = logging.getLogger("mcp_sse_server.http")

SESSION_HEADER: Final = b"mcp-session-id"

_ACCEPTED_START: Final = {
    "type": "http.response.start",
    "status": 202,
    "headers": [(b"content-length", b"0")],
}
_EMPTY_BODY: Final = {"type": "http.response.body", "body": b"", "more_body": False}


class ClientDisconnected(Exception):
    """The client went away before its request body arrived."""


def is_json_content_type(value: bytes | None) -> bool:
    """True for ``application/json``, with or without parameters."""
    if value is None:
        return False
    if value == b"application/json":
        return True
    return value.split(b";", 1)[0].strip().lower() == b"application/json"


def check_content_length(content_length: bytes, max_bytes: int) -> None:
    """Refuse a declared body size beyond ``max_bytes`` (413) before reading a byte of it."""
    try:
        declared = int(content_length)
    except ValueError:
        raise HttpError(400, "Bad request: invalid Content-Length header") from None
    if declared > max_bytes:
        raise HttpError(413, f"Payload too large: the body exceeds the limit of {max_bytes} bytes")


async def read_body(
    receive: Receive, max_bytes: int, content_length: bytes | None = None, first: Message | None = None
) -> bytes:
    """The request body, refusing (413) a declared or actual size beyond ``max_bytes``.

    ``first`` is a message already received, when the caller looked at it.
    """
    if content_length is not None:
        check_content_length(content_length, max_bytes)
    message = first if first is not None else await receive()
    if message["type"] != "http.request":
        raise ClientDisconnected
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > max_bytes:
            raise HttpError(413, f"Payload too large: the body exceeds the limit of {max_bytes} bytes")
        return body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise HttpError(413, f"Payload too large: the body exceeds the limit of {max_bytes} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def parse_body(body: bytes) -> JsonRpcMessage:
    """One JSON-RPC message from a POST body; HttpError 400 (-32700/-32600) otherwise."""
    try:
        return parse_message(body)
    except McpError as error:
        raise HttpError(400, error.message, error.code) from None


async def read_json_rpc_post(
    scope: Scope, receive: Receive, *, max_request_bytes: int = DEFAULT_LIMITS.max_request_bytes
) -> JsonRpcMessage:
    """Read and parse the JSON-RPC message of an MCP POST.

    Raises ``HttpError`` (415 for a non-JSON Content-Type, 413 beyond
    ``max_request_bytes``, 400 for a body that is not one JSON-RPC message)
    and ``ClientDisconnected``. Write an HttpError with ``await error.write(send)``.
    """
    content_type = content_length = None
    for name, value in scope["headers"]:
        if name == b"content-type":
            content_type = value
        elif name == b"content-length":
            content_length = value
    if not is_json_content_type(content_type):
        raise HttpError(415, "Unsupported media type: the body must be application/json")
    return parse_body(await read_body(receive, max_request_bytes, content_length))


def _default_buffer(backlog_limit: int, replay_buffer_size: int) -> EventBuffer:
    return MemoryEventBuffer(backlog_limit, replay_buffer_size)


class SseTransport(Transport):
    """The server end of one Streamable HTTP session.

    ``session_id`` goes on the response to initialize (as ``Mcp-Session-Id``);
    None serves without sessions. ``limits`` supplies ``max_request_bytes``,
    ``max_request_streams``, ``backlog_limit``, ``replay_buffer_size`` and
    ``keepalive_interval``. ``on_end`` runs once after the transport closes.
    """

    __slots__ = (
        "_closed",
        "_engine",
        "_event_factory",
        "_events",
        "_init_id",
        "_initialized",
        "_on_end",
        "_standalone",
        "_streams",
        "_ticker",
        "keepalive_watched",
        "limits",
        "on_close",
        "on_message",
        "session_id",
    )

    def __init__(
        self,
        session_id: str | None = None,
        *,
        limits: HttpLimits = DEFAULT_LIMITS,
        event_buffer_factory: EventBufferFactory | None = None,
        keepalive: KeepaliveTicker | None = None,
        on_end: Callable[[SseTransport], None] | None = None,
    ) -> None:
        if session_id is not None and not _is_visible_ascii(session_id):
            raise ValueError("session_id must be non-empty visible ASCII (0x21-0x7E)")
        self.on_message = None
        self.on_close = None
        self.session_id = session_id
        self.limits = limits
        self._event_factory = event_buffer_factory
        self._ticker = keepalive
        self.keepalive_watched = False  # the ticker looks after our POST streams
        self._on_end = on_end
        self._streams: dict[RequestId, _PostStream | _StandIn] | None = None
        self._standalone: SseStream | None = None
        self._events: EventBuffer | None = None
        self._closed = False
        self._initialized = False
        self._init_id: RequestId | None = None
        # The engine whose dispatch() serves requests inline; a reference, not a
        # bound method, because every idle session pays for what it keeps.
        self._engine: _Dispatcher | None = None

    # --- state -------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def initialized(self) -> bool:
        """True once a successful initialize response went out on this transport."""
        return self._initialized

    @property
    def inflight(self) -> int:
        """Requests whose POST stream is still open."""
        return len(self._streams) if self._streams else 0

    @property
    def has_standalone_stream(self) -> bool:
        return self._standalone is not None

    def _keepalive(self) -> KeepaliveTicker:
        ticker = self._ticker
        if ticker is None:
            ticker = self._ticker = KeepaliveTicker(self.limits.keepalive_interval)
        return ticker

    def live_streams(self) -> Collection[SseStream]:
        """The open POST streams (for the keep-alive ticker)."""
        streams = self._streams
        if not streams:
            return ()
        return [self._stream(request_id, entry) for request_id, entry in list(streams.items())]

    def attach(self, on_message: MessageSink, on_close: Callable[[], None]) -> None:
        super().attach(on_message, on_close)
        # When the engine is this package's Connection, requests are served by
        # awaiting its dispatch() in the HTTP request's task: the fast path.
        # Any other engine gets every message through on_message.
        engine = getattr(on_message, "__self__", None)
        self._engine = engine if inspect.iscoroutinefunction(getattr(engine, "dispatch", None)) else None

    # --- inbound -------------------------------------------------------------------

    async def handle_post(
        self, scope: Scope, receive: Receive, send: Send, message: JsonRpcMessage | None = None
    ) -> None:
        """Serve one POST: read the message (unless given), answer 202 or with an SSE stream.

        A request's stream stays open until its response is written or the
        client disconnects (which does not cancel the request).
        """
        if message is None:
            try:
                message = await read_json_rpc_post(scope, receive, max_request_bytes=self.limits.max_request_bytes)
            except HttpError as error:
                await error.write(send)
                return
            except ClientDisconnected:
                return
        if type(message) is JsonRpcRequest:
            await self.serve_request(message, receive, send)
            return
        if self._closed or self.on_message is None:
            await HttpError(404, "Session not found: it has ended; initialize a new one").write(send)
            return
        self.on_message(message)
        if type(message) is JsonRpcNotification and message.method == "notifications/cancelled":
            await self._end_cancelled(message.params)
        await send(_ACCEPTED_START)
        await send(_EMPTY_BODY)

    async def _end_cancelled(self, params: dict[str, Any] | None) -> None:
        # A cancelled request gets no response, so its stream would stay open forever.
        request_id = params.get("requestId") if params else None
        streams = self._streams
        if not streams or not isinstance(request_id, str | int) or request_id == self._init_id:
            return
        entry = streams.pop(request_id, None)
        if entry is not None:
            await self._stream(request_id, entry).end()

    async def serve_request(self, request: JsonRpcRequest, receive: Receive, send: Send) -> None:
        """Answer one parsed request with its SSE stream (``handle_post`` without the reading)."""
        if self._closed or self.on_message is None:
            await HttpError(404, "Session not found: it has ended; initialize a new one").write(send)
            return
        request_id = request.id
        streams = self._streams
        if streams is None:
            streams = self._streams = {}
        elif request_id in streams:
            await HttpError(
                409, f"Conflict: request id {request_id!r} is already in flight in this session", request_id=None
            ).write(send)
            return
        elif len(streams) >= self.limits.max_request_streams:  # (never for an empty table: the limit is >= 1)
            await HttpError(
                429,
                f"Too many requests: this session already has {len(streams)} requests in flight "
                f"(limit {self.limits.max_request_streams})",
                -32000,
                request_id=request_id,
            ).write(send)
            return
        engine = self._engine
        if engine is None or request.method == "initialize":
            await self._serve_streamed(request, receive, send, streams, engine)
            return
        # Served inline in this request's own task: no extra task, no hand-over. A
        # client disconnect does not cancel it (the reply is then dropped);
        # notifications/cancelled does, through the engine. The request's stream
        # starts as a stand-in ([send, receive]) that _stream() turns into an SSE
        # stream only if something else is written first; most replies need none.
        entry: _StandIn = [send, receive]
        streams[request_id] = entry
        if not self.keepalive_watched:
            self._keepalive().watch(self)
        try:
            reply = await engine.dispatch(request)
        except BaseException:
            self._forget(request_id, entry)
            raise
        if len(entry) == 2 and self._streams is streams and streams.get(request_id) is entry:
            # The usual case: the reply (or, cancelled, nothing) is the response's only content.
            del streams[request_id]
            if not streams:
                self._streams = None  # an idle session keeps no table
            data = b"" if reply is None else b"data: " + encode_message(reply) + b"\n\n"
            size = len(data)
            length = _CONTENT_LENGTHS.get(size)
            if length is None:
                length = _content_length(size)
            try:
                await send({"type": "http.response.start", "status": 200, "headers": [_SSE_TYPE, length]})
                await send({"type": "http.response.body", "body": data, "more_body": False})
            except Exception:  # the client is gone; like a dropped connection, not our error
                logger.debug("could not deliver the reply to %r", request_id, exc_info=True)
            return
        try:
            stream = self._stream(request_id, entry)
            if reply is None:
                await stream.end()  # cancelled: no response, per the specification
            elif streams.get(request_id) is stream and self._streams is streams:
                await self._reply(request_id, stream, reply)
        finally:
            self._forget(request_id, entry)

    def _forget(self, request_id: RequestId, entry: _StandIn) -> None:
        """A request served inline is over: its stream (if one was made) takes no more."""
        made = entry[2] if len(entry) == 3 else None
        if made is not None:
            made.done = True
            if made.watcher is not None:
                made.watcher.cancel()
        current = self._streams
        if current is not None:
            held = current.get(request_id)
            if held is not None and (held is entry or held is made):
                del current[request_id]
            if not current:
                self._streams = None  # an idle session keeps no table

    async def _serve_streamed(
        self,
        request: JsonRpcRequest,
        receive: Receive,
        send: Send,
        streams: dict[RequestId, _PostStream | _StandIn],
        engine: _Dispatcher | None,
    ) -> None:
        """serve_request for initialize (whose response carries the session id) and for
        engines that take requests through on_message: the stream exists from the start."""
        request_id = request.id
        headers = POST_SSE_HEADERS
        if request.method == "initialize":
            self._init_id = request_id
            if self.session_id is not None:
                headers = [*POST_SSE_HEADERS, (SESSION_HEADER, self.session_id.encode("ascii"))]
        # Only a request served inline needs the watcher's receive; the other path reads it itself.
        stream = _PostStream(send, headers, receive if engine is not None else None)
        streams[request_id] = stream
        if not self.keepalive_watched:
            self._keepalive().watch(self)
        try:
            if engine is not None:
                reply = await engine.dispatch(request)
                if reply is None:
                    await stream.end()  # cancelled: no response, per the specification
                elif streams.get(request_id) is stream and self._streams is streams:
                    await self._reply(request_id, stream, reply)
                return
            assert self.on_message is not None
            self.on_message(request)
            # Returns http.disconnect once the response is complete, or when the client leaves.
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            stream.done = True
            if stream.watcher is not None:
                stream.watcher.cancel()
            current = self._streams
            if current is not None:
                if current.get(request_id) is stream:
                    del current[request_id]
                if not current:
                    self._streams = None  # an idle session keeps no table

    def _stream(self, request_id: RequestId, entry: _PostStream | _StandIn) -> _PostStream:
        """The request's SSE stream, made from its stand-in on first use (and put in the
        table in its place, if the stand-in is still there)."""
        if type(entry) is not list:
            return cast(_PostStream, entry)
        if len(entry) == 3:
            return cast(_PostStream, entry[2])  # made already; it may have left the table since
        stream = _PostStream(entry[0], POST_SSE_HEADERS, entry[1])
        entry.append(stream)
        streams = self._streams
        if streams is not None and streams.get(request_id) is entry:
            streams[request_id] = stream
        return stream

    def _watch(self, request_id: RequestId, stream: _PostStream) -> None:
        """Notice the client leaving a request served in its own task (which never reads
        ``receive`` itself), so messages stop going to a dead stream."""
        if stream.watcher is None and stream.receive is not None:
            stream.watcher = asyncio.get_running_loop().create_task(self._watch_for_disconnect(request_id, stream))

    async def _watch_for_disconnect(self, request_id: RequestId, stream: _PostStream) -> None:
        assert stream.receive is not None
        while (await stream.receive())["type"] != "http.disconnect":
            pass
        streams = self._streams
        if streams is None or streams.get(request_id) is not stream:
            return  # answered (the reply completes the response) or closed
        # The client left mid-call: later messages go to the standalone stream, and
        # requests it can no longer answer fail now instead of at their timeout.
        del streams[request_id]
        stream.done = True
        if stream.outbound and self.on_message is not None:
            for outbound_id in stream.outbound:
                self.on_message(
                    JsonRpcError(outbound_id, CONNECTION_CLOSED, "The client disconnected before answering")
                )

    async def _reply(self, request_id: RequestId, stream: SseStream, reply: JsonRpcMessage) -> None:
        """Write a request's response, which ends its stream."""
        streams = self._streams
        if streams is not None and streams.get(request_id) is stream:
            del streams[request_id]
        if request_id == self._init_id:
            self._init_id = None
            if type(reply) is JsonRpcResponse:
                self._initialized = True
            elif not stream.started:
                stream.headers = POST_SSE_HEADERS  # a failed initialize opens no session
        await stream.write(b"data: " + encode_message(reply) + b"\n\n", final=True)

    async def handle_get(
        self, scope: Scope, receive: Receive, send: Send, last_event_id: bytes | str | None = None
    ) -> None:
        """Attach the standalone SSE stream; returns when it closes.

        A new GET supersedes the previous stream. With ``last_event_id`` (the
        ``Last-Event-ID`` header; read from ``scope`` when not given) the
        retained standalone events after it are replayed first, then the backlog.
        """
        if self._closed:
            await HttpError(404, "Session not found: it has ended; initialize a new one").write(send)
            return
        if last_event_id is None:
            for name, value in scope["headers"]:
                if name == b"last-event-id":
                    last_event_id = value
        stream = SseStream(send)
        frames: list[bytes] = []
        events = self._events
        if events is not None:
            after = parse_event_id(last_event_id)
            if after is not None:
                frames.extend(event.frame for event in events.replay_after(after))
            frames.extend(event.frame for event in events.take_pending())
        # Queue the replay before any await so messages sent meanwhile follow it.
        stream.pending = frames
        previous, self._standalone = self._standalone, stream
        if previous is not None:
            await previous.end()
        ticker = self._keepalive()
        ticker.add(stream)
        try:
            await stream.flush()
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            stream.done = True
            ticker.discard(stream)
            if self._standalone is stream:
                self._standalone = None

    async def handle_delete(self, scope: Scope, receive: Receive, send: Send) -> None:
        """End the session: close the transport and answer 204."""
        await self.close()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send(_EMPTY_BODY)

    # --- outbound ------------------------------------------------------------------

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            return
        kind = type(message)
        is_reply = kind is JsonRpcResponse or kind is JsonRpcError
        if related_request_id is not None and self._streams:
            entry = self._streams.get(related_request_id)
            if entry is not None:
                stream = self._stream(related_request_id, entry)
                if is_reply and message.id == related_request_id:  # type: ignore[union-attr]
                    await self._reply(related_request_id, stream, message)
                    return
                if kind is JsonRpcRequest and type(stream) is _PostStream:
                    # The handler now waits on the client: make sure a dead client fails it.
                    if stream.outbound is None:
                        stream.outbound = []
                    stream.outbound.append(cast(JsonRpcRequest, message).id)
                    self._watch(related_request_id, stream)
                await stream.write(b"data: " + encode_message(message) + b"\n\n")
                return
        if is_reply:
            # Its POST stream is gone (the client disconnected): no stream may carry it.
            logger.debug("dropping the reply to %r: its stream is closed", getattr(message, "id", None))
            return
        await self._send_standalone(
            encode_message(message),
            message.id if kind is JsonRpcRequest else None,  # type: ignore[union-attr]
        )

    async def _send_standalone(self, data: bytes, request_id: RequestId | None) -> None:
        events = self._events
        if events is None:
            factory = self._event_factory or _default_buffer
            events = self._events = factory(self.limits.backlog_limit, self.limits.replay_buffer_size)
        event_id = events.next_id()
        event = BufferedEvent(event_id, frame(data, event_id), request_id)
        stream = self._standalone
        if stream is not None and not stream.done:
            events.record(event)
            await stream.write(event.frame)
            return
        dropped = events.add_pending(event)
        if dropped is not None and dropped.request_id is not None and self.on_message is not None:
            # Nobody will ever answer it: fail the caller now rather than at its timeout.
            self.on_message(
                JsonRpcError(
                    dropped.request_id,
                    CONNECTION_CLOSED,
                    "The request was dropped: the client did not open its stream before the backlog filled up",
                )
            )

    # --- closing -------------------------------------------------------------------

    async def close(self) -> None:
        """End every stream and the session; running handlers are cancelled by the engine."""
        if self._closed:
            return
        self._closed = True
        streams, self._streams = self._streams, None
        standalone, self._standalone = self._standalone, None
        if self._events is not None:
            self._events.clear()
        if self.on_close is not None:
            self.on_close()
        if self.keepalive_watched and self._ticker is not None:
            self._ticker.unwatch(self)
        if streams:
            for request_id, entry in streams.items():
                body = error_body(CONNECTION_CLOSED, "The session was closed before the request completed", request_id)
                await self._stream(request_id, entry).write(b"data: " + body + b"\n\n", final=True)
        if standalone is not None:
            await standalone.end()
        if self._on_end is not None:
            self._on_end(self)


# A request's stream before anything is written to it: [send, receive], and the
# _PostStream appended once _stream() makes it.
_StandIn: TypeAlias = list[Any]


class _Dispatcher(Protocol):
    def dispatch(self, request: JsonRpcRequest) -> Awaitable[JsonRpcMessage | None]: ...


class _PostStream(SseStream):
    """A POST's reply stream, with what is needed to notice its client leaving."""

    __slots__ = ("outbound", "receive", "watcher")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], receive: Receive | None) -> None:
        super().__init__(send, headers)
        self.receive = receive
        self.watcher: asyncio.Task[None] | None = None
        self.outbound: list[RequestId] | None = None  # server-to-client requests sent on it


# The headers of a single-reply POST stream: its content type, and its length
# from a small cache of immutable pairs (replies of one server vary little in size).
_SSE_TYPE: Final = POST_SSE_HEADERS[0]
_CONTENT_LENGTHS: dict[int, tuple[bytes, bytes]] = {}


def _content_length(size: int) -> tuple[bytes, bytes]:
    header = (b"content-length", b"%d" % size)
    if size < 65536:
        if len(_CONTENT_LENGTHS) >= 1024:
            _CONTENT_LENGTHS.clear()
        _CONTENT_LENGTHS[size] = header
    return header


def _is_visible_ascii(value: str) -> bool:
    return bool(value) and value.isascii() and all("\x21" <= c <= "\x7e" for c in value)
