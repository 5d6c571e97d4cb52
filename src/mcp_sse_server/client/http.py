"""The Streamable HTTP transport (revisions 2025-03-26 to 2026-07-28): ``StreamableHttpClientTransport``
opens a ``StreamableHttpConnection``; ``StreamableHttpClient`` is an McpClient over it.

The stateless revision (2026-07-28), which the client probes for first (see
``McpClient``'s ``mode``): every request is a POST of its own with
``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` (tools/call,
prompts/get, resources/read) and ``Mcp-Param-*`` headers (from the tool's
``x-mcp-header`` annotations), never a session id, a GET stream or a DELETE;
cancelling a request closes its stream. What follows is the session
revisions' transport.

Every client message is a POST. A request's answer comes back either as one
JSON body or as an SSE stream carrying the server's notifications and
requests for it, then the response; everything on it reaches the engine. The
session id from the initialize response goes on every later request, with
the negotiated ``MCP-Protocol-Version``, and a standalone GET stream carries
what the server sends on its own.

SSE streams (SEP-1699): an event with empty ``data`` is a cursor (a priming
event): its id is recorded, it is never parsed. Each stream remembers its last
event id and the last ``retry``. When a reply stream (or the GET stream) ends
or drops before the answer, the client waits ``retry`` ms (``reconnect_delay``
when the server sent none, doubling only after reconnects that brought
nothing new) and GETs with ``Last-Event-ID``, until the answer arrives or
``max_reconnect_attempts`` reconnects in a row bring nothing. A disconnect is
never a cancellation: only the caller's timeout or cancellation sends
``notifications/cancelled``. A POST stream that ends so first awaits ``stream_closed``
(``client/transport.py`` rule 4) as it was when the request was sent.

Failures never hang a caller: a server that cannot be reached, a stream that
ends without the answer (and without an event id to resume from), or a
server that dies mid-call fails that request with a one-line
``McpConnectionError`` naming the URL. A 404 for our session makes
``McpClient`` open a new one and retry.

The probe (``server/discover``, ``mode="auto"``) over HTTP: an answer whose body is a JSON-RPC
error is that error (-32020, -32021 and -32022 say the server speaks 2026-07-28); any other 4xx or
5xx (an HTML 500, a 404 text page, a bare 405) is an ``McpError`` with code -32000 and ``data``
``{"status": N}`` that is not a ``ConnectionError`` (``_http_error``), so the client falls back to
``initialize``, as it does for a 2xx answer that is neither JSON nor an event stream. Only a
server that cannot be reached at all fails the probe. The era found is remembered per URL
origin and path for this process (``client/era_memo.py``).

A URL that answers the ``initialize`` POST with 400, 404 or 405 but opens an
event stream on GET is a legacy HTTP+SSE (2024-11-05) endpoint: the connection
falls back to that transport, as the 2025-11-25 transport specification says,
unless ``fallback_to_sse=False``: it opens an ``SseConnection``, sends the
``initialize`` there, and carries every later message over it (``legacy``). A
fallback that fails fails the ``initialize`` with ``LegacySseEndpointError``
saying why. Later connections of the same transport go straight to HTTP+SSE.

Redirects: a 307 or 308 answer is followed with the same method, body and
headers (at most ``MAX_REDIRECTS``, 5, in a row), to the same scheme, host and
port only; the URL it led to is then the endpoint for the rest of the
connection. This is what ``Mount("/mcp", app=...)`` in Starlette needs (it
answers ``/mcp`` with a 307 to ``/mcp/``). A redirect to another origin is
refused (the session id and the configured headers would go there), and
301, 302 and 303 stay errors: they allow turning the POST into a GET.

>>> async def demo() -> None:  # doctest: +SKIP
...     async with StreamableHttpClient("http://127.0.0.1:8080/mcp") as client:
...         print(await client.call_tool("add", {"a": 2, "b": 3}))
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx
import orjson

from ..engine.jsonrpc import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
    encode_message,
    message_from_dict,
    parse_message,
)
from ..engine.transport import Reply, Transport
from ._common import McpConnectionError, SessionExpiredMcpError
from ._http_common import (
    EVENT_STREAM,
    HttpConnection,
    HttpOptions,
    first_line,
    http_url,
    media_type,
    reason,
    redirect_error,
    trace_headers,
)
from ._sse import SseParser
from .base import McpClient
from .era_memo import http_identity
from .sse import SseConnection
from .stateless import PROTOCOL_VERSION_KEY, StreamLostError, param_headers, routing_headers
from .transport import ClientTransport, ToolSchema, stream_closed

__all__ = [
    "LegacySseEndpointError",
    "StreamableHttpClient",
    "StreamableHttpClientTransport",
    "StreamableHttpConnection",
    "StreamableHttpOptions",
]

logger = logging.getLogger("mcp_sse_server.client")

_POST_ACCEPT: Final = f"application/json, {EVENT_STREAM}"
_ERROR_BODY_LIMIT: Final = 64 * 1024
# Statuses of an initialize POST after which a GET may find a legacy HTTP+SSE endpoint (2025-11-25 transports).
_LEGACY_STATUSES: Final = frozenset({400, 404, 405})


class LegacySseEndpointError(McpError):
    """The URL is a legacy HTTP+SSE endpoint (protocol 2024-11-05), not Streamable HTTP.

    The Streamable HTTP transport falls back to that transport on it; it reaches the
    caller when the fallback is off or fails. ``data`` is ``{"status": <the
    initialize POST's status>, "transport": "sse"}``.
    """

    def __init__(self, url: str, status: int, failure: str | None = None) -> None:
        message = (
            f"MCP server at {url} looks like a legacy HTTP+SSE endpoint (protocol 2024-11-05): "
            f'a POST got HTTP {status} but a GET opens an event stream; configure it with type "sse" '
            "(SseClient) instead of Streamable HTTP"
        )
        if failure is not None:
            message += f" (the fallback to that transport failed: {failure})"
        super().__init__(CONNECTION_CLOSED, message, {"status": status, "transport": "sse"})
        self.url = url
        self.status = status


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])


def _stateless_version(request: JsonRpcRequest | None) -> str | None:
    """The stateless revision a request is stamped with (its ``_meta`` protocolVersion), else None."""
    params = request.params if request is not None else None
    meta = params.get("_meta") if params else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _messages_from_json(body: bytes) -> list[JsonRpcMessage]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise McpError(INTERNAL_ERROR, "the server answered with invalid JSON") from None
    # Batches left the protocol in 2025-06-18, but an older server may still answer with one.
    items = data if isinstance(data, list) else [data]
    return [message_from_dict(item) for item in items]


class _LostStream(McpConnectionError, StreamLostError):
    """A stateless-revision request whose stream broke before the answer (McpClient may re-issue it)."""


class _StreamState:
    """What survives a reconnect of one logical SSE stream: its last event id and ``retry``."""

    __slots__ = ("last_event_id", "opened", "retry")

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self.opened = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamableHttpOptions(HttpOptions):
    """``HttpOptions`` and how dropped streams are reconnected (``StreamableHttpClient`` says how)."""

    reconnect_delay: float = 1.0
    max_reconnect_delay: float = 30.0
    max_reconnect_attempts: int = 5

    def __post_init__(self) -> None:
        if self.reconnect_delay <= 0 or self.max_reconnect_attempts < 0:
            raise ValueError("reconnect_delay must be positive and max_reconnect_attempts not negative")


class StreamableHttpConnection(HttpConnection):
    """The client side of one Streamable HTTP connection (what ``StreamableHttpClientTransport`` opens).

    ``session_id`` and ``protocol_version`` are learnt from the initialize
    exchange; ``expired`` is set when the server answers 404 for the session
    and cleared by the next successful initialize. ``url`` is the endpoint:
    the one given, or where a same-origin 307/308 led. ``legacy`` is the
    HTTP+SSE connection it fell back to (``fallback_to_sse``), None until then.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        options: StreamableHttpOptions | None = None,
        *,
        fallback_to_sse: bool = False,
    ) -> None:
        http_url(url)  # ValueError unless an http(s) URL, before anything is opened
        options = options or StreamableHttpOptions()
        super().__init__(headers, options)
        self.url = url
        self.fallback_to_sse = fallback_to_sse
        self.legacy: SseConnection | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.expired = False
        self.reconnect_delay = options.reconnect_delay
        self.max_reconnect_delay = options.max_reconnect_delay
        self.max_reconnect_attempts = options.max_reconnect_attempts
        self._streams: dict[RequestId, asyncio.Task[None]] = {}
        self._listener: asyncio.Task[None] | None = None
        # The last ``retry`` any stream of this connection sent, for streams that send none.
        self.retry: int | None = None
        # A tool's inputSchema by name, for the Mcp-Param-* headers of the stateless revision.
        self.tool_schema: ToolSchema | None = None
        self._stateless_requests: set[RequestId] = set()

    # --- headers and errors ---------------------------------------------------------

    def _headers(
        self,
        accept: str,
        *,
        body: bool = False,
        last_event_id: str | None = None,
        request: JsonRpcRequest | None = None,
    ) -> dict[str, str]:
        headers = dict(self.headers)
        headers["accept"] = accept
        if body:
            headers["content-type"] = "application/json"
        if request is not None:
            trace_headers(request, headers)
        version = _stateless_version(request)
        if version is not None:
            # The stateless revision: no session; the version, method and target in headers.
            assert request is not None
            headers["mcp-protocol-version"] = version
            headers.update(routing_headers(request.method, request.params))
            if request.method == "tools/call" and self.tool_schema is not None and request.params:
                name, arguments = request.params.get("name"), request.params.get("arguments")
                schema = self.tool_schema(name) if isinstance(name, str) else None
                if schema is not None and isinstance(arguments, dict):
                    headers.update(param_headers(schema, arguments))
            return headers
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        return headers

    @contextlib.asynccontextmanager
    async def _exchange(
        self,
        method: str,
        headers: Mapping[str, str],
        *,
        content: bytes | None = None,
        timeout: httpx.Timeout | None = None,
    ) -> AsyncIterator[httpx.Response]:
        """One request to the endpoint, redirects followed; a same-origin 307/308 moves the endpoint
        there, so the session's later requests go straight to it."""
        async with self._stream(method, self.url, headers=headers, content=content, timeout=timeout) as response:
            if response.url != self.url:
                logger.info("MCP server at %s moved to %s (HTTP redirect); using that URL", self.url, response.url)
                self.url = str(response.url)
            yield response

    async def _http_error(self, response: httpx.Response, what: str) -> McpError:
        """The error for a 4xx/5xx answer: the JSON-RPC error it carries, else the status and first line."""
        try:
            body = await _read_capped(response, _ERROR_BODY_LIMIT)
        except httpx.HTTPError:
            body = b""
        with contextlib.suppress(ValueError):
            data = orjson.loads(body)
            error = data.get("error") if isinstance(data, dict) else None
            if isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str):
                return McpError(error["code"], error["message"], error.get("data"))
        detail = first_line(body.decode("utf-8", "replace"))[:200] or response.reason_phrase
        return McpError(
            CONNECTION_CLOSED,
            f"MCP server at {self.url} answered {what} with HTTP {response.status_code}: {detail}",
            {"status": response.status_code},
        )

    async def _is_legacy_sse(self) -> bool:
        """True when a GET of the URL opens an event stream without a session: the 2024-11-05 transport.

        Only asked after an ``initialize`` POST got 400, 404 or 405, to say what the URL is;
        a Streamable HTTP server answers such a GET (it carries no session) with 400 or 405.
        """
        headers = {**self.headers, "accept": EVENT_STREAM}
        try:
            async with asyncio.timeout(self.connect_timeout):
                async with self._exchange("GET", headers) as probe:
                    return probe.status_code == 200 and media_type(probe) == EVENT_STREAM
        except (httpx.HTTPError, McpError, TimeoutError):
            return False

    def _forget_session(self) -> None:
        self.session_id = None
        self.protocol_version = None
        listener, self._listener = self._listener, None
        if listener is not None and listener is not asyncio.current_task():
            listener.cancel()

    def _expire(self, session_id: str | None) -> SessionExpiredMcpError:
        """The server forgot ``session_id``: forget it too, so the next initialize starts afresh."""
        if session_id is not None and self.session_id == session_id:
            self._forget_session()
            self.expired = True
        return SessionExpiredMcpError(f"MCP server at {self.url} no longer knows session {session_id}")

    def _backoff(self, failures: int, stream: _StreamState) -> float:
        """Seconds to wait before reconnecting ``stream``: the server's ``retry`` (else
        ``reconnect_delay``), doubled for each reconnect in a row that brought nothing,
        capped at ``max_reconnect_delay`` (but never below the server's ``retry``); at
        least 10 ms, so a server that says ``retry: 0`` cannot make the client spin."""
        retry_ms = stream.retry if stream.retry is not None else self.retry
        base = retry_ms / 1000 if retry_ms is not None else self.reconnect_delay
        delay: float = base * 2**failures
        return max(0.01, min(max(self.max_reconnect_delay, base), delay))

    # --- Transport ---------------------------------------------------------------------

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            raise McpConnectionError(f"The connection to MCP server at {self.url} is closed")
        if self.legacy is not None:
            await self.legacy.send(message, related_request_id)
            return
        if isinstance(message, JsonRpcRequest) and message.method == "initialize":
            self._forget_session()  # an initialize always opens a new session
        elif self.expired:
            raise SessionExpiredMcpError(f"The session with MCP server at {self.url} has expired")
        if isinstance(message, JsonRpcRequest):
            self._track(message)
            if _stateless_version(message) is not None:
                self._stateless_requests.add(message.id)
            # The reply is read in its own task, so the engine's timeout and
            # cancellation govern the call even when the server is silent.
            task = asyncio.get_running_loop().create_task(self._run_request(message))
            self._streams[message.id] = task
            return
        if (
            isinstance(message, JsonRpcNotification)
            and message.method == "notifications/cancelled"
            and message.params
            and message.params.get("requestId") in self._stateless_requests
        ):
            # The stateless revision cancels a request by closing its stream, nothing else.
            stream_task = self._streams.get(message.params["requestId"])
            if stream_task is not None:
                stream_task.cancel()
            return
        await self._post_one_way(message)
        if isinstance(message, JsonRpcNotification):
            if message.method == "notifications/initialized":
                self._start_listener()
            elif message.method == "notifications/cancelled" and message.params:
                # Nobody waits for that answer any more: free its connection.
                stream_task = self._streams.get(message.params.get("requestId"))  # type: ignore[arg-type]
                if stream_task is not None:
                    stream_task.cancel()

    async def _post_one_way(self, message: JsonRpcMessage) -> None:
        """POST a notification or a response; the server accepts it with 202."""
        session = self.session_id
        what = getattr(message, "method", None) or "a response"
        try:
            async with self._exchange(
                "POST",
                self._headers(_POST_ACCEPT, body=True),
                content=encode_message(message),
                timeout=self._post_timeout,
            ) as response:
                if response.status_code == 404 and session is not None:
                    raise self._expire(session)
                if response.status_code >= 400:
                    raise await self._http_error(response, what)
                if 300 <= response.status_code < 400:
                    raise redirect_error(self.url, what, response)
                await response.aread()
        except httpx.HTTPError as error:
            raise McpConnectionError(f"Cannot reach MCP server at {self.url}: {reason(error)}") from None
        # A server may answer a notification with messages of its own; deliver them.
        if response.content and media_type(response) == "application/json":
            with contextlib.suppress(McpError):
                for reply in _messages_from_json(response.content):
                    self._deliver(reply)

    async def _run_request(self, request: JsonRpcRequest) -> None:
        try:
            await self._post_request(request)
        except asyncio.CancelledError:
            self._untrack(request)
            raise
        except Exception as error:  # a bug here must fail the call, not strand it
            logger.exception("reading the reply to %s failed", request.method)
            self._fail(request.id, McpConnectionError(f"Reading the reply from {self.url} failed: {reason(error)}"))
        finally:
            self._streams.pop(request.id, None)
            self._stateless_requests.discard(request.id)

    async def _post_request(self, request: JsonRpcRequest) -> None:
        stream = _StreamState()
        session = self.session_id
        try:
            async with self._exchange(
                "POST", self._headers(_POST_ACCEPT, body=True, request=request), content=encode_message(request)
            ) as response:
                await self._read_post_response(request, response, stream, session)
        except LegacySseEndpointError as found:
            if self.fallback_to_sse:
                await self._fall_back(request, found.status)
            else:
                self._fail(request.id, found)
            return
        except McpError as error:
            self._fail(request.id, error)
            return
        except httpx.HTTPError as error:
            if stream.last_event_id is None:
                if stream.opened:
                    message = f"Lost the connection to MCP server at {self.url} during {request.method}"
                    lost = _LostStream if request.id in self._stateless_requests else McpConnectionError
                    self._fail(request.id, lost(f"{message}: {reason(error)}"))
                    return
                message = f"Cannot reach MCP server at {self.url}"
                self._fail(request.id, McpConnectionError(f"{message}: {reason(error)}"))
                return
            logger.debug("the stream for %s dropped: %s; resuming", request.method, reason(error))
        if not self._is_outstanding(request.id):
            return
        if stream.last_event_id is not None and request.id not in self._stateless_requests:
            closed = stream_closed.get()  # (as it was when the request was sent: this task's copy)
            if closed is not None:
                await closed()  # the caller polls too (client/transport.py rule 4)
            await self._resume(request, stream)  # the stateless revision has no resumable streams
        else:
            lost = _LostStream if request.id in self._stateless_requests else McpConnectionError
            self._fail(
                request.id, lost(f"MCP server at {self.url} ended the stream for {request.method} without answering")
            )

    async def _read_post_response(
        self, request: JsonRpcRequest, response: httpx.Response, stream: _StreamState, session: str | None
    ) -> None:
        status = response.status_code
        if request.method == "initialize" and status < 300:
            issued = response.headers.get("mcp-session-id")
            if issued:
                self.session_id = issued
        if status == 404 and session is not None:
            raise self._expire(session)
        if status in _LEGACY_STATUSES and request.method == "initialize" and await self._is_legacy_sse():
            raise LegacySseEndpointError(self.url, status)
        if status >= 400:
            raise await self._http_error(response, request.method)
        if 300 <= status < 400:  # not followed (see _send): a 301/302/303, or no Location
            raise redirect_error(self.url, request.method, response)
        media = media_type(response)
        if media == EVENT_STREAM:
            stream.opened = True
            await self._consume(response, stream, request.id)
        elif media == "application/json":
            for message in _messages_from_json(await response.aread()):
                self._deliver(message)
            if self._is_outstanding(request.id):
                raise McpError(INTERNAL_ERROR, f"MCP server at {self.url} answered {request.method} with another reply")
        else:
            raise McpError(
                INTERNAL_ERROR,
                f"MCP server at {self.url} answered {request.method} with HTTP {status} "
                f"and content type {media or 'none'!r} instead of JSON or an event stream",
            )

    async def _consume(self, response: httpx.Response, stream: _StreamState, until: RequestId | None) -> bool:
        """Deliver the stream's messages until it ends (or ``until`` is answered).

        True when it brought something new: a message, or a new event id (a
        cursor counts: the server moved the stream on).
        """
        parser = SseParser()
        parser.last_event_id, parser.retry = stream.last_event_id, stream.retry
        started_at = stream.last_event_id
        count = 0
        async for chunk in response.aiter_bytes():
            for event in parser.feed(chunk):
                if event.event != "message" or not event.data.strip():
                    continue  # empty data: a cursor (priming) event, its id is all it says
                try:
                    message = parse_message(event.data)
                except McpError as error:
                    logger.warning("ignoring a malformed message from %s: %s", self.url, error.message)
                    continue
                count += 1
                self._deliver(message)
            stream.last_event_id = parser.last_event_id
            if parser.retry is not None and parser.retry != stream.retry:
                stream.retry = self.retry = parser.retry
            if until is not None and not self._is_outstanding(until):
                break  # the answer is in; the server closes the stream now anyway
        return count > 0 or stream.last_event_id != started_at

    async def _resume(self, request: JsonRpcRequest, stream: _StreamState) -> None:
        """GET with Last-Event-ID until the answer arrives.

        Each wait is the server's ``retry``; at most ``max_reconnect_attempts``
        reconnects in a row may bring nothing new (each such one doubles the wait).
        """
        attempt = 0  # reconnects in a row that brought nothing new
        last = "the stream ended"
        while self._is_outstanding(request.id) and not self._closed:
            if attempt >= self.max_reconnect_attempts:
                self._fail(
                    request.id,
                    McpConnectionError(
                        f"Lost the stream for {request.method} from MCP server at {self.url} and could not "
                        f"resume it after {attempt} attempts: {last}"
                    ),
                )
                return
            await asyncio.sleep(self._backoff(attempt, stream))
            attempt += 1
            session = self.session_id
            try:
                async with self._exchange(
                    "GET", self._headers(EVENT_STREAM, last_event_id=stream.last_event_id)
                ) as response:
                    status = response.status_code
                    if status == 404 and session is not None:
                        self._fail(request.id, self._expire(session))
                        return
                    if status >= 500 or status == 409:
                        last = f"HTTP {status}"
                        continue
                    if status >= 400:
                        self._fail(request.id, await self._http_error(response, f"the resumption of {request.method}"))
                        return
                    if media_type(response) != EVENT_STREAM:
                        last = "the server did not answer with an event stream"
                        continue
                    if await self._consume(response, stream, request.id):
                        attempt = 0
                    last = "the stream ended"
            except httpx.HTTPError as error:
                last = reason(error)
            except McpError as error:  # a redirect we refuse: trying again would meet it again
                self._fail(request.id, error)
                return

    async def _fall_back(self, initialize: JsonRpcRequest, status: int) -> None:
        """Speak the legacy HTTP+SSE transport from now on, starting with ``initialize``."""
        logger.info("MCP server at %s speaks the legacy HTTP+SSE transport; falling back to it", self.url)
        legacy = SseConnection(self.url, self.headers, self.options)
        legacy.attach(_Relay(self))
        try:
            await legacy.start()
            self.legacy = legacy
            await legacy.send(initialize)
        except BaseException as error:
            self.legacy = None
            await legacy.close()
            if not isinstance(error, Exception):
                raise
            detail = error.message if isinstance(error, McpError) else str(error) or type(error).__name__
            self._fail(initialize.id, LegacySseEndpointError(self.url, status, detail))
            return
        self._untrack(initialize)  # its answer comes over the legacy stream, through _Relay

    # --- the standalone GET stream ---------------------------------------------------

    def _start_listener(self) -> None:
        if (self._listener is None or self._listener.done()) and not self._closed:
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        stream = _StreamState()
        failures = 0
        while not self._closed:
            session = self.session_id
            try:
                async with self._exchange(
                    "GET", self._headers(EVENT_STREAM, last_event_id=stream.last_event_id)
                ) as response:
                    status = response.status_code
                    if status == 405:
                        logger.debug("%s offers no standalone event stream", self.url)
                        return
                    if status == 404 and session is not None:
                        self._expire(session)
                        return
                    if 400 <= status < 500 and status != 409:
                        logger.warning(
                            "MCP server at %s refused the event stream with HTTP %s; "
                            "messages it sends on its own will not arrive",
                            self.url,
                            status,
                        )
                        return
                    if (
                        status < 300
                        and media_type(response) == EVENT_STREAM
                        and await self._consume(response, stream, None)
                    ):
                        failures = 0
            except httpx.HTTPError as error:
                logger.debug("event stream from %s failed: %s", self.url, reason(error))
            except McpError as error:  # a redirect we refuse: trying again would meet it again
                logger.warning("no event stream from %s: %s", self.url, error.message)
                return
            if self._closed:
                return
            if failures >= self.max_reconnect_attempts:
                logger.warning("giving up on the event stream from %s after %d attempts", self.url, failures)
                return
            await asyncio.sleep(self._backoff(failures, stream))
            failures += 1

    # --- shutdown --------------------------------------------------------------------

    async def _release(self) -> None:
        """Stop every stream, end the session with DELETE, release the connection pool."""
        tasks = [task for task in (self._listener, *self._streams.values()) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._listener = None
        if self.session_id is not None:
            try:
                # 405 means the server does not let clients end sessions: nothing to do.
                async with self._exchange(
                    "DELETE", self._headers(_POST_ACCEPT), timeout=httpx.Timeout(2.0, connect=2.0)
                ):
                    pass
            except (httpx.HTTPError, McpError) as error:
                logger.debug("DELETE of the session at %s failed: %s", self.url, reason(error))
            self.session_id = None
        if self.legacy is not None:
            await self.legacy.close()
        await super()._release()

    def _deliver(self, message: JsonRpcMessage) -> None:
        # Checked before super() forgets the request: is this the answer to an initialize?
        if isinstance(message, JsonRpcResponse) and self._outstanding.get(message.id) == "initialize":
            version = message.result.get("protocolVersion")
            self.protocol_version = version if isinstance(version, str) else None
            self.expired = False
        super()._deliver(message)


class _Relay:
    """The dispatcher of the HTTP+SSE connection a Streamable HTTP connection fell back to: what
    it receives, and its end, go on through the Streamable HTTP connection to the client."""

    def __init__(self, outer: StreamableHttpConnection) -> None:
        self.outer = outer

    def on_message(self, message: JsonRpcMessage) -> None:
        self.outer._deliver(message)

    async def dispatch(self, request: JsonRpcRequest) -> Reply | None:
        self.outer._deliver(request)  # an SSE stream delivers everything through on_message
        return None

    def on_close(self) -> None:
        if self.outer.legacy is not None and not self.outer._closed:  # the server ended the stream
            self.outer._finish()


class StreamableHttpClientTransport(ClientTransport):
    """A client's way to a server over Streamable HTTP at ``url``.

    ``headers`` go on every request. ``auth`` authenticates them: an ``httpx.Auth``, such as
    ``client.oauth.OAuth()`` for a server behind OAuth. ``http_client`` lets you bring a
    configured ``httpx.AsyncClient`` (TLS, proxies); it is then yours to close. Reconnection of
    dropped streams waits the server's ``retry`` (else ``reconnect_delay`` seconds), doubling up
    to ``max_reconnect_delay`` after reconnects that brought nothing new, at most
    ``max_reconnect_attempts`` such times in a row. With ``fallback_to_sse`` (the default) a
    legacy HTTP+SSE endpoint is spoken to with that transport (``legacy`` is then True);
    otherwise initializing raises ``LegacySseEndpointError``. ``connection`` is the connection
    opened last, ``session_id`` its session.
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
        reconnect_delay: float = 1.0,
        max_reconnect_delay: float = 30.0,
        max_reconnect_attempts: int = 5,
        fallback_to_sse: bool = True,
    ) -> None:
        httpx.URL(url)  # a malformed URL fails here, not at the first call
        self.url = url
        self.headers = dict(headers or {})
        self.fallback_to_sse = fallback_to_sse
        self.options = StreamableHttpOptions(
            http_client=http_client,
            connect_timeout=connect_timeout,
            post_timeout=post_timeout,
            reconnect_delay=reconnect_delay,
            max_reconnect_delay=max_reconnect_delay,
            max_reconnect_attempts=max_reconnect_attempts,
            auth=auth,
        )
        self.identity = http_identity(url)
        self.connection: StreamableHttpConnection | SseConnection | None = None

    @property
    def legacy(self) -> bool:
        """True once the URL turned out to be a legacy HTTP+SSE endpoint."""
        connection = self.connection
        return isinstance(connection, SseConnection) or (
            isinstance(connection, StreamableHttpConnection) and connection.legacy is not None
        )

    @property
    def session_id(self) -> str | None:
        """The session id the server gave the connection opened last (None without one)."""
        return self.connection.session_id if isinstance(self.connection, StreamableHttpConnection) else None

    @property
    def can_be_stateless(self) -> bool:
        return not self.legacy  # HTTP+SSE (2024-11-05) predates the stateless revision

    @property
    def holds_session(self) -> bool:
        return self.legacy or self.session_id is not None

    async def connect(self) -> Transport:
        if self.legacy:
            legacy = SseConnection(self.url, self.headers, self.options)
            await legacy.start()
            self.connection = legacy
            return legacy
        connection = StreamableHttpConnection(
            self.url, self.headers, self.options, fallback_to_sse=self.fallback_to_sse
        )
        connection.tool_schema = self.tool_schema
        self.connection = connection
        return connection

    def sibling(self) -> StreamableHttpClientTransport:
        """This URL, headers, auth and HTTP options, without the fallback to HTTP+SSE."""
        twin = copy.copy(self)
        twin.fallback_to_sse, twin.connection, twin.tool_schema = False, None, None
        return twin


class StreamableHttpClient(McpClient):
    """``McpClient(StreamableHttpClientTransport(url, headers, ...), **options)``: an MCP client
    over Streamable HTTP. The transport's options are ``auth``, ``http_client``,
    ``connect_timeout``, ``post_timeout``, ``reconnect_delay``, ``max_reconnect_delay``,
    ``max_reconnect_attempts`` and ``fallback_to_sse`` (``StreamableHttpClientTransport`` says
    what each does); other keyword options are McpClient's.
    """

    transport: StreamableHttpClientTransport

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        connect_timeout: float = 10.0,
        post_timeout: float = 30.0,
        reconnect_delay: float = 1.0,
        max_reconnect_delay: float = 30.0,
        max_reconnect_attempts: int = 5,
        fallback_to_sse: bool = True,
        **options: Any,
    ) -> None:
        transport = StreamableHttpClientTransport(
            url,
            headers,
            auth=auth,
            http_client=http_client,
            connect_timeout=connect_timeout,
            post_timeout=post_timeout,
            reconnect_delay=reconnect_delay,
            max_reconnect_delay=max_reconnect_delay,
            max_reconnect_attempts=max_reconnect_attempts,
            fallback_to_sse=fallback_to_sse,
        )
        super().__init__(transport, **options)
