"""One client's session of an McpServer: the session lifecycle, in one place.

An ``McpServer`` is defined once (tools, resources, prompts, validators) and
serves any number of sessions. A ``ServerSession`` is what one client adds:

- its ``SessionRecord``: plain data (negotiated revision, client info and
  capabilities, log level, subscriptions, timestamps) that a shared store can
  hold, copy or send to another process;
- its ``Connection``: the live part (requests in flight, pending
  server-to-client requests), which only this process can hold.

Lifecycle rules:

1. A session starts *new*. Only ``initialize`` and ``ping`` are served
   before ``initialize`` succeeds (-32600 otherwise).
2. ``initialize`` negotiates the revision (``versions.negotiate``), records
   the client, and makes the session *initialized*: from then on the
   revision's method table is served. A second ``initialize`` is refused
   (-32600) unless the transport allows re-initializing (stdio does: some
   clients re-send it on a live process); it then starts the handshake over.
3. ``notifications/initialized`` makes it *ready*: only then does the server
   send requests or list-changed notifications of its own.
4. It ends when its transport closes; the server forgets it then.
5. Before ``initialize``, every request is first offered to the
   ``before_initialize`` hook, when the session has one. A hook that returns
   an owner hands the connection over: that owner serves this request and
   every later one (``initialize`` included) and gets every notification;
   the session still ends as rule 4 says. ``McpServer.connect`` installs the
   hook that hands a connection whose first request is stateless to the
   stateless endpoint, so this module knows of one era only.

The session knows its server as a ``SessionHost`` (the four members it
uses), so this module imports nothing of ``server.py``. The methods it serves are
the server's ``handlers`` (``handlers.py``): the table of the negotiated revision.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Generic, NoReturn, Protocol, TypeVar, overload

from . import versions
from .context import RequestContext, current_context, log_rank
from .elicitation_schema import check_elicitation_schema
from .handlers import Handler, HandlerRegistry
from .jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    JsonRpcNotification,
    JsonRpcRequest,
    McpError,
    MissingClientCapability,
    RequestId,
)
from .protocol import Connection, ConnectionOwner, ObservedConnection
from .records import RecordChange, SessionRecord
from .types import CreateMessageRequest, CreateMessageResult, ElicitResult, Root, UrlElicitation
from .versions import Revision

if TYPE_CHECKING:
    from .observe import Observer
    from .transport import Transport
    from .typed import ElicitationForm
    from .visibility import SessionVisibility

__all__ = [
    "DEFAULT_CLIENT_TIMEOUT",
    "DEFAULT_PING_TIMEOUT",
    "URL_ELICITATION_REQUIRED",
    "BeforeInitialize",
    "ElicitationContentError",
    "ServerSession",
    "SessionHost",
    "TypedElicitResult",
    "UrlElicitationRequired",
]

DEFAULT_CLIENT_TIMEOUT: Final = 300.0
DEFAULT_PING_TIMEOUT: Final = 30.0

_BEFORE_INITIALIZE: Final = frozenset({"initialize", "ping"})

URL_ELICITATION_REQUIRED: Final = -32042
"""The error code of a request that cannot go on until a URL elicitation completes (2025-11-25)."""


class UrlElicitationRequired(McpError):
    """The -32042 error: this request needs the user to complete URL elicitations first (SEP-1036).

    ``data.elicitations`` lists them. Raise it from a handler through
    ``context.session.require_url_elicitation(...)``, which first checks that
    the session may receive URL elicitations (revision 2025-11-25 and the
    client's ``elicitation.url`` capability); raising it directly skips that check.
    """

    def __init__(
        self, elicitations: Sequence[UrlElicitation], message: str = "This request requires more information."
    ) -> None:
        if not elicitations:
            raise ValueError("UrlElicitationRequired needs at least one elicitation")
        self.elicitations = list(elicitations)
        super().__init__(
            URL_ELICITATION_REQUIRED, message, {"elicitations": [item.to_dict() for item in self.elicitations]}
        )


_T = TypeVar("_T")


@dataclass(slots=True)
class TypedElicitResult(ElicitResult, Generic[_T]):
    """The answer to ``elicit(message, schema=Model)``: an ``ElicitResult`` whose ``value`` is the
    accepted content as a ``Model`` (None on decline or cancel); ``content`` stays the raw dict."""

    value: _T | None = None


class ElicitationContentError(McpError):
    """A typed elicitation was accepted with content that does not fit its model: -32602.

    An McpError because the client is at fault (it answered outside the schema it was sent):
    uncaught, it fails the request with a JSON-RPC invalid-params error naming the field, as a
    malformed ``inputResponses`` does on 2026-07-28. ``field`` is the dotted path ("" for the
    whole object), ``problem`` what is wrong, ``content`` what the client sent.
    """

    def __init__(self, path: str, problem: str, content: dict[str, Any] | None) -> None:
        where = f'field "{path}": ' if path else ""
        super().__init__(INVALID_PARAMS, f"Invalid elicitation content: {where}{problem}", {"field": path})
        self.field = path
        self.problem = problem
        self.content = content


BeforeInitialize = Callable[[JsonRpcRequest], ConnectionOwner | None]
"""The hook of rule 5: given a request that came before ``initialize``, the owner that takes the
connection over from it on, or None to let the session serve it."""


class SessionHost(Protocol):
    """What a session asks of the server it belongs to (``McpServer`` is one)."""

    @property
    def name(self) -> str:
        """The server's name (for messages)."""

    @property
    def on_roots_list_changed(self) -> Callable[[], Any] | None:
        """Called when a client says its roots changed."""

    @property
    def handlers(self) -> HandlerRegistry:
        """The server's methods; ``handlers.table(revision)`` is what a session of ``revision`` is
        served (None: every method, before initialize)."""

    @property
    def observer(self) -> Observer | None:
        """Told about every request the server's sessions serve (``engine.observe``); None: off."""

    def session_ended(self, session: ServerSession) -> None:
        """Called once, when the session's connection closed."""


class ServerSession:
    """One client's session: an ``McpServer`` serving one ``Connection``.

    Made by ``McpServer.connect(transport)``. Handlers reach it as
    ``context.session``; it is what sends requests and notifications to this
    client (``create_message``, ``elicit``, ``list_roots``, ``ping``, ``log``).
    """

    # Every slot but ``connection`` gets its first value in ``_setup``, which subclasses call too.
    __slots__ = (
        "_before_initialize",
        "_handlers",
        "_log_rank",
        "_protocol",
        "_taken_by",
        "allow_reinitialize",
        "connection",
        "on_record_change",
        "ready",
        "record",
        "server",
    )

    connection: Connection

    def __init__(
        self,
        server: SessionHost,
        transport: Transport,
        record: SessionRecord | None = None,
        *,
        reinitialize: bool = False,
        before_initialize: BeforeInitialize | None = None,
    ) -> None:
        self._setup(
            server,
            record if record is not None else SessionRecord(),
            reinitialize=reinitialize,
            before_initialize=before_initialize,
        )
        seen = server.observer  # (telemetry: engine/observe.py)
        self.connection = Connection(transport, self) if seen is None else ObservedConnection(transport, self, seen)

    def _setup(
        self,
        server: SessionHost,
        record: SessionRecord,
        *,
        reinitialize: bool = False,
        before_initialize: BeforeInitialize | None = None,
    ) -> None:
        """Give every slot but ``connection`` its first value: a new session's state.

        A session of another kind (``stateless.RequestSession``) starts here too and then
        changes what differs, so a slot added here needs no edit there.
        """
        self.server = server
        self.record = record
        self.allow_reinitialize = reinitialize
        self.ready = False  # notifications/initialized received
        self._log_rank = 0
        self._protocol: Revision | None = None
        # The revision's method table once initialize succeeded; None before.
        self._handlers: Mapping[str, Handler] | None = None
        # Rule 5: the hook, and the owner it handed the connection to (if it did).
        self._before_initialize = before_initialize
        self._taken_by: ConnectionOwner | None = None
        # Called after the record changes past initialize (log level, subscriptions), with the
        # change as a function: a shared store writes the record back (and, its copy found stale,
        # makes the change again on the newer record).
        self.on_record_change: Callable[[SessionRecord, RecordChange], Any] | None = None
        if record.visibility:  # rules made on another worker: this server checks from now on
            _check_rules(server)

    # --- state ---------------------------------------------------------------------

    @property
    def initialized(self) -> bool:
        """True once ``initialize`` succeeded."""
        return self._handlers is not None

    @property
    def revision(self) -> str | None:
        """The negotiated protocol revision (None before initialize)."""
        return self.record.revision

    @property
    def protocol(self) -> Revision | None:
        """The negotiated revision as a ``Revision`` (what it allows), None before initialize."""
        protocol = self._protocol
        if protocol is None or protocol.name != self.record.revision:  # a record restored from a store
            name = self.record.revision
            protocol = self._protocol = versions.served(name) if name is not None else None
        return protocol

    @property
    def elicitation_modes(self) -> frozenset[str]:
        """The elicitation modes the client declared: ``elicitation: {}`` means form only; empty when none.

        Before 2025-11-25 there are no modes: a client with the capability takes form requests.
        """
        declared = (self.record.client_capabilities or {}).get("elicitation")
        if declared is None:
            return frozenset()
        protocol = self.protocol
        if not isinstance(declared, dict) or protocol is None or not protocol.elicitation_modes:
            return frozenset({"form"})
        modes = frozenset(mode for mode in ("form", "url") if mode in declared)
        return modes or frozenset({"form"})

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.record.client_info

    @property
    def client_capabilities(self) -> dict[str, Any] | None:
        return self.record.client_capabilities

    @property
    def log_level(self) -> str | None:
        return self.record.log_level

    @property
    def closed(self) -> bool:
        return self.connection.closed

    # --- what the Connection asks of its owner ------------------------------------------

    def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> Awaitable[dict[str, Any]]:
        method = request.method
        handlers = self._handlers
        if handlers is not None:  # every request after the handshake: one lookup
            handler = handlers.get(method)
            if handler is not None:
                if method == "initialize" and not self.allow_reinitialize:
                    raise McpError(INVALID_REQUEST, "The session is already initialized")
                return handler(request.params or {}, context)
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        taker = self._taken_by
        if taker is None and self._before_initialize is not None:  # rule 5
            taker = self._taken_by = self._before_initialize(request)
        if taker is not None:
            return taker.handle_request(request, context)
        if method not in _BEFORE_INITIALIZE:
            raise McpError(INVALID_REQUEST, f"Received {method} before initialize: initialize the session first")
        return self.server.handlers.table(None)[method](request.params or {}, context)

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        if self._taken_by is not None:  # rule 5: the owner that took the connection decides
            self._taken_by.handle_notification(notification)
            return
        notified = self.server.handlers.notified
        if notified is not None:  # the server's middleware, around what follows (handlers.py rule 7)
            context = RequestContext.of_notification(self.connection, notification)
            notified(context, notification.params or {}, partial(self._notified, notification.method))
            return
        self._on_notification(notification.method)

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        self._on_notification(method)

    def _on_notification(self, method: str) -> None:
        if method == "notifications/initialized":
            if self.initialized:
                self.ready = True
        elif method == "notifications/roots/list_changed":
            callback = self.server.on_roots_list_changed
            if callback is not None:
                callback()

    def connection_closed(self) -> None:
        self.server.session_ended(self)

    # --- changes made by the protocol's own methods ---------------------------------------

    def start(self, revision: Revision, client_info: dict[str, Any], capabilities: dict[str, Any]) -> None:
        """Record a successful ``initialize``: the revision's method table is served from now on."""
        record = self.record
        record.revision = revision.name
        self._protocol = revision
        record.client_info = client_info
        record.client_capabilities = capabilities
        self.ready = False
        self._handlers = self.server.handlers.table(revision)

    def resume(self) -> None:
        """Serve a session whose ``initialize`` another worker answered, from its record alone.

        The record names the negotiated revision, the client and its log level;
        the session is taken as ready (its client is past the handshake).
        """
        record = self.record
        revision = versions.served(record.revision) if record.revision is not None else None
        if revision is None or not revision.handshake:
            raise ValueError(f"a session record with revision {record.revision!r} cannot be resumed")
        self._protocol = revision
        self._handlers = self.server.handlers.table(revision)
        self._log_rank = log_rank(record.log_level) if record.log_level is not None else 0
        self.ready = True

    def record_followed(self) -> None:
        """The record changed elsewhere (another worker wrote it): send by its log level from now on."""
        level = self.record.log_level
        self._log_rank = log_rank(level) if level is not None else 0
        if self.record.visibility:  # (as in __init__)
            _check_rules(self.server)

    def set_log_level(self, level: str) -> None:
        self._log_rank = log_rank(level)
        self._change(_LogLevel(level))

    def subscribe(self, uri: str) -> None:
        if uri not in self.record.subscriptions:
            self._change(_Subscribe(uri))

    def unsubscribe(self, uri: str) -> None:
        if uri in self.record.subscriptions:
            self._change(_Unsubscribe(uri))

    @property
    def visibility(self) -> SessionVisibility:
        """This client's own visibility rules (``visibility.py``): ``disable``, ``enable``, ``reset``."""
        from .visibility import SessionVisibility  # (loaded when some handler first uses rules)

        return SessionVisibility(self, self._change)

    def _change(self, change: RecordChange) -> None:
        change(self.record)
        if self.on_record_change is not None:
            self.on_record_change(self.record, change)

    def is_subscribed(self, uri: str) -> bool:
        return uri in self.record.subscriptions

    # --- sending to this client -----------------------------------------------------------

    def _related(self) -> RequestId | None:
        """The request being served on this session in the current task, if any."""
        context = current_context.get()
        return context.request_id if context is not None and context.connection is self.connection else None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (on the current request's stream when inside one)."""
        await self.connection.notify(method, params, related_request_id=self._related())

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification from synchronous code, without waiting; only once the client is ready."""
        if self.ready:
            self.connection.notify_soon(method, params)

    async def log(
        self, level: str, data: Any, logger: str | None = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send notifications/message unless it is below the level this client set."""
        if log_rank(level) < self._log_rank:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        context = current_context.get()
        if context is not None and context.connection is self.connection:
            task = context.task_asking()
            if task is not None and task.related_meta is not None:
                params["_meta"] = task.related_meta  # (a 2025-11-25 task's log is tied to it)
            if related_request_id is None:
                related_request_id = context.request_id  # (what _related() says, from the context in hand)
        await self.connection.notify("notifications/message", params, related_request_id=related_request_id)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        capability: str | None,
        timeout: float | None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """A request to this client, belonging to the current request when inside one.

        RuntimeError when the session is closed, not ready, or the client did
        not declare ``capability``. ``key`` names the question on a 2026-07-28
        request (its ``inputRequests`` key); a session ignores it.
        """
        self._check_may_ask(method, capability)
        return await self._ask(method, params, timeout, key)

    # What ``request`` does in two steps, each replaced by a session that asks another way
    # (``stateless.RequestSession``: questions become the result's ``inputRequests``).

    def _check_may_ask(self, method: str, capability: str | None) -> None:
        """Raise unless ``method`` may be sent to this client now."""
        if self.connection.closed:
            raise RuntimeError(f"Cannot send {method}: the session is closed")
        if not self.ready and method != "ping":
            raise RuntimeError(f"Cannot send {method} before the client sent notifications/initialized")
        if capability is not None and capability not in (self.record.client_capabilities or {}):
            raise MissingClientCapability(
                f"Cannot send {method}: the client did not declare the {capability} capability", {capability: {}}
            )

    def _ask(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, key: str | None
    ) -> Awaitable[dict[str, Any]]:
        """Send the request and wait for the client's result (``key`` is not sent); inside a task
        (2025-11-25 core tasks, ``tasks.py``), the task's question until the client answers it."""
        context = current_context.get()
        if context is not None and context.connection is self.connection:
            task = context.task_asking()
            if task is not None:
                return task.ask(method, params)
            return self.connection.request(method, params, timeout=timeout, related_request_id=context.request_id)
        return self.connection.request(method, params, timeout=timeout)

    async def create_message(
        self,
        request: CreateMessageRequest,
        *,
        timeout: float | None = DEFAULT_CLIENT_TIMEOUT,
        key: str | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model for a completion (sampling/createMessage).

        With ``tools``, ``tool_choice`` or tool_use/tool_result messages the
        session must be at 2025-11-25 and the client must have declared
        ``sampling.tools``: RuntimeError otherwise, and nothing is sent.
        """
        if request.uses_tools:
            protocol = self.protocol
            if protocol is None or not protocol.sampling_tools:
                raise RuntimeError(
                    "Cannot send sampling/createMessage with tools: the session negotiated "
                    f"{self.record.revision}, tool use in sampling needs {versions.REVISION_2025_11_25}"
                )
            sampling = (self.record.client_capabilities or {}).get("sampling")
            if not isinstance(sampling, dict) or "tools" not in sampling:
                raise MissingClientCapability(
                    "Cannot send sampling/createMessage with tools: the client did not declare the sampling.tools "
                    "capability",
                    {"sampling": {"tools": {}}},
                )
        result = await self.request("sampling/createMessage", request.to_dict(), "sampling", timeout, key)
        return CreateMessageResult.from_dict(result)

    async def list_roots(self, *, timeout: float | None = DEFAULT_CLIENT_TIMEOUT, key: str | None = None) -> list[Root]:
        """The client's roots (roots/list)."""
        result = await self.request("roots/list", None, "roots", timeout, key)
        roots = result.get("roots")
        if not isinstance(roots, list):
            raise ValueError("malformed roots/list result: roots must be a list")
        return [Root.from_dict(root) for root in roots]

    def _require_elicitation_mode(self, mode: str, what: str = "elicitation/create") -> Revision | None:
        """The session's revision when it may receive ``what`` in ``mode``, else RuntimeError saying why."""
        if self.connection.closed:
            raise RuntimeError(f"Cannot send {what}: the session is closed")
        if not self.ready:
            raise RuntimeError(f"Cannot send {what} before the client sent notifications/initialized")
        protocol = self.protocol
        if protocol is not None and not protocol.elicitation:
            raise RuntimeError(
                f"Cannot send {what}: the session negotiated {self.record.revision}, "
                f"elicitation needs {versions.REVISION_2025_06_18} or later"
            )
        if mode == "url" and (protocol is None or not protocol.elicitation_modes):
            raise RuntimeError(
                f"Cannot send a URL elicitation: the session negotiated {self.record.revision}, "
                f"URL mode needs {versions.REVISION_2025_11_25}"
            )
        modes = self.elicitation_modes
        if mode not in modes:
            if not modes:
                raise MissingClientCapability(
                    f"Cannot send {what}: the client did not declare the elicitation capability", {"elicitation": {}}
                )
            raise MissingClientCapability(
                f"Cannot send {what} in {mode} mode: the client declared only "
                f"{', '.join(sorted(modes))} mode (elicitation.{mode} is missing from its capabilities)",
                {"elicitation": {mode: {}}},
            )
        return protocol

    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any],
        *,
        timeout: float | None = DEFAULT_CLIENT_TIMEOUT,
        key: str | None = None,
    ) -> ElicitResult: ...

    @overload
    async def elicit(
        self,
        message: str,
        *,
        schema: type[_T],
        timeout: float | None = DEFAULT_CLIENT_TIMEOUT,
        key: str | None = None,
    ) -> TypedElicitResult[_T]: ...

    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any] | None = None,
        *,
        schema: type[Any] | None = None,
        timeout: float | None = DEFAULT_CLIENT_TIMEOUT,
        key: str | None = None,
    ) -> ElicitResult:
        """Ask the user for structured input (elicitation/create, form mode).

        ``requested_schema`` must be a flat object of primitive properties
        (``check_elicitation_schema``: defaults and the enum shapes; multi-select
        arrays need 2025-11-25). RuntimeError when the client did not declare
        form mode (``elicitation: {}`` declares it). ``mode`` is sent from 2025-11-25 on.

        Or ``schema=Model`` (a pydantic model or dataclass of primitive fields): the
        schema is generated from it (TypeError naming a field a form cannot express,
        before anything is sent) and the answer is a ``TypedElicitResult`` whose
        ``value`` is the accepted content as a ``Model``; content that does not fit
        is ``ElicitationContentError`` (-32602).
        """
        form: ElicitationForm[Any] | None = None
        if schema is not None:
            if requested_schema is not None:
                raise TypeError("elicit takes a requested_schema or schema=, not both")
            from .typed import elicitation_form  # pydantic loads only when a typed form is asked

            form = elicitation_form(schema)
            requested_schema = form.schema
        elif requested_schema is None:
            raise TypeError("elicit needs a requested_schema (a JSON Schema object) or schema= (a model class)")
        protocol = self._require_elicitation_mode("form")
        check_elicitation_schema(requested_schema, multi_select=protocol is None or protocol.elicitation_modes)
        params: dict[str, Any] = {"message": message, "requestedSchema": requested_schema}
        if protocol is not None and protocol.elicitation_modes:
            params = {"mode": "form", **params}
        result = ElicitResult.from_dict(await self.request("elicitation/create", params, "elicitation", timeout, key))
        return result if form is None else _typed_result(form, result)

    async def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str | None = None,
        *,
        timeout: float | None = DEFAULT_CLIENT_TIMEOUT,
    ) -> ElicitResult:
        """Ask the user to open ``url`` (elicitation/create in URL mode, 2025-11-25).

        ``accept`` means the user agreed to open it, not that the interaction
        is over: call ``complete_elicitation`` when it is. ``elicitation_id``
        is generated when not given; the result carries it. RuntimeError when
        the session is older or the client did not declare ``elicitation.url``.
        Never put secrets or pre-authenticated links in ``url``.
        """
        self._require_elicitation_mode("url")
        elicitation = (
            UrlElicitation(message, url) if elicitation_id is None else UrlElicitation(message, url, elicitation_id)
        )
        result = ElicitResult.from_dict(
            await self.request("elicitation/create", elicitation.to_dict(), "elicitation", timeout)
        )
        result.content = None  # URL mode carries no content
        result.elicitation_id = elicitation.elicitation_id
        return result

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client a URL elicitation finished (notifications/elicitation/complete)."""
        self._require_elicitation_mode("url", "notifications/elicitation/complete")
        await self.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    def require_url_elicitation(
        self,
        message: str,
        url: str,
        elicitation_id: str | None = None,
        *,
        error_message: str = "This request requires more information.",
    ) -> NoReturn:
        """Raise the -32042 ``UrlElicitationRequired`` error for one URL elicitation.

        RuntimeError instead when this session may not receive URL elicitations.
        """
        self._require_elicitation_mode("url")
        elicitation = (
            UrlElicitation(message, url) if elicitation_id is None else UrlElicitation(message, url, elicitation_id)
        )
        raise UrlElicitationRequired([elicitation], error_message)

    async def ping(self, *, timeout: float | None = DEFAULT_PING_TIMEOUT) -> None:
        await self.request("ping", None, None, timeout)

    async def close(self) -> None:
        """End the session: pending server-to-client calls fail, running handlers are cancelled."""
        await self.connection.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("ready" if self.ready else "open")
        return f"<ServerSession of {self.server.name!r}, {self.record.revision or 'not initialized'}, {state}>"


def _typed_result(form: ElicitationForm[_T], result: ElicitResult) -> TypedElicitResult[_T]:
    """``result`` with its accepted content converted by ``form``."""
    from .typed import ArgumentError  # loaded with the form

    value: _T | None = None
    if result.action == "accept":
        try:
            value = form.convert(result.content)
        except ArgumentError as error:
            raise ElicitationContentError(error.field, error.message, result.content) from None
    return TypedElicitResult(result.action, result.content, value=value)


# --- the changes a session makes to its record (``RecordChange``) ----------------------------


@dataclass(frozen=True, slots=True)
class _LogLevel:
    level: str

    def __call__(self, record: SessionRecord) -> None:
        record.log_level = self.level


@dataclass(frozen=True, slots=True)
class _Subscribe:
    uri: str

    def __call__(self, record: SessionRecord) -> None:
        if self.uri not in record.subscriptions:
            record.subscriptions = [*record.subscriptions, self.uri]


@dataclass(frozen=True, slots=True)
class _Unsubscribe:
    uri: str

    def __call__(self, record: SessionRecord) -> None:
        if self.uri in record.subscriptions:
            record.subscriptions = [uri for uri in record.subscriptions if uri != self.uri]


def _check_rules(server: object) -> None:
    """Make ``server``'s registries check visibility rules from now on: reading its ``visibility``
    makes the checker on first use (``decorators.py``); a session brought rules made elsewhere."""
    getattr(server, "visibility", None)
