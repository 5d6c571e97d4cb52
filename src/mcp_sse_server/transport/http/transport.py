"""SseTransport: one MCP session over Streamable HTTP, driven by ASGI requests.

``McpHttpServer`` and the ASGI app use it for every session; embedders who
route MCP themselves drive it directly:

>>> transport = SseTransport(session_id=my_session_id)  # doctest: +SKIP
>>> await server.connect(transport)  # doctest: +SKIP
>>> await transport.handle_post(scope, receive, send)  # a POST to the endpoint  # doctest: +SKIP
>>> await transport.handle_get(scope, receive, send)  # returns when the stream closes  # doctest: +SKIP

Routing of outbound messages: a message related to an in-flight request
goes on that request's POST stream (its response last, which ends it); an
unrelated one goes on the standalone GET stream, or waits in the session's
backlog (``EventLog``) until a GET attaches. Whoever embeds the transport does
what the app does around it: origin checks, session lookup, the
initialize-only gate, limits.

Every request is served inline (``Dispatcher.dispatch``) in the task of the
POST that carried it. Its stream is made only when something other than the
reply goes on it first; the usual reply goes out as one response with a
Content-Length.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any, Final

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
from ...stores.base import STANDALONE_STREAM, EventLog
from ...stores.memory import MemoryEventLog
from ..base import Transport
from .asgi import Message, Receive, Scope, Send
from .errors import HttpError, error_body
from .limits import DEFAULT_LIMITS, HttpLimits
from .sse import POST_SSE_HEADERS, frame, parse_event_id
from .streams import KeepaliveTicker, SseStream, send_whole

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


_SESSION_ENDED: Final = "Session not found: it has ended; initialize a new one"


class SseTransport(Transport):
    """The server end of one Streamable HTTP session.

    ``session_id`` goes on the response to initialize (as ``Mcp-Session-Id``);
    None serves without sessions. ``limits`` supplies ``max_request_streams``,
    ``backlog_limit``, ``replay_buffer_size`` and ``keepalive_interval``.
    ``event_log`` keeps the standalone stream's backlog and replay window (an
    in-process log of its own by default). ``on_end`` runs once after the
    transport closes.
    """

    __slots__ = (
        "_closed",
        "_event_log",
        "_initialized",
        "_on_end",
        "_standalone",
        "_streams",
        "_ticker",
        "dispatcher",
        "keepalive_watched",
        "limits",
        "session_id",
    )

    def __init__(
        self,
        session_id: str | None = None,
        *,
        limits: HttpLimits = DEFAULT_LIMITS,
        event_log: EventLog | None = None,
        keepalive: KeepaliveTicker | None = None,
        on_end: Callable[[SseTransport], None] | None = None,
    ) -> None:
        if session_id is not None and not _is_visible_ascii(session_id):
            raise ValueError("session_id must be non-empty visible ASCII (0x21-0x7E)")
        self.dispatcher = None
        self.session_id = session_id
        self.limits = limits
        self._event_log = event_log
        self._ticker = keepalive
        self.keepalive_watched = False  # the ticker looks after our POST streams
        self._on_end = on_end
        self._streams: dict[RequestId, _PendingReply] | None = None
        self._standalone: SseStream | None = None
        self._closed = False
        self._initialized = False

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

    def _events(self) -> EventLog:
        log = self._event_log
        if log is None:
            log = self._event_log = MemoryEventLog(self.limits.backlog_limit, self.limits.replay_buffer_size)
        return log

    @property
    def _log_key(self) -> str:
        return self.session_id or ""

    def live_streams(self) -> Collection[SseStream]:
        """The open POST streams (for the keep-alive ticker)."""
        streams = self._streams
        if not streams:
            return ()
        return [pending.open() for pending in list(streams.values())]

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
        if self._closed or self.dispatcher is None:
            await HttpError(404, _SESSION_ENDED).write(send)
            return
        self.dispatcher.on_message(message)
        if type(message) is JsonRpcNotification and message.method == "notifications/cancelled":
            await self._end_cancelled(message.params)
        await send(_ACCEPTED_START)
        await send(_EMPTY_BODY)

    async def _end_cancelled(self, params: dict[str, Any] | None) -> None:
        # A cancelled request gets no response, so its stream would stay open forever.
        request_id = params.get("requestId") if params else None
        streams = self._streams
        if not streams or not isinstance(request_id, str | int):
            return
        pending = streams.get(request_id)
        if pending is None or pending.initialize:
            return  # initialize cannot be cancelled
        del streams[request_id]
        await pending.open().end()

    async def serve_request(self, request: JsonRpcRequest, receive: Receive, send: Send) -> None:
        """Answer one parsed request on its POST's response (``handle_post`` without the reading)."""
        dispatcher = self.dispatcher
        if self._closed or dispatcher is None:
            await HttpError(404, _SESSION_ENDED).write(send)
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
        initialize = request.method == "initialize"
        headers = POST_SSE_HEADERS
        if initialize and self.session_id is not None:
            headers = [*POST_SSE_HEADERS, (SESSION_HEADER, self.session_id.encode("ascii"))]
        # Served inline in this request's own task: no extra task, no hand-over. A
        # client disconnect does not cancel it (the reply is then dropped);
        # notifications/cancelled does, through the dispatcher.
        pending = _PendingReply(send, receive, headers, initialize)
        streams[request_id] = pending
        if not self.keepalive_watched:
            self._keepalive().watch(self)
        try:
            reply = await dispatcher.dispatch(request)
            if pending.stream is None and streams.get(request_id) is pending and self._streams is streams:
                # The usual case: the reply (or, cancelled, nothing) is the response's only content.
                self._forget(request_id, pending)
                if reply is None:
                    await send_whole(send, POST_SSE_HEADERS, b"")
                else:
                    await send_whole(send, self._reply_headers(pending, reply), _data(reply))
                return
            stream = pending.open()
            if reply is None:
                await stream.end()  # cancelled: no response, per the specification
            elif streams.get(request_id) is pending and self._streams is streams:
                await self._reply(request_id, pending, reply)
        finally:
            self._forget(request_id, pending)

    def _forget(self, request_id: RequestId, pending: _PendingReply) -> None:
        """A request is over: its stream (if one was made) takes no more, and it leaves the table."""
        stream = pending.stream
        if stream is not None:
            stream.done = True
            if stream.watcher is not None:
                stream.watcher.cancel()
        current = self._streams
        if current is not None:
            if current.get(request_id) is pending:
                del current[request_id]
            if not current:
                self._streams = None  # an idle session keeps no table

    def _reply_headers(self, pending: _PendingReply, reply: JsonRpcMessage) -> list[tuple[bytes, bytes]]:
        """The headers a reply goes out with; notes a successful initialize."""
        if not pending.initialize:
            return pending.headers
        if type(reply) is JsonRpcResponse:
            self._initialized = True
            return pending.headers
        return POST_SSE_HEADERS  # a failed initialize opens no session

    def _watch(self, request_id: RequestId, stream: _PostStream) -> None:
        """Notice the client leaving a request that waits on it (it never reads
        ``receive`` itself), so messages stop going to a dead stream."""
        if stream.watcher is None:
            stream.watcher = asyncio.get_running_loop().create_task(self._watch_for_disconnect(request_id, stream))

    async def _watch_for_disconnect(self, request_id: RequestId, stream: _PostStream) -> None:
        while (await stream.receive())["type"] != "http.disconnect":
            pass
        streams = self._streams
        pending = streams.get(request_id) if streams is not None else None
        if pending is None or pending.stream is not stream:
            return  # answered (the reply completes the response) or closed
        # The client left mid-call: later messages go to the standalone stream, and
        # requests it can no longer answer fail now instead of at their timeout.
        del streams[request_id]  # type: ignore[union-attr]
        stream.done = True
        if stream.outbound and self.dispatcher is not None:
            for outbound_id in stream.outbound:
                self.dispatcher.on_message(
                    JsonRpcError(outbound_id, CONNECTION_CLOSED, "The client disconnected before answering")
                )

    async def _reply(self, request_id: RequestId, pending: _PendingReply, reply: JsonRpcMessage) -> None:
        """Write a request's response, which ends its stream."""
        streams = self._streams
        if streams is not None and streams.get(request_id) is pending:
            del streams[request_id]
        stream = pending.open()
        if not stream.started:
            stream.headers = self._reply_headers(pending, reply)
        elif pending.initialize and type(reply) is JsonRpcResponse:
            self._initialized = True
        await stream.write(_data(reply), final=True)

    async def handle_get(
        self, scope: Scope, receive: Receive, send: Send, last_event_id: bytes | str | None = None
    ) -> None:
        """Attach the standalone SSE stream; returns when it closes.

        A new GET supersedes the previous stream. With ``last_event_id`` (the
        ``Last-Event-ID`` header; read from ``scope`` when not given) the
        retained standalone events after it are replayed first, then the backlog.
        """
        if self._closed:
            await HttpError(404, _SESSION_ENDED).write(send)
            return
        if last_event_id is None:
            for name, value in scope["headers"]:
                if name == b"last-event-id":
                    last_event_id = value
        stream = SseStream(send)
        # The stream takes nothing until its replay is queued: messages sent meanwhile wait in the log.
        stream.done = True
        previous, self._standalone = self._standalone, stream
        if previous is not None:
            await previous.end()
        log = self._events()
        after = parse_event_id(last_event_id)
        events = await log.replay_after(self._log_key, after) if after is not None else []
        events += await log.take_undelivered(self._log_key, STANDALONE_STREAM)
        frames = [frame(event.message, event.event_id) for event in events]
        stream.pending = frames
        stream.done = self._standalone is not stream or self._closed
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
            pending = self._streams.get(related_request_id)
            if pending is not None:
                if is_reply and message.id == related_request_id:  # type: ignore[union-attr]
                    await self._reply(related_request_id, pending, message)
                    return
                stream = pending.open()
                if kind is JsonRpcRequest:
                    # The handler now waits on the client: a dead client must fail it.
                    if stream.outbound is None:
                        stream.outbound = []
                    stream.outbound.append(message.id)  # type: ignore[union-attr,arg-type]
                # A streamed request notices its client leaving, so later messages find the GET stream.
                self._watch(related_request_id, stream)
                await stream.write(_data(message))
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
        stream = self._standalone
        live = stream is not None and not stream.done
        event, dropped = await self._events().append(
            self._log_key, STANDALONE_STREAM, data, request_id, delivered=live
        )
        if live:
            assert stream is not None
            await stream.write(frame(event.message, event.event_id))
            return
        if dropped is not None and dropped.request_id is not None and self.dispatcher is not None:
            # Nobody will ever answer it: fail the caller now rather than at its timeout.
            self.dispatcher.on_message(
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
        if self._event_log is not None:
            await self._event_log.forget(self._log_key)
        if self.dispatcher is not None:
            self.dispatcher.on_close()
        if self.keepalive_watched and self._ticker is not None:
            self._ticker.unwatch(self)
        if streams:
            for request_id, pending in streams.items():
                body = error_body(CONNECTION_CLOSED, "The session was closed before the request completed", request_id)
                await pending.open().write(b"data: " + body + b"\n\n", final=True)
        if standalone is not None:
            await standalone.end()
        if self._on_end is not None:
            self._on_end(self)


def _data(message: JsonRpcMessage) -> bytes:
    """One message as an SSE event without an id (POST streams are not replayed)."""
    return b"data: " + encode_message(message) + b"\n\n"


class _PostStream(SseStream):
    """A POST's reply stream, with what is needed to notice its client leaving."""

    __slots__ = ("outbound", "receive", "watcher")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], receive: Receive) -> None:
        super().__init__(send, headers)
        self.receive = receive
        self.watcher: asyncio.Task[None] | None = None
        self.outbound: list[RequestId] | None = None  # server-to-client requests sent on it


class _PendingReply:
    """A request being served: its POST's ASGI callables, and its SSE stream once one is needed."""

    __slots__ = ("headers", "initialize", "receive", "send", "stream")

    def __init__(self, send: Send, receive: Receive, headers: list[tuple[bytes, bytes]], initialize: bool) -> None:
        self.send = send
        self.receive = receive
        self.headers = headers
        self.initialize = initialize
        self.stream: _PostStream | None = None

    def open(self) -> _PostStream:
        """The request's SSE stream, made on first use."""
        stream = self.stream
        if stream is None:
            stream = self.stream = _PostStream(self.send, self.headers, self.receive)
        return stream


def _is_visible_ascii(value: str) -> bool:
    return bool(value) and value.isascii() and all("\x21" <= c <= "\x7e" for c in value)
