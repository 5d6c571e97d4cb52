"""One open SSE response, and the keep-alive ticker shared by all of them.

A stream is written from whichever task produces a message (a handler, the
engine, the keep-alive ticker). Writers append to a list; the first one
becomes the flusher and sends everything queued, in order, until nothing is
left, so frames never interleave or reorder even while the peer applies
back-pressure, and bursts go out as one ASGI message. The response headers
wait for the first frame, so a quick reply goes out with a Content-Length
in two ASGI sends.

Queued bytes are bounded: a writer that finds more than ``QUEUE_LIMIT``
bytes queued behind another writer's flush waits until that flusher has
taken them, so every writer (not only the flusher) feels the peer's
back-pressure. At most ``QUEUE_LIMIT`` plus one frame per waiting writer is
ever queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import Any, Final, Protocol

from .asgi import WHOLE_RESPONSE, Send
from .sse import KEEPALIVE, SSE_HEADERS

__all__ = ["QUEUE_LIMIT", "KeepaliveTicker", "SseStream", "StreamOwner", "send_accepted", "send_whole"]

logger = logging.getLogger("mcp_sse_server.http")

_START: Final = "http.response.start"
_BODY: Final = "http.response.body"

QUEUE_LIMIT: Final = 256 * 1024
"""Bytes queued behind a flushing writer beyond which other writers wait for it."""


async def send_whole(send: Send, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """A complete 200 response in two ASGI sends: the headers with a Content-Length, then the body.

    A peer that is gone is not our error: the failure is logged at debug level only. A ``send``
    that takes ``WHOLE_RESPONSE`` gets one message instead (``asgi.py``).
    """
    try:
        if getattr(send, WHOLE_RESPONSE, False):
            await send({"type": WHOLE_RESPONSE, "status": 200, "headers": headers, "body": body})
            return
        await send({"type": _START, "status": 200, "headers": [*headers, (b"content-length", b"%d" % len(body))]})
        await send({"type": _BODY, "body": body, "more_body": False})
    except Exception:
        logger.debug("could not send a response", exc_info=True)


_ACCEPTED: Final = {"type": _START, "status": 202, "headers": [(b"content-length", b"0")]}
_NO_BODY: Final = {"type": _BODY, "body": b"", "more_body": False}


async def send_accepted(send: Send) -> None:
    """202 Accepted with no body: a client's notification or response was taken."""
    await send(_ACCEPTED)
    await send(_NO_BODY)


class SseStream:
    """An SSE response body being written over ASGI ``send``."""

    __slots__ = (
        "_drained",
        "active",
        "done",
        "ended",
        "flushing",
        "headers",
        "pending",
        "pending_bytes",
        "send",
        "started",
    )

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]] = SSE_HEADERS) -> None:
        self.send = send
        self.headers = headers  # the response headers; never mutated, often shared
        self.pending: list[bytes] = []
        self.pending_bytes = 0  # the size of pending
        self._drained: asyncio.Event | None = None  # set when the flusher takes pending; made on demand
        self.started = False  # http.response.start sent
        self.done = False  # no more frames accepted
        self.ended = False  # the final body message sent
        self.flushing = False
        # Written since the keep-alive ticker last looked (a new stream counts as written).
        self.active = True

    async def write(self, data: bytes, final: bool = False) -> None:
        """Queue one frame (``final`` ends the response after it) and flush unless another writer is."""
        if self.done:
            return
        if final and not self.started and not self.flushing and not self.pending:
            # The common case: the reply is the only frame. One start with a length, one body.
            self.done = self.started = self.ended = True
            await send_whole(self.send, self.headers, data)
            return
        self.pending.append(data)
        self.pending_bytes += len(data)
        self.active = True
        if final:
            self.done = True
        if not self.flushing:
            await self.flush()
        elif self.pending_bytes > QUEUE_LIMIT:
            await self._wait_for_flusher()

    async def _wait_for_flusher(self) -> None:
        """Wait until the flusher has taken the queue below the bound (or the stream is over)."""
        while self.flushing and self.pending_bytes > QUEUE_LIMIT and not self.ended:
            drained = self._drained
            if drained is None:
                drained = self._drained = asyncio.Event()
            await drained.wait()

    def _taken(self) -> None:
        """The flusher took the queue: wake the writers waiting on the bound."""
        self.pending = []
        self.pending_bytes = 0
        if self._drained is not None:
            self._wake()

    def _wake(self) -> None:
        drained = self._drained
        if drained is not None:
            self._drained = None
            drained.set()

    async def end(self) -> None:
        """End the response after what is queued (the peer sees the stream close)."""
        if self.done and (self.ended or self.flushing):
            return
        self.done = True
        if not self.flushing:
            await self.flush()

    async def flush(self) -> None:
        """Send queued frames; also sends the headers of a stream that has none out yet."""
        if self.flushing or self.ended:
            return
        self.flushing = True
        send = self.send
        try:
            while True:
                pending = self.pending
                if pending:
                    chunk = pending[0] if len(pending) == 1 else b"".join(pending)
                    self._taken()
                else:
                    chunk = b""
                    if self.started and not self.done:
                        break
                last = self.done
                if not self.started:
                    self.started = True
                    headers = self.headers
                    if last:
                        headers = [*headers, (b"content-length", b"%d" % len(chunk))]
                    await send({"type": _START, "status": 200, "headers": headers})
                    if not chunk and not last:
                        continue
                if last and not self.pending:
                    self.ended = True
                    await send({"type": _BODY, "body": chunk, "more_body": False})
                    break
                await send({"type": _BODY, "body": chunk, "more_body": True})
        except Exception:
            # The peer is gone or the server refused the message: nothing more can go out.
            logger.debug("SSE stream write failed", exc_info=True)
            self.done = self.ended = True
            self._taken()
        finally:
            self.flushing = False
            self._wake()  # nobody flushes now: a writer still waiting re-checks and returns


class StreamOwner(Protocol):
    """Something with POST streams of its own (a session's transport) that the ticker looks into.

    ``keepalive_watched`` is True while the ticker holds the owner; the ticker
    sets it back to False when it lets the owner go.
    """

    keepalive_watched: bool

    def live_streams(self) -> Collection[SseStream]:
        """The owner's open streams (empty when it has none)."""
        ...


class KeepaliveTicker:
    """Sends an SSE comment to every registered stream that was silent for a whole interval.

    One task per ticker, alive only while streams are registered. A stream is
    registered with ``add`` (a set operation); a session's POST streams come
    through its transport, registered with ``watch`` once and kept until a
    round finds it without streams, so a request registers nothing.
    """

    __slots__ = ("_owners", "_streams", "_task", "_writes", "interval")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._streams: set[SseStream] = set()
        self._owners: set[StreamOwner] = set()
        self._task: asyncio.Task[None] | None = None
        self._writes: set[asyncio.Task[Any]] = set()

    def add(self, stream: SseStream) -> None:
        self._streams.add(stream)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def discard(self, stream: SseStream) -> None:
        self._streams.discard(stream)

    def watch(self, owner: StreamOwner) -> None:
        """Look after ``owner``'s streams until a round finds it has none (or ``unwatch``)."""
        owner.keepalive_watched = True
        self._owners.add(owner)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def unwatch(self, owner: StreamOwner) -> None:
        owner.keepalive_watched = False
        self._owners.discard(owner)

    def __len__(self) -> int:
        """How many streams are looked after."""
        return len(self._streams) + sum(len(owner.live_streams()) for owner in self._owners)

    async def _run(self) -> None:
        try:
            while self._streams or self._owners:
                await asyncio.sleep(self.interval)
                self.tick()
        finally:
            self._task = None

    def tick(self) -> None:
        """One keep-alive round (the task calls it every interval; tests may call it directly)."""
        for stream in list(self._streams):
            if stream.done:
                self._streams.discard(stream)
            else:
                self._visit(stream)
        for owner in list(self._owners):
            streams = owner.live_streams()
            if not streams:
                self.unwatch(owner)
            for stream in list(streams):
                if not stream.done:
                    self._visit(stream)

    def _visit(self, stream: SseStream) -> None:
        if stream.active or stream.flushing:
            stream.active = False
        else:
            task = asyncio.get_running_loop().create_task(stream.write(KEEPALIVE))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    def close(self) -> None:
        self._streams.clear()
        for owner in list(self._owners):
            self.unwatch(owner)
        if self._task is not None:
            self._task.cancel()
            self._task = None
