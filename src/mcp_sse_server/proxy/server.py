"""``proxy(target)``: an ``McpServer`` that serves another MCP server, whatever it is and speaks.

The target is an ``McpServer`` (in process), an ``http(s)://`` URL (Streamable HTTP; a ``.../sse``
URL or ``ServerConfig`` of type ``sse`` for the legacy transport), a stdio command line (a string,
split like a shell would, or a list) or a config entry (``ServerConfig`` or its dict). The front
is served at any revision this package serves; the backend at whatever it speaks.

Rules:

1. Connections. ``connections="session"`` (the default): each front session (2024-11-05 to
   2025-11-25) gets its own backend connection, opened at its first request after the handshake
   and closed when it ends, declaring the client capabilities that front session declared, so
   the backend never asks what the front cannot answer; it is a session too unless ``mode``
   pins another era. An in-process backend (``McpServer``) is always spoken to as a session
   unless ``mode`` pins the stateless revision: no envelope is stamped and read per call, and
   nothing scales out behind it. ``"pooled"``: the requests of every
   front that may ask something (``tools/call``, ``prompts/get``, ``resources/read``) lease one
   of ``pool`` connections exclusively for the call; lists and completion use the control
   connection. ``"principal"``: the same, from a pool of each token principal's own (issuer,
   subject, client id; requests without a token share one), so no backend connection carries
   two users' calls. Stateless (2026-07-28) requests are always served the pooled way. A separate
   control connection, opened by the first request, gives the capabilities and instructions
   the front advertises and serves stateless lists.
2. Lists: every page of the backend's list is fetched (at most ``MAX_PAGES``, a repeated cursor
   is an error), then the front pages the whole list with its own cursors (``page_size``): a
   backend cursor never reaches the front, and a front cursor without paging is -32602.
   Listed tools lose ``execution`` (the front runs no backend task: rule 7). The
   ``x-mcp-header`` arguments of the last tools list are the ``Mcp-Param-*`` headers the HTTP
   layer checks on a 2026-07-28 call (a call to a tool not listed yet is not checked).
3. Calls: the request is forwarded with its params, ``_meta`` cut down to the trace context
   (``traceparent``, ``tracestate``, ``baggage``); the front's progress token is replaced by the
   backend client's own and the backend's progress reported on the front token, values that do
   not increase dropped. Cancelling the front request cancels the backend request
   (``notifications/cancelled`` with the backend's id). A backend that closes the call's stream
   mid-call for its client to poll (SSE polling, SEP-1699; ``client/transport.py``'s
   ``stream_closed``, from an in-process backend's ``close_sse_stream`` or a Streamable HTTP
   POST stream that ends with an event id) makes the front close its own request's stream the
   same way (``close_sse_stream``: a priming event and ``retry``; where the front's revision
   cannot resume streams, nothing), and its client polls too.
4. Errors: a JSON-RPC error of the backend passes with its code, message and data. A backend
   that cannot be reached or dies mid-call fails that call: a tool call with an ``isError``
   result "Backend NAME is unavailable: ...", anything else with -32603 and that text; the next
   request restarts it, with backoff (``backend.py``). No traceback ever reaches the front.
5. Questions (sampling, elicitation, roots) the backend asks go to the front session its
   connection serves, tied to the one call in flight when there is exactly one. Behind a
   stateless front, a stateless backend connection (an in-process backend's always, a
   URL's or command's when it speaks 2026-07-28) passes its rounds through: the call declares
   the capabilities the front request declared, the backend's ``input_required`` result
   reaches the front as it gave it (its question keys, all of one round's questions at once),
   its ``requestState`` kept inside the front's own sealed state, and the front's retry
   sends the backend the client's ``inputResponses`` and that state: any pooled connection
   continues the call, and a backend that needs a capability the front did not declare says
   -32021 itself. With ``roots=`` the proxy declares roots and answers roots/list itself.
   A session connection behind a stateless front turns its question into the front's
   ``input_required`` round: the backend call is cancelled and, on the retry, made again
   from the start, its questions answered in order from the retry's answers (replay: side
   effects before a question repeat). A pooled connection answers roots/list with ``roots=``
   and declares no roots without it: a backend session may ask for roots right after its
   handshake, outside any call, and no front request could answer that.
6. Notifications: a session's backend sends its list changes, resource updates and
   ``elicitation/complete`` to that session (updates only for URIs it subscribed); its logs go
   through the front session's level (the backend is asked for every level). The control
   connection's list changes reach ``subscriptions/listen`` listeners (and, with connections
   other than ``"session"``, every front session: their subscriptions and list changes travel
   on the control connection, its resource updates reach the sessions that subscribed). A front
   ``roots/list_changed`` is passed to every session backend (the engine does not say whose).
7. Not forwarded: tasks (the backend's ``tasks`` capability is not advertised; a call is a
   plain call), ``ping`` (answered by the front), skills.
"""

from __future__ import annotations

import asyncio
import contextvars
import shlex
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from ..client.transport import stream_closed
from ..engine.background import in_background
from ..engine.context import RequestContext, current_context
from ..engine.jsonrpc import INTERNAL_ERROR, JsonRpcNotification, McpError
from ..engine.registry import Pager, params_str
from ..engine.server import McpServer
from ..engine.session import ServerSession
from ..engine.stateless import InputRequired, RequestSession
from ..engine.stateless_meta import TASKS_EXTENSION, MirroredHeader, mirrored_headers
from ..engine.transports import is_url
from ..engine.types import CallToolResult
from .backend import FIRST_DELAY, Backend, BackendUnavailable, ClientFactory

if TYPE_CHECKING:
    from ..client.config import ServerConfig
    from ..client.results import LogMessage

__all__ = ["MAX_PAGES", "ProxyServer", "proxy"]

MAX_PAGES: Final = 100
"""The most pages of one backend list fetched for one front list."""

Connections = Literal["session", "pooled", "principal"]

_KEPT_META: Final = ("traceparent", "tracestate", "baggage")
# Where a stateless front's sealed requestState keeps the backend's round (rule 5): its
# requestState and the answers the proxy gave itself (roots=).
_HELD: Final = "io.github.mcp-sse-server/proxy-round"
_OWN_ROUNDS: Final = 10  # the most rounds a proxy answers itself (roots=, state only) in one front round
_TRACE_KEYS: Final = frozenset(_KEPT_META)
_FRONT_KEYS: Final = ("_meta", "inputResponses", "requestState", "task")
_ASKED_CAPABILITY: Final = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
# What a pooled connection declares: it may serve any front (rule 1).
# (Not roots: a backend may ask for them outside any call, right after its handshake, where no
# front could answer; a pooled connection declares roots only with ``roots=``, answering with those.)
# (Nor URL elicitation: 2026-07-28 removed it, and only stateless fronts use these connections.)
_EVERY_CAPABILITY: Final[dict[str, Any]] = {"sampling": {}, "elicitation": {"form": {}}}
_LISTS: Final = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
# The task of the stateless call being forwarded, in that task and what it starts (rule 5).
_WAITING: contextvars.ContextVar[asyncio.Task[Any] | None] = contextvars.ContextVar("proxy_waiting", default=None)


class _Front:
    """The front a backend connection answers to now: a session, and its calls in flight."""

    __slots__ = ("asked", "calls", "session", "waiting")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.calls: list[RequestContext] = []
        # A stateless call's: the task waiting for the backend, cancelled once a question must go
        # to the front in another round (``asked``).
        self.waiting: asyncio.Task[Any] | None = None
        self.asked = False

    async def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        calls = self.calls
        # (Inside the one call in flight: the question travels on its stream, or becomes its round.)
        token = current_context.set(calls[0] if len(calls) == 1 else None)
        try:
            answer: dict[str, Any] = await self.session.request(method, params, _ASKED_CAPABILITY.get(method), 300.0)
            return answer
        except InputRequired:
            waiting = self.waiting
            if waiting is not None and not self.asked:
                self.asked = True
                if _WAITING.get() is not waiting:
                    # Asked from the backend connection's own task: the call would wait on.
                    # (Asked inside the call's task, a 2026-07-28 backend's round, the refusal
                    # below ends the call by itself.)
                    waiting.cancel()
            raise McpError(INTERNAL_ERROR, "the client answers this in its next round") from None
        finally:
            current_context.reset(token)

    def log(self, message: LogMessage) -> None:
        calls = self.calls
        related = calls[0].request_id if len(calls) == 1 else None
        session = self.session
        if isinstance(session, RequestSession) or session.ready:
            in_background(session.log(message.level, message.data, message.logger, related_request_id=related))


class _Pool:
    """At most ``size`` backend connections, each leased to one call at a time (first come,
    first served when all are out)."""

    __slots__ = ("_idle", "_made", "_waiters", "make", "size")

    def __init__(self, make: Callable[[], Backend], size: int) -> None:
        self.make = make
        self.size = size
        self._idle: list[Backend] = []
        self._made: list[Backend] = []
        self._waiters: deque[asyncio.Future[Backend]] = deque()

    async def lease(self) -> Backend:
        if self._idle:
            return self._idle.pop()
        if len(self._made) < self.size:
            backend = self.make()
            self._made.append(backend)
            return backend
        waiter: asyncio.Future[Backend] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await waiter  # (a waiter cancelled after release handed it one: see release)

    def release(self, backend: Backend) -> None:
        backend.asker = None
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(backend)
                return
        self._idle.append(backend)

    async def close(self) -> None:
        for backend in self._made:
            await backend.close()


class ProxyServer(McpServer):
    """An ``McpServer`` whose methods forward to a backend (rules in the module docstring; build
    one with ``proxy``)."""

    def __init__(
        self,
        factory: ClientFactory,
        *,
        name: str = "proxy",
        connections: Connections = "session",
        pool: int = 4,
        page_size: int | None = None,
        mode: str = "auto",
        roots: Sequence[Mapping[str, Any]] | None = None,
        first_delay: float | None = None,
        round_mode: str | None = None,
    ) -> None:
        super().__init__(name, page_size=page_size)
        if connections not in ("session", "pooled", "principal"):
            raise ValueError(f'connections must be "session", "pooled" or "principal", not {connections!r}')
        if pool < 1:
            raise ValueError("pool must be at least 1")
        self.factory = factory
        self.connections: Connections = connections
        self.mode = mode
        # The era of the pooled connections that serve stateless fronts (rule 5): a stateless one
        # passes the backend's rounds on as they are (default: ``mode``).
        self.round_mode = mode if round_mode is None else round_mode
        self.roots = None if roots is None else [dict(root) for root in roots]
        self._pager = Pager(page_size)
        self.first_delay = FIRST_DELAY if first_delay is None else first_delay  # backend.py rule 3
        self._backend_capabilities: dict[str, Any] | None = None
        self._control = self._backend(_EVERY_CAPABILITY, on_notification=self._control_notified)
        self.pool = pool
        self._pool = _Pool(self._pooled_backend, pool)
        # Stateless fronts': the same pool unless their connections are of another era.
        self._round_pool = self._pool if self.round_mode == mode else _Pool(self._round_backend, pool)
        # connections="principal": a pool of each token principal's own (None: no token), and
        # whether it serves stateless fronts.
        self._pools: dict[tuple[bool, tuple[str, str | None, str | None] | None], _Pool] = {}
        self._fronts: dict[ServerSession, tuple[Backend, _Front]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        # Where change notifications are announced, and the URIs they name as the front knows
        # them: this server's own, unless a gateway serves it under a namespace (gateway.py).
        self.announcer: McpServer = self
        self.front_uri: Callable[[str], str] = str
        self.on_roots_list_changed = self._roots_changed
        # The Mcp-Param-* headers of each backend tool, from its last tools/list (rule 2).
        self._headers: dict[str, tuple[MirroredHeader, ...]] = {}
        self.mirrored_headers = self._mirrored_headers
        handlers = self.handlers
        for method in ("initialize", "server/discover", "subscriptions/listen"):
            handlers.register(method, self._after_control(handlers[method]))
        for method, key in _LISTS.items():
            handlers.register(method, self._lister(method, key))
        handlers.register("tools/call", self._call_tool)
        for method in ("prompts/get", "resources/read"):
            handlers.register(method, self._caller(method))
        handlers.register("completion/complete", self._completion)
        handlers.register("resources/subscribe", self._subscribe)
        handlers.register("resources/unsubscribe", self._unsubscribe)

    # --- what the front advertises ---------------------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        """The backend's capabilities (once its control connection is up), without ``tasks``;
        ``logging`` always."""
        found = self._backend_capabilities or {}
        capabilities = {key: value for key, value in found.items() if key not in ("tasks", "extensions")}
        capabilities["logging"] = {}
        return capabilities

    def _after_control(self, handler: Callable[..., Awaitable[dict[str, Any]]]) -> Any:
        async def handle(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            if self._backend_capabilities is None:
                await self._start_control()
            return await handler(params, context)

        return handle

    async def _start_control(self) -> None:
        try:
            client = await self._control.client()
        except BackendUnavailable as error:
            raise McpError(INTERNAL_ERROR, str(error)) from None
        self._backend_capabilities = dict(client.server_capabilities or {})
        if self.instructions is None:
            self.instructions = client.instructions

    # --- connections -------------------------------------------------------------------------

    def _backend(
        self,
        capabilities: dict[str, Any] | None,
        *,
        on_notification: Callable[[JsonRpcNotification], Any] | None,
        mode: str | None = None,
    ) -> Backend:
        return Backend(
            self.name,
            self.factory,
            capabilities=capabilities,
            mode=mode or self.mode,
            on_notification=on_notification,
            first_delay=self.first_delay,
        )

    def _round_backend(self) -> Backend:
        return self._pooled_backend(self.round_mode)

    def _pooled_backend(self, mode: str | None = None) -> Backend:
        backend = self._backend(_EVERY_CAPABILITY, on_notification=None, mode=mode)
        backend.roots = self.roots
        backend.on_log = self._pooled_log(backend)
        return backend

    @staticmethod
    def _pooled_log(backend: Backend) -> Callable[[LogMessage], None]:
        def log(message: LogMessage) -> None:
            asker = backend.asker
            front = getattr(asker, "__self__", None)
            if isinstance(front, _Front):
                front.log(message)

        return log

    def _pool_for(self, context: RequestContext, stateless: bool) -> _Pool:
        """The pool a call leases its connection from (rule 1)."""
        if self.connections != "principal":
            return self._round_pool if stateless else self._pool
        token = context.auth
        key = (stateless and self._round_pool is not self._pool, None if token is None else token.principal)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(self._round_backend if key[0] else self._pooled_backend, self.pool)
        return pool

    def _session_backend(self, session: ServerSession) -> tuple[Backend, _Front]:
        found = self._fronts.get(session)
        if found is None:
            front = _Front(session)
            # (A session front, a session backend where the mode leaves the choice: subscriptions,
            # logging/setLevel and list changes then work the same way on both sides.)
            mode = "session" if self.mode == "auto" else self.mode
            capabilities = dict(session.client_capabilities or {})
            backend = self._backend(capabilities, on_notification=self._relay(session), mode=mode)
            backend.asker = front.ask
            backend.on_log = front.log
            found = self._fronts[session] = (backend, front)
        return found

    def session_ended(self, session: ServerSession) -> None:
        """The front session ended: its backend connection is closed."""
        super().session_ended(session)
        found = self._fronts.pop(session, None)
        if found is not None:
            closing = in_background(found[0].close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every front session and every backend connection."""
        await super().close()  # (which ends in close_server_scope, below)

    async def close_server_scope(self) -> None:
        """Close every backend connection (a stdio backend's process ends with it), as the HTTP
        app's shutdown does; a later request opens them again."""
        await super().close_server_scope()
        fronts, self._fronts = self._fronts, {}
        for backend, _front in fronts.values():
            await backend.close()
        for closing in list(self._closing):  # (those of sessions that ended before)
            await closing
        for pool in {self._pool, self._round_pool, *self._pools.values()}:
            await pool.close()
        await self._control.close()

    # --- notifications -----------------------------------------------------------------------

    def _relay(self, session: ServerSession) -> Callable[[JsonRpcNotification], None]:
        def relay(notification: JsonRpcNotification) -> None:
            method, params = notification.method, notification.params
            if method.endswith("/list_changed") or method == "notifications/elicitation/complete":
                session.notify_soon(method, params)
            elif method == "notifications/resources/updated":
                uri = (params or {}).get("uri")
                if isinstance(uri, str) and session.is_subscribed(front := self.front_uri(uri)):
                    session.notify_soon(method, {**(params or {}), "uri": front})

        return relay

    def _control_notified(self, notification: JsonRpcNotification) -> None:
        method = notification.method
        announcer = self.announcer
        if method.endswith("/list_changed"):
            if self.connections != "session":
                announcer._list_changed(method)  # every front session, and the listeners
            elif announcer._event_bus is not None:  # (sessions hear their own backend connection)
                in_background(announcer._event_bus.publish({"kind": method.split("/")[1]}))
        elif method == "notifications/resources/updated":
            # Subscriptions went over this connection (connections other than "session").
            uri = (notification.params or {}).get("uri")
            if isinstance(uri, str):
                in_background(announcer.notify_resource_updated(self.front_uri(uri)))

    def _roots_changed(self) -> None:
        for backend, _front in list(self._fronts.values()):
            in_background(backend.notify("notifications/roots/list_changed"))

    # --- forwarding --------------------------------------------------------------------------

    async def _listing_backend(self, context: RequestContext) -> Backend:
        session = context.session
        if self.connections == "session" and type(session) is ServerSession:
            return self._session_backend(session)[0]
        if self._backend_capabilities is None:
            await self._start_control()
        return self._control

    def _lister(self, method: str, key: str) -> Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]:
        async def handle(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            backend = await self._listing_backend(context)
            items: list[dict[str, Any]] = []
            cursor: Any = None
            seen: set[Any] = set()
            for _ in range(MAX_PAGES):
                try:
                    page = await backend.request(method, None if cursor is None else {"cursor": cursor})
                except BackendUnavailable as error:
                    raise McpError(INTERNAL_ERROR, str(error)) from None
                found = page.get(key)
                if isinstance(found, list):
                    items.extend(entry for entry in found if isinstance(entry, dict))
                cursor = page.get("nextCursor")
                if cursor is None:
                    break
                if cursor in seen:
                    raise McpError(INTERNAL_ERROR, f"Backend {self.name} repeated a {method} cursor")
                seen.add(cursor)
            else:
                raise McpError(INTERNAL_ERROR, f"Backend {self.name} listed more than {MAX_PAGES} pages of {method}")
            if key == "tools":
                items = [_without(entry, "execution") for entry in items]
                self._headers = _headers_of(items)
            return self._pager.page(method, key, items, params)

        return handle

    def _mirrored_headers(self, name: str) -> tuple[MirroredHeader, ...]:
        return self._headers.get(name, ())

    async def _call_tool(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        try:
            return await self._forward("tools/call", params, context)
        except BackendUnavailable as error:
            return CallToolResult.error(str(error)).to_dict()

    def _caller(self, method: str) -> Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]:
        async def handle(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            try:
                return await self._forward(method, params, context)
            except BackendUnavailable as error:
                raise McpError(INTERNAL_ERROR, str(error)) from None

        return handle

    async def _completion(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        backend = await self._listing_backend(context)
        try:
            return await backend.request("completion/complete", _forwarded(params))
        except BackendUnavailable as error:
            raise McpError(INTERNAL_ERROR, str(error)) from None

    async def _subscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        session = context.session
        result = await self._session_call("resources/subscribe", params, context)
        session.subscribe(self.front_uri(params_str(params, "uri")))
        return result

    async def _unsubscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        session = context.session
        session.unsubscribe(self.front_uri(params_str(params, "uri")))
        return await self._session_call("resources/unsubscribe", params, context)

    async def _session_call(self, method: str, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        try:
            return await (await self._listing_backend(context)).request(method, _forwarded(params))
        except BackendUnavailable as error:
            raise McpError(INTERNAL_ERROR, str(error)) from None

    async def _forward(self, method: str, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """One call that may ask the front something (rules 1, 3 and 5)."""
        if "_meta" in params or "inputResponses" in params or "task" in params:
            params = _forwarded(params)
        # The backend closing the call's stream mid-call closes the front's (rule 3).
        closing = stream_closed.set(context.close_sse_stream)
        try:
            if context.progress_token is None:
                return await self._forward_on(method, params, context, None)
            relay = _ProgressRelay(context)
            result = await self._forward_on(method, params, context, relay)
            await relay.flush()
            return result
        finally:
            stream_closed.reset(closing)

    async def _forward_on(
        self, method: str, params: dict[str, Any], context: RequestContext, on_progress: _ProgressRelay | None
    ) -> dict[str, Any]:
        session = context.session
        if self.connections == "session" and type(session) is ServerSession:
            backend, front = self._session_backend(session)
            front.calls.append(context)
            try:
                return await backend.request(method, params, on_progress)
            finally:
                front.calls.remove(context)
        stateless = isinstance(session, RequestSession)
        pool = self._pool_for(context, stateless)
        backend = await pool.lease()
        front = _Front(session)
        front.calls.append(context)
        backend.asker = front.ask
        try:
            if stateless:
                passed = await self._pass_round(backend, method, params, context, on_progress)
                if passed is not None:
                    return passed
                # A session behind a stateless front: its questions replayed (rule 5).
                front.waiting = asyncio.current_task()
                _WAITING.set(front.waiting)
            try:
                result = await backend.request(method, params, on_progress)
            except BaseException:
                # (Once asked, whatever ended the call, our cancellation or the refusal the question
                # ended in, ends this round: rule 5.)
                if not front.asked:
                    raise
                waiting = front.waiting
                if waiting is not None and waiting.cancelling():
                    waiting.uncancel()
                raise InputRequired from None
        finally:
            pool.release(backend)
        if front.asked:  # (the backend answered the refusal with a result of its own)
            raise InputRequired
        return result

    async def _pass_round(
        self,
        backend: Backend,
        method: str,
        params: dict[str, Any],
        context: RequestContext,
        on_progress: _ProgressRelay | None,
    ) -> dict[str, Any] | None:
        """A stateless front's call on a stateless backend connection: its rounds passed through
        (rule 5); None when the connection is a session."""
        session = context.session
        held = session.answers.get(_HELD)
        state: Any = None
        responses = dict(session.responses)
        if isinstance(held, dict):  # a continuation: the round this front client answers
            state = held.get("state")
            own = held.get("answers")
            if isinstance(own, dict):
                responses = {**own, **responses}
        capabilities = _declared(session.client_capabilities, roots=self.roots is not None)
        sent = dict(params)
        for rounds in range(_OWN_ROUNDS):
            if responses:
                sent["inputResponses"] = responses
            if state is not None:
                sent["requestState"] = state
            result = await backend.round(method, sent, capabilities, on_progress)
            if result is None or result.get("resultType") != "input_required":
                return result
            requests = result.get("inputRequests") or {}
            if not isinstance(requests, dict):
                raise McpError(INTERNAL_ERROR, f"Backend {self.name} answered {method} with malformed inputRequests")
            state = result.get("requestState")
            sent.pop("inputResponses", None)
            sent.pop("requestState", None)
            # Roots the proxy was given answer the backend's roots/list itself; the rest are the
            # front client's to answer, under the backend's keys, all in one round.
            responses = {
                key: {"roots": self.roots} for key, asked in requests.items() if _lists_roots(asked, self.roots)
            }
            questions = {key: asked for key, asked in requests.items() if key not in responses}
            if questions:
                session.questions.update(questions)
                # (Sealed into the front's requestState, so its continuation resumes this call.)
                session.answers = {_HELD: {"state": state, "answers": responses}}
                raise InputRequired
            if not responses:  # only state: the backend is still working; give it a moment
                await asyncio.sleep(min(0.05 * (rounds + 1), 0.25))
        raise McpError(INTERNAL_ERROR, f"Backend {self.name} still needed input after {_OWN_ROUNDS} rounds")


class _ProgressRelay:
    """Reports a backend call's progress on the front request's token, in order; ``flush`` waits
    for what is still on its way, so the front sees it before the result (rule 3)."""

    __slots__ = ("context", "last")

    def __init__(self, context: RequestContext) -> None:
        self.context = context
        self.last: asyncio.Task[None] | None = None

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.last = in_background(self._report(self.last, progress, total, message))

    async def _report(
        self, before: asyncio.Task[None] | None, progress: float, total: float | None, message: str | None
    ) -> None:
        if before is not None:
            await before
        try:
            await self.context.report_progress(progress, total, message)
        except ValueError:
            pass  # not above the last value: the front's token must only increase

    async def flush(self) -> None:
        if self.last is not None:
            await self.last


def _forwarded(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without what belongs to the front's connection: ``_meta`` cut down to the trace
    context, no ``inputResponses`` or ``requestState`` (the front's rounds, not the backend's),
    no ``task`` (rules 3 and 7)."""
    out = dict(params)
    for key in _FRONT_KEYS:
        out.pop(key, None)
    meta = params.get("_meta")
    if isinstance(meta, dict) and not _TRACE_KEYS.isdisjoint(meta):
        out["_meta"] = {key: meta[key] for key in _KEPT_META if key in meta}
    return out


def _declared(capabilities: dict[str, Any] | None, *, roots: bool) -> dict[str, Any]:
    """What a stateless backend round declares: the front request's client capabilities, less
    the Tasks extension (rule 7), plus roots when the proxy answers them (``roots=``)."""
    declared = dict(capabilities or {})
    extensions = declared.get("extensions")
    if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
        declared["extensions"] = {key: value for key, value in extensions.items() if key != TASKS_EXTENSION}
    if roots:
        declared["roots"] = {}
    return declared


def _lists_roots(asked: Any, roots: list[dict[str, Any]] | None) -> bool:
    return roots is not None and isinstance(asked, dict) and asked.get("method") == "roots/list"


def _without(entry: dict[str, Any], key: str) -> dict[str, Any]:
    if key not in entry:
        return entry
    return {name: value for name, value in entry.items() if name != key}


# --- targets -------------------------------------------------------------------------------------


def client_factory(target: McpServer | str | Sequence[str] | ServerConfig | Mapping[str, Any]) -> ClientFactory:
    """How the proxy connects to ``target`` (see the module docstring for the forms)."""
    if isinstance(target, McpServer):
        server = target

        def in_memory(**options: Any) -> Any:
            from ..client.memory import InMemoryClient

            return InMemoryClient(server, **options)

        return in_memory
    from ..client.config import ServerConfig
    from ..client.connect import create_client

    if isinstance(target, ServerConfig):
        config = target
    elif isinstance(target, Mapping):
        config = ServerConfig.from_dict(target)
    elif isinstance(target, str) and is_url(target):
        legacy = target.rstrip("/").endswith("/sse")
        config = ServerConfig.from_dict({"type": "sse" if legacy else "streamable-http", "url": target})
    else:
        words = shlex.split(target) if isinstance(target, str) else list(target)
        if not words or not all(isinstance(word, str) for word in words):
            raise ValueError(f"a proxy target is a server, a URL, a command line or a config, not {target!r}")
        config = ServerConfig.from_dict({"type": "stdio", "command": words[0], "args": words[1:]})

    def configured(**options: Any) -> Any:
        return create_client(config, **options)

    return configured


def _headers_of(tools: list[dict[str, Any]]) -> dict[str, tuple[MirroredHeader, ...]]:
    """Tool name -> the arguments it mirrors in headers (a schema whose ``x-mcp-header`` the
    specification forbids mirrors none here: the backend judges its own calls)."""
    found: dict[str, tuple[MirroredHeader, ...]] = {}
    for tool in tools:
        name, schema = tool.get("name"), tool.get("inputSchema")
        if isinstance(name, str) and type(schema) is dict:
            try:
                headers = mirrored_headers(schema)
            except ValueError:
                continue
            if headers:
                found[name] = headers
    return found


def proxy(
    target: McpServer | str | Sequence[str] | ServerConfig | Mapping[str, Any],
    *,
    name: str | None = None,
    connections: Connections = "session",
    pool: int = 4,
    page_size: int | None = None,
    mode: str = "auto",
    roots: Sequence[Mapping[str, Any]] | None = None,
) -> ProxyServer:
    """An ``McpServer`` serving ``target`` (rules in the module docstring).

    >>> front = proxy("npx -y @modelcontextprotocol/server-everything stdio")  # doctest: +SKIP
    >>> front.run("http", port=8080)  # doctest: +SKIP

    ``name`` is the front's ``serverInfo`` name and what errors call the backend (default: the
    config's name, else "proxy"); ``connections`` and ``pool`` choose how backend connections
    are shared (rule 1); ``page_size`` pages the front's lists; ``mode`` pins the backend's era
    (``"session"``, ``"2026-07-28"``; ``"auto"``: a session front's backend connection is a
    session, the others probe; an in-process backend's are sessions, but a stateless front's
    calls go at 2026-07-28, whose rounds pass through: rule 5); ``roots`` (``{"uri", "name"?}``
    dicts) answer the roots/list of pooled connections (rule 5). ValueError (ConfigError) for
    a target that is none of the forms.
    """
    factory = client_factory(target)
    round_mode = None
    if isinstance(target, McpServer) and mode == "auto":
        # In this process a session is the cheaper way in (no envelope stamped and read per
        # call), and nothing scales out behind an in-process backend: rule 1. Stateless fronts'
        # calls speak its stateless revision, whose rounds pass through as they are (rule 5).
        mode, round_mode = "session", "2026-07-28"
    if name is None:
        configured = getattr(target, "name", None) if not isinstance(target, str | McpServer) else None
        if isinstance(target, Mapping):
            configured = target.get("name")
        name = configured if isinstance(configured, str) and configured else "proxy"
    return ProxyServer(
        factory,
        name=name,
        connections=connections,
        pool=pool,
        page_size=page_size,
        mode=mode,
        roots=roots,
        round_mode=round_mode,
    )
