"""What the two HTTP client transports (Streamable HTTP and the legacy
HTTP+SSE) share: the URL check, the httpx client they may own, and the
one-line texts their errors are made of."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import httpx

from ._common import ClientTransport

__all__ = ["EVENT_STREAM", "HttpClientTransport", "first_line", "http_url", "media_type", "reason"]

EVENT_STREAM: Final = "text/event-stream"


def http_url(url: str) -> httpx.URL:
    """``url`` parsed; ValueError unless it is an http(s) URL with a host."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return parsed


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


class HttpClientTransport(ClientTransport):
    """A client transport over httpx: ``headers`` go on every request, and the
    ``httpx.AsyncClient`` is created (and closed by ``close()``) unless one is given."""

    def __init__(
        self,
        headers: Mapping[str, str] | None,
        *,
        http_client: httpx.AsyncClient | None,
        connect_timeout: float,
        post_timeout: float,
    ) -> None:
        super().__init__()
        self.headers = dict(headers or {})
        self.connect_timeout = connect_timeout
        self.post_timeout = post_timeout
        self._owns_client = http_client is None
        # No read timeout: event streams stay open as long as a call (or an SSE
        # session) runs; the engine's request timeout bounds every call instead.
        self._client = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(connect=connect_timeout, read=None, write=post_timeout, pool=connect_timeout)
        )
        self._post_timeout = httpx.Timeout(post_timeout, connect=connect_timeout)

    async def _release(self) -> None:
        if self._owns_client:
            await self._client.aclose()
