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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from .context import RequestContext, current_context, log_rank
from .jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, JsonRpcNotification, JsonRpcRequest, McpError, RequestId
from .protocol import Connection
from .types import CreateMessageRequest, CreateMessageResult, ElicitResult, Root
from .versions import Revision

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .server import McpServer
    from .transport.base import Transport

__all__ = [
    "DEFAULT_CLIENT_TIMEOUT",
    "DEFAULT_PING_TIMEOUT",
    "ServerSession",
    "SessionRecord",
    "check_elicitation_schema",
]

DEFAULT_CLIENT_TIMEOUT: Final = 300.0
DEFAULT_PING_TIMEOUT: Final = 30.0

_BEFORE_INITIALIZE: Final = frozenset({"initialize", "ping"})


@dataclass(slots=True)
class SessionRecord:
    """What a session is, as plain data: nothing here holds a task, a future or a socket.

    ``revision`` is None until ``initialize`` succeeds; ``log_level`` is None
    until the client sets one (everything is sent). Timestamps are the
    store's clock (monotonic seconds in process).
    """

    id: str = ""
    created_at: float = 0.0
    last_seen: float = 0.0
    revision: str | None = None
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)

    def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> bool:
        """True once the client has been silent too long or the session is too old."""
        return now - self.last_seen >= idle_timeout or now - self.created_at >= max_lifetime


class ServerSession:
    """One client's session: an ``McpServer`` serving one ``Connection``.

    Made by ``McpServer.connect(transport)``. Handlers reach it as
    ``context.session``; it is what sends requests and notifications to this
    client (``create_message``, ``elicit``, ``list_roots``, ``ping``, ``log``).
    """

    __slots__ = ("_handlers", "_log_rank", "allow_reinitialize", "connection", "ready", "record", "server")

    def __init__(
        self,
        server: McpServer,
        transport: Transport,
        record: SessionRecord | None = None,
        *,
        reinitialize: bool = False,
    ) -> None:
        self.server = server
        self.record = record if record is not None else SessionRecord()
        self.allow_reinitialize = reinitialize
        self.ready = False  # notifications/initialized received
        self._log_rank = 0
        # Before initialize: the server's full table, of which only initialize and ping are served.
        self._handlers: dict[str, Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]] | None = None
        self.connection = Connection(transport, self)

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
        if method not in _BEFORE_INITIALIZE:
            raise McpError(INVALID_REQUEST, f"Received {method} before initialize: initialize the session first")
        return self.server.handlers_for(None)[method](request.params or {}, context)

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        if notification.method == "notifications/initialized":
            if self.initialized:
                self.ready = True
        elif notification.method == "notifications/roots/list_changed":
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
        record.client_info = client_info
        record.client_capabilities = capabilities
        self.ready = False
        self._handlers = self.server.handlers_for(revision)

    def set_log_level(self, level: str) -> None:
        self._log_rank = log_rank(level)
        self.record.log_level = level

    def subscribe(self, uri: str) -> None:
        if uri not in self.record.subscriptions:
            self.record.subscriptions.append(uri)

    def unsubscribe(self, uri: str) -> None:
        if uri in self.record.subscriptions:
            self.record.subscriptions.remove(uri)

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
        if related_request_id is None:
            related_request_id = self._related()
        await self.connection.notify("notifications/message", params, related_request_id=related_request_id)

    async def request(
        self, method: str, params: dict[str, Any] | None, capability: str | None, timeout: float | None
    ) -> dict[str, Any]:
        """A request to this client, belonging to the current request when inside one.

        RuntimeError when the session is closed, not ready, or the client did
        not declare ``capability``.
        """
        if self.connection.closed:
            raise RuntimeError(f"Cannot send {method}: the session is closed")
        if not self.ready and method != "ping":
            raise RuntimeError(f"Cannot send {method} before the client sent notifications/initialized")
        if capability is not None and capability not in (self.record.client_capabilities or {}):
            raise RuntimeError(f"Cannot send {method}: the client did not declare the {capability} capability")
        return await self.connection.request(method, params, timeout=timeout, related_request_id=self._related())

    async def create_message(
        self, request: CreateMessageRequest, *, timeout: float | None = DEFAULT_CLIENT_TIMEOUT
    ) -> CreateMessageResult:
        """Ask the client's model for a completion (sampling/createMessage)."""
        result = await self.request("sampling/createMessage", request.to_dict(), "sampling", timeout)
        return CreateMessageResult.from_dict(result)

    async def list_roots(self, *, timeout: float | None = DEFAULT_CLIENT_TIMEOUT) -> list[Root]:
        """The client's roots (roots/list)."""
        result = await self.request("roots/list", None, "roots", timeout)
        roots = result.get("roots")
        if not isinstance(roots, list):
            raise ValueError("malformed roots/list result: roots must be a list")
        return [Root.from_dict(root) for root in roots]

    async def elicit(
        self, message: str, requested_schema: dict[str, Any], *, timeout: float | None = DEFAULT_CLIENT_TIMEOUT
    ) -> ElicitResult:
        """Ask the user for structured input (elicitation/create).

        ``requested_schema`` must be a flat object of primitive properties.
        """
        check_elicitation_schema(requested_schema)
        result = await self.request(
            "elicitation/create", {"message": message, "requestedSchema": requested_schema}, "elicitation", timeout
        )
        return ElicitResult.from_dict(result)

    async def ping(self, *, timeout: float | None = DEFAULT_PING_TIMEOUT) -> None:
        await self.request("ping", None, None, timeout)

    async def close(self) -> None:
        """End the session: pending server-to-client calls fail, running handlers are cancelled."""
        await self.connection.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("ready" if self.ready else "open")
        return f"<ServerSession of {self.server.name!r}, {self.record.revision or 'not initialized'}, {state}>"



_ELICIT_TYPES: Final = {"string", "number", "integer", "boolean"}


def check_elicitation_schema(schema: dict[str, Any]) -> None:
    """ValueError unless ``schema`` is a flat object of primitives, as elicitation allows."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError('requested_schema must be an object schema ("type": "object")')
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise ValueError('requested_schema needs a "properties" object')
    for name, prop in properties.items():
        if not isinstance(prop, dict) or prop.get("type") not in _ELICIT_TYPES:
            raise ValueError(
                f"requested_schema property {name!r} must be a string, number, integer or boolean "
                "(nested objects and arrays are not allowed)"
            )
        if "enum" in prop and prop.get("type") != "string":
            raise ValueError(f"requested_schema property {name!r}: enum is only allowed on strings")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        raise ValueError("requested_schema required must list declared properties")
