"""McpHttpServer: serve an MCP endpoint on a real socket with uvicorn.

>>> http = await McpHttpServer.bind(server, port=8080)  # doctest: +SKIP
>>> print(http.endpoint)  # http://127.0.0.1:8080/mcp  # doctest: +SKIP
>>> await http.close()  # doctest: +SKIP

``bind`` takes what is served (a server, or a factory of one per session), where
(``host``, ``port``, ``ssl``), how (``settings``: an ``HttpSettings``) and with
what (``backend``: every store, see ``engine/stores.py``); ``on_socket`` serves
an ``McpHttpApp`` on a socket already listening (worker processes sharing the
port their parent bound).

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
import ssl as _ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..loop import run_loop
from .app import McpHttpApp, SessionFactory
from .listener import Listener
from .security import is_loopback_host
from .settings import DEFAULT_SETTINGS, HttpSettings

if TYPE_CHECKING:
    import uvicorn

    from ...engine.server import McpServer
    from ...engine.stores import Backend

__all__ = ["McpHttpServer", "serve", "server_ssl_context"]

logger = logging.getLogger("mcp_sse_server.http")

DEFAULT_PATH = "/mcp"
"""Where ``bind`` serves the endpoint when the settings name no path."""


def _protocol_options(app: McpHttpApp) -> dict[str, Any]:
    """uvicorn.Config's HTTP protocol options: ours with every connection limit (see connections.py),
    with the fast path for the endpoint unless the settings turn it off (fast_protocol.py)."""
    limits = app.limits
    observer = app.observer
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
    from .fast_protocol import fast_protocol_class

    path = app.path
    fast = app.settings.fast_path and path is not None and path.isascii() and "%" not in path
    # No limit_concurrency here: connections.py decides at accept, shedding an idle connection before it
    # refuses. uvicorn's own limit is checked later, when each request's head is complete, against all
    # open connections: with it at max_connections, the request of a connection just admitted by shedding
    # (the set full again, itself included) would get uvicorn's plain-text 503. The h11 fallback above
    # keeps it, without shedding.
    return {
        "http": fast_protocol_class(limits, app.http_app, path, observer)
        if fast and path
        else protocol_class(limits, observer),
        # uvicorn's own timer after a response; the watchdog enforces the same timeout for every idle connection.
        "timeout_keep_alive": math.ceil(limits.connection_idle_timeout),
    }


def is_wildcard_host(host: str) -> bool:
    """True when ``host`` means every interface (``0.0.0.0``, ``::``, or empty)."""
    return host in ("", "0.0.0.0", "::", "[::]")


def _check_exposure(host: str, settings: HttpSettings) -> None:
    """ValueError when listening on ``host`` would expose an endpoint nothing guards beyond this machine."""
    loopback = not is_wildcard_host(host) and is_loopback_host(host)
    if not loopback and not settings.limits.allowed_origins and settings.auth is None:
        raise ValueError(
            f"Listening on {host or 'all interfaces'} exposes the server beyond this machine: give "
            "HttpSettings(auth=...) (bearer tokens checked: auth.ResourceServer), or "
            "HttpLimits(allowed_origins=...) (the browser origins allowed to connect) with authentication in front"
        )


def server_ssl_context(certfile: str, keyfile: str | None = None) -> _ssl.SSLContext:
    """A server's TLS context from a PEM certificate chain and its key (in ``certfile`` when
    ``keyfile`` is None), for ``bind(..., ssl=...)``. OSError or ``ssl.SSLError`` when they
    cannot be loaded."""
    context = _ssl.create_default_context(_ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile, keyfile)
    return context


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
        server: McpServer | SessionFactory,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl: _ssl.SSLContext | None = None,
        settings: HttpSettings = DEFAULT_SETTINGS,
        backend: Backend | None = None,
    ) -> McpHttpServer:
        """Listen on ``host:port`` (0 picks a free port) and serve MCP there.

        ``server`` serves every session; a factory instead (any callable that
        is not an ``McpServer``) is called once per initialize and returns the
        ``McpServer`` (or an awaitable of one) for that session. ``ssl`` (an
        ``ssl.SSLContext``: ``server_ssl_context(certfile, keyfile)`` loads one)
        serves HTTPS. ``settings`` (an ``HttpSettings``) is how the endpoint is
        served: its path (``/mcp`` unless it names one), every limit, JSON
        replies, the 2024-11-05 transport, authorization. ``backend`` keeps the
        sessions, stream events, tasks and event bus, in this process unless
        given (``stores.backend_from_url("redis://...")``: several workers or
        hosts sharing sessions); the endpoint owns it, starts it here and closes
        it with ``close()``.

        Binding beyond loopback requires ``settings.auth`` or
        ``limits.allowed_origins`` (ValueError). Raises OSError when the
        address cannot be bound, ``StoreUnavailable`` when the backend cannot
        be reached.
        """
        try:
            if not isinstance(settings, HttpSettings):
                raise TypeError(f"settings must be an HttpSettings, not {type(settings).__name__}")
            if settings.path is None:
                settings = settings.with_changes(path=DEFAULT_PATH)
            _check_exposure(host, settings)
            app = McpHttpApp(server, settings=settings, backend=backend, bind_host=host)
        except BaseException:
            if backend is not None:
                await backend.close()  # given to the endpoint, which never came to own it
            raise
        try:
            sock = _listen(host, port)
        except BaseException:
            await app.shutdown(0)  # the backend is the app's: closed with it
            raise
        return await cls.on_socket(app, sock, ssl=ssl)

    @classmethod
    async def on_socket(
        cls, app: McpHttpApp, sock: socket.socket, *, ssl: _ssl.SSLContext | None = None
    ) -> McpHttpServer:
        """Serve ``app`` on ``sock``, a socket already listening (worker processes serving the
        socket their parent bound, or one each on its port: ``listening_socket``). The app's
        ``bind_host`` (else the socket's address) decides the endpoint's URL; the socket is closed
        with the server, or at once if this fails."""
        try:
            if ssl is not None and not isinstance(ssl, _ssl.SSLContext):
                raise TypeError(f"ssl must be an ssl.SSLContext (server_ssl_context makes one), not {ssl!r}")
            host = app.bind_host if app.bind_host is not None else sock.getsockname()[0]
            _check_exposure(host, app.settings)
            sock.setblocking(False)
            # Imported here so embedders of the ASGI app or SseTransport never load uvicorn.
            import uvicorn

            await app.start()
            config = uvicorn.Config(
                app,
                **_protocol_options(app),
                ws="none",
                lifespan="off",
                interface="asgi3",
                access_log=False,
                log_config=None,
                proxy_headers=False,
                server_header=False,
                date_header=False,
                timeout_graceful_shutdown=int(max(1.0, app.limits.shutdown_deadline)),
            )
            config.load()
            # uvicorn builds its own context from files; ours (or the caller's) is used as is.
            config.ssl = ssl
            uvicorn_server = uvicorn.Server(config)
            uvicorn_server.lifespan = config.lifespan_class(config)
            await uvicorn_server.startup(sockets=[])  # uvicorn listens on nothing: the Listener accepts

            def protocol() -> asyncio.Protocol:
                # What uvicorn's own startup() makes per connection (uvicorn 0.54, the pinned range).
                return config.http_protocol_class(  # type: ignore[call-arg, unused-ignore]
                    config=config, server_state=uvicorn_server.server_state, app_state=uvicorn_server.lifespan.state
                )

            listener = Listener(sock, protocol, ssl)
        except BaseException:
            sock.close()
            await app.shutdown(0)  # stop what the backend and its coordinator started: nothing was served
            raise
        bound_port = sock.getsockname()[1]
        endpoint = endpoint_url(host, bound_port, app.path or DEFAULT_PATH, tls=ssl is not None)
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
    """A listening socket on ``host:port`` (0: a free port) for ``McpHttpServer.on_socket``: bound once
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
    server: McpServer | SessionFactory,
    *,
    on_listening: Callable[[McpHttpServer], Any] | None = None,
    on_stopping: Callable[[], Any] | None = None,
    **bind_options: Any,
) -> None:
    """Serve ``server`` over HTTP from a script, in one call: a new event loop (uvloop when it
    is installed), ``McpHttpServer.bind(server, **bind_options)`` (``host``, ``port``, ``ssl``,
    ``settings``, ``backend``), then ``serve_forever()``.

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
