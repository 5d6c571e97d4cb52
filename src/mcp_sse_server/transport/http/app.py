"""The ASGI application that owns an MCP endpoint: its stack, its backend, its lifespan, its shutdown.

>>> app = McpHttpApp(server, settings=HttpSettings(path="/mcp"))  # doctest: +SKIP
>>> # uvicorn.run(app), or mounted: Starlette(routes=[Mount("/mcp", app=app)], lifespan=app.lifespan)

The app is a stack, Starlette style, configured once in the constructor from
two objects: the ``HttpSettings`` (plain configuration) and the ``Backend``
(every store, and the coordination of workers: ``engine/stores.py``)::

   (ObservedHttp               peer, trace headers, refusals counted: with telemetry   observed.py)
    OriginHostMiddleware       Host and Origin (400/403)        security.py
     (BearerMiddleware         bearer tokens (401/403), RFC 9728 metadata: with auth=   bearer.py)
      McpRouter                path, method, version: route()   router.py
        HttpSessionEndpoint    POST/GET/DELETE on sessions      session_endpoint.py
          SessionDirectory     find/open/end/expire sessions    directory.py
          Coordinator          other workers (none by default)  the backend's
          SseTransport         a session's streams              transport.py
        LegacySseEndpoint      2024-11-05 streams and POSTs     legacy_sse.py
          (the same SessionDirectory, Coordinator and SseTransport)
        HttpStatelessEndpoint  2026-07-28 POSTs                 stateless_endpoint.py
          StatelessTransport   one request's stream             stateless_transport.py

Every layer reads the request's headers from one ``McpRequest`` (request.py),
made once. One ``McpServer`` serves every session, unless the app is given a
factory that builds one per session; then the 2026-07-28 requests, which have
no session, are all served by one more server it builds on the first of them
(``stateless_endpoint.py`` says why). The app owns its backend: it starts it
(``start``, the ASGI lifespan's startup) and closes it at its shutdown.

Mounted in another app, the app gets no lifespan events: Starlette and FastAPI
send them to their own lifespan only. ``app.lifespan`` is one: the parent's
``lifespan=app.lifespan`` runs ``start`` and ``shutdown`` with the parent's; a
parent with a lifespan of its own enters ``async with app:`` inside it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from urllib.parse import urlsplit

from ...engine.observe import Observer
from ...engine.server import McpServer
from ...engine.stores import Backend
from ...stores.memory import MemoryBackend
from .asgi import ASGIApp, Receive, Scope, Send
from .bearer import BearerMiddleware, ScopeCheck
from .directory import LiveSession, Serving, SessionDirectory, directory_for
from .legacy_sse import LegacySseEndpoint
from .observed import ObservedHttp
from .router import McpRouter
from .security import OriginHostMiddleware, OriginPolicy
from .servers import Servers, SessionFactory
from .session_endpoint import HttpSessionEndpoint
from .settings import DEFAULT_SETTINGS, HttpSettings
from .stateless_endpoint import HttpStatelessEndpoint
from .streams import KeepaliveTicker

__all__ = ["LiveSession", "McpHttpApp", "SessionFactory"]

logger = logging.getLogger("mcp_sse_server.http")


class McpHttpApp:
    """ASGI app serving MCP Streamable HTTP: ``server`` serves every session.

    ``server`` may instead be a factory (any callable that is not an ``McpServer``,
    returning one or an awaitable of one): it builds a server per session, for
    servers that keep per-client state in the server object; it costs the
    registries and validators once per session. Requests of the stateless
    revision (2026-07-28) have no session: one server the factory builds on the
    first of them serves them all.

    ``settings`` (an ``HttpSettings``) is how the endpoint is served: its path,
    limits, JSON replies, the 2024-11-05 transport, authorization. ``backend``
    keeps session records, stream events, tasks and the event bus, and
    coordinates this process with others serving the same sessions (a
    ``Backend``: ``stores.backend_from_url(url)`` builds one; by default every
    store is in this process, ``stores.MemoryBackend``, sized by the settings'
    limits; ``servers.py`` says what of it the servers take). ``bind_host`` is
    the address the server listens on (its name is accepted in Host).
    """

    def __init__(
        self,
        server: McpServer | SessionFactory,
        *,
        settings: HttpSettings = DEFAULT_SETTINGS,
        backend: Backend | None = None,
        bind_host: str | None = None,
    ) -> None:
        if not isinstance(settings, HttpSettings):
            raise TypeError(f"settings must be an HttpSettings, not {type(settings).__name__}")
        if backend is None:
            backend = MemoryBackend(settings.limits)
        elif not isinstance(backend, Backend):
            raise TypeError(f"backend must be a Backend, not {type(backend).__name__}")
        limits, auth = settings.limits, settings.auth
        self.servers = Servers(server, backend)
        self.server = self.servers.one  # (None: the factory builds each session's)
        self.on_session = self.servers.factory
        self.settings = settings
        self.backend = backend
        self.bind_host = bind_host
        self.path = settings.path
        self.limits = limits
        self.json_response = settings.json_response
        self.sessions = backend.sessions
        self.events = backend.events
        self.clock = backend.clock
        self.coordinator = backend.coordinator
        hosts = list(limits.allowed_hosts)
        if auth is not None:
            hosts.append(urlsplit(auth.resource).netloc)  # the public name clients use for the resource
        self.policy = OriginPolicy(limits.allowed_origins, hosts, bind_host, tokens_checked=auth is not None)
        self.keepalive = KeepaliveTicker(limits.keepalive_interval)
        self._closing = False
        self._closed = False
        serving = Serving(self.servers, self.coordinator, settings, self.keepalive, self.clock)
        self.directory: SessionDirectory = directory_for(self.sessions, self.events, serving)
        scopes = ScopeCheck(auth) if auth is not None else None
        self._stateless = HttpStatelessEndpoint(
            server=self.server,
            servers=self.servers,
            settings=settings,
            keepalive=self.keepalive,
            closing=self._is_closing,
            scopes=scopes,
        )
        session_endpoint = HttpSessionEndpoint(
            self.directory,
            self.coordinator,
            settings=settings,
            closing=self._is_closing,
            scopes=scopes,
        )
        legacy_paths = settings.legacy_paths
        self.legacy_sse: LegacySseEndpoint | None = (
            None
            if legacy_paths is None
            else LegacySseEndpoint(
                self.directory,
                self.coordinator,
                limits=limits,
                paths=legacy_paths,
                closing=self._is_closing,
                scopes=scopes,
            )
        )
        endpoint: ASGIApp = McpRouter(session_endpoint, self._stateless, self.path, self.legacy_sse)
        if auth is not None:  # bearer tokens checked before anything else of the endpoint
            guarded = () if legacy_paths is None else (legacy_paths.stream, legacy_paths.messages)
            endpoint = BearerMiddleware(endpoint, auth, self.path, also=guarded)
        self.auth = auth
        self._stack: ASGIApp = OriginHostMiddleware(endpoint, self.policy)
        if auth is not None and auth.authorization_routes is not None:
            # An authorization server of our own (the OAuth proxy): its pages are visited by browsers
            # (Origin: our own site), so it sits outside the Origin check, with defences of its own.
            self._stack = auth.authorization_routes(self._stack)
        # Telemetry (engine/observe.py): the server's observer, or a factory's (one whose servers
        # have telemetry: telemetry.setup.Instrumented) for the peer, the trace headers, refusals.
        self.observer: Observer | None = (
            self.server.observer if self.server is not None else getattr(self.on_session, "observer", None)
        )
        if self.observer is not None:
            self._stack = ObservedHttp(self._stack, self.observer, self.policy)

    @property
    def http_app(self) -> ASGIApp:
        """What the app runs for an ``http`` scope (its endpoint behind the Origin/Host check,
        bearer tokens and telemetry): for a server that hands it nothing else (the fast path),
        one call fewer per request."""
        return self._stack

    @property
    def live_sessions(self) -> Mapping[str, LiveSession]:
        """The sessions this process serves now, by id (read-only)."""
        return self.directory.live

    @property
    def inflight(self) -> int:
        """Requests in flight across all sessions of this process, and stateless ones."""
        return self._stateless.inflight + sum(live.transport.inflight for live in self.directory.live.values())

    def _is_closing(self) -> bool:
        return self._closing

    # --- ASGI entry ----------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._stack(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.start()
                except Exception as error:  # (the ASGI server reports it and does not serve)
                    await send({"type": "lifespan.startup.failed", "message": str(error)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- mounted in another app: its lifespan runs ours -------------------------------

    async def __aenter__(self) -> McpHttpApp:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.shutdown()

    @asynccontextmanager
    async def lifespan(self, parent: object = None) -> AsyncIterator[None]:
        """``start`` on entry, ``shutdown`` on exit: the ``lifespan=`` of a Starlette or FastAPI
        app this one is mounted in (``parent``, which they pass, is not used)."""
        async with self:
            yield

    # --- what runs beside the requests ---------------------------------------------------

    async def start(self) -> None:
        """Start the backend (``StoreUnavailable`` when it cannot be reached), then what its
        coordinator runs beside the requests. ``McpHttpServer.bind`` calls it, and so does the
        ASGI lifespan's startup; without it, the coordinator starts with the first session this
        process serves."""
        if not self._closing:
            await self.backend.start()
            await self.coordinator.start(self.directory.find)

    async def reap_expired(self) -> int:
        """End every session past its idle timeout or lifetime (by ``clock``); returns how many."""
        return await self.directory.reap_expired()

    async def reap_dead_workers(self) -> list[str]:
        """Fail the requests of other workers that died (``Coordinator.reap_dead_workers``)."""
        return await self.coordinator.reap_dead_workers()

    # --- shutdown --------------------------------------------------------------------

    async def shutdown(self, deadline: float | None = None) -> None:
        """Refuse new sessions and requests, let in-flight ones finish within
        ``deadline`` seconds (``shutdown_deadline`` by default), then end every
        stream and session (with a shared store, hand them to the other workers),
        stop the coordinator, clean up the server-scoped providers and close the backend."""
        if self._closed:
            return
        self._closing = True
        wait = self.limits.shutdown_deadline if deadline is None else deadline
        loop = asyncio.get_running_loop()
        until = loop.time() + wait
        # Polling only happens during shutdown; the request path stays free of bookkeeping.
        while self.inflight and loop.time() < until:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        self._closed = True
        await self.servers.aclose()
        try:
            await self.directory.shutdown()
            self.keepalive.close()
            await self.coordinator.stop()
            if self.servers.one is not None:  # (a factory's servers end with their sessions)
                await self.servers.one.close_server_scope()
        finally:
            await self.backend.close()
