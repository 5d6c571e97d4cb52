"""The HTTP+SSE transport of revision 2024-11-05, served by the sessions of Streamable HTTP.

Where it is served is the router's rule (``router.py``): a GET of the stream
path (``/sse``) or a session-less GET of the MCP endpoint opens a stream, and
the messages path (``/messages/``) takes the POSTs. The rules here:

1. A stream is a session of the app (``SessionDirectory.open``, with the
   same cap, 503, and bound to the bearer token's principal), opened before
   its initialize, whose streams never resume. Its first event is
   ``endpoint``, sent only once a POST on any worker finds the stream (rule
   5); its data is the messages path (below the app's mount point,
   ``root_path``) with the session id in the query:
   ``/messages/?session_id=<id>``.
2. Everything the server sends goes down the stream as ``event: message``:
   the session's transport (``SseTransport``) writes its standalone stream to
   this GET and each request's reply to a stand-in response, and ``relay``
   turns what it writes into events without ids, ``retry`` or priming events
   (the transport writes whole events to each ASGI message). Keep-alive
   comments come from the standalone stream, every ``keepalive_interval``.
3. A POST to the messages path, cheapest check first: 400 for a missing or
   repeated ``session_id``, 415 for a Content-Type other than JSON, 404 for a
   session that is unknown, ended, another principal's, or whose stream is
   held by no worker; then the body: 413, 400 with a parse error. It is
   answered 202 with no body. A request is then served in a task of its own
   inside ``Coordinator.serving``, as the session endpoint serves one: its
   response and what relates to it follow on the stream, and so does a
   refusal the transport would have answered with a status (409 for an id in
   flight, 429 beyond ``max_request_streams``), as a JSON-RPC error. A
   notification or a response goes to the engine, or to the worker waiting
   for it (``Coordinator.route_inbound``).
4. The stream's client leaving ends the session (``SessionDirectory.end``):
   a POST after that is 404. The session ending (idle timeout, lifetime,
   shutdown, a failed initialize) ends the stream.
5. Across workers and hosts: the stream is one connection to one worker, which
   serves every request of the session (its replies go down that stream). A
   POST reaching another worker that shares the session store is checked there
   as above (the session's record read from the store: 404 for one unknown,
   ended, expired or another principal's; the scopes checked against a server
   of the app's, made once), answered 202, and sent as it came to the worker
   holding the stream (``Coordinator.route_legacy_post``: to the holder of the
   session's standalone lease, through its inbox), which takes it as its own
   POSTs (``Coordinator.holding_legacy``): a request served, a notification or
   response to the engine. With telemetry on, the POST's trace headers and peer
   travel with it, so its request's span there is as if it had been posted
   there. A request that finds that worker shutting down is answered on the
   stream with the 503's error. No worker holding the stream: 404.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final
from urllib.parse import parse_qs

from ...engine.background import in_background
from ...engine.jsonrpc import JsonRpcRequest, McpError, parse_message
from ...engine.server import McpServer
from ...engine.stores import Coordinator, DuplicateRequest
from .asgi import Message, Receive, Scope, Send
from .bearer import ScopeCheck, request_principal
from .body import UNSUPPORTED_MEDIA_TYPE, is_json_content_type, read_message
from .directory import LiveSession, SessionDirectory
from .errors import INTERNAL_ERROR, UNKNOWN_SESSION, HttpError, error_body, in_flight_conflict, shutting_down
from .limits import HttpLimits
from .request import McpRequest
from .settings import LegacyPaths
from .sse import SSE_HEADERS
from .streams import SseStream, send_accepted

__all__ = ["LegacyPaths", "LegacySseEndpoint", "LegacyStream", "relay"]

logger = logging.getLogger("mcp_sse_server.http")

_MESSAGE: Final = b"event: message\ndata: "


def relay(chunk: bytes, comments: bool) -> bytes:
    """Whole SSE events as the Streamable HTTP transport writes them, as 2024-11-05 events: each
    event with data is an ``event: message`` with that data, without its id; ``retry`` and empty
    (priming) events go; comments stay when ``comments``.

    >>> relay(b"id: 0/r1\\nretry: 1000\\ndata: \\n\\nid: 3\\ndata: {}\\n\\n: keepalive\\n\\n", True)
    b'event: message\\ndata: {}\\n\\n: keepalive\\n\\n'
    """
    out: list[bytes] = []
    for event in chunk.split(b"\n\n"):
        data = b""
        for line in event.split(b"\n"):
            if line.startswith(b"data: "):
                data = line[6:]
            elif comments and line.startswith(b":"):
                out.append(line + b"\n\n")
        if data:
            out.append(_MESSAGE + data + b"\n\n")
    return b"".join(out)


class LegacyStream:
    """One 2024-11-05 stream: the GET's response, which every message of its session goes down."""

    __slots__ = ("gone", "out", "session_id")

    def __init__(self, send: Send, session_id: str) -> None:
        self.out = SseStream(send, SSE_HEADERS)
        self.session_id = session_id
        self.gone = asyncio.Event()  # the client left, or the stream ended

    async def write(self, events: bytes) -> None:
        """Send ``events`` (whole SSE events) unless the stream is over."""
        if events and not self.gone.is_set():
            await self.out.write(events)

    async def receive(self) -> Message:
        """The ASGI receive of a request served for this stream: disconnected when the stream is."""
        await self.gone.wait()
        return {"type": "http.disconnect"}

    def standalone(self) -> Send:
        """The ASGI send the transport writes its standalone stream to: its events relayed, its end the stream's."""

        async def send(message: Message) -> None:
            if message["type"] != "http.response.body":
                return  # (the stream's own headers went out with the endpoint event)
            await self.write(relay(message.get("body", b""), True))
            if not message.get("more_body", False):
                await self.out.end()

        return send

    def reply(self) -> Send:
        """The ASGI send of one request's stand-in POST response: what it carries goes down the stream."""
        json = False
        body: list[bytes] = []

        async def send(message: Message) -> None:
            nonlocal json
            if message["type"] == "http.response.start":
                json = not _is_event_stream(message.get("headers", ()))
                return
            chunk = message.get("body", b"")
            if not json:
                await self.write(relay(chunk, False))
                return
            body.append(chunk)  # one JSON-RPC message (a JSON reply, or a refusal)
            if not message.get("more_body", False) and (whole := b"".join(body)):
                await self.write(_MESSAGE + whole + b"\n\n")

        return send


class LegacySseEndpoint:
    """Serves the 2024-11-05 streams and their POSTs over the app's sessions (rules above).

    ``paths`` are the transport's; ``closing`` says whether the app is shutting down;
    ``scopes`` (with authorization) checks the scopes of what a request names."""

    __slots__ = (
        "_catalog",
        "_endpoint",
        "_streams",
        "closing",
        "coordinator",
        "directory",
        "limits",
        "paths",
        "scopes",
    )

    def __init__(
        self,
        directory: SessionDirectory,
        coordinator: Coordinator,
        *,
        limits: HttpLimits,
        paths: LegacyPaths,
        closing: Callable[[], bool],
        scopes: ScopeCheck | None = None,
    ) -> None:
        self.directory = directory
        self.coordinator = coordinator
        self.limits = limits
        self.paths = paths
        self.closing = closing
        self.scopes = scopes
        self._streams: dict[str, LegacyStream] = {}
        self._endpoint = paths.messages.encode("latin-1") + b"?session_id="  # (after the mount point)
        self._catalog: McpServer | None = None  # what checks the scopes of POSTs routed elsewhere

    @property
    def streams(self) -> Mapping[str, LegacyStream]:
        """The streams this worker holds, by session id (read-only)."""
        return self._streams

    async def stream(self, scope: Scope, request: McpRequest, receive: Receive, send: Send) -> None:
        """A GET opening a stream: a new session, its ``endpoint`` event (the messages path below
        the app's mount point), then its messages until either ends."""
        request.check_get()
        if self.closing():
            raise shutting_down()
        live = await self.directory.open(request_principal(), resumable=False)
        session_id = live.record.id
        stream = self._streams[session_id] = LegacyStream(send, session_id)

        async def get_receive() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                stream.gone.set()
            return message

        try:
            root: str = scope.get("root_path", "")
            endpoint = root.encode("latin-1") + self._endpoint + session_id.encode("ascii")
            async with self.coordinator.holding_legacy(live, self._routed(live, stream)):
                # Only now: a POST the client sends the moment it reads this, to any worker, finds the stream.
                await stream.write(b"event: endpoint\ndata: " + endpoint + b"\n\n")
                await live.transport.serve_get(get_receive, stream.standalone(), None)
        finally:
            stream.gone.set()
            del self._streams[session_id]
            if not live.closing:
                await self.directory.end(live)
            if stream.out.started:  # (else the failure that stopped it is answered: a store out of reach, 503)
                await stream.out.end()

    async def post(self, scope: Scope, request: McpRequest, receive: Receive, send: Send) -> None:
        """A client's message for a stream's session: 202, its answers on the stream (rule 3)."""
        session_id = _session_id(scope)
        if not is_json_content_type(request.content_type):
            raise HttpError(415, UNSUPPORTED_MEDIA_TYPE)
        stream = self._streams.get(session_id)
        if stream is None and self.directory.shared:
            await self._route(session_id, request, receive, send)  # (held by another worker, maybe: rule 5)
            return
        if stream is None or stream.gone.is_set():
            raise HttpError(404, UNKNOWN_SESSION)
        live = await self.directory.lookup(session_id.encode("latin-1"), request_principal())
        message, body = await read_message(receive, self.limits.max_request_bytes, request.content_length, request.body)
        if type(message) is JsonRpcRequest:
            if self.closing():
                raise shutting_down()
            if self.scopes is not None:
                self.scopes.check(live.server, message)
            await send_accepted(send)
            in_background(self._serve(live, stream, message))
        elif await self.coordinator.route_inbound(live.record.id, message, body):
            await send_accepted(send)
        else:
            await live.transport.handle_message(message, send)

    async def _route(self, session_id: str, request: McpRequest, receive: Receive, send: Send) -> None:
        """A POST of a session whose stream this worker does not hold: the checks of a local POST,
        202, and the message to the worker holding the stream (rule 5)."""
        await self.directory.check(session_id, request_principal())
        message, body = await read_message(receive, self.limits.max_request_bytes, request.content_length, request.body)
        if type(message) is JsonRpcRequest:
            if self.closing():
                raise shutting_down()
            if self.scopes is not None:
                self.scopes.check(await self._scope_catalog(), message)
        if not await self.coordinator.route_legacy_post(session_id, body):
            raise HttpError(404, UNKNOWN_SESSION)
        await send_accepted(send)

    async def _scope_catalog(self) -> McpServer:
        """A server of the app's, for the scopes a routed POST needs (its session's server is
        on the stream's worker; every server of an app declares the same scopes)."""
        if self._catalog is None:
            self._catalog = await self.directory.servers()
        return self._catalog

    def _routed(self, live: LiveSession, stream: LegacyStream) -> Callable[[bytes], Awaitable[None]]:
        """What takes the POSTs of this stream's session that reached other workers (checked
        there and answered 202): as a local POST's message after its 202."""

        async def take(body: bytes) -> None:
            if stream.gone.is_set() or live.closing:
                return
            try:
                message = parse_message(body)
            except McpError:
                return  # (parsed where it was posted: not a message this version sends)
            if type(message) is JsonRpcRequest:
                if self.closing():
                    refused = shutting_down()
                    await stream.write(_MESSAGE + error_body(refused.code, refused.message, message.id) + b"\n\n")
                    return
                in_background(self._serve(live, stream, message))
            elif not await self.coordinator.route_inbound(live.record.id, message, body):
                await live.transport.handle_message(message, _discard)

        return take

    async def _serve(self, live: LiveSession, stream: LegacyStream, request: JsonRpcRequest) -> None:
        """Serve one request after its 202: whatever it answers goes down the stream."""
        try:
            async with self.coordinator.serving(live, request.id):
                await live.transport.serve_request(request, stream.receive, stream.reply())
        except DuplicateRequest:  # (in flight on another worker)
            conflict = in_flight_conflict(request.id)
            await stream.write(_MESSAGE + error_body(conflict.code, conflict.message, request.id) + b"\n\n")
        except Exception:
            # A shared store out of reach, or a bug: the client still gets an answer, the detail the log.
            logger.exception("session %s: serving %s failed", live.record.id[:8], request.method)
            await stream.write(_MESSAGE + error_body(INTERNAL_ERROR, "Internal error", request.id) + b"\n\n")
            return
        if request.method == "initialize" and not live.closing:
            await self.directory.opened(live)  # a failed initialize ends the session (and the stream)


async def _discard(message: Message) -> None:
    """The ASGI send of a message routed here: its 202 went out where it was posted."""


def _session_id(scope: Scope) -> str:
    """The ``session_id`` of a POST's query string; 400 when it is missing or repeated."""
    query: bytes = scope.get("query_string", b"")
    values = parse_qs(query.decode("latin-1")).get("session_id", [])
    if len(values) != 1 or not values[0]:
        raise HttpError(
            400,
            "Bad request: the messages endpoint needs one session_id query parameter, "
            "from the endpoint event of the session's stream",
        )
    return values[0]


def _is_event_stream(headers: Any) -> bool:
    return any(name == b"content-type" and value.startswith(b"text/event-stream") for name, value in headers)
