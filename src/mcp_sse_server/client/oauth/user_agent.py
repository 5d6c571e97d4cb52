"""How the user authorizes: the user agent takes the authorization URL to the authorization
server and brings back the query of the redirect to ``redirect_uri``.

Rules (the digest's CL-8, CL-22 and §7.1):

1. ``redirect_uri`` is known before the authorization starts (dynamic registration sends
   it) and stays the same for every authorization of one user agent.
2. ``authorize(url)`` opens only ``http`` and ``https`` URLs, never through a shell, and
   returns the redirect's query parameters (the first value of each name; blank values
   kept) without judging them: the flow checks ``state``, ``iss``, ``error`` and ``code``.
3. ``HeadlessUserAgent`` (tests, conformance) plays a user who approves at once: it GETs the
   URL without following redirects, follows redirects that stay on the URL's origin (login
   or consent pages that redirect again) up to ``max_hops``, and stops at the first
   ``Location`` that is ``redirect_uri`` (plus a query or fragment). It never reads a body.
   An answer that is not a redirect, a redirect to another origin, or too many hops is an
   ``OAuthError``. Every request is bounded in time, and so is the whole walk.
4. ``BrowserUserAgent`` (people) listens on a loopback address (``127.0.0.1`` by default,
   port chosen by the system), binding when ``redirect_uri`` is first read. ``authorize``
   prints the URL (for machines without a browser), opens the system browser on it, and
   answers the loopback requests with a minimal HTTP/1.1 server: a GET of the callback path
   gets a small page and ends the wait; other paths get 404, and a callback whose ``state``
   is not the one the URL carries gets 400 (a page cannot end the wait with a forged
   redirect); both keep waiting. No callback within ``timeout`` seconds is an
   ``OAuthError``. The page never shows what the server sent (CL-21: an ``error`` is shown
   only once ``iss`` is checked, which is the flow's job).
5. ``CallbackUserAgent`` (applications) hands the URL to the application's coroutine,
   which returns the query parameters.
6. Neither puts the redirect's query (it carries the code) in an error or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import inspect
import ipaddress
import socket
import sys
import webbrowser
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, Protocol
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx

from .errors import OAuthError

__all__ = ["BrowserUserAgent", "CallbackUserAgent", "HeadlessUserAgent", "UserAgent"]

_REQUEST_TIMEOUT: Final = 10.0  # seconds, each HTTP request of the headless walk
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_READ_TIMEOUT: Final = 10.0  # seconds a loopback connection may take to send its request
_MAX_HEADER_LINES: Final = 100
_LINE_LIMIT: Final = 16 * 1024  # bytes in one request line or header line


class UserAgent(Protocol):
    """Takes the user to the authorization URL and returns the redirect's query (rules 1, 2)."""

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server is to send the user back."""
        ...

    async def authorize(self, url: str) -> Mapping[str, str]:
        """Run one authorization at ``url``; the query parameters of the redirect back."""
        ...

    async def aclose(self) -> None:
        """Release what the user agent holds (sockets, clients)."""
        ...


def _query(url: str) -> dict[str, str]:
    """The query parameters of ``url``, the first value of each name winning."""
    params: dict[str, str] = {}
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        params.setdefault(name, value)
    return params


def _check_http_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OAuthError("the authorization URL is not an http(s) URL; refusing to open it")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1  # a port that is not a number matches nothing
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def _is_redirect_back(location: str, redirect_uri: str) -> bool:
    """Whether ``location`` is ``redirect_uri`` plus a query or fragment: a prefix match alone
    would take ``/callback-elsewhere`` for ``/callback``."""
    if not location.startswith(redirect_uri):
        return False
    rest = location[len(redirect_uri) :]
    return rest == "" or rest[0] in "?#" or ("?" in redirect_uri and rest[0] == "&")


class HeadlessUserAgent:
    """For tests and conformance: GETs the authorization URL without following redirects and reads
    the ``Location``, as the browser of a user who approves at once would deliver it (rule 3).

    ``http`` is used if given (and left open); otherwise the agent makes its own client and
    ``aclose`` closes it.
    """

    def __init__(
        self,
        redirect_uri: str = "http://localhost:3000/callback",
        *,
        http: httpx.AsyncClient | None = None,
        max_hops: int = 5,
    ) -> None:
        parts = urlsplit(redirect_uri)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("redirect_uri must be an absolute http(s) URL")
        if max_hops < 0:
            raise ValueError("max_hops must be 0 or more")
        self._redirect_uri = redirect_uri
        self._max_hops = max_hops
        self._own_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=_REQUEST_TIMEOUT)

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> Mapping[str, str]:
        _check_http_url(url)
        # Each request is bounded by its timeout; this bounds a server that drips.
        try:
            async with asyncio.timeout(_REQUEST_TIMEOUT * (self._max_hops + 1)):
                return await self._walk(url)
        except TimeoutError:
            raise OAuthError("the authorization endpoint did not finish redirecting in time") from None

    async def _walk(self, url: str) -> Mapping[str, str]:
        origin = _origin(url)
        current = url
        for _ in range(self._max_hops + 1):
            status, location = await self._get(current)
            if status not in _REDIRECTS or location is None:
                raise OAuthError(
                    f"the authorization endpoint answered HTTP {status} instead of redirecting"
                    " back: it wants a user, and this user agent is headless"
                )
            target = urljoin(current, location)
            if _is_redirect_back(target, self._redirect_uri):
                return _query(target)
            if _origin(target) != origin:
                # The target is not shown: it may carry the code meant for another redirect URI.
                raise OAuthError(
                    "the authorization endpoint redirected to another site instead of the redirect URI"
                    f" {self._redirect_uri}"
                )
            current = target
        raise OAuthError(f"the authorization endpoint redirected more than {self._max_hops} times")

    async def _get(self, url: str) -> tuple[int, str | None]:
        try:
            # stream: the status and headers are all that is needed; a body is never read.
            async with self._http.stream("GET", url, follow_redirects=False, timeout=_REQUEST_TIMEOUT) as response:
                return response.status_code, response.headers.get("location")
        except httpx.HTTPError as exc:
            scheme, host, port = _origin(url)
            raise OAuthError(
                f"could not reach the authorization endpoint at {scheme}://{host}:{port}: {type(exc).__name__}"
            ) from None

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()


def _announce(url: str) -> None:
    print(f"Open this URL to authorize: {url}", file=sys.stderr, flush=True)


_PAGE: Final = (
    '<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head><body><p>{text}</p></body></html>'
)


def _page(title: str, text: str) -> bytes:
    return _PAGE.format(title=html.escape(title), text=html.escape(text)).encode()


_DONE: Final = _page("Authorization complete", "Authorization complete, you can close this window.")
_FAILED: Final = _page(
    "Authorization failed",
    "The authorization did not complete. You can close this window; the application says why.",
)
_NOT_FOUND: Final = _page("Not found", "Not found.")
_WRONG_STATE: Final = _page("Unexpected redirect", "This redirect does not belong to the authorization in progress.")
_NOT_ALLOWED: Final = _page("Method not allowed", "Method not allowed.")
_BAD_REQUEST: Final = _page("Bad request", "Bad request.")


class BrowserUserAgent:
    """For people: opens the system browser on the authorization URL and catches the redirect on
    a loopback port (rule 4).

    ``host`` is a loopback address (or ``localhost``, served on 127.0.0.1); ``port`` 0 lets the
    system choose; ``open_browser`` replaces ``webbrowser.open`` (it may return an awaitable,
    which is awaited); ``announce`` replaces printing the URL to stderr; ``timeout`` is how long
    one authorization may take, in seconds.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        open_browser: Callable[[str], object] | None = None,
        timeout: float = 300.0,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        if host != "localhost":
            try:
                loopback = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise ValueError("host must be a loopback address or 'localhost'")
        if not 0 <= port <= 65535:
            raise ValueError("port must be between 0 and 65535")
        if not path.startswith("/") or "?" in path or "#" in path:
            raise ValueError("path must start with '/' and have no query or fragment")
        if not timeout > 0:
            raise ValueError("timeout must be positive")
        self._host = host
        self._port = port
        self._path = path
        self._open_browser = open_browser
        self._announce = announce if announce is not None else _announce
        self._timeout = timeout
        self._socket: socket.socket | None = None
        self._redirect_uri: str | None = None
        self._closed = False
        self._busy = False

    @property
    def redirect_uri(self) -> str:
        """``http://<host>:<port><path>``; reading it first binds the listening socket, so the
        port is known before the client registers."""
        if self._redirect_uri is None:
            if self._closed:
                raise RuntimeError("this BrowserUserAgent is closed")
            self._socket = self._listen()
            port = self._socket.getsockname()[1]
            host = f"[{self._host}]" if ":" in self._host else self._host
            self._redirect_uri = f"http://{host}:{port}{self._path}"
        return self._redirect_uri

    def _listen(self) -> socket.socket:
        address = "127.0.0.1" if self._host == "localhost" else self._host
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.bind((address, self._port))
            sock.listen(16)
        except OSError as exc:
            sock.close()
            raise OAuthError(f"cannot listen on {address} port {self._port}: {exc.strerror}") from None
        sock.setblocking(False)
        return sock

    async def authorize(self, url: str) -> Mapping[str, str]:
        _check_http_url(url)
        redirect_uri = self.redirect_uri  # binds the socket if nobody asked yet
        if self._closed or self._socket is None:
            raise RuntimeError("this BrowserUserAgent is closed")
        if self._busy:
            # Two servers on one socket would each take the other's redirects.
            raise RuntimeError("this BrowserUserAgent is already waiting for an authorization")
        self._busy = True
        try:
            return await self._authorize(url, redirect_uri, self._socket)
        finally:
            self._busy = False

    async def _authorize(self, url: str, redirect_uri: str, listening: socket.socket) -> Mapping[str, str]:
        expected_state = _query(url).get("state")
        loop = asyncio.get_running_loop()
        result: asyncio.Future[dict[str, str]] = loop.create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await self._serve(reader, writer, result, expected_state)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, TimeoutError):
                pass  # a connection that broke off or misbehaved; keep waiting for the real one
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

        # A duplicate of the socket for this authorization: closing the server closes the
        # duplicate, and the bound port stays ours for the next authorization (rule 1).
        server = await asyncio.start_server(handle, sock=listening.dup(), limit=_LINE_LIMIT)
        try:
            self._announce(url)
            await self._open(url)
            try:
                async with asyncio.timeout(self._timeout):
                    return await result
            except TimeoutError:
                raise OAuthError(f"no authorization arrived at {redirect_uri} within {self._timeout:g} s") from None
        finally:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)

    async def _open(self, url: str) -> None:
        if self._open_browser is None:
            # webbrowser.open may wait for the browser it starts: off the loop. No browser at
            # all is not an error: the announced URL can be opened by hand.
            with contextlib.suppress(webbrowser.Error):
                await asyncio.to_thread(webbrowser.open, url)
            return
        outcome = self._open_browser(url)
        if inspect.isawaitable(outcome):
            await outcome

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        result: asyncio.Future[dict[str, str]],
        expected_state: str | None,
    ) -> None:
        async with asyncio.timeout(_READ_TIMEOUT):
            request_line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
            for _ in range(_MAX_HEADER_LINES):
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
            else:
                await _respond(writer, 431, "Request Header Fields Too Large", _BAD_REQUEST)
                return
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            await _respond(writer, 400, "Bad Request", _BAD_REQUEST)
            return
        method, target, _version = parts
        if urlsplit(target).path != self._path:
            await _respond(writer, 404, "Not Found", _NOT_FOUND)
            return
        if method != "GET":
            await _respond(writer, 405, "Method Not Allowed", _NOT_ALLOWED, allow="GET")
            return
        params = _query(target)
        if expected_state is not None and params.get("state") != expected_state:
            await _respond(writer, 400, "Bad Request", _WRONG_STATE)
            return
        body = _FAILED if "error" in params or "code" not in params else _DONE
        await _respond(writer, 200, "OK", body)
        if not result.done():
            result.set_result(params)

    async def aclose(self) -> None:
        self._closed = True
        if self._socket is not None:
            self._socket.close()
            self._socket = None


async def _respond(writer: asyncio.StreamWriter, status: int, reason: str, body: bytes, allow: str = "") -> None:
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\n"
        "Referrer-Policy: no-referrer\r\n" + (f"Allow: {allow}\r\n" if allow else "") + "Connection: close\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + body)
    await writer.drain()


class CallbackUserAgent:
    """For applications: hands the URL to ``on_authorize``, which returns the redirect's query
    parameters (rule 5)."""

    def __init__(self, redirect_uri: str, on_authorize: Callable[[str], Awaitable[Mapping[str, str]]]) -> None:
        self._redirect_uri = redirect_uri
        self._on_authorize = on_authorize

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> Mapping[str, str]:
        _check_http_url(url)
        return await self._on_authorize(url)

    async def aclose(self) -> None:
        pass
