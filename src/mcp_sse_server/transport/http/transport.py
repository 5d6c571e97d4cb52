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

The GET side (the standalone stream, its backlog and replay, the resumption of a
request's stream) and what every stream reads (the event log, the keep-alive ticker)
are its base, ``SessionStreams`` (``session_streams.py``); this module serves POSTs
and sends.

Every request is served inline (``Dispatcher.dispatch``) in the task of the
POST that carried it. Its stream is made only when something other than the
reply goes on it first; the usual reply goes out as one response with a
Content-Length (``replies.py`` states the reply rules and the pure
``destination`` rule ``send`` follows; with ``json_response`` that reply is
``application/json``). What other workers serving the session need is asked
of its ``SessionPeers`` (``engine/stores.py``), given at construction.

Resumable streams (sessions whose revision has them, 2025-11-25 on; SEP-1699):

1. A request's stream, once made, starts with a priming event (an id, the
   ``retry`` interval, empty data) and every event on it has an id naming the
   stream (``"<n>/<stream>"``); its events go to the session's ``EventLog``.
2. The client leaving, or the server closing the stream early
   (``close_stream``), detaches the request: it goes on, and its events, its
   response included, are only logged until a GET with ``Last-Event-ID``
   resumes the stream: the logged events after that id, then the live ones
   and the response, on the GET. A disconnect is never a cancellation.
3. A stream's log is kept ``stream_log_grace`` seconds after its response.
   A quick reply written whole (nothing went before it) is not logged: the
   client that lost it also lost every id it could resume with.
4. A resumption never shows another stream's events, nor supersedes the
   standalone GET stream.
5. Before a resumable stream's first event (or its priming event alone, when
   it is closed early) reaches the client, the log knows the stream and who
   writes it (``EventLog.open_stream``): the client may resume it on another
   worker, which ends it should this worker die. A reply written whole is not
   logged at all.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import Callable, Collection
from typing import Any, Final

from ...engine import versions
from ...engine.background import in_background
from ...engine.jsonrpc import (
    CONNECTION_CLOSED,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    RequestId,
    encode_message,
)
from ...engine.records import SessionRecord
from ...engine.stores import EventLog, SessionPeers
from ...engine.transport import Transport
from ...stores.coordination import NO_PEERS
from ...stores.memory import MemoryEventLog
from .asgi import Receive, Scope, Send
from .body import ClientDisconnected, read_body, read_json_rpc_post
from .errors import SESSION_ENDED, HttpError, error_body, in_flight_conflict
from .limits import DEFAULT_LIMITS, HttpLimits
from .replies import JSON_HEADERS, Destination, PendingReply, PostStream, destination, watch
from .session_streams import SessionStreams
from .sse import POST_SSE_HEADERS, frame
from .streams import KeepaliveTicker, SseStream, send_accepted, send_whole

# read_body, read_json_rpc_post and ClientDisconnected live in body.py; re-exported for embedders.
__all__ = ["ClientDisconnected", "SseTransport", "read_body", "read_json_rpc_post"]

logger = logging.getLogger("mcp_sse_server.http")

SESSION_HEADER: Final = b"mcp-session-id"


class SseTransport(SessionStreams, Transport):
    """The server end of one Streamable HTTP session.

    ``session_id`` goes on the response to initialize (as ``Mcp-Session-Id``).
    ``limits`` supplies ``max_request_streams``, ``backlog_limit``,
    ``replay_buffer_size``, ``keepalive_interval`` and the stream timings.
    ``event_log`` keeps the streams' backlogs and replay windows (an
    in-process log of its own by default). ``record`` is the session's record:
    its negotiated revision decides whether streams are resumable. ``on_end``
    runs once after the transport closes (not after ``release``). ``peers``
    are the other workers serving the session (none by default);
    ``shared_log`` says the event log is shared with them, so a stream not
    written here may be written by another worker (and the streams written
    here are named apart from theirs: ``r<n>.<tag of this copy>``).
    ``json_response`` answers a request whose reply goes out whole with
    ``application/json`` instead of one SSE event. ``resumable`` False keeps
    every stream unresumable whatever the revision (the 2024-11-05 transport's
    sessions, ``legacy_sse.py``: one stream, no ids to resume from).
    """

    __slots__ = (
        "_closed",
        "_event_log",
        "_initialized",
        "_may_resume",
        "_on_end",
        "_peers",
        "_resumable_for",
        "_retry_ms",
        "_shared_log",
        "_stream_count",
        "_stream_suffix",
        "_streams",
        "_ticker",
        "dispatcher",
        "json_response",
        "keepalive_watched",
        "limits",
        "record",
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
        record: SessionRecord | None = None,
        peers: SessionPeers = NO_PEERS,
        shared_log: bool = False,
        json_response: bool = False,
        resumable: bool = True,
    ) -> None:
        if session_id is not None and not _is_visible_ascii(session_id):
            raise ValueError("session_id must be non-empty visible ASCII (0x21-0x7E)")
        self.dispatcher = None
        self.session_id = session_id
        self.limits = limits
        self.record = record
        self.json_response = json_response
        self._event_log = event_log
        self._ticker = keepalive
        self.keepalive_watched = False  # the ticker looks after our POST streams (it sets this)
        self._on_end = on_end
        self._peers = peers
        self._shared_log = shared_log
        self._streams: dict[RequestId, PendingReply] | None = None
        self._standalone: SseStream | None = None
        self._closed = False
        self._initialized = False
        self._stream_count = 0
        # Every worker numbers its streams of a shared session from 1: a tag of this copy keeps
        # its streams' names (and so their logs) apart from other workers'.
        self._stream_suffix = f".{secrets.token_hex(4)}" if shared_log else ""
        self._retry_ms = round(limits.retry_interval * 1000)
        self._resumable_for: tuple[str | None, bool] = (None, False)  # (revision, its streams resume)
        self._may_resume = resumable

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
            log = self._event_log = MemoryEventLog(
                self.limits.backlog_limit,
                self.limits.replay_buffer_size,
                ended_streams_kept=self.limits.ended_streams_kept,
            )
        return log

    @property
    def _log_key(self) -> str:
        return self.session_id or ""

    def _resumable(self) -> bool:
        """True when the session's revision has resumable streams (remembered per revision)."""
        record = self.record
        if record is None:
            return False
        revision, resumable = self._resumable_for
        if revision != record.revision:  # (once per revision: the hot path reads the pair alone)
            resumable = self._may_resume and versions.resumable_streams(record.revision)
            self._resumable_for = (record.revision, resumable)
        return resumable

    def runs(self, request_id: RequestId) -> bool:
        """True while a client request with this id is in flight in this session (here)."""
        streams = self._streams
        return streams is not None and request_id in streams

    def live_streams(self) -> Collection[SseStream]:
        """The open POST streams (for the keep-alive ticker)."""
        streams = self._streams
        if not streams:
            return ()
        return [stream for pending in list(streams.values()) if (stream := pending.open()) is not None]

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
        else:
            await self.handle_message(message, send)

    async def handle_message(self, message: JsonRpcMessage, send: Send) -> None:
        """A client's notification or response: to the engine, answered 202."""
        if self._closed or self.dispatcher is None:
            await HttpError(404, SESSION_ENDED).write(send)
            return
        self.dispatcher.on_message(message)
        if type(message) is JsonRpcNotification and message.method == "notifications/cancelled":
            await self.end_cancelled(message.params)
        await send_accepted(send)

    def deliver(self, message: JsonRpcMessage) -> None:
        """Hand a client's message to the engine without an HTTP exchange (one another worker took)."""
        if not self._closed and self.dispatcher is not None:
            self.dispatcher.on_message(message)

    async def end_cancelled(self, params: dict[str, Any] | None) -> None:
        """End the stream of a request ``notifications/cancelled`` named (it gets no response)."""
        request_id = params.get("requestId") if params else None
        streams = self._streams
        if not streams or not isinstance(request_id, str | int):
            return
        pending = streams.get(request_id)
        if pending is None or pending.initialize:
            return  # initialize cannot be cancelled
        del streams[request_id]
        stream = pending.open()
        if stream is not None:
            await stream.end()
        if pending.stream_id is not None:
            await self._events().end_stream(self._log_key, pending.stream_id, self.limits.stream_log_grace)

    async def serve_request(self, request: JsonRpcRequest, receive: Receive, send: Send, *, sse: bool = True) -> None:
        """Answer one parsed request on its POST's response (``handle_post`` without the reading).

        ``sse`` is False when the client's Accept takes JSON only: nothing streams to it,
        related notifications are dropped and the reply is JSON (``replies.py``, rule 3).
        """
        dispatcher = self.dispatcher
        if self._closed or dispatcher is None:
            await HttpError(404, SESSION_ENDED).write(send)
            return
        request_id = request.id
        streams = self._streams
        if streams is None:
            streams = self._streams = {}
        elif request_id in streams:
            await in_flight_conflict(request_id).write(send)
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
        # client disconnect does not cancel it (the reply is then dropped, or logged
        # for a resumable stream); notifications/cancelled does, through the dispatcher.
        stream_id = None
        if self._resumable():
            self._stream_count += 1
            if sse:
                stream_id = f"r{self._stream_count}{self._stream_suffix}"
        pending = PendingReply(send, receive, headers, initialize, stream_id, self._retry_ms, sse, request_id)
        if stream_id is not None:
            pending.on_open = self._stream_opened
        streams[request_id] = pending
        if not self.keepalive_watched:
            self._keepalive().watch(self)
        try:
            reply = await dispatcher.dispatch(request)
        except BaseException:
            self._forget(request_id, pending)
            raise
        if pending.stream is None and not pending.detached and self._streams is streams:
            # The usual case: the reply (or, cancelled, nothing) is the response's only content.
            # (_forget inlined, as every request passes here: no stream was made, so there is none
            # to finish; bench/opcodes.py counts about 50 opcodes per call fewer this way.)
            if streams.get(request_id) is pending:
                del streams[request_id]
                if not streams:
                    self._streams = None  # an idle session keeps no table
            if pending.timer is not None:
                pending.timer.cancel()
            if reply is None:
                await send_whole(send, POST_SSE_HEADERS, b"")
            elif self.json_response or not sse:
                await send_whole(send, self._json_headers(pending, reply), encode_message(reply))
            else:
                await send_whole(send, self._reply_headers(pending, reply), b"data: " + encode_message(reply) + b"\n\n")
            return
        try:
            if reply is None:
                stream = pending.open()
                if stream is not None:
                    await stream.end()  # cancelled: no response, per the specification
            elif streams.get(request_id) is pending and self._streams is streams:
                await self._reply(request_id, pending, reply)
        finally:
            self._forget(request_id, pending)

    def _forget(self, request_id: RequestId, pending: PendingReply) -> None:
        """A request is over: its stream (if one was made) takes no more, and it leaves the table."""
        pending.finish()
        current = self._streams
        if current is not None:
            if current.get(request_id) is pending:
                del current[request_id]
            if not current:
                self._streams = None  # an idle session keeps no table

    def _reply_headers(self, pending: PendingReply, reply: JsonRpcMessage) -> list[tuple[bytes, bytes]]:
        """The headers an SSE reply goes out with; notes a successful initialize."""
        if not pending.initialize:
            return pending.headers
        if type(reply) is JsonRpcResponse:
            self._initialized = True
            return pending.headers
        return POST_SSE_HEADERS  # a failed initialize opens no session

    def _json_headers(self, pending: PendingReply, reply: JsonRpcMessage) -> list[tuple[bytes, bytes]]:
        """The headers a JSON reply goes out with; notes a successful initialize."""
        if pending.initialize and type(reply) is JsonRpcResponse and self.session_id is not None:
            self._initialized = True
            return [*JSON_HEADERS, (SESSION_HEADER, self.session_id.encode("ascii"))]
        return JSON_HEADERS

    def _client_left(self, request_id: RequestId, stream: PostStream) -> None:
        """The client of a request's stream disconnected while the request runs."""
        streams = self._streams
        pending = streams.get(request_id) if streams is not None else None
        if pending is None or pending.stream is not stream:
            return  # answered (the reply completes the response), resumed elsewhere, or closed
        if pending.stream_id is not None:
            # Resumable: the request goes on, logging what it sends, until a GET resumes it.
            pending.detach()
            return
        # The client left mid-call: later messages go to the standalone stream, and
        # requests it can no longer answer fail now instead of at their timeout.
        del streams[request_id]  # type: ignore[union-attr]
        if stream.outbound and self.dispatcher is not None:
            for outbound_id in stream.outbound:
                self.dispatcher.on_message(
                    JsonRpcError(outbound_id, CONNECTION_CLOSED, "The client disconnected before answering")
                )

    async def _reply(self, request_id: RequestId, pending: PendingReply, reply: JsonRpcMessage) -> None:
        """Write a request's response, which ends its stream."""
        streams = self._streams
        if streams is not None and streams.get(request_id) is pending:
            del streams[request_id]
        if pending.stream_id is not None:
            await self._emit(pending, encode_message(reply), final=True)
            await self._events().end_stream(self._log_key, pending.stream_id, self.limits.stream_log_grace)
            return
        stream = pending.open()
        if stream is None:
            return
        if not stream.started:
            stream.headers = self._reply_headers(pending, reply)
        elif pending.initialize and type(reply) is JsonRpcResponse:
            self._initialized = True
        await stream.write(_data(reply), final=True)

    async def _emit(self, pending: PendingReply, message: bytes, final: bool = False) -> None:
        """One message on a request's stream: logged with an id when the stream is resumable,
        written to the client unless the request is detached."""
        if pending.stream_id is None:
            stream = pending.open()
            if stream is not None:
                await stream.write(b"data: " + message + b"\n\n", final)
            return
        if not pending.started:
            await self._start_logged(pending, pending.stream_id)
        event = await self._events().log(self._log_key, pending.stream_id, message)
        stream = pending.open()
        if stream is not None:
            await stream.write(frame(message, event.event_id), final)

    async def _start_logged(self, pending: PendingReply, stream_id: str) -> None:
        """Before a resumable stream's first event (or its priming event alone) reaches the client:
        the log knows the stream and who writes it (rule 5)."""
        pending.started = True
        await self._events().open_stream(self._log_key, stream_id, pending.request_id)

    async def close_stream(self, related_request_id: RequestId | None) -> bool:
        """End the stream of a request in flight while the request goes on: the client
        resumes it with GET + ``Last-Event-ID`` after the ``retry`` interval. False when
        the request has no resumable stream (an older revision) or is not in flight."""
        streams = self._streams
        pending = streams.get(related_request_id) if streams is not None and related_request_id is not None else None
        if pending is None or pending.stream_id is None or pending.detached:
            return False
        await self._hang_up(pending)
        return True

    async def _hang_up(self, pending: PendingReply) -> None:
        if not pending.started and pending.stream_id is not None:
            await self._start_logged(pending, pending.stream_id)
        stream = pending.open()  # made now if need be, so the client has the priming event's id
        pending.detach()
        if stream is not None:
            await stream.write(b"retry: %d\n\n" % pending.retry_ms)
            await stream.end()

    def _stream_opened(self, pending: PendingReply) -> None:
        """A resumable stream went live: it is closed for the client to resume after ``stream_reconnect_after``."""
        if pending.timer is not None:
            pending.timer.cancel()
        pending.timer = asyncio.get_running_loop().call_later(
            self.limits.stream_reconnect_after, self._overdue, pending
        )

    def _overdue(self, pending: PendingReply) -> None:
        pending.timer = None
        if pending.stream is not None and not pending.detached and not self._closed:
            in_background(self._hang_up(pending))

    # --- outbound ------------------------------------------------------------------

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            return
        kind = type(message)
        streams = self._streams
        pending = streams.get(related_request_id) if streams and related_request_id is not None else None
        answers = pending is not None and getattr(message, "id", None) == related_request_id
        where = destination(kind, answers, None if pending is None else pending.sse)
        if where is Destination.REPLY:
            await self._reply(related_request_id, pending, message)  # type: ignore[arg-type]
        elif where is Destination.POST_STREAM:
            assert pending is not None and related_request_id is not None
            stream = pending.open()
            if stream is not None:
                if kind is JsonRpcRequest:
                    # The handler now waits on the client: a dead client must fail it.
                    if stream.outbound is None:
                        stream.outbound = []
                    stream.outbound.append(message.id)  # type: ignore[union-attr,arg-type]
                # A streamed request notices its client leaving (later messages find the
                # GET stream, or the log of a resumable stream).
                if not stream.watch_scheduled:
                    watch(stream, functools.partial(self._client_left, related_request_id))
            await self._emit(pending, encode_message(message))
        elif where is Destination.STANDALONE:
            await self._send_standalone(
                encode_message(message),
                message.id if kind is JsonRpcRequest else None,  # type: ignore[union-attr]
            )
        else:
            logger.debug("dropping %s: no stream may carry it", kind.__name__)

    # --- closing -------------------------------------------------------------------

    async def close(self) -> None:
        """End every stream and the session; running handlers are cancelled by the engine."""
        await self._close(end_session=True)

    async def release(self) -> None:
        """Stop serving the session here without ending it: the streams close, the event log
        stays (other workers serve the session) and ``on_end`` is not called."""
        await self._close(end_session=False)

    async def _close(self, *, end_session: bool) -> None:
        if self._closed:
            return
        self._closed = True
        streams, self._streams = self._streams, None
        standalone, self._standalone = self._standalone, None
        if self._event_log is not None and end_session:
            await self._event_log.forget(self._log_key)
        if self.dispatcher is not None:
            self.dispatcher.on_close()
        if self.keepalive_watched and self._ticker is not None:
            self._ticker.unwatch(self)
        if streams:
            for request_id, pending in streams.items():
                body = error_body(CONNECTION_CLOSED, "The session was closed before the request completed", request_id)
                stream = pending.open()
                if stream is not None:
                    await stream.write(b"data: " + body + b"\n\n", final=True)
                elif not pending.sse and not pending.detached:
                    await send_whole(pending.send, JSON_HEADERS, body)  # a client that reads JSON only
        if standalone is not None:
            await standalone.end()
        if self._on_end is not None and end_session:
            self._on_end(self)


def _data(message: JsonRpcMessage) -> bytes:
    """One message as an SSE event without an id (POST streams are not replayed)."""
    return b"data: " + encode_message(message) + b"\n\n"


def _is_visible_ascii(value: str) -> bool:
    return bool(value) and value.isascii() and all("\x21" <= c <= "\x7e" for c in value)
