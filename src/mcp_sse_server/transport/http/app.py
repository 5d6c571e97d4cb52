"""The ASGI application that owns an MCP endpoint: HTTP rules, sessions, limits.

>>> app = McpHttpApp(server, path="/mcp")  # doctest: +SKIP
>>> # uvicorn.run(app) or Starlette(routes=[Mount("/mcp", app=McpHttpApp(server))])

The app is a stack, Starlette style: ``OriginHostMiddleware`` (Host and
Origin: 400/403) around the MCP endpoint. Order of checks in the endpoint,
cheapest first, so a refusal costs little: path (404), method (405), Accept
(406), Content-Type (415), session id (400/404), protocol version (400), body
size (413), body shape (400). Only a well-formed ``initialize`` without a
session id creates a session (503 when ``max_sessions`` are live).

Sessions: their records are in a ``SessionStore`` (in process by default);
the live part of each (its transport and ``ServerSession``) stays in this
process. One ``McpServer`` serves every session, unless ``on_session``
builds one per session.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from ... import versions
from ...jsonrpc import (
    HEADER_MISMATCH,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
    encode_message,
    parse_message,
)
from ...modern import ModernEndpoint, has_envelope, unsupported_version
from ...protocol import Connection
from ...server import McpServer
from ...session import ServerSession, SessionRecord
from ...stores.base import STANDALONE_STREAM, EventLog, SessionStore, StoreUnavailable, stream_of
from ...stores.memory import MemoryEventLog, MemorySessionStore
from .accept import accepts_json_and_sse
from .asgi import ASGIApp, Receive, Scope, Send
from .errors import INTERNAL_ERROR, SERVER_BUSY, HttpError, write_json_rpc_error
from .limits import DEFAULT_LIMITS, HttpLimits
from .security import OriginHostMiddleware, OriginPolicy
from .sessions import Clock, new_session_id
from .sse import parse_event_id
from .stateless import check_routing_headers, refuse_non_request
from .streams import KeepaliveTicker, SseStream
from .transport import (
    ClientDisconnected,
    SseTransport,
    is_json_content_type,
    parse_body,
    read_body,
)

if TYPE_CHECKING:
    from ...stores.redis_routing import Lease, WorkerRouter

__all__ = ["LiveSession", "McpHttpApp", "SessionFactory"]

logger = logging.getLogger("mcp_sse_server.http")

SessionFactory: TypeAlias = Callable[[], McpServer | Awaitable[McpServer]]
"""Returns a fresh McpServer (or an awaitable of one) for each initialize."""

_ALLOW: Final = [(b"allow", b"GET, POST, DELETE")]
# A session's last activity is written at most this often (seconds): idle timeouts are minutes
# long, and a shared store is spared a write per request.
_TOUCH_GRANULARITY: Final = 1.0

# The request headers the endpoint reads, by slot; a repeated Mcp-Session-Id is refused.
_ACCEPT, _CTYPE, _CLEN, _SESSION, _VERSION, _LAST_ID = range(6)
_WANTED: Final = (  # in slot order
    b"accept",
    b"content-type",
    b"content-length",
    b"mcp-session-id",
    b"mcp-protocol-version",
    b"last-event-id",
)

# What MCP clients send; any other value is evaluated (and cached) by accepts_json_and_sse.
_USUAL_ACCEPT: Final = b"application/json, text/event-stream"

_NOT_ACCEPTABLE_POST: Final = "Not acceptable: the Accept header must allow both application/json and text/event-stream"
_NOT_ACCEPTABLE_GET: Final = "Not acceptable: the Accept header must allow text/event-stream"
_MISSING_SESSION: Final = "Bad request: missing Mcp-Session-Id header; only an initialize request may open a session"
# Requests a client may send before notifications/initialized (any other shows it was sent).
_BEFORE_READY: Final = frozenset({"initialize", "ping"})
_INTERRUPTED: Final = "Request interrupted: the server instance running it stopped"
_UNKNOWN_SESSION: Final = "Session not found: it expired, was deleted or never existed; initialize a new one"


def _read_headers(raw: list[tuple[bytes, bytes]]) -> tuple[list[bytes | None], dict[bytes, bytes]]:
    """The endpoint's headers by slot, and every header by name (the last of a repeated one)."""
    found = dict(raw)  # at C speed; a repeated name shows as a shorter dict
    if len(found) != len(raw) and sum(1 for name, _ in raw if name == b"mcp-session-id") > 1:
        raise HttpError(400, "Bad request: several Mcp-Session-Id headers; send exactly one")
    return [found.get(name) for name in _WANTED], found


class _StatelessRequests:
    """The 2026-07-28 requests in flight (a transport each), as one owner for the keep-alive ticker."""

    __slots__ = ("keepalive_watched", "transports")

    def __init__(self) -> None:
        self.transports: set[SseTransport] = set()
        self.keepalive_watched = False

    def live_streams(self) -> list[SseStream]:
        return [stream for transport in list(self.transports) for stream in transport.live_streams()]


class LiveSession:
    """A session this process serves: its ``record`` (plain data, also in the store),
    its ``transport`` and its ``session`` (the ``ServerSession`` that sends to the client)."""

    __slots__ = ("closing", "record", "session", "standalone_holder", "transport")

    def __init__(self, record: SessionRecord, transport: SseTransport, session: ServerSession) -> None:
        self.record = record
        self.transport = transport
        self.session = session
        self.closing = False
        self.standalone_holder: str | None = None  # this worker's hold on the standalone stream (a router's)


class McpHttpApp:
    """ASGI app serving MCP Streamable HTTP: ``server`` serves every session.

    ``on_session`` (instead of ``server``) builds a server per session, for
    servers that keep per-client state in the server object; it costs the
    registries and validators once per session. ``path`` restricts the
    endpoint to one path (None serves whatever path it is mounted at).
    ``bind_host`` is the address the server listens on (its name is accepted
    in Host). ``session_store`` and ``event_log`` keep session records and
    standalone-stream events (in process by default). ``clock`` (monotonic
    seconds) drives session expiry and is injectable for tests.
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
        router: WorkerRouter | None = None,
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
        self.router = router  # answers to server-to-client requests routed between workers
        self.policy = OriginPolicy(limits.allowed_origins, limits.allowed_hosts, bind_host)
        self.keepalive = KeepaliveTicker(limits.keepalive_interval)
        self._live: dict[str, LiveSession] = {}
        self._modern = ModernEndpoint(server) if server is not None else None
        self._stateless = _StatelessRequests()
        self._stateless_versions = frozenset(revision.name for revision in versions.MODERN)
        self._creating = 0
        self._closing = False
        self._closed = False
        self._reaper: asyncio.Task[None] | None = None
        self._worker_reaper: asyncio.Task[None] | None = None
        self._holders = 0  # standalone GET streams held here (numbers the lease's holders)
        self._stack: ASGIApp = OriginHostMiddleware(self._endpoint, self.policy)

    @property
    def live_sessions(self) -> Mapping[str, LiveSession]:
        """The sessions this process serves now, by id (read-only)."""
        return self._live

    # --- ASGI entry ----------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._stack(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self.path is not None and scope["path"] != self.path:
                raise HttpError(404, f"Not found: the MCP endpoint is {self.path}")
            values, found = _read_headers(scope["headers"])
            method = scope["method"]
            version = values[_VERSION]
            if version is not None and not versions.for_header(version):
                # No handshake revision named: the stateless revision's rules, and no session.
                await self._serve_stateless(scope, receive, send, values, found, version)
                return
            if method != "POST":
                if method == "GET":
                    await self._get(scope, receive, send, values)
                elif method == "DELETE":
                    await self._delete(values, send)
                else:
                    raise HttpError(
                        405,
                        f"Method not allowed: {method}; the MCP endpoint takes GET, POST and DELETE",
                        headers=_ALLOW,
                    )
                return
            accept = values[_ACCEPT]
            if accept != _USUAL_ACCEPT and not all(accepts_json_and_sse(accept)):
                raise HttpError(406, _NOT_ACCEPTABLE_POST)
            content_type = values[_CTYPE]
            if content_type != b"application/json" and not is_json_content_type(content_type):
                raise HttpError(415, "Unsupported media type: the body must be application/json")
            session_id = values[_SESSION]
            if session_id is None:
                await self._open_session(scope, receive, send, values[_CLEN])
                return
            live = await self._session(session_id)
            body = await read_body(receive, self.limits.max_request_bytes, values[_CLEN])
            try:
                message = parse_message(body)
            except McpError as error:
                raise HttpError(400, error.message, error.code) from None
            if type(message) is JsonRpcRequest:
                if self._closing:
                    raise _shutting_down()
                if not live.session.ready and self.sessions.shared and message.method not in _BEFORE_READY:
                    # The client is past the handshake: its notifications/initialized reached another worker.
                    live.session.ready = True
                if self.router is not None:
                    await self._serve_claimed(live, message, receive, send)
                else:
                    await live.transport.serve_request(message, receive, send)
            elif self.router is not None and await self._forwarded(live, message, body):
                await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await live.transport.handle_post(scope, receive, send, message)
        except HttpError as error:
            await error.write(send)
        except ClientDisconnected:
            pass
        except StoreUnavailable as error:
            # A shared store out of reach: the client retries, nothing is lost.
            logger.warning("the session store is unavailable: %s", error)
            try:
                await HttpError(
                    503,
                    "Service unavailable: the session store cannot be reached; try again later",
                    SERVER_BUSY,
                    headers=[(b"retry-after", b"2")],
                ).write(send)
            except Exception:
                pass  # the response had started; the server closes the connection
        except Exception:
            # A bug of ours or of a pluggable store: the detail goes to the log only.
            logger.exception("the MCP endpoint failed on %s %s", scope.get("method"), scope.get("path"))
            try:
                await write_json_rpc_error(send, 500, INTERNAL_ERROR, "Internal error")
            except Exception:
                pass  # the response had started; the server closes the connection

    async def _serve_stateless(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        values: list[bytes | None],
        found: dict[bytes, bytes],
        version: bytes,
    ) -> None:
        """One 2026-07-28 request (``stateless.py`` states the rules): served alone, never stored."""
        if scope["method"] != "POST":
            raise HttpError(
                405,
                f"Method not allowed: {scope['method']}; at revision {version.decode('latin-1')} the MCP endpoint "
                "takes POST only",
                headers=[(b"allow", b"POST")],
            )
        accept = values[_ACCEPT]
        if accept != _USUAL_ACCEPT and not all(accepts_json_and_sse(accept)):
            raise HttpError(406, _NOT_ACCEPTABLE_POST)
        content_type = values[_CTYPE]
        if content_type != b"application/json" and not is_json_content_type(content_type):
            raise HttpError(415, "Unsupported media type: the body must be application/json")
        if self._closing:
            raise _shutting_down()
        message = parse_body(await read_body(receive, self.limits.max_request_bytes, values[_CLEN]))
        if type(message) is JsonRpcNotification:
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if type(message) is not JsonRpcRequest:
            raise refuse_non_request()
        named = version.decode("latin-1")
        if named not in self._stateless_versions and not has_envelope(message.params):
            # The header is the only version the request names, and it is not served.
            error = unsupported_version(named)
            raise HttpError(400, error.message, error.code, request_id=message.id, data=error.data)
        server = self.server if self.server is not None else await self._new_server()
        try:
            check_routing_headers(message, found, len(found) != len(scope["headers"]), scope["headers"], server)
        except HttpError as error:
            error.request_id = message.id
            raise
        endpoint = self._modern if self._modern is not None else ModernEndpoint(server)
        transport = SseTransport(limits=self.limits, keepalive=self.keepalive, stateless=True)
        # The keep-alive ticker looks after every stateless request through one owner, so a
        # request registers nothing with it (a transport per request would pile up between ticks).
        transport.keepalive_watched = True
        Connection(transport, endpoint)
        stateless = self._stateless
        stateless.transports.add(transport)
        if not stateless.keepalive_watched:
            self.keepalive.watch(stateless)
        try:
            await transport.serve_request(message, receive, send)
        finally:
            stateless.transports.discard(transport)
            transport.dispatcher = None  # no transport <-> connection cycle left for the collector

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- methods -------------------------------------------------------------------

    async def _get(self, scope: Scope, receive: Receive, send: Send, values: list[bytes | None]) -> None:
        if not accepts_json_and_sse(values[_ACCEPT])[1]:
            raise HttpError(406, _NOT_ACCEPTABLE_GET)
        session_id = values[_SESSION]
        if session_id is None:
            raise HttpError(400, "Bad request: a GET stream needs the Mcp-Session-Id header of an initialized session")
        live = await self._session(session_id)
        if self._closing:
            raise _shutting_down()
        last_id = parse_event_id(values[_LAST_ID])
        if self.router is not None and (last_id is None or stream_of(last_id) == STANDALONE_STREAM):
            await self._hold_standalone(live, scope, receive, send, values[_LAST_ID])
            return
        await live.transport.handle_get(scope, receive, send, values[_LAST_ID])

    async def _hold_standalone(
        self, live: LiveSession, scope: Scope, receive: Receive, send: Send, last_event_id: bytes | None
    ) -> None:
        """The session's standalone stream, held here across workers: this GET takes the session's
        lease (a holder on another worker is told to end its stream: a new GET supersedes the old),
        renews it while open, and messages other workers log for the stream wake it."""
        router = self.router
        assert router is not None
        lease = self._standalone_lease(live.record.id)
        self._holders += 1
        holder = f"{router.worker_id}:{self._holders}"
        previous = await lease.take(holder)
        live.standalone_holder = holder
        if previous is not None:
            worker_id = previous.rpartition(":")[0]
            if worker_id != router.worker_id:
                await router.send(worker_id, {"type": "release", "session": live.record.id, "holder": previous})

        async def renew() -> None:
            while True:
                await asyncio.sleep(lease.ttl / 3)
                with contextlib.suppress(StoreUnavailable):
                    if not await lease.renew(holder):
                        return

        renewing = asyncio.get_running_loop().create_task(renew())
        try:
            await live.transport.handle_get(scope, receive, send, last_event_id)
        finally:
            renewing.cancel()
            if live.standalone_holder == holder:
                live.standalone_holder = None
            with contextlib.suppress(StoreUnavailable):
                await lease.release(holder)

    def _standalone_lease(self, session_id: str) -> Lease:
        from ...stores.redis_routing import standalone_lease

        router = self.router
        assert router is not None
        registry = router.registry
        return standalone_lease(registry.redis, session_id, registry.ttl, prefix=registry.prefix)

    async def _delete(self, values: list[bytes | None], send: Send) -> None:
        session_id = values[_SESSION]
        if session_id is None:
            raise HttpError(400, "Bad request: DELETE needs the Mcp-Session-Id header of the session to end")
        live = await self._session(session_id)
        await self._end(live)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    # --- sessions ------------------------------------------------------------------

    async def _session(self, session_id: bytes) -> LiveSession:
        """The live session for a request (refreshing its idle clock), or HttpError 404.

        A version header naming no handshake revision never gets here: the router sends it to
        the stateless rules."""
        key = session_id.decode("latin-1")
        record = await self.sessions.get(key)
        live = self._live.get(key)
        if record is None:
            if live is not None and not live.closing:
                self._end_soon(live)  # ended by another worker (DELETE, expiry): this copy goes too
            raise HttpError(404, _UNKNOWN_SESSION)
        if live is None:
            if record.revision is None:  # still being initialized, on another worker
                raise HttpError(404, _UNKNOWN_SESSION)
            live = await self._adopt(record)
        elif live.closing:
            raise HttpError(404, _UNKNOWN_SESSION)
        elif self.sessions.shared and live.record is not record:
            _refresh(live, record)  # another worker may have changed it
        now = self.clock()
        if record.expired(now, self.limits.session_idle_timeout, self.limits.session_max_lifetime):
            self._end_soon(live)
            raise HttpError(404, _UNKNOWN_SESSION)
        if now - record.last_seen >= _TOUCH_GRANULARITY:
            await self.sessions.touch(live.record if self.sessions.shared else record, now)
        return live

    async def _open_session(self, scope: Scope, receive: Receive, send: Send, content_length: bytes | None) -> None:
        message = parse_body(await read_body(receive, self.limits.max_request_bytes, content_length))
        if type(message) is not JsonRpcRequest or message.method != "initialize":
            if type(message) is JsonRpcRequest and has_envelope(message.params):
                # A 2026-07-28 request without its version header: a recognised modern error, so a
                # probing client learns this server speaks the revision instead of falling back.
                raise HttpError(
                    400,
                    "Bad request: the MCP-Protocol-Version header is missing (a 2026-07-28 request names its "
                    "revision in the header as well as in _meta)",
                    HEADER_MISMATCH,
                    request_id=message.id,
                )
            raise HttpError(400, _MISSING_SESSION)
        if self._closing:
            raise _shutting_down()
        limit = self.limits.max_sessions
        if await self.sessions.count() + self._creating >= limit:
            await self.reap_expired()
            if await self.sessions.count() + self._creating >= limit:
                raise HttpError(
                    503,
                    f"Service unavailable: this server already has its maximum of {limit} sessions; try again later",
                    SERVER_BUSY,
                    headers=[(b"retry-after", b"5")],
                )
        session_id = new_session_id()
        now = self.clock()
        record = SessionRecord(session_id, now, now)
        transport = self._session_transport(record)
        self._creating += 1
        try:
            server = self.server if self.server is not None else await self._new_server()
            session = await server.connect(transport, record=record)
        except Exception:
            logger.exception("could not start a session: no session was created")
            raise HttpError(500, "Internal error: the server could not start a session") from None
        finally:
            self._creating -= 1
        await self.sessions.create(record)
        if self.sessions.shared:
            session.on_record_change = self._save_soon
        live = LiveSession(record, transport, session)
        self._live[session_id] = live
        await self._wire(live)
        self._start_reaper()
        try:
            await transport.handle_post(scope, receive, send, message)
        finally:
            if not transport.initialized:
                # A failed initialize (or a client gone before the reply) leaves nothing behind.
                await self._end(live)
            else:
                await self.sessions.save(record)

    def _session_transport(self, record: SessionRecord) -> SseTransport:
        """The HTTP transport of a session served here, opened here or adopted from the store."""
        transport = SseTransport(
            record.id,
            limits=self.limits,
            event_log=self.events,
            keepalive=self.keepalive,
            on_end=self._transport_ended,
            record=record,
        )
        transport.follows_other_workers = self.sessions.shared
        return transport

    async def _adopt(self, record: SessionRecord) -> LiveSession:
        """Serve here a session another worker opened (the store is shared): a local transport
        and session resumed from the record, without a visible handshake."""
        transport = self._session_transport(record)
        try:
            server = self.server if self.server is not None else await self._new_server()
            session = await server.connect(transport, record=record)
            session.resume()
            session.on_record_change = self._save_soon
        except Exception:
            logger.exception("could not resume session %s on this worker", record.id[:8])
            raise HttpError(500, "Internal error: the server could not resume the session") from None
        live = self._live.get(record.id)
        if live is None:  # (another request of the session may have adopted it meanwhile)
            live = self._live[record.id] = LiveSession(record, transport, session)
            self._start_reaper()
            await self._wire(live)
        return live

    # --- routing between workers (stores.redis_routing.WorkerRouter) ----------------

    async def _wire(self, live: LiveSession) -> None:
        """Server-to-client requests of this copy get ids naming this worker, and are noted in the
        request index before they go out, so their answers find their way back here."""
        router = self.router
        if router is None:
            return
        await self.start()
        live.session.connection.name_requests(router.request_ids())
        session_id = live.record.id

        async def awaiting(request_id: RequestId) -> None:
            await router.index.await_answer(session_id, request_id, router.worker_id)

        live.transport.before_outbound_request = awaiting

        async def runs_elsewhere(stream_id: str) -> bool:
            running = await router.index.inflight(session_id)
            return any(stream == stream_id and worker != router.worker_id for worker, stream in running.values())

        live.transport.runs_elsewhere = runs_elsewhere
        lease = self._standalone_lease(session_id)

        async def wake_holder() -> None:
            """A standalone message went to the backlog here: wake the worker holding the GET."""
            holder = await lease.holder()
            if holder is None:
                return
            worker_id = holder.rpartition(":")[0]
            if worker_id == router.worker_id:
                await live.transport.deliver_backlog()
            else:
                await router.send(worker_id, {"type": "wake", "session": session_id})

        live.transport.on_backlog = wake_holder

    async def _serve_claimed(self, live: LiveSession, request: JsonRpcRequest, receive: Receive, send: Send) -> None:
        """Serve a request noted in the request index (which worker runs it, for cancellations);
        an id in flight on another worker is a duplicate, as one in flight here is."""
        router = self.router
        assert router is not None
        session_id = live.record.id
        if not await router.index.claim(session_id, request.id, router.worker_id):
            raise HttpError(409, f"Conflict: request id {request.id!r} is already in flight in this session")
        transport = live.transport
        # Owned by this worker (for a reaper, should it die): the request and the log stream
        # serve_request gives it, noted while it runs (nothing may await before the call).
        stream_id = transport.next_stream_id()
        entry = f"{session_id} {stream_id or ''} {orjson.dumps(request.id).decode()}"
        noted = asyncio.ensure_future(self._note_running(session_id, request.id, stream_id, entry))
        try:
            await transport.serve_request(request, receive, send)
        finally:
            with contextlib.suppress(StoreUnavailable):
                await noted
                await router.registry.disown(entry)
            await router.index.finish(session_id, request.id)

    async def _note_running(self, session_id: str, request_id: RequestId, stream_id: str | None, entry: str) -> None:
        """A request this worker runs, for a reaper (``owns``) and for resumptions elsewhere (its stream)."""
        router = self.router
        assert router is not None
        await router.registry.own(entry)
        if stream_id is not None:
            await router.index.note_stream(session_id, request_id, router.worker_id, stream_id)

    async def _forwarded(self, live: LiveSession, message: Any, body: bytes) -> bool:
        """A client's answer to a server-to-client request another worker sent, or a cancellation
        of a request another worker runs: to that worker's inbox."""
        router = self.router
        if router is None:
            return False
        if type(message) is JsonRpcNotification and message.method == "notifications/cancelled":
            params = message.params or {}
            target = params.get("requestId")
            if not isinstance(target, str | int):
                return False
            running = await router.index.owner(live.record.id, target)
            if running is None or running[0] == router.worker_id:
                return False
            await router.send(running[0], {"type": "cancel", "session": live.record.id, "params": params})
            return True
        if type(message) not in (JsonRpcResponse, JsonRpcError) or message.id is None:
            return False
        owner = await router.index.answer_to(live.record.id, message.id)
        if owner is None or owner == router.worker_id:
            return False  # ours (or unknown: the local engine drops it)
        await router.send(owner, {"type": "answer", "session": live.record.id, "message": body.decode()})
        return True

    async def _routed(self, message: dict[str, Any]) -> None:
        """A message another worker routed to this one."""
        live = self._live.get(str(message.get("session")))
        if live is None or live.closing or live.transport.dispatcher is None:
            return
        if message.get("type") == "answer":
            live.transport.dispatcher.on_message(parse_message(str(message["message"]).encode()))
        elif message.get("type") == "cancel" and isinstance(message.get("params"), dict):
            params = message["params"]
            live.transport.dispatcher.on_message(JsonRpcNotification("notifications/cancelled", params))
            await live.transport.end_cancelled(params)
        elif message.get("type") == "wake":
            await live.transport.deliver_backlog()
        elif message.get("type") == "release" and message.get("holder") == live.standalone_holder:
            live.standalone_holder = None
            await live.transport.end_standalone()

    async def start(self) -> None:
        """Start what runs beside the requests: with a router, its inbox reader, its heartbeat
        and the loop that fails the requests of dead workers (``McpHttpServer.bind`` calls it;
        without it they start with the first session this worker serves)."""
        if self.router is not None and not self._closing:
            await self.router.start(self._routed)
            if self._worker_reaper is None:
                self._worker_reaper = asyncio.get_running_loop().create_task(self._reap_workers_forever())

    async def _reap_workers_forever(self) -> None:
        router = self.router
        assert router is not None
        ttl = router.registry.ttl
        interval = max(0.05, ttl / 3)
        loop = asyncio.get_running_loop()
        # Only once Redis has answered for a whole lease: after an outage every lease has lapsed,
        # and the live workers need one beat each before a lapsed lease means a dead worker.
        reachable_since = loop.time()
        while True:
            await asyncio.sleep(interval)
            try:
                if loop.time() - reachable_since >= ttl:
                    await self.reap_dead_workers()
                else:
                    await router.registry.alive(router.worker_id)  # is Redis reachable?
            except StoreUnavailable as error:
                reachable_since = loop.time() + interval
                logger.warning("could not look for dead workers: %s", error)
            except Exception:
                logger.exception("looking for dead workers failed")

    async def reap_dead_workers(self) -> list[str]:
        """Fail the requests of workers whose liveness lease lapsed (one reaper at a time across
        workers): each resumable stream they were writing gets the terminal JSON-RPC error
        ``-32603 "Request interrupted: the server instance running it stopped"``, so a client
        resuming it anywhere gets an answer. Returns the workers reaped."""
        from ...stores.redis_routing import reap_dead_workers as reap

        if self.router is None:
            return []
        return await reap(self.router.registry, self._fail_requests_of)

    async def _fail_requests_of(self, worker_id: str, entries: set[str]) -> None:
        router = self.router
        assert router is not None
        for session_id in {entry.partition(" ")[0] for entry in entries}:
            await router.index.forget_waiter(session_id, worker_id)
        for entry in entries:
            session_id, _, rest = entry.partition(" ")
            stream_id, _, raw_id = rest.partition(" ")
            try:
                request_id = orjson.loads(raw_id)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(request_id, str | int) or await self.sessions.get(session_id) is None:
                continue
            logger.warning(
                "worker %s stopped while running request %r of session %s", worker_id, request_id, session_id[:8]
            )
            if stream_id:
                _, ended = await self.events.follow(session_id, f"0/{stream_id}", 0)
                if not ended:  # (ended: its response went out before the worker died)
                    error = JsonRpcError(request_id, INTERNAL_ERROR, _INTERRUPTED)
                    await self.events.append(session_id, stream_id, encode_message(error), None, delivered=True)
                    await self.events.end_stream(session_id, stream_id, self.limits.stream_log_grace)
            running = await router.index.owner(session_id, request_id)
            if running is not None and running[0] == worker_id:
                await router.index.finish(session_id, request_id)

    def _save_soon(self, record: SessionRecord) -> None:
        """Write a changed record back to the shared store (log level, subscriptions)."""
        _in_background(self.sessions.save(record))

    async def _new_server(self) -> McpServer:
        assert self.on_session is not None
        server = self.on_session()
        if inspect.isawaitable(server):
            server = await server
        if not isinstance(server, McpServer):
            raise TypeError(f"on_session returned {type(server).__name__}, not an McpServer")
        return server

    def _transport_ended(self, transport: SseTransport) -> None:
        # The server side closed the session (ServerSession.close(), say): forget it.
        if transport.session_id is not None and transport.on_end_session:
            live = self._live.pop(transport.session_id, None)
            if live is not None and not live.closing:
                live.closing = True
                _in_background(self.sessions.delete(transport.session_id))

    async def _end(self, live: LiveSession) -> None:
        live.closing = True
        session_id = live.record.id
        if self._live.get(session_id) is live:
            del self._live[session_id]
        try:
            await self.sessions.delete(session_id)
            await live.transport.close()
        except Exception:
            logger.exception("closing session %s failed", session_id[:8])

    async def _release(self, live: LiveSession) -> None:
        """Stop serving a session here without ending it (its record stays in the shared store)."""
        live.closing = True
        if self._live.get(live.record.id) is live:
            del self._live[live.record.id]
        live.transport.on_end_session = False
        try:
            await live.transport.close()
        except Exception:
            logger.exception("releasing session %s failed", live.record.id[:8])

    def _end_soon(self, live: LiveSession) -> None:
        live.closing = True
        _in_background(self._end(live))

    async def reap_expired(self) -> int:
        """End every session past its idle timeout or lifetime (by ``clock``); returns how many."""
        expired = await self.sessions.expired(
            self.clock(), self.limits.session_idle_timeout, self.limits.session_max_lifetime
        )
        for session_id in expired:
            logger.info("session %s expired", session_id[:8])
            live = self._live.get(session_id)
            if live is not None:
                await self._end(live)
            else:
                await self.sessions.delete(session_id)
        return len(expired)

    def _start_reaper(self) -> None:
        if self._reaper is None and not self._closing:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        try:
            while self._live:
                await asyncio.sleep(self.limits.reap_interval)
                await self.reap_expired()
        finally:
            self._reaper = None

    @property
    def inflight(self) -> int:
        """Requests in flight across all sessions of this process."""
        return len(self._stateless.transports) + sum(live.transport.inflight for live in self._live.values())

    # --- shutdown --------------------------------------------------------------------

    async def shutdown(self, deadline: float | None = None) -> None:
        """Refuse new sessions and requests, let in-flight ones finish within
        ``deadline`` seconds (``shutdown_deadline`` by default), then end every
        stream and session."""
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
        for live in list(self._live.values()):
            if self.sessions.shared:
                await self._release(live)  # the session lives on: other workers serve it
            else:
                await self._end(live)
        self.keepalive.close()
        if self._worker_reaper is not None:
            self._worker_reaper.cancel()
            self._worker_reaper = None
        if self.router is not None:
            await self.router.stop()
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None


_background: set[asyncio.Task[Any]] = set()


def _in_background(work: Awaitable[Any]) -> None:
    task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(work)  # type: ignore[arg-type]
    _background.add(task)
    task.add_done_callback(_background.discard)


def _refresh(live: LiveSession, fresh: SessionRecord) -> None:
    """Bring a worker's copy of a shared session up to date with the store's record,
    in place (the transport and the ServerSession hold the same object)."""
    level = live.record.log_level
    for field in dataclasses.fields(SessionRecord):
        setattr(live.record, field.name, getattr(fresh, field.name))
    if fresh.log_level is not None and fresh.log_level != level:
        live.session.set_log_level(fresh.log_level)


def _shutting_down() -> HttpError:
    return HttpError(
        503, "Service unavailable: the server is shutting down", SERVER_BUSY, headers=[(b"connection", b"close")]
    )
