"""The legacy HTTP+SSE transport (revision 2024-11-05), for servers that still speak it
(``SseClientTransport``; ``SseClient`` is an McpClient over it).

The client GETs an event stream; the server's first event, ``endpoint``,
names the URL to POST messages to (resolved against the stream URL and
refused when it points at another origin, so a server cannot make us send
its session's traffic elsewhere). Everything the server sends, responses
included, arrives as ``message`` events on that one stream; when it ends, the
session is over and pending calls fail. The stream's GET and the POSTs follow
307 and 308 redirects to the same origin, as ``StreamableHttpClient`` does
(the endpoint event is then resolved against where the stream came from).

>>> async def demo() -> None:  # doctest: +SKIP
...     async with SseClient("http://127.0.0.1:8000/sse") as client:
...         print(await client.list_tools())
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import httpx

from ..engine.jsonrpc import (
    CONNECTION_CLOSED,
    JsonRpcMessage,
    McpError,
    RequestId,
    encode_message,
    parse_message,
)
from ..engine.transport import Transport
from ._common import McpConnectionError
from ._http_common import (
    EVENT_STREAM,
    HttpConnection,
    HttpOptions,
    first_line,
    http_url,
    media_type,
    origin,
    reason,
    redirect_error,
    trace_headers,
)
from ._sse import SseParser
from .base import McpClient
from .core import MODE_AUTO, MODE_SESSION
from .transport import ClientTransport

__all__ = ["SseClient", "SseClientTransport", "SseConnection"]

logger = logging.getLogger("mcp_sse_server.client")


class SseConnection(HttpConnection):
    """The client side of one legacy HTTP+SSE session (what ``SseClientTransport`` opens, and
    what ``StreamableHttpClientTransport`` falls back to)."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, options: HttpOptions | None = None) -> None:
        parsed = http_url(url)
        super().__init__(headers, options or HttpOptions())
        self.url = parsed
        self.endpoint: httpx.URL | None = None
        self._ready: asyncio.Future[httpx.URL] | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the event stream and wait for the ``endpoint`` event (at most ``connect_timeout`` s)."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._reader = loop.create_task(self._read())
        try:
            async with asyncio.timeout(self.connect_timeout):
                self.endpoint = await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise McpConnectionError(
                f"MCP server at {self.url} sent no endpoint event within {self.connect_timeout:g} s"
            ) from None
        except BaseException:
            await self.close()
            raise

    def _resolve(self, data: str) -> httpx.URL:
        endpoint = self.url.join(data.strip())
        if origin(endpoint) != origin(self.url):
            raise McpConnectionError(
                f"MCP server at {self.url} named an endpoint on another origin ({endpoint.scheme}://"
                f"{endpoint.netloc.decode('ascii', 'replace')}); refusing to send messages there"
            )
        return endpoint

    def _settle(self, outcome: httpx.URL | McpError) -> None:
        """End ``start()``'s wait with the endpoint or the error (nothing once it has ended)."""
        if self._ready is None or self._ready.done():
            return
        if isinstance(outcome, McpError):
            self._ready.set_exception(outcome)
        else:
            self._ready.set_result(outcome)

    async def _read(self) -> None:
        ending: McpError
        try:
            async with self._stream("GET", self.url, headers={**self.headers, "accept": EVENT_STREAM}) as response:
                self.url = response.url  # where a same-origin redirect led: the endpoint resolves against it
                media = media_type(response)
                if response.status_code != 200 or media != EVENT_STREAM:
                    raise McpConnectionError(
                        f"MCP server at {self.url} answered the event-stream GET with HTTP "
                        f"{response.status_code} ({media or 'no content type'})",
                        {"status": response.status_code},
                    )
                parser = SseParser()
                async for chunk in response.aiter_bytes():
                    for event in parser.feed(chunk):
                        self._on_event(event.event, event.data)
            ending = McpConnectionError(f"MCP server at {self.url} ended the event stream")
        except httpx.HTTPError as error:
            prefix = "Lost the event stream from" if self.endpoint is not None else "Cannot reach"
            ending = McpConnectionError(f"{prefix} MCP server at {self.url}: {reason(error)}")
        except McpError as error:  # a refused stream, or an endpoint we refuse
            ending = error
        self._settle(ending)
        if not self._closed:
            self._fail_all(ending)
            self._finish()

    def _on_event(self, kind: str, data: str) -> None:
        if kind == "endpoint":
            if self._ready is not None and not self._ready.done():
                self._settle(self._resolve(data))
            else:
                logger.warning("ignoring a second endpoint event from %s", self.url)
            return
        if kind != "message":
            return
        try:
            message = parse_message(data)
        except McpError as error:
            logger.warning("ignoring a malformed message from %s: %s", self.url, error.message)
            return
        self._deliver(message)

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed or self.endpoint is None:
            raise McpConnectionError(f"The connection to MCP server at {self.url} is closed")
        self._track(message)
        try:
            async with self._stream(
                "POST",
                self.endpoint,
                content=encode_message(message),
                headers=trace_headers(message, {**self.headers, "content-type": "application/json"}),
                timeout=self._post_timeout,
            ) as response:
                await response.aread()
        except httpx.HTTPError as error:
            self._untrack(message)
            raise McpConnectionError(f"Cannot reach MCP server at {self.endpoint}: {reason(error)}") from None
        except McpError:  # a redirect refused
            self._untrack(message)
            raise
        self.endpoint = response.url  # where a same-origin redirect led, for the session's next POSTs
        if 300 <= response.status_code < 400:
            self._untrack(message)
            raise redirect_error(self.endpoint, getattr(message, "method", None) or "a response", response)
        if response.status_code >= 400:
            self._untrack(message)
            detail = first_line(response.text)[:200] or response.reason_phrase
            summary = f"MCP server at {self.endpoint} answered HTTP {response.status_code}: {detail}"
            if response.status_code == 404:  # the server has forgotten this stream's session
                raise McpConnectionError(summary, {"status": response.status_code})
            raise McpError(CONNECTION_CLOSED, summary, {"status": response.status_code})

    async def _release(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()
        await super()._release()


class SseClientTransport(ClientTransport):
    """A client's way to a server on the legacy HTTP+SSE transport (2024-11-05) at ``url``.

    ``headers`` go on the stream and on every POST; ``auth`` (an ``httpx.Auth``, such as
    ``client.oauth.OAuth()``) authenticates them; ``http_client`` is an ``httpx.AsyncClient`` of
    your own (then yours to close); the timeouts are in seconds. ``connection`` is the one
    opened last.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        post_timeout: float = 30.0,
    ) -> None:
        httpx.URL(url)  # a malformed URL fails here, not at the first call
        self.url = url
        self.headers = dict(headers or {})
        self.options = HttpOptions(
            http_client=http_client, connect_timeout=connect_timeout, post_timeout=post_timeout, auth=auth
        )
        self.connection: SseConnection | None = None

    @property
    def can_be_stateless(self) -> bool:
        return False  # HTTP+SSE (2024-11-05) predates the stateless revision

    async def connect(self) -> Transport:
        connection = SseConnection(self.url, self.headers, self.options)
        await connection.start()
        self.connection = connection
        return connection


class SseClient(McpClient):
    """``McpClient(SseClientTransport(url, headers, ...), **options)``: an MCP client for servers
    on the legacy HTTP+SSE transport (2024-11-05), which speak the session revisions only. The
    transport's options are ``auth``, ``http_client``, ``connect_timeout`` and ``post_timeout``;
    other keyword options are McpClient's."""

    transport: SseClientTransport

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        post_timeout: float = 30.0,
        **options: Any,
    ) -> None:
        transport = SseClientTransport(
            url, headers, auth=auth, http_client=http_client, connect_timeout=connect_timeout, post_timeout=post_timeout
        )
        super().__init__(transport, **options)
        if self.mode not in (MODE_AUTO, MODE_SESSION):
            raise ValueError("the legacy HTTP+SSE transport only speaks the session revisions")
