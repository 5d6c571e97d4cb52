"""McpHttpServer: serve an MCP endpoint on a real socket with uvicorn.

>>> http = await McpHttpServer.bind(server, port=8080)  # doctest: +SKIP
>>> print(http.endpoint)  # http://127.0.0.1:8080/mcp  # doctest: +SKIP
>>> await http.close()  # doctest: +SKIP

uvicorn runs in the caller's event loop (use uvloop for the loop when you
own it: ``uvloop.run(main())``) with the httptools parser, no access log, no
Server/Date headers, no signal handlers of its own. The connection limits of
``HttpLimits`` (head size and count, read and idle timeouts, the connection
cap) are enforced by the protocol class of ``connections.py``; connections are
accepted by ``listener.py`` (every pending one at each wake-up, which uvloop's
own server does not do).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import signal
import socket
import ssl
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..loop import run_loop
from .app import McpHttpApp, SessionFactory
from .legacy_sse import LegacyPaths
from .limits import DEFAULT_LIMITS, HttpLimits
from .listener import Listener
from .security import is_loopback_host
from .sessions import Clock

if TYPE_CHECKING:
    import uvicorn

    from ...auth.resource import ResourceServer
    from ...engine.server import McpServer
    from ...engine.stores import EventLog, SessionStore
    from ...stores.coordination import Coordinator
    from ...stores.redis_routing import WorkerMesh

__all__ = ["McpHttpServer", "serve"]

logger = logging.getLogger("mcp_sse_server.http")


def _protocol_options(limits: HttpLimits) -> dict[str, Any]:
    """uvicorn.Config's HTTP protocol options: ours with every connection limit (see connections.py)."""
    try:
        import httptools  # noqa: F401
    except ImportError:  # pragma: no cover - PyPy and friends: h11 caps the head itself; no read timeouts
        return {
            "http": "h11",
            "h11_max_incomplete_event_size": limits.max_header_bytes,
            "limit_concurrency": limits.max_connections,
            "timeout_keep_alive": math.ceil(limits.connection_idle_timeout),
        }
    from .connections import protocol_class

    # No limit_concurrency here: connections.py decides at accept, shedding an idle connection before it
    # refuses. uvicorn's own limit is checked later, when each request's head is complete, against all
    # open connections: with it at max_connections, the request of a connection just admitted by shedding
    # (the set full again, itself included) would get uvicorn's plain-text 503. The h11 fallback above
    # keeps it, without shedding.
    return {
        "http": protocol_class(limits),
        # uvicorn's own timer after a response; the watchdog enforces the same timeout for every idle connection.
        "timeout_keep_alive": math.ceil(limits.connection_idle_timeout),
    }


def is_wildcard_host(host: str) -> bool:
    """True when ``host`` means every interface (``0.0.0.0``, ``::``, or empty)."""
    return host in ("", "0.0.0.0", "::", "[::]")


class McpHttpServer:
    """A running MCP endpoint. Make one with ``await McpHttpServer.bind(...)``."""

    def __init__(self, app: McpHttpApp, server: uvicorn.Server, listener: Listener, endpoint: str, port: int) -> None:
        self.app = app
        self.endpoint = endpoint
        self.port = port
        self._server = server
        self._listener = listener
        self._socket = listener.sock
        self._closed = False

    @classmethod
    async def bind(
        cls,
        server: McpServer | SessionFactory | None = None,
        *,
        on_session: SessionFactory | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/mcp",
        limits: HttpLimits = DEFAULT_LIMITS,
        ssl_context: ssl.SSLContext | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
        session_store: SessionStore | None = None,
        event_log: EventLog | None = None,
        clock: Clock = time.monotonic,
        coordinator: Coordinator | None = None,
        router: WorkerMesh | None = None,
        json_response: bool = False,
        auth: ResourceServer | None = None,
        legacy_sse: bool | LegacyPaths = True,
        sock: socket.socket | None = None,
        **overrides: Any,
    ) -> McpHttpServer:
        """Listen on ``host:port`` (0 picks a free port) and serve MCP at ``path``.

        ``server`` serves every session; ``on_session`` (instead) is called
        once per initialize and returns the ``McpServer`` (or an awaitable of
        one) for that session. ``limits`` (an ``HttpLimits``, which documents
        each limit and its default) sets every limit; a field name given as a
        keyword overrides that field, so ``bind(..., max_sessions=10)`` is
        ``limits=limits.with_changes(max_sessions=10)``. An unknown keyword is
        a TypeError.

        TLS: pass an ``ssl.SSLContext`` or ``certfile`` (and ``keyfile``).
        Binding beyond loopback requires ``allowed_origins`` (ValueError).
        Raises OSError when the address cannot be bound.

        ``json_response`` answers a request whose reply goes out whole with
        ``application/json`` instead of one SSE event, and ``auth`` (an
        ``auth.ResourceServer``) makes the endpoint a protected resource
        (``McpHttpApp``). ``legacy_sse`` also serves the HTTP+SSE transport of
        revision 2024-11-05 (``/sse`` and ``/messages/`` unless a ``LegacyPaths``
        says otherwise; False: not at all).

        Several workers or hosts sharing sessions: pass ``session_store``,
        ``event_log``, ``coordinator`` and ``clock`` from
        ``stores.RedisStores.from_url(url).bind_options()`` (``router``, a
        ``WorkerMesh``, is the older spelling of ``coordinator``). ``sock``: an
        already listening socket to serve instead of binding ``host:port``
        (worker processes sharing the socket their parent bound; ``host``
        still decides the endpoint's URL and the Host check).
        """
        if overrides:
            limits = _with_overrides(limits, overrides)
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', not {path!r}")
        loopback = not is_wildcard_host(host) and is_loopback_host(host)
        if not loopback and not limits.allowed_origins and auth is None:
            raise ValueError(
                f"Listening on {host or 'all interfaces'} exposes the server beyond this machine: pass auth= "
                "(bearer tokens checked: auth.ResourceServer), or allowed_origins (the browser origins allowed "
                "to connect) with authentication in front"
            )
        if ssl_context is not None and (certfile or keyfile):
            raise ValueError("pass either ssl_context or certfile/keyfile, not both")
        if keyfile and not certfile:
            raise ValueError("keyfile needs certfile")
        if certfile:
            ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_context.load_cert_chain(certfile, keyfile)

        app = McpHttpApp(
            server,
            on_session=on_session,
            path=path,
            limits=limits,
            bind_host=host,
            session_store=session_store,
            event_log=event_log,
            clock=clock,
            coordinator=_coordinator(coordinator, router, session_store, event_log, limits),
            json_response=json_response,
            auth=auth,
            legacy_sse=legacy_sse,
        )
        # Imported here so embedders of the ASGI app or SseTransport never load uvicorn.
        import uvicorn

        if sock is None:
            sock = _listen(host, port)
        else:
            sock.setblocking(False)
        try:
            await app.start()
            config = uvicorn.Config(
                app,
                **_protocol_options(limits),
                ws="none",
                lifespan="off",
                interface="asgi3",
                access_log=False,
                log_config=None,
                proxy_headers=False,
                server_header=False,
                date_header=False,
                timeout_graceful_shutdown=int(max(1.0, limits.shutdown_deadline)),
            )
            config.load()
            # uvicorn builds its own context from files; ours (or the caller's) is used as is.
            config.ssl = ssl_context
            uvicorn_server = uvicorn.Server(config)
            uvicorn_server.lifespan = config.lifespan_class(config)
            await uvicorn_server.startup(sockets=[])  # uvicorn listens on nothing: the Listener accepts

            def protocol() -> asyncio.Protocol:
                # What uvicorn's own startup() makes per connection (uvicorn 0.54, the pinned range).
                return config.http_protocol_class(  # type: ignore[call-arg, unused-ignore]
                    config=config, server_state=uvicorn_server.server_state, app_state=uvicorn_server.lifespan.state
                )

            listener = Listener(sock, protocol, ssl_context)
        except BaseException:
            sock.close()
            await app.shutdown(0)  # stop what the coordinator started: nothing was served
            raise
        bound_port = sock.getsockname()[1]
        endpoint = endpoint_url(host, bound_port, path, tls=ssl_context is not None)
        return cls(app, uvicorn_server, listener, endpoint, bound_port)

    async def close(self, deadline: float | None = None) -> None:
        """Stop accepting, let in-flight requests finish (``shutdown_deadline``),
        end every stream and session, and close the connections."""
        if self._closed:
            return
        self._closed = True
        server = self._server
        self._listener.close()
        await self.app.shutdown(deadline)
        loop = asyncio.get_running_loop()
        until = loop.time() + 1.0
        connections = server.server_state.connections
        for connection in list(connections):
            connection.shutdown()
        while connections and loop.time() < until:  # noqa: ASYNC110 - uvicorn offers no event for it
            await asyncio.sleep(0.005)
        for connection in list(connections):
            transport: Any = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
        self._socket.close()

    async def serve_forever(
        self,
        *,
        on_stopping: Callable[[], Any] | None = None,
        signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM),
    ) -> None:
        """Serve until SIGINT or SIGTERM (or until this task is cancelled), then ``close()``.

        ``on_stopping`` runs when the first signal arrives; a second signal stops
        waiting for the graceful close. Where the loop cannot take signal handlers
        (Windows), Ctrl-C arrives as KeyboardInterrupt instead. ``signals``: the
        signals that stop it (a worker process whose parent handles Ctrl-C takes SIGTERM only).
        """
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        main_task = asyncio.current_task()

        def on_signal() -> None:
            if stop.is_set() and main_task is not None:
                main_task.cancel()  # a second signal: stop waiting for the graceful close
            stop.set()

        installed: list[signal.Signals] = []
        for number in signals:
            try:
                loop.add_signal_handler(number, on_signal)
                installed.append(number)
            except (NotImplementedError, RuntimeError):
                pass
        try:
            await stop.wait()
            if on_stopping is not None:
                on_stopping()
        finally:
            try:
                await self.close()
            finally:
                for number in installed:
                    loop.remove_signal_handler(number)

    async def __aenter__(self) -> McpHttpServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"McpHttpServer({self.endpoint})"


def _coordinator(
    coordinator: Coordinator | None,
    mesh: WorkerMesh | None,
    sessions: SessionStore | None,
    events: EventLog | None,
    limits: HttpLimits,
) -> Coordinator | None:
    """The app's coordinator, also from the older ``router=`` (a ``WorkerMesh``) spelling."""
    if mesh is None:
        return coordinator
    if coordinator is not None:
        raise TypeError("pass coordinator= or router=, not both")
    if sessions is None or events is None:
        raise TypeError("router= needs the shared session_store and event_log it routes for")
    return mesh.coordinator(events, sessions, stream_log_grace=limits.stream_log_grace)


def _with_overrides(limits: HttpLimits, overrides: dict[str, Any]) -> HttpLimits:
    """``limits`` with the keyword overrides of ``bind`` applied (validated again); TypeError for a stranger."""
    known = HttpLimits.__dataclass_fields__
    unknown = sorted(name for name in overrides if name not in known)
    if unknown:
        raise TypeError(
            f"McpHttpServer.bind() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"the limits it takes are the fields of HttpLimits: {', '.join(known)}"
        )
    return limits.with_changes(**overrides)


def _url_host(host: str) -> str:
    if is_wildcard_host(host):
        return "127.0.0.1" if host != "::" else "[::1]"
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]"
    except ValueError:
        pass
    return host


def endpoint_url(host: str, port: int, path: str, *, tls: bool = False) -> str:
    """The URL clients use for an endpoint listening on ``host:port`` (a wildcard host: loopback)."""
    return f"{'https' if tls else 'http'}://{_url_host(host)}:{port}{path}"


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening socket on ``host:port`` (0: a free port) for ``bind(sock=...)``: bound once
    by a parent process, served by the worker processes that inherit it; or, ``reuse_port``
    (``SO_REUSEPORT``, Linux), one per worker on the same port, among which the kernel spreads
    new connections evenly. OSError as ``bind``."""
    return _listen(host, port, reuse_port=reuse_port)


def reserved_socket(host: str, port: int) -> socket.socket:
    """``host:port`` (0: a free port) bound with ``SO_REUSEPORT`` but not listening: it holds the
    port (and fails as ``bind`` would) while each worker listens on it with a socket of its own
    (``listening_socket(..., reuse_port=True)``); it takes no connection itself."""
    return _listen(host, port, reuse_port=True, listen=False)


def _listen(host: str, port: int, *, reuse_port: bool = False, listen: bool = True) -> socket.socket:
    """A listening socket; OSError (address in use, say) surfaces to the caller."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6 and is_wildcard_host(host):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        if listen:
            sock.listen(2048)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def serve(
    server: McpServer | SessionFactory | None = None,
    *,
    on_listening: Callable[[McpHttpServer], Any] | None = None,
    on_stopping: Callable[[], Any] | None = None,
    **bind_options: Any,
) -> None:
    """Serve ``server`` over HTTP from a script, in one call: a new event loop (uvloop when it
    is installed), ``McpHttpServer.bind(server, **bind_options)``, then ``serve_forever()``.

    >>> serve(server, port=8080, on_listening=lambda http: print(http.endpoint))  # doctest: +SKIP

    ``on_listening`` runs once the socket is bound, ``on_stopping`` when the first
    signal arrives. Errors from ``bind`` (OSError,
    ValueError) propagate; a second signal during the graceful close raises
    ``asyncio.CancelledError``.
    """

    async def main() -> None:
        http = await McpHttpServer.bind(server, **bind_options)
        if on_listening is not None:
            on_listening(http)
        await http.serve_forever(on_stopping=on_stopping)

    run_loop(main())


def run_http(server: McpServer, **bind_options: Any) -> None:
    """``server.run("http", ...)``: ``serve`` with the endpoint and the shutdown said on stderr."""
    import sys

    def listening(http: McpHttpServer) -> None:
        print(f"Serving {server.name} at {http.endpoint}", file=sys.stderr, flush=True)

    try:
        serve(server, on_listening=listening, **bind_options)
    except asyncio.CancelledError:  # a second signal during the graceful close
        pass
