"""ClientCore: what every part of ``McpClient`` builds on. The client's options and handlers,
its transport and the connection open on it, sending a request, the ``ttlMs`` cache, and what
the server asks of the client.

Rules:

1. ``McpClient`` (``client/base.py``) is this class and its method groups, one module each,
   each a subclass of this one: the handshake and era (``handshake.py``), the stateless
   revision's requests (``stateless_calls.py``), the session fallback (``fallback.py``), the
   typed MCP methods (``methods.py``) and change notifications (``subscription.py``). A group
   calls another only through the abstract methods declared here.
2. One request path: ``request`` sends a session revision's request over the transport
   (``ClientTransport.request``), re-initializing once when the server forgot the session, and
   hands a stateless revision's request to ``_stateless_or_session``.
3. What the server asks (a request on a session, an ``input_required`` entry at 2026-07-28) is
   answered by the same handlers (``_serve``); notifications reach ``on_log``,
   ``on_elicitation_complete``, ``on_notification`` and the open subscriptions.
4. ``event_hooks`` (``client/hooks.py``) see every request sent (``_exchange``: the one call to
   the transport, for both eras), every notification and every answer to the server
   (``_answer``); a client without them keeps ``_hooks`` None, which each path tests first.
5. ``telemetry`` (``telemetry/client.py``, loaded only when it is switched on) traces the same
   points: a CLIENT span per request sent on a session (``_exchange``), one per logical call of
   the stateless revision (``_traced_call``: its rounds, retries and fallback are events of
   it), a SERVER span per request answered (``_answer``), and the session's duration. Off, the
   client keeps ``_telemetry`` None: one more attribute test on each request path, nothing else.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeAlias

from ..engine import versions
from ..engine.app_links import APP_MIME_TYPE, APPS_EXTENSION
from ..engine.context import RequestContext
from ..engine.jsonrpc import (
    CONNECTION_CLOSED,
    METHOD_NOT_FOUND,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
)
from ..engine.protocol import Connection, ProgressCallback
from ..engine.stateless_meta import TASKS_EXTENSION
from ..engine.types import Tool
from .elicitation import URL_ELICITATION_REQUIRED, UrlElicitationRequiredError, check_mode
from .results import LogMessage
from .stateless import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    UnsupportedProtocolVersionError,
)
from .subscription import Subscription
from .transport import ClientTransport

if TYPE_CHECKING:  # each module loads when first needed: hooks when a client has some,
    # typed_handlers when a server first asks something (_serve), telemetry when it is on
    from ..telemetry.client import ClientTelemetry
    from .hooks import EventHook, EventHooks
    from .typed_handlers import ElicitationHandler, RootsSource, SamplingHandler


def _event_hooks(hooks: Mapping[str, Sequence[EventHook]]) -> EventHooks:
    from .hooks import EventHooks  # (its event dataclasses cost a client without hooks nothing)

    return EventHooks(hooks)


def _client_telemetry(settings: object) -> ClientTelemetry | None:
    """The telemetry of a client made with ``telemetry=settings``: None for None or False (off);
    ``True``, a ``telemetry.Telemetry`` or another ``ClientTelemetry``'s settings switch it on."""
    if settings is None or settings is False:
        return None
    from ..telemetry.config import require_api

    require_api()  # an ImportError naming the otel extra when the API is missing
    from ..telemetry.client import ClientTelemetry

    return settings if isinstance(settings, ClientTelemetry) else ClientTelemetry(settings)


__all__ = [
    "DEFAULT_LOG_LEVEL",
    "MODES",
    "ClientCore",
    "Era",
    "SessionExpiredError",
]

logger = logging.getLogger("mcp_sse_server.client")

DEFAULT_REQUEST_TIMEOUT: Final = 300.0
DEFAULT_MAX_INPUT_ROUNDS: Final = 10
DEFAULT_PROBE_TIMEOUT: Final = 10.0
# The level asked for when an on_log handler is set and no log_level is given: what a log
# handler is usually for (notices, warnings, errors, and the informational lines), without debug noise.
DEFAULT_LOG_LEVEL: Final = "info"
# mode=: probe for the stateless revision and fall back to a session, only a session, or only the
# stateless revision (named by its date).
MODE_AUTO: Final = "auto"
MODE_SESSION: Final = "session"
MODES: Final = (MODE_AUTO, MODE_SESSION, *versions.CLIENT_STATELESS)
# Cacheable list results, and the notification that makes each stale.
_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

LogHandler = Callable[[LogMessage], Any]
ElicitationCompleteHandler = Callable[[dict[str, Any]], Any]
NotificationHandler = Callable[[JsonRpcNotification], Any]


class SessionExpiredError(Exception):
    """The server no longer knows this client's session (HTTP 404); re-initialize."""


Era: TypeAlias = Literal["stateless", "session"]
"""What ``McpClient.era`` holds once connected."""

ERA_STATELESS: Final[Era] = "stateless"
ERA_SESSION: Final[Era] = "session"


class ClientCore(ABC):
    """The state and request path every method group of ``McpClient`` shares (see the module;
    ``McpClient`` documents the options)."""

    def __init__(
        self,
        transport: ClientTransport,
        *,
        client_name: str = "mcp-sse-server",
        client_version: str = "0.1.0",
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: RootsSource | None = None,
        on_log: LogHandler | None = None,
        on_notification: NotificationHandler | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        elicitation_url: bool = False,
        sampling_tools: bool = False,
        on_elicitation_complete: ElicitationCompleteHandler | None = None,
        mode: str = MODE_AUTO,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        log_level: str | None = None,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
        cache: bool = True,
        session_fallback: bool = True,
        remember_era: bool = True,
        event_hooks: Mapping[str, Sequence[EventHook]] | None = None,
        apps: bool = False,
        telemetry: object = None,
    ) -> None:
        if not isinstance(transport, ClientTransport):
            raise TypeError(f"transport must be a ClientTransport, not {type(transport).__name__}")
        if max_input_rounds < 1:
            raise ValueError("max_input_rounds must be at least 1")
        self.transport = transport
        transport.tool_schema = self.tool_schema
        self.mode = mode
        self.max_input_rounds = max_input_rounds
        self.log_level = log_level  # as given; effective_log_level says what is asked for
        self.probe_timeout = probe_timeout
        self.cache = cache
        self.session_fallback = session_fallback
        self.remember_era = remember_era
        self.client_info = {"name": client_name, "version": client_version}
        self.sampling_handler = sampling_handler
        self.elicitation_handler = elicitation_handler
        self.roots = roots if roots is None or callable(roots) else list(roots)  # a function: asked each time
        self.on_log = on_log
        self.on_notification = on_notification
        self.request_timeout = request_timeout
        self.elicitation_url = elicitation_url
        self.sampling_tools = sampling_tools
        self.on_elicitation_complete = on_elicitation_complete
        self.apps = apps  # declares the MCP Apps extension (client/apps.py)
        # What the server said: set by the handshake (handshake.py), kept across reconnects.
        self.era: Era | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] | None = None
        self.server_capabilities: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.discover_result: dict[str, Any] | None = None
        self.connection: Connection | None = None
        self._initialize_result: dict[str, Any] | None = None
        self._handshakes = 0  # successful handshakes: a request that met an expired session knows if one came since
        self._reinitializing: asyncio.Lock | None = None
        self._cached: dict[tuple[str, str], tuple[float, Any]] = {}
        self._subscriptions: dict[Any, Subscription] = {}
        self._tools_cache: list[Tool] | None = None
        self._owner: ClientCore | None = None  # on a fallback session: the client whose handlers answer
        self._hooks = _event_hooks(event_hooks) if event_hooks is not None else None
        self._telemetry = _client_telemetry(telemetry)

    @property
    def mode(self) -> str:
        """``"auto"``, ``"session"`` or a stateless revision (see ``McpClient``)."""
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        self._mode = mode

    @property
    def event_hooks(self) -> dict[str, list[EventHook]]:
        """The event hooks by event name (``client/hooks.py``), lists one may append to; reading
        it on a client made without hooks gives it empty ones."""
        if self._hooks is None:
            self._hooks = _event_hooks({})
        return self._hooks.hooks

    @event_hooks.setter
    def event_hooks(self, hooks: Mapping[str, Sequence[EventHook]]) -> None:
        self._hooks = _event_hooks(hooks)

    @property
    def telemetry(self) -> ClientTelemetry | None:
        """This client's OpenTelemetry instrumentation (``telemetry/client.py``), None when off.
        Assign ``True``, a ``telemetry.Telemetry`` or None to switch it."""
        return self._telemetry

    @telemetry.setter
    def telemetry(self, settings: object) -> None:
        self._telemetry = _client_telemetry(settings)

    @property
    def capabilities(self) -> dict[str, Any]:
        """The capabilities declared, from which handlers are set."""
        capabilities: dict[str, Any] = {}
        if self.sampling_handler is not None:
            capabilities["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation_handler is not None:
            capabilities["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        if self.apps:  # (both eras: initialize's capabilities, each stateless request's _meta)
            capabilities["extensions"] = {APPS_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}
        return capabilities

    @property
    def stateless_capabilities(self) -> dict[str, Any]:
        """The capabilities stamped on every request of the stateless revision (same handlers,
        that revision's shape: roots has no listChanged there)."""
        capabilities = self.capabilities
        if "roots" in capabilities:
            capabilities["roots"] = {}
        return capabilities

    @property
    def effective_log_level(self) -> str | None:
        """The log level this client asks servers for: ``log_level``, else ``DEFAULT_LOG_LEVEL``
        ("info") when an ``on_log`` handler is set, else None (no level is asked for)."""
        if self.log_level is not None:
            return self.log_level
        return DEFAULT_LOG_LEVEL if self.on_log is not None else None

    @property
    def elicitation_modes(self) -> tuple[str, ...]:
        """The elicitation modes this client declares (none without a handler)."""
        if self.elicitation_handler is None:
            return ()
        return ("form", "url") if self.elicitation_url else ("form",)

    @property
    def stateless(self) -> bool:
        """True when this client speaks the stateless revision (2026-07-28) to its server."""
        return self.era == ERA_STATELESS

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        """The ``inputSchema`` of tool ``name`` from the last ``list_tools()`` (for Mcp-Param-* headers)."""
        for tool in self._tools_cache or ():
            if tool.name == name:
                schema = getattr(tool, "input_schema", None)
                return schema if isinstance(schema, dict) else None
        return None

    # --- what the other method groups provide ------------------------------------------

    @abstractmethod
    async def initialize(self) -> dict[str, Any]:
        """Connect and perform the handshake (``handshake.py``)."""

    @abstractmethod
    async def _handshake(self) -> dict[str, Any]:
        """The handshake on the current connection, connecting first when there is none (``handshake.py``)."""

    @abstractmethod
    async def _connected(self) -> Connection:
        """The connection, opened (again) when there is none or it has closed (``handshake.py``)."""

    @abstractmethod
    async def _initialize(self) -> dict[str, Any]:
        """The ``initialize`` handshake on the current connection, whatever the era (``handshake.py``)."""

    @abstractmethod
    async def _stateless_or_session(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> dict[str, Any]:
        """A request of the stateless revision, with the session fallback (``fallback.py``)."""

    # --- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        """End the session and release the connection (idempotent)."""
        if self._telemetry is not None:
            self._telemetry.session_ended(self, None)
        if self.connection is not None:
            await self.connection.close()

    async def __aenter__(self) -> Self:
        await self.initialize()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    def _live(self) -> Connection:
        if self.connection is None:
            raise RuntimeError("the client is not initialized: call initialize() or use 'async with'")
        return self.connection

    # --- requests -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | bool | None = True,
        on_progress: ProgressCallback | None = None,
        retry_expired: bool = True,
    ) -> dict[str, Any]:
        """Send any request and return its result; McpError for an error reply.

        ``timeout`` defaults to ``request_timeout``; None waits forever. When the
        server has forgotten the session, the client initializes a new one and
        retries once.
        """
        limit = self.request_timeout if timeout is True else (None if timeout is False else timeout)
        if self.stateless:
            if self._telemetry is not None:
                return await self._traced_call(method, params, limit, on_progress)
            return await self._stateless_or_session(method, params, limit, on_progress)
        try:
            handshakes = self._handshakes
            try:
                if self._hooks is None and self._telemetry is None:  # the hot path (rules 4, 5)
                    return await self.transport.request(self._live(), method, params, limit, on_progress)
                return await self._exchange(method, params, limit, on_progress)
            except SessionExpiredError:
                if not retry_expired:
                    raise
                await self._reinitialize(handshakes)
                return await self._exchange(method, params, limit, on_progress)
        except McpError as error:
            if error.code == URL_ELICITATION_REQUIRED and not isinstance(error, UrlElicitationRequiredError):
                raise UrlElicitationRequiredError(error.message, error.data) from None
            if error.code == UNSUPPORTED_PROTOCOL_VERSION and not isinstance(error, UnsupportedProtocolVersionError):
                raise UnsupportedProtocolVersionError(error.message, error.data) from None
            raise

    def _exchange(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> Awaitable[dict[str, Any]]:
        """One request over the transport, reported to the event hooks and telemetry when there
        are any (a plain function returning what to await: no coroutine of its own without them)."""
        connection = self._live()
        if self._hooks is None and self._telemetry is None:
            return self.transport.request(connection, method, params, timeout, on_progress)

        def send(sent: dict[str, Any] | None) -> Awaitable[dict[str, Any]]:
            return self.transport.request(connection, method, sent, timeout, on_progress)

        return self._reported(connection, method, params, send)

    def _reported(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None,
        send: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> Awaitable[dict[str, Any]]:
        """``send(params)``, reported to the event hooks and traced, whichever this client has:
        telemetry outside (it puts the trace context in what is sent), the hooks inside (they
        see what goes on the wire)."""
        hooks = self._hooks
        if hooks is not None:
            bare = send

            def send(sent: dict[str, Any] | None) -> Awaitable[dict[str, Any]]:
                return hooks.exchange(self.transport, connection, method, sent, functools.partial(bare, sent))

        if self._telemetry is None:
            return send(params)
        return self._traced(self._telemetry, connection, method, params, send)

    async def _traced(
        self,
        telemetry: ClientTelemetry,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None,
        send: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``send`` one request inside its CLIENT span, which knows the id it goes out with."""
        from .hooks import request_ids

        tap = request_ids(connection)
        try:
            request_id = tap.reserve() if tap is not None else None
            return await telemetry.exchange(self, method, params, request_id, send)
        finally:
            if tap is not None:
                tap.release()

    def _traced_call(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> Awaitable[dict[str, Any]]:
        """A stateless revision's request as one logical call, in one span (rule 5)."""
        assert self._telemetry is not None

        def run(sent: dict[str, Any] | None) -> Awaitable[dict[str, Any]]:
            return self._stateless_or_session(method, sent, timeout, on_progress)

        return self._telemetry.logical(self, method, params, run)

    def _note(self, event: str, **details: Any) -> None:
        """An event on the open logical call's span (``telemetry.client.EVENTS``: a retry, an
        ``input_required`` round, the session fallback); nothing when telemetry is off."""
        if self._telemetry is not None:
            self._telemetry.note(event, details)

    async def _reinitialize(self, handshakes: int) -> None:
        """A new session after the server forgot ours; concurrent calls that met the same expired
        session (no handshake since ``handshakes``) share one."""
        if self._reinitializing is None:
            self._reinitializing = asyncio.Lock()
        async with self._reinitializing:
            if self._handshakes == handshakes:
                logger.info("session expired; initializing a new one")
                await self._handshake()

    def _stamp(
        self, params: dict[str, Any] | None, version: str | None = None, *, tasks: bool = False
    ) -> dict[str, Any]:
        """``params`` with the stateless revision's ``_meta`` envelope (a new dict); ``tasks``:
        declaring the Tasks extension too (``call_tool_task`` and its handle's requests)."""
        stamped = dict(params or {})
        meta = dict(stamped.get("_meta") or {})
        meta[PROTOCOL_VERSION_KEY] = version or self.protocol_version or versions.CLIENT_STATELESS[-1]
        capabilities = self.stateless_capabilities
        if tasks:
            capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
        meta[CLIENT_CAPABILITIES_KEY] = capabilities
        meta[CLIENT_INFO_KEY] = self.client_info
        level = self.effective_log_level
        if level is not None:
            meta[LOG_LEVEL_KEY] = level
        stamped["_meta"] = meta
        return stamped

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        await self._live().notify(method, params)

    async def send_message(self, message: JsonRpcMessage) -> JsonRpcMessage | None:
        """Send a raw message. A request returns its response (or error) message; others return None."""
        if isinstance(message, JsonRpcRequest):
            try:
                result = await self.request(message.method, message.params)
            except McpError as error:
                return JsonRpcError(message.id, error.code, error.message, error.data)
            return JsonRpcResponse(message.id, result)
        if isinstance(message, JsonRpcNotification):
            await self.notify(message.method, message.params)
            return None
        await self._live().transport.send(message)
        return None

    # --- the ttlMs cache ------------------------------------------------------------------

    def _recall(self, method: str, key: str) -> Any:
        entry = self._cached.get((method, key))
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            del self._cached[(method, key)]
            return None
        return entry[1]

    def _remember(self, method: str, key: str, result: dict[str, Any], value: Any = None) -> None:
        """Cache ``value`` (else ``result``) for the ``ttlMs`` the server gave ``result``."""
        ttl = result.get("ttlMs")
        if not self.cache or type(ttl) is not int or ttl <= 0:
            return
        self._cached[(method, key)] = (time.monotonic() + ttl / 1000, result if value is None else value)

    def invalidate_cache(self, *methods: str) -> None:
        """Forget cached results (of ``methods``, or all)."""
        if not methods:
            self._cached.clear()
            return
        for entry in [entry for entry in self._cached if entry[0] in methods]:
            del self._cached[entry]

    # --- what the server asks of the client (ConnectionOwner) -------------------------------

    async def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> dict[str, Any]:
        return await self._answer(request.method, request.params or {}, request.id)

    def _answer(self, method: str, params: dict[str, Any], request_id: Any) -> Awaitable[dict[str, Any]]:
        """``_serve``, reported to the event hooks and traced when there are any (``request_id``:
        the request's id, or an ``inputRequests`` key)."""
        if self._hooks is None and self._telemetry is None:
            return self._serve(method, params)
        answer = functools.partial(self._serve, method, params)
        if self._hooks is not None:
            answer = functools.partial(self._hooks.answered, self.transport, method, request_id, params, answer)
        if self._telemetry is not None:
            return self._telemetry.answered(self, method, params, request_id, answer)
        return answer()

    async def _serve(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """What the server asks of the client, by request (session revisions) or as an
        ``input_required`` entry (stateless revision): the same handlers answer both."""
        if method == "ping":
            return {}
        if self._owner is not None:  # a session fallback: its owner's handlers answer (roots as they are now)
            return await self._owner._serve(method, params)
        # Handlers get typed requests and may answer typed values.
        from .typed_handlers import answer_elicitation, answer_sampling, list_roots

        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return await answer_sampling(self.sampling_handler, params)
        if method == "elicitation/create" and self.elicitation_handler is not None:
            mode = check_mode(params, self.elicitation_modes)
            return await answer_elicitation(self.elicitation_handler, params, mode)
        if method == "roots/list" and self.roots is not None:
            return await list_roots(self.roots)
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        if self._hooks is not None:
            self._hooks.notified(self.transport, notification)
        method = notification.method
        params = notification.params or {}
        for stale in _LIST_CHANGED.get(method, ()):
            self.invalidate_cache(stale)
        if method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            self._cached.pop(("resources/read", params["uri"]), None)
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID_KEY in meta:
            subscription = self._subscriptions.get(meta[SUBSCRIPTION_ID_KEY])
            if subscription is not None:
                subscription.deliver(notification)
            else:
                logger.debug("dropping %s for unknown subscription %r", method, meta[SUBSCRIPTION_ID_KEY])
            return
        if not self.stateless:
            for subscription in list(self._subscriptions.values()):
                subscription.offer(notification)
        if notification.method == "notifications/message" and self.on_log is not None:
            self.on_log(LogMessage(notification.params or {}))
        elif notification.method == "notifications/elicitation/complete" and self.on_elicitation_complete is not None:
            self.on_elicitation_complete(notification.params or {})
        elif self.on_notification is not None:
            self.on_notification(notification)

    def connection_closed(self) -> None:
        if self._telemetry is not None:  # (after close() this finds no session open)
            self._telemetry.session_ended(self, str(CONNECTION_CLOSED))
