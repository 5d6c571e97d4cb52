"""The ASGI application that owns an MCP endpoint: its stack, its lifespan, its shutdown.

>>> app = McpHttpApp(server, path="/mcp")  # doctest: +SKIP
>>> # uvicorn.run(app) or Starlette(routes=[Mount("/mcp", app=McpHttpApp(server))])

The app is a stack, Starlette style, configured once in the constructor::

    OriginHostMiddleware       Host and Origin (400/403)        security.py
     (BearerMiddleware         bearer tokens (401/403), RFC 9728 metadata: with auth=   bearer.py)
      McpRouter                path, method, version: route()   router.py
        HttpSessionEndpoint    POST/GET/DELETE on sessions      session_endpoint.py
          SessionDirectory     find/open/end/expire sessions    directory.py
          Coordinator          other workers (none by default)  stores/coordination.py
          SseTransport         a session's streams              transport.py
        LegacySseEndpoint      2024-11-05 streams and POSTs     legacy_sse.py
          (the same SessionDirectory, Coordinator and SseTransport)
        HttpStatelessEndpoint  2026-07-28 POSTs                 stateless_endpoint.py
          StatelessTransport   one request's stream             stateless_transport.py

Every layer reads the request's headers from one ``McpRequest`` (request.py),
made once. One ``McpServer`` serves every session, unless ``on_session``
builds one per session; then the 2026-07-28 requests, which have no session,
are all served by one more server it builds on the first of them
(``stateless_endpoint.py`` says why).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeAlias
from urllib.parse import urlsplit

from ...auth.resource import ResourceServer
from ...engine.memory_stores import MemoryTaskStore
from ...engine.server import McpServer
from ...engine.stores import EventLog, SessionStore
from ...engine.tasks import TaskRuntime
from ...stores.coordination import Coordinator, LocalCoordinator
from ...stores.memory import MemoryEventLog, MemorySessionStore
from .asgi import ASGIApp, Receive, Scope, Send
from .bearer import BearerMiddleware, ScopeCheck
from .directory import LiveSession, Serving, SessionDirectory, directory_for
from .legacy_sse import LegacyPaths, LegacySseEndpoint
from .limits import DEFAULT_LIMITS, HttpLimits
from .router import McpRouter
from .security import OriginHostMiddleware, OriginPolicy
from .session_endpoint import HttpSessionEndpoint
from .sessions import Clock
from .stateless_endpoint import HttpStatelessEndpoint
from .streams import KeepaliveTicker

__all__ = ["LiveSession", "McpHttpApp", "SessionFactory"]

logger = logging.getLogger("mcp_sse_server.http")

SessionFactory: TypeAlias = Callable[[], McpServer | Awaitable[McpServer]]
"""Returns a fresh McpServer (or an awaitable of one) for each initialize."""


class McpHttpApp:
    """ASGI app serving MCP Streamable HTTP: ``server`` serves every session.

    ``on_session`` (instead of ``server``) builds a server per session, for
    servers that keep per-client state in the server object; it costs the
    registries and validators once per session. Requests of the stateless
    revision (2026-07-28) have no session: one server ``on_session`` builds
    on the first of them serves them all. ``path`` restricts the
    endpoint to one path (None serves whatever path it is mounted at).
    ``bind_host`` is the address the server listens on (its name is accepted
    in Host). ``session_store`` and ``event_log`` keep session records and
    stream events (in process by default). ``clock`` (seconds) drives session
    expiry and is injectable for tests. ``coordinator`` is how this process
    works with others serving the same sessions (``stores.RedisStores``
    builds one; by default there are none). ``json_response`` answers a
    request whose reply goes out whole with ``application/json`` instead of
    one SSE event, and accepts clients whose Accept takes JSON only. ``auth``
    makes the endpoint a protected resource (``auth.ResourceServer``): every
    request needs a bearer token its verifier accepts, and the protected-resource
    metadata is served beside the endpoint. ``legacy_sse`` serves the HTTP+SSE
    transport of revision 2024-11-05 beside Streamable HTTP (``legacy_sse.py``):
    its stream at ``/sse`` and on a session-less GET of the endpoint, its
    messages at ``/messages/`` (a ``LegacyPaths`` moves them; False: not served,
    and a session-less GET is 400).
    """

    def __init__(
        self,
        server: McpServer | SessionFactory | None = None,
        *,
        on_session: SessionFactory | None = None,
        path: str | None = None,
        limits: HttpLimits = DEFAULT_LIMITS,
        bind_host: str | None = None,
        session_store: SessionStore | None = None,
        event_log: EventLog | None = None,
        clock: Clock = time.monotonic,
        coordinator: Coordinator | None = None,
        json_response: bool = False,
        auth: ResourceServer | None = None,
        legacy_sse: bool | LegacyPaths = True,
    ) -> None:
        if server is not None and not isinstance(server, McpServer):
            if on_session is not None or not callable(server):
                raise TypeError("McpHttpApp takes an McpServer, or on_session=a function that builds one")
            server, on_session = None, server  # the 0.1 spelling: McpHttpApp(factory)
        if (server is None) == (on_session is None):
            raise TypeError("McpHttpApp takes an McpServer or on_session=..., not both and not neither")
        self.server = server
        self.on_session = on_session
        self.path = path
        self.limits = limits
        self.json_response = json_response
        self.sessions: SessionStore = session_store if session_store is not None else MemorySessionStore()
        self.events: EventLog = (
            event_log
            if event_log is not None
            else MemoryEventLog(
                limits.backlog_limit,
                limits.replay_buffer_size,
                ended_streams_kept=limits.ended_streams_kept,
                clock=clock,
            )
        )
        self.clock = clock
        self.coordinator: Coordinator = coordinator if coordinator is not None else LocalCoordinator()
        hosts = list(limits.allowed_hosts)
        if auth is not None:
            hosts.append(urlsplit(auth.resource).netloc)  # the public name clients use for the resource
        self.policy = OriginPolicy(limits.allowed_origins, hosts, bind_host, tokens_checked=auth is not None)
        self.keepalive = KeepaliveTicker(limits.keepalive_interval)
        self._closing = False
        self._closed = False
        self._tasks: TaskRuntime | None = None  # shared by the servers on_session makes
        serving = Serving(self._server_for_session, self.coordinator, limits, self.keepalive, clock, json_response)
        self.directory: SessionDirectory = directory_for(self.sessions, self.events, serving)
        scopes = ScopeCheck(auth) if auth is not None else None
        self._stateless = HttpStatelessEndpoint(
            server=server,
            servers=self._server_for_session,
            limits=limits,
            keepalive=self.keepalive,
            closing=self._is_closing,
            json_response=json_response,
            scopes=scopes,
        )
        session_endpoint = HttpSessionEndpoint(
            self.directory,
            self.coordinator,
            limits=limits,
            closing=self._is_closing,
            json_response=json_response,
            scopes=scopes,
        )
        legacy_paths = LegacyPaths() if legacy_sse is True else legacy_sse or None
        if legacy_paths is not None and path in (legacy_paths.stream, legacy_paths.messages):
            raise ValueError(f"the endpoint's path {path!r} is one of the 2024-11-05 transport's paths")
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
        endpoint: ASGIApp = McpRouter(session_endpoint, self._stateless, path, self.legacy_sse)
        if auth is not None:  # bearer tokens checked before anything else of the endpoint
            guarded = () if legacy_paths is None else (legacy_paths.stream, legacy_paths.messages)
            endpoint = BearerMiddleware(endpoint, auth, path, also=guarded)
        self.auth = auth
        self._stack: ASGIApp = OriginHostMiddleware(endpoint, self.policy)

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

    async def _server_for_session(self) -> McpServer:
        if self.server is not None:
            return self.server
        assert self.on_session is not None
        server = self.on_session()
        if inspect.isawaitable(server):
            server = await server
        if not isinstance(server, McpServer):
            raise TypeError(f"on_session returned {type(server).__name__}, not an McpServer")
        if not server.has_task_runtime:
            # The servers of the sessions and the stateless requests' one share a task runtime:
            # a task started through one is read, answered and cancelled through another.
            if self._tasks is None:
                self._tasks = TaskRuntime(MemoryTaskStore())
            server.use_shared(tasks=self._tasks)
        return server

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
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- what runs beside the requests ---------------------------------------------------

    async def start(self) -> None:
        """Start what the coordinator runs beside the requests (``McpHttpServer.bind`` calls it;
        without it, it starts with the first session this process serves)."""
        if not self._closing:
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
        stream and session (with a shared store, hand them to the other workers)."""
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
        tasks = self._tasks if self.server is None else (self.server.tasks if self.server.has_task_runtime else None)
        if tasks is not None:
            await tasks.aclose()  # the tasks running here end failed, not working forever (tasks.py rule 7)
        await self.directory.shutdown()
        self.keepalive.close()
        await self.coordinator.stop()
