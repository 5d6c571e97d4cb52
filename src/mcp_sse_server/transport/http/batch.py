"""JSON-RPC batches on Streamable HTTP: revision 2025-03-26 allowed a POST to carry an array of
messages; 2025-06-18 removed them, and so every other revision refuses one.

The batch rules are ``batches.py``'s (a refusal of the whole batch is 400 with its -32600 body and
serves nothing; the limit is ``HttpLimits.max_batch_messages``). Here, the HTTP side:

1. A session of any revision but 2025-03-26 is told its revision. A batch cannot open a session
   (``initialize`` must not be part of one), so a batch without ``Mcp-Session-Id`` is refused as
   any session-less POST but initialize is.
2. Notifications and responses are taken as their single-message POSTs would be; requests are
   served concurrently, each exactly as a single POST that accepts JSON only
   (``SseTransport.serve_request`` with ``sse=False``): the same limits (requests in flight,
   scopes, duplicate ids), its related notifications dropped, and a refusal of one request
   (429, 403, 409) becomes that request's JSON-RPC error, not the batch's.
3. A batch of requests is answered ``200 application/json`` with the array of answers
   (``batches.py`` rule 4); a batch with no request is ``202``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

import orjson

from ...engine.batches import read_batch, refusal
from ...engine.jsonrpc import INVALID_REQUEST, JsonRpcRequest, McpError, encode_message
from ...engine.stores import Coordinator, DuplicateRequest
from .asgi import Message, Send
from .bearer import ScopeCheck
from .directory import LiveSession
from .errors import HttpError, in_flight_conflict, shutting_down
from .limits import HttpLimits
from .replies import JSON_HEADERS
from .streams import send_accepted, send_whole

__all__ = ["Batch"]

_BODY: Final = "http.response.body"


class Batch:
    """How this endpoint serves batches: its limits, coordinator, shutdown flag and scope check
    (the session endpoint's own)."""

    __slots__ = ("closing", "coordinator", "limits", "scopes")

    def __init__(
        self, limits: HttpLimits, coordinator: Coordinator, closing: Callable[[], bool], scopes: ScopeCheck | None
    ) -> None:
        self.limits = limits
        self.coordinator = coordinator
        self.closing = closing
        self.scopes = scopes

    async def serve(self, live: LiveSession, items: list[Any], send: Send) -> None:
        """Serve the batch ``items`` a POST to session ``live`` carried (the rules above)."""
        refused = refusal(live.record.revision)
        if refused is not None:
            raise HttpError(400, refused, INVALID_REQUEST)
        try:
            read = read_batch(items, self.limits.max_batch_messages)
        except McpError as refused_whole:
            raise HttpError(400, refused_whole.message, refused_whole.code) from None
        requests = read.requests
        if requests and self.closing():
            raise shutting_down()
        for message in read.others:
            if not await self.coordinator.route_inbound(live.record.id, message, encode_message(message)):
                await live.transport.handle_message(message, _discard)
        if not requests:
            await send_accepted(send)
            return

        async def serve(index: int, request: JsonRpcRequest) -> None:
            read.answers[index] = await _answer(live, request, self.coordinator, self.scopes)

        async with asyncio.TaskGroup() as group:
            for index, request in requests:
                group.create_task(serve(index, request))
        await send_whole(send, JSON_HEADERS, orjson.dumps(read.in_order()))


async def _answer(
    live: LiveSession, request: JsonRpcRequest, coordinator: Coordinator, scopes: ScopeCheck | None
) -> Any:
    """One request of a batch served as a JSON-only POST: its response as decoded JSON, or None."""
    reply = _Captured()
    try:
        if scopes is not None:
            scopes.check(live.server, request)
        async with coordinator.serving(live, request.id):
            await live.transport.serve_request(request, _never, reply.send, sse=False)
    except DuplicateRequest:
        return _error(in_flight_conflict(request.id), request)
    except HttpError as refusal:
        return _error(refusal, request)
    answer = reply.decoded()
    if isinstance(answer, dict) and "error" in answer and answer.get("id") is None:
        answer["id"] = request.id  # a refusal written for a single POST: in an array, it names its request
    return answer


def _error(refusal: HttpError, request: JsonRpcRequest) -> dict[str, Any]:
    error: dict[str, Any] = {"code": refusal.code, "message": refusal.message}
    if refusal.data is not None:
        error["data"] = refusal.data
    return {"jsonrpc": "2.0", "id": request.id, "error": error}


class _Captured:
    """An ASGI ``send`` that keeps the body of the one response written to it."""

    def __init__(self) -> None:
        self.body = b""

    async def send(self, message: Message) -> None:
        if message["type"] == _BODY:
            self.body += message.get("body", b"")

    def decoded(self) -> Any:
        return orjson.loads(self.body) if self.body.strip() else None


async def _discard(message: Message) -> None:
    """The ``send`` of a batch's notification or response: its 202 is the batch's, sent once."""


async def _never() -> Message:
    """The ``receive`` of a batch's request: its body was read; the client's leaving is the batch's."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")
