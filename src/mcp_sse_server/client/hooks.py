"""Event hooks: callables a client calls as its traffic passes, for logging and metrics
(``McpClient(..., event_hooks={...})``, the way httpx's ``event_hooks`` work).

Rules:

1. ``event_hooks`` maps an event name to a list of hooks: ``"request"``, ``"response"``,
   ``"notification"`` and ``"server_request"``. Each hook is a plain or an ``async`` callable of
   one event (a frozen dataclass below); hooks of one name run in their order in the list. Any
   other name is a ``ValueError``, anything but a list of callables a ``TypeError``, both when the
   client is made. ``client.event_hooks`` is that mapping, its lists live: a hook appended later
   runs from the next event on (a client made without ``event_hooks`` gets them by assigning it).
2. What each event reports, on every transport and in both eras:

   - ``request`` (``RequestEvent``): a JSON-RPC request about to be sent: the ``server/discover``
     probe, ``initialize`` and every request of a session, every request of the stateless revision
     and each of its ``input_required`` rounds (each a request of its own, with its own id);
   - ``response`` (``ResponseEvent``): its answer, a ``result`` or the ``error`` it ended with (the
     ``McpError``, ``TimeoutError`` or connection error), and its ``duration`` in seconds;
   - ``notification`` (``NotificationEvent``): a notification from the server (progress goes to
     the call's ``on_progress``, not here);
   - ``server_request`` (``ServerRequestEvent``): something the server asked of this client
     (sampling, elicitation, roots, ping), once the client answered: a request on a session, or an
     ``inputRequests`` entry at 2026-07-28, whose key is then its ``id``.

   ``id`` is the JSON-RPC id the request goes out with, for transports that take their ids from
   the connection (all of this package's do); ``transport`` names the transport as configs do
   (``"stdio"``, ``"streamable"``, ``"sse"``, ``"inmemory"``; another's class name).
3. Errors are the caller's where there is a caller, as in httpx: what a ``request`` hook raises
   stops the call before it is sent, what a ``response`` hook raises is what the call raises. A
   ``notification`` or ``server_request`` hook runs where no caller waits, on what the server sent:
   what it raises is logged (``mcp_sse_server.client``) and changes nothing the server is sent.
   An async notification hook runs in a task of its own (notifications are delivered without
   waiting); the others are awaited in place. A cancelled call reports no response.
4. No hooks, no cost: a client without ``event_hooks`` keeps None, and its request path tests
   that one attribute. With hooks (or telemetry), the connection's request ids come from
   ``_IdTap`` (``request_ids``, one per connection, shared), which hands the id reserved for the
   request being reported to the request that takes it (a context variable, so concurrent
   requests of one connection each get their own).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from ..engine.jsonrpc import JsonRpcNotification, RequestId
from ..engine.protocol import Connection

__all__ = [
    "EVENTS",
    "EventHook",
    "EventHooks",
    "NotificationEvent",
    "RequestEvent",
    "ResponseEvent",
    "ServerRequestEvent",
    "request_ids",
    "transport_name",
]

logger = logging.getLogger("mcp_sse_server.client")

EVENTS: Final = ("request", "response", "notification", "server_request")

EventHook: TypeAlias = Callable[[Any], Any]
"""A hook: called with one event; may return an awaitable, which is awaited (rule 3)."""

# The names configs give this package's client transports (engine/transports.py), by class.
_TRANSPORT_NAMES: Final = {
    "StdioClientTransport": "stdio",
    "StreamableHttpClientTransport": "streamable",
    "SseClientTransport": "sse",
    "InMemoryClientTransport": "inmemory",
}


@dataclass(frozen=True, slots=True)
class RequestEvent:
    """A request about to be sent to the server."""

    method: str
    id: RequestId | None
    params: dict[str, Any] | None
    transport: str


@dataclass(frozen=True, slots=True)
class ResponseEvent:
    """The answer to a request: ``result``, or the ``error`` the call ended with."""

    method: str
    id: RequestId | None
    result: dict[str, Any] | None
    error: Exception | None
    duration: float
    transport: str


@dataclass(frozen=True, slots=True)
class NotificationEvent:
    """A notification the server sent."""

    method: str
    params: dict[str, Any]
    transport: str


@dataclass(frozen=True, slots=True)
class ServerRequestEvent:
    """Something the server asked this client, and the client's answer (``result`` or ``error``)."""

    method: str
    id: RequestId | None
    params: dict[str, Any]
    result: dict[str, Any] | None
    error: Exception | None
    duration: float
    transport: str


def transport_name(transport: object) -> str:
    """The name of a client transport as configs give it, else its class name.

    >>> class Carrier: ...
    >>> transport_name(Carrier())
    'Carrier'
    """
    kind = type(transport).__name__
    if kind == "StreamableHttpClientTransport" and getattr(transport, "legacy", False):
        return "sse"  # the URL turned out to be a legacy HTTP+SSE endpoint
    return _TRANSPORT_NAMES.get(kind, kind)


_reserved: contextvars.ContextVar[int | None] = contextvars.ContextVar("mcp_client_reserved_id", default=None)


class _IdTap:
    """A connection's request ids (``Connection.name_requests``), counting on from where the
    connection was; an id ``reserve``d in this task goes to the next request this task sends."""

    __slots__ = ("_count",)

    def __init__(self, start: int) -> None:
        self._count = itertools.count(start)

    def __iter__(self) -> Iterator[RequestId]:
        return self

    def __next__(self) -> RequestId:
        reserved = _reserved.get()
        if reserved is not None:
            _reserved.set(None)
            return reserved
        return next(self._count)

    def reserve(self) -> int:
        """The id the next request of this task will take (the one reserved already, when the
        event hooks and telemetry both report the same request)."""
        value = _reserved.get()
        if value is None:
            value = next(self._count)
            _reserved.set(value)
        return value

    @staticmethod
    def release() -> None:
        """Forget this task's reservation: an id a transport did not take is not left for the next request."""
        _reserved.set(None)


# Each connection's tap, shared by everything that reports its requests (event hooks, telemetry).
_taps: weakref.WeakKeyDictionary[Connection, _IdTap | None] = weakref.WeakKeyDictionary()


def request_ids(connection: Connection) -> _IdTap | None:
    """The id tap of ``connection``, installed on first use; None when its ids are not numbers
    (someone else names them), and then requests are reported without an id."""
    if connection in _taps:
        return _taps[connection]
    start = connection.next_request_id()
    tap = _IdTap(start) if isinstance(start, int) else None
    if tap is not None:
        connection.name_requests(tap)
    _taps[connection] = tap
    return tap


class EventHooks:
    """A client's hooks by event name, and the calls that run them (see the module)."""

    __slots__ = ("_tasks", "hooks")  # one object may serve a client and its fallback session

    def __init__(self, hooks: Mapping[str, Sequence[EventHook]]) -> None:
        if not isinstance(hooks, Mapping):
            raise TypeError(f"event_hooks must be a mapping of event names to lists, not {type(hooks).__name__}")
        checked: dict[str, list[EventHook]] = {name: [] for name in EVENTS}
        for name, listed in hooks.items():
            if name not in checked:
                raise ValueError(f"event_hooks: unknown event {name!r} (the events are {', '.join(EVENTS)})")
            if isinstance(listed, str | bytes) or not isinstance(listed, Sequence):
                raise TypeError(f"event_hooks[{name!r}] must be a list of callables, not {type(listed).__name__}")
            for hook in listed:
                if not callable(hook):
                    raise TypeError(f"event_hooks[{name!r}]: {hook!r} is not callable")
            checked[name] = list(listed)
        self.hooks = checked
        self._tasks: set[asyncio.Task[Any]] = set()

    async def exchange(
        self,
        transport: object,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None,
        send: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``send()`` one request, with its ``request`` and ``response`` events; what a hook
        raises propagates (rule 3)."""
        name = transport_name(transport)
        tap = request_ids(connection)
        request_id = tap.reserve() if tap is not None else None
        try:
            await self._run("request", RequestEvent(method, request_id, params, name))
            started = time.perf_counter()
            try:
                result = await send()
            except Exception as error:
                event = ResponseEvent(method, request_id, None, error, time.perf_counter() - started, name)
                await self._run("response", event)
                raise
        finally:
            _IdTap.release()
        await self._run(
            "response", ResponseEvent(method, request_id, result, None, time.perf_counter() - started, name)
        )
        return result

    async def answered(
        self,
        transport: object,
        method: str,
        request_id: RequestId | None,
        params: dict[str, Any],
        answer: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``answer()`` what the server asked, then the ``server_request`` event; a hook that
        raises is logged, and the answer stands (rule 3)."""
        started = time.perf_counter()
        try:
            result = await answer()
        except Exception as error:
            event = ServerRequestEvent(
                method, request_id, params, None, error, time.perf_counter() - started, transport_name(transport)
            )
            await self._run_quietly("server_request", event)
            raise
        event = ServerRequestEvent(
            method, request_id, params, result, None, time.perf_counter() - started, transport_name(transport)
        )
        await self._run_quietly("server_request", event)
        return result

    def notified(self, transport: object, notification: JsonRpcNotification) -> None:
        """The ``notification`` event: plain hooks now, async ones in tasks; failures logged."""
        hooks = self.hooks["notification"]
        if not hooks:
            return
        event = NotificationEvent(notification.method, notification.params or {}, transport_name(transport))
        for hook in list(hooks):
            try:
                outcome = hook(event)
            except Exception:
                logger.exception("notification hook %r failed", hook)
                continue
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(self._quietly(hook, outcome))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _run(self, name: str, event: object) -> None:
        for hook in list(self.hooks[name]):
            outcome = hook(event)
            if inspect.isawaitable(outcome):
                await outcome

    async def _run_quietly(self, name: str, event: object) -> None:
        for hook in list(self.hooks[name]):
            try:
                outcome = hook(event)
            except Exception:
                logger.exception("%s hook %r failed", name, hook)
                continue
            if inspect.isawaitable(outcome):
                await self._quietly(hook, outcome)

    @staticmethod
    async def _quietly(hook: EventHook, outcome: Awaitable[Any]) -> None:
        try:
            await outcome
        except Exception:
            logger.exception("event hook %r failed", hook)
