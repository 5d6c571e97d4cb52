"""What the connections of the two HTTP client transports (Streamable HTTP and the legacy
HTTP+SSE) share: their options, the URL check, the httpx client they may own,
the same-origin rule for redirects, the trace headers, and the one-line texts their errors are
made of.

A message whose ``_meta`` carries W3C trace context (``traceparent``, ``tracestate``,
``baggage``: put there by the client's telemetry, ``call --traceparent`` or the caller) is
POSTed with the same values in headers of those names (``trace_headers``), for HTTP proxies
and servers that read only headers; ``_meta`` stays what the server should believe."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from ..telemetry.conventions import TRACE_META_KEYS
from ._common import ClientConnection, McpConnectionError

__all__ = [
    "EVENT_STREAM",
    "MAX_REDIRECTS",
    "HttpConnection",
    "HttpOptions",
    "first_line",
    "http_url",
    "media_type",
    "origin",
    "reason",
    "redirect_error",
    "trace_headers",
]

logger = logging.getLogger("mcp_sse_server.client")

EVENT_STREAM: Final = "text/event-stream"
# Redirects followed per request. Only 307 and 308: they keep the method and the body, where
# 301, 302 and 303 let (or make) a client turn the POST into a GET.
MAX_REDIRECTS: Final = 5
_FOLLOWED: Final = frozenset({307, 308})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpOptions:
    """How an HTTP client transport connects, as its client was configured: ``http_client``, an
    ``httpx.AsyncClient`` to use (then the caller's to close; else the transport makes one and
    closes it), the ``connect_timeout`` and ``post_timeout`` in seconds, and ``auth``, an
    ``httpx.Auth`` run on every request to the server (``client.oauth.OAuth``, say)."""

    http_client: httpx.AsyncClient | None = None
    connect_timeout: float = 10.0
    post_timeout: float = 30.0
    auth: httpx.Auth | None = None


def trace_headers(message: object, headers: dict[str, str]) -> dict[str, str]:
    """``headers``, plus the W3C trace context in ``message``'s ``_meta`` (see the module).

    >>> trace_headers(type("M", (), {"params": {"_meta": {"traceparent": "00-1-2-01"}}})(), {})
    {'traceparent': '00-1-2-01'}
    """
    params: Any = getattr(message, "params", None)
    meta = params.get("_meta") if params else None
    if not meta or "traceparent" not in meta:
        return headers
    for key in TRACE_META_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value.isascii() and value.isprintable():
            headers[key] = value
    return headers


def http_url(url: str) -> httpx.URL:
    """``url`` parsed; ValueError unless it is an http(s) URL with a host."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return parsed


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (the scheme's default when implicit): what "same origin" compares."""
    return url.scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(url.scheme)


def redirect_error(url: str | httpx.URL, what: str, response: httpx.Response) -> McpConnectionError:
    """The error for a 3xx answer that was not followed (a 301/302/303, or one without a Location)."""
    location = response.headers.get("location")
    target = f"a redirect to {location}" if location else "a redirect without a Location"
    return McpConnectionError(
        f"MCP server at {url} answered {what} with HTTP {response.status_code} ({target}); only 307 and 308 "
        "redirects to the same origin are followed (301, 302 and 303 may turn a POST into a GET): "
        "configure the client with the final URL",
        {"status": response.status_code, "location": location},
    )


def media_type(response: httpx.Response) -> str:
    """The response's content type without parameters, lower case ('' when absent)."""
    media: str = response.headers.get("content-type", "")
    return media.split(";", 1)[0].strip().lower()


def first_line(text: str) -> str:
    """The first line of ``text`` once surrounding blanks are stripped ('' for blank text)."""
    text = text.strip()
    return text.splitlines()[0] if text else ""


def reason(error: BaseException) -> str:
    """One line describing a transport failure."""
    if isinstance(error, httpx.TimeoutException):
        return f"timed out ({type(error).__name__})"
    return first_line(str(error)) or type(error).__name__


class HttpConnection(ClientConnection):
    """A client connection over httpx: ``headers`` go on every request, and the
    ``httpx.AsyncClient`` is created (and closed by ``close()``) unless ``options`` gives one."""

    def __init__(self, headers: Mapping[str, str] | None, options: HttpOptions) -> None:
        super().__init__()
        self.headers = dict(headers or {})
        self.options = options
        self.connect_timeout = connect = options.connect_timeout
        self.post_timeout = post = options.post_timeout
        self._owns_client = options.http_client is None
        # No read timeout: event streams stay open as long as a call (or an SSE
        # session) runs; the engine's request timeout bounds every call instead.
        self._client = options.http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(connect=connect, read=None, write=post, pool=connect)
        )
        self._post_timeout = httpx.Timeout(post, connect=connect)
        self._auth = options.auth

    @contextlib.asynccontextmanager
    async def _stream(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: Mapping[str, str],
        content: bytes | None = None,
        timeout: httpx.Timeout | None = None,
    ) -> AsyncIterator[httpx.Response]:
        """Send one request, as ``async with``: the response comes with its body unread
        (``await response.aread()`` reads it) and is closed when the block ends.

        A 307 or 308 answer with a Location is followed with the same method, body and
        headers, at most ``MAX_REDIRECTS`` times, when the Location (resolved against the
        request's URL) is on the same origin; ``response.url`` is then where the answer came
        from. A redirect to another origin, or one too many, is an ``McpConnectionError``:
        the headers carry the session id and whatever credentials the caller configured.
        httpx's own redirect following is off for these requests, whatever the client says.
        """
        current = httpx.URL(url)
        visited = [current]
        while True:
            request = self._client.build_request(
                method,
                current,
                headers=headers,
                content=content,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
            if self._auth is None:
                response = await self._client.send(request, stream=True, follow_redirects=False)
            else:
                response = await self._client.send(request, stream=True, follow_redirects=False, auth=self._auth)
            location = response.headers.get("location")
            if response.status_code not in _FOLLOWED or not location:
                break
            await response.aclose()
            try:
                target = current.join(location)
            except httpx.InvalidURL:
                raise McpConnectionError(
                    f"MCP server at {current} redirected {method} to an invalid Location {location!r}"
                ) from None
            if origin(target) != origin(current):
                raise McpConnectionError(
                    f"MCP server at {current} redirected {method} to {target}, on another origin; refusing to "
                    "follow it (the request's headers, its session id among them, must not go there): "
                    "configure the client with that URL if it is trusted",
                    {"status": response.status_code, "location": str(target)},
                )
            if len(visited) > MAX_REDIRECTS:
                hops = " -> ".join(str(hop) for hop in (*visited, target))
                raise McpConnectionError(
                    f"MCP server at {visited[0]} redirected {method} more than {MAX_REDIRECTS} times "
                    f"(a redirect loop?): {hops}",
                    {"status": response.status_code, "location": str(target)},
                )
            logger.debug("%s %s: HTTP %s to %s", method, current, response.status_code, target)
            visited.append(target)
            current = target
        try:
            yield response
        finally:
            await response.aclose()

    async def _release(self) -> None:
        if self._owns_client:
            await self._client.aclose()
