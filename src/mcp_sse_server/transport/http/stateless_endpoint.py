"""The HTTP face of the stateless revision (2026-07-28): one POST, one request, no session.

The order of checks, cheapest first: method (405: POST only), Accept (406),
Content-Type (415), shutting down (503), body (413, 400), a notification
(202, dropped), not a request (400), a version neither served nor named in
an envelope (400 -32022), the routing headers (``stateless.py``: 400
-32020). The request is then served by the engine (``StatelessEndpoint``) on
a ``StatelessTransport`` of its own.

Which server serves: the app's one server; or, where the app builds a server
per session (``on_session``), one server that it builds for the stateless
requests on the first of them and keeps. A stateless request has no session,
so "once per initialize" gives no answer; a server per request would lose
what the revision carries between requests of one client: a
``subscriptions/listen`` stream would never see a change made through
another request's server, and every request would pay for a server's
registries. The ``requestState`` key ring is the deployment's either way
(``request_state.py`` rule 3).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection

from ...engine import versions
from ...engine.jsonrpc import JsonRpcNotification, JsonRpcRequest
from ...engine.protocol import Connection, ObservedConnection
from ...engine.server import McpServer
from ...engine.stateless import StatelessEndpoint, unsupported_version
from ...engine.stateless_meta import has_envelope
from .asgi import Receive, Send
from .bearer import ScopeCheck
from .body import read_message
from .directory import ServerSource
from .errors import HttpError, shutting_down
from .request import McpRequest
from .settings import HttpSettings
from .stateless import check_routing_headers, refuse_non_request
from .stateless_transport import StatelessTransport
from .streams import KeepaliveTicker, SseStream, send_accepted

__all__ = ["HttpStatelessEndpoint"]


class _InFlight:
    """The stateless requests in flight (a transport each), as one owner for the keep-alive
    ticker: a transport per request registered with it would pile up between ticks."""

    __slots__ = ("keepalive_watched", "transports")

    def __init__(self) -> None:
        self.transports: set[StatelessTransport] = set()
        self.keepalive_watched = False

    def live_streams(self) -> Collection[SseStream]:
        return [stream for transport in list(self.transports) for stream in transport.live_streams()]


class HttpStatelessEndpoint:
    """Serves 2026-07-28 requests over HTTP (checks in the module docstring).

    ``server`` serves every request; without one, ``servers`` builds the one that
    serves them all, when the first arrives (the module docstring says why).
    ``closing`` says whether the app is shutting down. ``scopes`` (with
    authorization) checks the scopes of what a request names before it is served.
    """

    __slots__ = (
        "_building",
        "_engine",
        "_in_flight",
        "_server",
        "_versions",
        "closing",
        "json_response",
        "keepalive",
        "limits",
        "scopes",
        "servers",
    )

    def __init__(
        self,
        *,
        server: McpServer | None,
        servers: ServerSource,
        settings: HttpSettings,
        keepalive: KeepaliveTicker,
        closing: Callable[[], bool],
        scopes: ScopeCheck | None = None,
    ) -> None:
        self._server = server
        self._engine = StatelessEndpoint(server) if server is not None else None
        self.servers = servers
        self.limits = settings.limits
        self.keepalive = keepalive
        self.closing = closing
        self.json_response = settings.json_response
        self.scopes = scopes
        self._in_flight = _InFlight()
        self._versions = frozenset(revision.name for revision in versions.STATELESS)
        self._building: asyncio.Lock | None = None

    async def _build_server(self) -> tuple[McpServer, StatelessEndpoint]:
        """The server of every stateless request, built by ``servers`` once: concurrent first
        requests wait for the one build, and a build that fails is tried again by the next request."""
        if self._building is None:
            self._building = asyncio.Lock()
        async with self._building:
            if self._server is None or self._engine is None:
                server = await self.servers()
                self._server, self._engine = server, StatelessEndpoint(server)
            return self._server, self._engine

    @property
    def inflight(self) -> int:
        """Requests being served now."""
        return len(self._in_flight.transports)

    async def handle(self, request: McpRequest, receive: Receive, send: Send) -> None:
        assert request.version is not None  # the router sends only versioned requests here
        if request.method != "POST":
            raise HttpError(
                405,
                f"Method not allowed: {request.method}; at revision {request.version.decode('latin-1')} the MCP "
                "endpoint takes POST only",
                headers=[(b"allow", b"POST")],
            )
        sse = request.check_post(self.json_response)
        if self.closing():
            raise shutting_down()
        message, _ = await read_message(receive, self.limits.max_request_bytes, request.content_length, request.body)
        if type(message) is JsonRpcNotification:
            await send_accepted(send)
            return
        if type(message) is not JsonRpcRequest:
            raise refuse_non_request()
        named = request.version.decode("latin-1")
        if named not in self._versions and not has_envelope(message.params):
            # The header is the only version the request names, and it is not served.
            error = unsupported_version(named)
            raise HttpError(400, error.message, error.code, request_id=message.id, data=error.data)
        server, engine = self._server, self._engine
        if server is None or engine is None:
            server, engine = await self._build_server()
        try:
            check_routing_headers(message, request, server.mirrored_headers)
        except HttpError as error:
            error.request_id = message.id
            raise
        if self.scopes is not None:
            self.scopes.check(server, message)
        transport = StatelessTransport(json_response=self.json_response)
        observer = server.observer  # (telemetry: engine/observe.py)
        if observer is None:
            Connection(transport, engine)
        else:
            ObservedConnection(transport, engine, observer)
        in_flight = self._in_flight
        in_flight.transports.add(transport)
        if not in_flight.keepalive_watched:
            self.keepalive.watch(in_flight)
        try:
            await transport.serve_request(message, receive, send, sse=sse)
        finally:
            in_flight.transports.discard(transport)
