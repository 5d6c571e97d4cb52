"""A POST's reply, shared by both HTTP transports: whole, or a stream made on first use.

Rules:

1. A request is served in the task of the POST that carried it. Its reply
   goes out whole (one response with a Content-Length) unless something else
   goes to its client first; only then is an SSE stream made (``open``).
2. Where an outbound message goes is a pure decision (``destination``): the
   response of an in-flight request ends its POST's reply; anything else
   related to it goes on its stream; a related notification whose client
   reads JSON only has nowhere to go and is dropped; a response whose request
   is gone is dropped (its client left); the rest goes to the session's
   standalone stream (or its backlog). A transport without a standalone
   stream (a 2026-07-28 request) drops that rest.
3. With JSON replies (``json_response``), a reply that goes out whole is
   ``application/json``; a client whose ``Accept`` takes JSON but not SSE
   always gets one, and nothing streams to it.
4. A client leaving a request that waits on it is noticed by a watcher task
   (``watch``), started only if the request is still running once the
   current step of the loop is over.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from typing import Final

from ...engine.jsonrpc import JsonRpcError, JsonRpcNotification, JsonRpcResponse, RequestId
from .asgi import Receive, Send
from .sse import priming
from .streams import SseStream

__all__ = ["JSON_HEADERS", "Destination", "PendingReply", "PostStream", "destination", "watch"]

JSON_HEADERS: Final[list[tuple[bytes, bytes]]] = [(b"content-type", b"application/json")]
"""The headers of a reply sent as JSON."""


class Destination(enum.Enum):
    """Where an outbound message goes (``destination``)."""

    REPLY = "the response of the request in flight: ends its POST's reply"
    POST_STREAM = "the SSE stream of the POST that carried the related request"
    STANDALONE = "the session's standalone stream, or its backlog until a GET attaches"
    DROP = "nowhere: no stream may carry it"


def destination(kind: type, answers_related: bool, related: bool | None) -> Destination:
    """Rule 2 as a function of plain values.

    ``kind`` is the message's class; ``related`` is None when the message relates
    to no request in flight here, else whether that request's client takes an SSE
    stream; ``answers_related`` is True when the message is that request's response.

    >>> destination(JsonRpcResponse, True, True).name, destination(JsonRpcNotification, False, False).name
    ('REPLY', 'DROP')
    """
    is_reply = kind is JsonRpcResponse or kind is JsonRpcError
    if related is not None:
        if is_reply and answers_related:
            return Destination.REPLY
        if related:
            return Destination.POST_STREAM
        if kind is JsonRpcNotification:
            return Destination.DROP
    if is_reply:
        return Destination.DROP
    return Destination.STANDALONE


class PostStream(SseStream):
    """A POST's reply stream, with what is needed to notice its client leaving."""

    __slots__ = ("outbound", "receive", "watch_scheduled", "watcher")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], receive: Receive) -> None:
        super().__init__(send, headers)
        self.receive = receive
        self.watch_scheduled = False  # watch() was asked; the watcher starts after this loop step
        self.watcher: asyncio.Task[None] | None = None
        self.outbound: list[RequestId] | None = None  # server-to-client requests sent on it


class PendingReply:
    """A request being served: its POST's ASGI callables, and its SSE stream once one is needed.

    ``stream_id`` is set when the stream is resumable; ``detached`` once the client
    left it or the server closed it (until a GET resumes it: ``attach``); ``sse`` is
    False when the client reads JSON only (no stream is ever made).
    """

    __slots__ = (
        "detached",
        "headers",
        "initialize",
        "on_open",
        "receive",
        "request_id",
        "retry_ms",
        "send",
        "sse",
        "started",
        "stream",
        "stream_id",
        "timer",
    )

    def __init__(
        self,
        send: Send,
        receive: Receive,
        headers: list[tuple[bytes, bytes]],
        initialize: bool,
        stream_id: str | None = None,
        retry_ms: int = 1000,
        sse: bool = True,
        request_id: RequestId = 0,
    ) -> None:
        self.send = send
        self.receive = receive
        self.headers = headers
        self.initialize = initialize
        self.stream: PostStream | None = None
        self.stream_id = stream_id
        self.retry_ms = retry_ms
        self.sse = sse
        self.detached = False
        self.request_id = request_id
        self.started = False  # the other workers know this resumable stream (SessionPeers.stream_started)
        self.on_open: Callable[[PendingReply], None] | None = None  # the stream went live
        self.timer: asyncio.TimerHandle | None = None

    def open(self) -> PostStream | None:
        """The request's live SSE stream, made on first use; None while detached (or JSON only).

        A resumable stream starts with its priming event, whose id (sequence 0 of
        the stream) resumes everything the stream logs.
        """
        stream = self.stream
        if stream is None and not self.detached and self.sse:
            stream = self.stream = PostStream(self.send, self.headers, self.receive)
            if self.stream_id is not None:
                stream.pending.append(priming(f"0/{self.stream_id}", self.retry_ms / 1000))
            if self.on_open is not None:
                self.on_open(self)
        return stream

    def detach(self) -> None:
        """The client is not listening: events are only logged from now on."""
        self.stream = None
        self.detached = True

    def attach(self, stream: PostStream) -> PostStream | None:
        """A GET resumed the stream: it carries the events from now on; returns the stream it replaces."""
        previous, self.stream = self.stream, stream
        self.detached = False
        return previous

    def finish(self) -> None:
        """The request is over: its stream (if one was made) takes no more."""
        if self.timer is not None:
            self.timer.cancel()
        stream = self.stream
        if stream is not None:
            stream.done = True
            if stream.watcher is not None:
                stream.watcher.cancel()


def watch(stream: PostStream, on_gone: Callable[[PostStream], None]) -> None:
    """Call ``on_gone(stream)`` once the client of ``stream`` disconnects (rule 4).

    The request waits on its client and never reads ``receive`` itself, so a watcher
    does. It starts only if the stream is still in use once this loop step is over: a
    call that streams and answers without waiting (progress, then the reply) never pays
    for a task and its cancellation (bench: streamed calls on a 2025-06-18 session).
    """
    if not stream.watch_scheduled:
        stream.watch_scheduled = True
        asyncio.get_running_loop().call_soon(_start_watcher, stream, on_gone)


def _start_watcher(stream: PostStream, on_gone: Callable[[PostStream], None]) -> None:
    if not stream.done:  # done: the request is over, nothing goes to the stream any more
        stream.watcher = asyncio.get_running_loop().create_task(_until_gone(stream, on_gone))


async def _until_gone(stream: PostStream, on_gone: Callable[[PostStream], None]) -> None:
    while (await stream.receive())["type"] != "http.disconnect":
        pass
    stream.done = True
    on_gone(stream)
