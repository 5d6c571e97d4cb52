"""What a session's streams share, and the GET side of its transport: ``SessionStreams``.

``SseTransport`` (``transport.py``) serves a session's POSTs; this base of it holds what
every stream of the session reads (the event log, the keep-alive ticker, whether streams
resume) and serves the GETs (the module docstring of ``transport.py`` has the rules of
resumable streams). The rules of a GET:

1. A GET without ``Last-Event-ID``, or with an id on the standalone stream, attaches the
   standalone stream and supersedes the one before: the retained standalone events after
   that id first, then the backlog (a resumable session's stream starts with an id to
   resume from: its first event's, or a priming event's).
2. An id on a request's stream resumes that stream: the events logged after the id, then,
   while the request runs here, its live events and its response. A request another worker
   runs is tailed in the shared log (``EventLog.follow``), and ended by the peers if that
   worker died. An id that names nothing resumable is 400.
3. A message related to no request goes on the standalone stream when one is open here;
   otherwise to the backlog (and the peers are told: the stream may be open on another
   worker). A request dropped from a full backlog fails its caller at once.

The state is ``SseTransport``'s (its ``__slots__``); what this class reads of it is declared
below.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from ...engine.jsonrpc import CONNECTION_CLOSED, JsonRpcError, RequestId
from ...engine.stores import STANDALONE_STREAM, EventLog, SessionPeers, stream_of
from .asgi import Receive, Scope, Send
from .errors import SESSION_ENDED, HttpError
from .limits import HttpLimits
from .replies import PendingReply, PostStream
from .sse import SSE_HEADERS, frame, parse_event_id, priming
from .streams import KeepaliveTicker, SseStream

if TYPE_CHECKING:
    from ...engine.transport import Dispatcher

__all__ = ["SessionStreams"]

_WRITER_CHECK: Final = 1.0  # seconds: how often a resumed stream with no news asks whether its writer died


class SessionStreams:
    """The session's event log and keep-alive ticker, and its GET streams (rules above)."""

    __slots__ = ("_standalone",)  # (set by SseTransport.__init__)

    _standalone: SseStream | None

    if TYPE_CHECKING:  # what is read here of SseTransport (the POST side reads it on every request)
        dispatcher: Dispatcher | None
        limits: HttpLimits
        _closed: bool
        _peers: SessionPeers
        _shared_log: bool
        _streams: dict[RequestId, PendingReply] | None

        @property
        def _log_key(self) -> str: ...

        def _events(self) -> EventLog: ...

        def _keepalive(self) -> KeepaliveTicker: ...

        def _resumable(self) -> bool: ...

    # --- GET: the standalone stream, and resumed request streams -------------------------

    def _in_flight(self, stream_id: str) -> PendingReply | None:
        for pending in (self._streams or {}).values():
            if pending.stream_id == stream_id:
                return pending
        return None

    async def _resume(self, event_id: str, receive: Receive, send: Send) -> None:
        """A GET resuming a request's stream after ``event_id``: what was logged after it, then
        (while the request goes on) its live events and response; the stream ends with the response."""
        stream_id = stream_of(event_id)
        events = await self._events().replay_after(self._log_key, event_id)
        pending = self._in_flight(stream_id)
        elsewhere = False
        if pending is None and not events:
            # Nothing logged since: still resumable when its request runs on another worker.
            elsewhere = await self._peers.runs_elsewhere(stream_id)
            if not elsewhere:
                await HttpError(
                    400, "Bad request: Last-Event-ID names no stream of this session that can still be resumed"
                ).write(send)
                return
        stream = PostStream(send, SSE_HEADERS, receive)
        stream.pending = [frame(event.message, event.event_id) for event in events]
        if pending is None:  # the request is over: its response was among the logged events
            if self._shared_log and (events or elsewhere):  # ... or it runs on another worker
                await self._tail(stream, receive, events[-1].event_id if events else event_id)
                return
            await stream.end()
            return
        previous = pending.attach(stream)
        if pending.on_open is not None:
            pending.on_open(pending)  # (live again: the transport's reconnect timer starts)
        if previous is not None:
            await previous.end()
        try:
            await self._hold(stream, receive)
        finally:
            if pending.stream is stream:
                pending.detach()

    async def _tail(self, stream: PostStream, receive: Receive, last: str) -> None:
        """A resumed stream whose request runs on another worker: what that worker
        logs, as it logs it (``EventLog.follow``), until the stream ends or the client leaves.
        Every ``_WRITER_CHECK`` seconds without news, the peers end it if its writer died."""
        log = self._events()
        ticker = self._keepalive()
        ticker.add(stream)
        gone = asyncio.get_running_loop().create_task(_until_disconnect(receive))
        try:
            await stream.flush()
            while not gone.done():
                follow = asyncio.ensure_future(log.follow(self._log_key, last, _WRITER_CHECK))
                await asyncio.wait((follow, gone), return_when=asyncio.FIRST_COMPLETED)
                if not follow.done():
                    follow.cancel()
                    break
                events, ended = follow.result()
                if not events and not ended:
                    await self._peers.end_if_abandoned(stream_of(last))  # (its writer may have died)
                for event in events:
                    await stream.write(frame(event.message, event.event_id))
                    last = event.event_id
                if ended:
                    await stream.end()
                    return
        finally:
            stream.done = True
            ticker.discard(stream)
            gone.cancel()

    async def _hold(self, stream: SseStream, receive: Receive) -> None:
        """Send a GET stream's queued frames, then keep it alive until the client leaves."""
        ticker = self._keepalive()
        ticker.add(stream)
        try:
            await stream.flush()
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            stream.done = True
            ticker.discard(stream)

    async def handle_get(
        self, scope: Scope, receive: Receive, send: Send, last_event_id: bytes | str | None = None
    ) -> None:
        """Attach the standalone SSE stream, or resume a request's stream; returns when it closes.

        ``last_event_id`` is the ``Last-Event-ID`` header (read from ``scope`` when not given).
        """
        if last_event_id is None:
            last_event_id = dict(scope["headers"]).get(b"last-event-id")
        await self.serve_get(receive, send, parse_event_id(last_event_id))

    async def serve_get(self, receive: Receive, send: Send, after: str | None) -> None:
        """A GET after event ``after`` (None: none): ``handle_get`` without the header reading.

        An id on a request's stream resumes that stream; otherwise this attaches the
        standalone stream, superseding the previous one: the retained standalone events
        after ``after`` are replayed first, then the backlog.
        """
        if self._closed:
            await HttpError(404, SESSION_ENDED).write(send)
            return
        if after is not None and stream_of(after) != STANDALONE_STREAM:
            await self._resume(after, receive, send)
            return
        stream = SseStream(send)
        # The stream takes nothing until its replay is queued: messages sent meanwhile wait in the log.
        stream.done = True
        previous, self._standalone = self._standalone, stream
        if previous is not None:
            await previous.end()
        log = self._events()
        events = await log.replay_after(self._log_key, after) if after is not None else []
        events += await log.take_undelivered(self._log_key, STANDALONE_STREAM)
        frames = [frame(event.message, event.event_id) for event in events]
        if self._resumable():
            # Resumable: the client needs an id to resume from. The first event has one when
            # there is something to deliver; otherwise a priming event gives a fresh one.
            retry = self.limits.retry_interval
            if frames:
                frames.insert(0, b"retry: %d\n\n" % round(retry * 1000))
            else:
                frames.append(priming(await log.mark(self._log_key, STANDALONE_STREAM), retry))
        stream.pending = frames
        stream.done = self._standalone is not stream or self._closed
        try:
            await self._hold(stream, receive)
        finally:
            if self._standalone is stream:
                self._standalone = None

    async def _send_standalone(self, data: bytes, request_id: RequestId | None) -> None:
        stream = self._standalone
        live = stream is not None and not stream.done
        event, dropped = await self._events().append(self._log_key, STANDALONE_STREAM, data, request_id, delivered=live)
        if live:
            assert stream is not None
            await stream.write(frame(event.message, event.event_id))
            return
        await self._peers.on_backlog()  # the stream may be open on another worker: tell it
        if dropped is not None and dropped.request_id is not None and self.dispatcher is not None:
            # Nobody will ever answer it: fail the caller now rather than at its timeout.
            self.dispatcher.on_message(
                JsonRpcError(
                    dropped.request_id,
                    CONNECTION_CLOSED,
                    "The request was dropped: the client did not open its stream before the backlog filled up",
                )
            )

    # --- the standalone stream held by another worker (a coordinator's messages) ---------

    async def deliver_backlog(self) -> None:
        """Send the standalone backlog (what other workers logged for it) on this worker's
        standalone stream, if it has one open."""
        stream = self._standalone
        if stream is None or stream.done:
            return
        for event in await self._events().take_undelivered(self._log_key, STANDALONE_STREAM):
            await stream.write(frame(event.message, event.event_id))

    async def end_standalone(self) -> None:
        """End this worker's standalone stream (a newer GET took it on another worker)."""
        stream, self._standalone = self._standalone, None
        if stream is not None:
            await stream.end()


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
