"""StatelessTransport: one 2026-07-28 request on one POST; no session, no event log, no standalone stream.

Rules (``replies.py`` has those it shares with the session transport):

1. It serves one request (``serve_request``), inline in the POST's task.
2. The reply goes out whole unless something streams first; an error answered
   whole carries its HTTP status (``sse.status_for``), a result is one SSE
   event, or JSON with ``json_response`` or for a client that reads JSON only.
3. Messages related to the request go on its stream; anything else is
   dropped: this revision has no standalone stream to carry it.
4. The client closing the stream is the cancellation (the engine gets
   ``notifications/cancelled``).
5. Its stream asks proxies not to buffer it (``x-accel-buffering: no``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from ...engine.jsonrpc import (
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    RequestId,
    encode_message,
)
from ...engine.transport import Transport
from .asgi import Receive, Send
from .errors import write_json_rpc_error
from .replies import JSON_HEADERS, Destination, PendingReply, PostStream, destination, watch
from .sse import POST_SSE_HEADERS, STATELESS_SSE_HEADERS, status_for
from .streams import SseStream, send_whole

__all__ = ["StatelessTransport"]

logger = logging.getLogger("mcp_sse_server.http")


class StatelessTransport(Transport):
    """The server end of one 2026-07-28 request (rules above).

    ``json_response`` answers a reply that goes out whole with ``application/json``.
    """

    # The request's PendingReply is made only when something other than the reply goes to the
    # client (``_reply_stream``): most requests answer whole, and the POST's ASGI callables are
    # kept here until then (bench/opcodes.py: about 60 opcodes per call fewer).
    __slots__ = ("_gone", "_pending", "_receive", "_request_id", "_send", "_sse", "dispatcher", "json_response")

    def __init__(self, *, json_response: bool = False) -> None:
        self.dispatcher = None
        self.json_response = json_response
        self._pending: PendingReply | None = None
        self._send: Send | None = None  # the POST's, while its request is served
        self._gone = False  # the client closed the stream: the request was cancelled

    def _reply_stream(self) -> PostStream | None:
        """The request's stream, made now if need be; None when nothing may stream (JSON only,
        or the request is over)."""
        pending = self._pending
        if pending is None:
            send = self._send
            if send is None:
                return None
            pending = self._pending = PendingReply(send, self._receive, STATELESS_SSE_HEADERS, False, sse=self._sse)
            pending.on_open = self._stream_opened
        return pending.open()

    def live_streams(self) -> Collection[SseStream]:
        """The request's stream, made now if need be (for the keep-alive ticker: a silent
        request's client is sent keep-alives, and so watched)."""
        stream = self._reply_stream()
        return () if stream is None or stream.done else (stream,)

    async def serve_request(self, request: JsonRpcRequest, receive: Receive, send: Send, *, sse: bool = True) -> None:
        """Serve the request and answer it on this POST (``sse``: the client's Accept takes SSE)."""
        dispatcher = self.dispatcher
        assert dispatcher is not None, "a StatelessTransport serves once connected (Connection(transport, ...))"
        self._send = send
        self._receive = receive
        self._sse = sse
        self._request_id = request.id
        try:
            reply = await dispatcher.dispatch(request)
            pending = self._pending
            stream = pending.stream if pending is not None else None
            if stream is None:
                if self._gone:
                    return
                if reply is None:
                    await send_whole(send, POST_SSE_HEADERS, b"")
                elif type(reply) is JsonRpcError:
                    await write_json_rpc_error(
                        send, status_for(reply.code), reply.code, reply.message, request_id=reply.id, data=reply.data
                    )
                elif self.json_response or not sse:
                    await send_whole(send, JSON_HEADERS, encode_message(reply))
                else:
                    await send_whole(send, STATELESS_SSE_HEADERS, b"data: " + encode_message(reply) + b"\n\n")
            elif reply is None:
                await stream.end()  # cancelled: no response, per the specification
            elif not self._gone:
                await stream.write(b"data: " + encode_message(reply) + b"\n\n", final=True)
        finally:
            self._send = None  # nothing goes to this POST any more
            if self._pending is not None:
                self._pending.finish()
                self._pending = None
            self.dispatcher = None  # no transport <-> connection cycle left for the collector

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        related = self._send is not None and not self._gone and related_request_id == self._request_id
        if destination(type(message), False, self._sse if related else None) is not Destination.POST_STREAM:
            logger.debug("dropping %s: no stream may carry it", type(message).__name__)
            return
        stream = self._reply_stream()
        if stream is not None:
            await stream.write(b"data: " + encode_message(message) + b"\n\n")

    def _stream_opened(self, pending: PendingReply) -> None:
        """Its stream is made: from now on the client leaving is noticed (rule 4)."""
        if pending.stream is not None:
            watch(pending.stream, self._client_left)

    def _client_left(self, stream: PostStream) -> None:
        """Rule 4: closing the response stream is the cancellation."""
        pending = self._pending
        if pending is None or pending.stream is not stream or self.dispatcher is None:
            return
        self._gone = True
        self.dispatcher.on_message(
            JsonRpcNotification(
                "notifications/cancelled", {"requestId": self._request_id, "reason": "the client closed the stream"}
            )
        )

    async def close(self) -> None:
        pending = self._pending
        if pending is not None and pending.stream is not None:
            await pending.stream.end()
        if self.dispatcher is not None:
            self.dispatcher.on_close()
