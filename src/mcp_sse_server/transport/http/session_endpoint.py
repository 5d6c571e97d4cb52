"""The HTTP face of the session revisions (2024-11-05 to 2025-11-25): POST, GET and DELETE.

Order of checks, cheapest first, so a refusal costs little: Accept (406),
Content-Type (415), session id (400/404), body size (413), body shape (400).
Only a well-formed ``initialize`` without a session id opens a session
(``SessionDirectory.open``); a batch goes to ``batch.py`` (2025-03-26 sessions). Every request is served inside
``Coordinator.serving``, and a client's notification or response another
worker is waiting for goes there (``Coordinator.route_inbound``); both do
nothing when one process serves each session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ...engine.jsonrpc import HEADER_MISMATCH, JsonRpcRequest
from ...engine.stateless_meta import has_envelope
from ...engine.stores import NOT_HELD, STANDALONE_STREAM, Coordinator, DuplicateRequest, stream_of
from .asgi import Message, Receive, Send
from .batch import Batch
from .bearer import ScopeCheck, request_principal
from .body import read_message, read_session_post
from .directory import SessionDirectory
from .errors import HttpError, in_flight_conflict, shutting_down
from .request import McpRequest
from .settings import HttpSettings
from .sse import parse_event_id
from .streams import send_accepted

__all__ = ["HttpSessionEndpoint"]

_MISSING_SESSION: Final = "Bad request: missing Mcp-Session-Id header; only an initialize request may open a session"


class HttpSessionEndpoint:
    """Serves the requests of sessions over HTTP (checks in the module docstring).

    ``closing`` says whether the app is shutting down; the ``settings`` are its
    limits and JSON replies (``json_response``: a reply that goes out whole is
    ``application/json``); ``scopes`` (with
    authorization: None without) checks the scopes of what a request names before
    it is served, and with it sessions are bound to the token's principal.
    """

    __slots__ = ("batches", "closing", "coordinator", "directory", "json_response", "limits", "scopes")

    def __init__(
        self,
        directory: SessionDirectory,
        coordinator: Coordinator,
        *,
        settings: HttpSettings,
        closing: Callable[[], bool],
        scopes: ScopeCheck | None = None,
    ) -> None:
        self.directory = directory
        self.coordinator = coordinator
        self.limits = settings.limits
        self.closing = closing
        self.json_response = settings.json_response
        self.scopes = scopes
        self.batches = Batch(settings.limits, coordinator, closing, scopes)

    async def post(self, request: McpRequest, receive: Receive, send: Send) -> None:
        sse = request.check_post(self.json_response)
        session_id = request.session_id
        if session_id is None:
            await self._open(request, receive, send, sse)
            return
        live = await self.directory.lookup(session_id, request_principal() if self.scopes is not None else None)
        message, body = await read_session_post(
            receive, self.limits.max_request_bytes, request.content_length, request.body
        )
        if type(message) is JsonRpcRequest:
            if self.closing():
                raise shutting_down()
            if self.scopes is not None:
                self.scopes.check(live.server, message)
            try:
                held = self.coordinator.serving(live, message.id)
                if held is NOT_HELD:  # (the usual coordinator's: no async with, two coroutines fewer)
                    await live.transport.serve_request(message, receive, send, sse=sse)
                else:
                    async with held:
                        await live.transport.serve_request(message, receive, send, sse=sse)
            except DuplicateRequest:  # (raised before serving: in flight on another worker)
                raise in_flight_conflict(message.id) from None
        elif isinstance(message, list):
            await self.batches.serve(live, message, send)
        elif await self.coordinator.route_inbound(live.record.id, message, body):
            await send_accepted(send)
        else:
            await live.transport.handle_message(message, send)

    async def _open(self, request: McpRequest, receive: Receive, send: Send, sse: bool) -> None:
        message, _ = await read_message(receive, self.limits.max_request_bytes, request.content_length, request.body)
        if type(message) is not JsonRpcRequest or message.method != "initialize":
            if type(message) is JsonRpcRequest and has_envelope(message.params):
                # A 2026-07-28 request without its version header: a recognised stateless error, so a
                # probing client learns this server speaks the revision instead of falling back.
                raise HttpError(
                    400,
                    "Bad request: the MCP-Protocol-Version header is missing (a 2026-07-28 request names its "
                    "revision in the header as well as in _meta)",
                    HEADER_MISMATCH,
                    request_id=message.id,
                )
            raise HttpError(400, _MISSING_SESSION)
        if self.closing():
            raise shutting_down()
        live = await self.directory.open(request_principal())
        kept = False

        async def send_kept(event: Message) -> None:
            # The record is saved as initialized before the answer leaves: the client's next
            # request may reach another worker at once, which must not find the session still
            # being initialized (a 404).
            nonlocal kept
            if not kept and live.transport.initialized:
                kept = True
                await self.directory.opened(live)
            await send(event)

        try:
            await live.transport.serve_request(message, receive, send_kept, sse=sse)
        finally:
            if not kept:
                await self.directory.opened(live)

    async def get(self, request: McpRequest, receive: Receive, send: Send) -> None:
        request.check_get()
        session_id = request.session_id
        if session_id is None:
            raise HttpError(400, "Bad request: a GET stream needs the Mcp-Session-Id header of an initialized session")
        live = await self.directory.lookup(session_id, request_principal())
        if self.closing():
            raise shutting_down()
        last_id = parse_event_id(request.last_event_id)
        if last_id is not None and stream_of(last_id) != STANDALONE_STREAM:
            await live.transport.serve_get(receive, send, last_id)  # a request's stream, resumed
            return
        async with self.coordinator.holding_standalone(live):
            await live.transport.serve_get(receive, send, last_id)

    async def delete(self, request: McpRequest, send: Send) -> None:
        session_id = request.session_id
        if session_id is None:
            raise HttpError(400, "Bad request: DELETE needs the Mcp-Session-Id header of the session to end")
        live = await self.directory.lookup(session_id, request_principal())
        await self.directory.end(live)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
