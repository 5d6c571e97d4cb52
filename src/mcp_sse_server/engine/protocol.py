"""The JSON-RPC engine for one connection, shared by servers and clients.

It correlates outbound requests with their responses (with timeouts and
cancellation), runs inbound requests as tasks (with cancellation by
``notifications/cancelled``; started eagerly where Python can, below),
routes progress notifications to the caller that asked for them, and fails
everything pending when the transport closes.
What a request *means* is the owner's business: the owner implements
``handle_request`` and ``handle_notification``.

Eager starts (``start_eagerly``). A request that arrives as a message (stdio,
an in-process or a routed message: ``on_message``) is served in a task of its
own, so that ``notifications/cancelled`` can cancel it; most requests finish
without waiting on anything, and an ordinary task costs a loop iteration
before its handler even starts. (The HTTP fast path starts each request's
ASGI exchange the same way: ``transport/http/fast_protocol.py``.) Rules:

1. On Python 3.12 and later the task starts eagerly (``asyncio.Task(...,
   eager_start=True)``): its first step runs at once, as the current task, in
   a copy of the caller's context; a request that finishes in that step is
   answered before the loop runs again (the task is returned done).
2. On 3.11 it is an ordinary task, started by the loop, as before.
3. A request that suspends goes on exactly as in an ordinary task:
   cancellation, context variables, ``asyncio.current_task()`` and the scopes
   that depend on it are those of a task.

Why not, on 3.11, drive the first step by hand (``coroutine.send(None)``) and
make a task only when it suspends: whatever the step enters before suspending
is bound to the task current during the step, and the rest runs in another.
An anyio cancel scope (httpx opens one per request) then fails with
"Attempted to exit cancel scope in a different task", and an
``asyncio.timeout`` entered there cancels the caller's task. 3.11's task,
written in C, cannot run a step synchronously, and a pure-Python task costs
more than the iteration it saves (``tests/core/test_eager.py`` holds both
cases).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from .context import RequestContext, current_context
from .jsonrpc import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
)
from .transport import Reply, Transport

if TYPE_CHECKING:
    from .observe import Observation, Observer, OutboundObservation

__all__ = ["EAGER", "Connection", "ConnectionOwner", "ObservedConnection", "ProgressCallback", "start_eagerly"]

logger = logging.getLogger("mcp_sse_server")

T = TypeVar("T")

EAGER: Final = sys.version_info >= (3, 12)
"""True where ``start_eagerly`` starts its tasks eagerly (the module's rule 1)."""


if TYPE_CHECKING:

    def start_eagerly(coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task running ``coroutine`` on the running loop, its first step already run where tasks
        can start eagerly (the module's rules); ``task.done()`` says whether it finished there."""
        ...

# The task class itself, not a function around it: one Python frame fewer on every request
# (bench/inmemory.py). Like 3.12's eager tasks, it does not go through a loop's task factory.
elif sys.version_info >= (3, 12):
    start_eagerly = functools.partial(asyncio.Task, eager_start=True)
else:
    start_eagerly = asyncio.Task


ProgressCallback = Callable[[float, float | None, str | None], Any]


class ConnectionOwner(Protocol):
    """What a Connection needs from the server or client that owns it."""

    def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> Awaitable[dict[str, Any]]: ...

    def handle_notification(self, notification: JsonRpcNotification) -> None: ...

    def connection_closed(self) -> None: ...


class Connection:
    """JSON-RPC over one transport, on behalf of one owner: the ``Dispatcher``
    every transport drives (see ``transport.base``), and the ``context.Peer`` of
    every request it serves."""

    # An HTTP server keeps one per idle session: slots, and nothing made before it is needed.
    __slots__ = (
        "__weakref__",
        "_background",
        "_ids",
        "_inflight",
        "_pending",
        "_progress",
        "closed",
        "owner",
        "transport",
    )

    # What this side sends requests with: the ids, the replies awaited, the progress callbacks.
    # Slots left unset until first used (``_outbound_ids`` and the ``except AttributeError``s): a
    # server's session seldom asks its client anything, and a stateless request never does, so an
    # idle session and a stateless request make none of them (about 190 bytes per idle session).
    _ids: Iterator[RequestId]
    _pending: dict[RequestId, asyncio.Future[JsonRpcMessage]]
    _progress: dict[str | int, ProgressCallback]

    def __init__(self, transport: Transport, owner: ConnectionOwner) -> None:
        self.transport = transport
        self.owner = owner
        self.closed = False
        self._inflight: dict[RequestId, RequestContext] = {}
        self._background: set[asyncio.Task[Any]] | None = None
        transport.attach(self)

    # --- inbound ---------------------------------------------------------------

    def on_message(self, message: JsonRpcMessage) -> None:
        """Take one inbound message (``Dispatcher``): requests run in tasks of their own."""
        if isinstance(message, JsonRpcRequest):
            self._on_request(message)
        elif isinstance(message, JsonRpcNotification):
            self._on_notification(message)
        elif message.id is None:
            logger.warning("peer reported an error: %s", message)
        else:
            try:
                future = self._pending.pop(message.id, None)
            except AttributeError:  # (this side never sent a request)
                future = None
            if future is None:
                logger.debug("ignoring a response to unknown request %r", message.id)
            elif not future.done():
                future.set_result(message)

    def _on_notification(self, notification: JsonRpcNotification) -> None:
        method = notification.method
        params = notification.params or {}
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            # An unhashable id (a list, say) would raise out of the transport's on_message.
            context = self._inflight.get(request_id) if isinstance(request_id, str | int) else None
            # initialize cannot be cancelled: the session depends on its result.
            if context is not None and context.method != "initialize":
                reason = params.get("reason")
                context.cancel(reason if isinstance(reason, str) else None)
                if context.task is not None:
                    # A task cancelled before its first step never runs dispatch's clean-up.
                    context.task.add_done_callback(lambda _task: self._forget(context))
            # (then the owner, as every notification: a server's middleware sees it, applied)
        if method == "notifications/progress":
            token = params.get("progressToken")
            try:
                callback = self._progress.get(token) if isinstance(token, str | int) else None
            except AttributeError:  # (no progress was ever asked for)
                callback = None
            if callback is not None:
                try:
                    callback(params.get("progress", 0), params.get("total"), params.get("message"))
                except Exception:
                    logger.exception("progress callback failed")
                return
        try:
            self.owner.handle_notification(notification)
        except Exception:
            logger.exception("notification handler for %s failed", method)

    def _forget(self, context: RequestContext) -> None:
        context.done = True
        if self._inflight.get(context.request_id) is context:
            del self._inflight[context.request_id]

    def _on_request(self, request: JsonRpcRequest) -> None:
        if self.closed:
            return
        if request.id in self._inflight:
            self._spawn(
                self.transport.send(
                    JsonRpcError(request.id, INVALID_REQUEST, f"Request id {request.id!r} is already in use"),
                    request.id,
                )
            )
            return
        context = RequestContext(self, request)
        self._inflight[request.id] = context
        # A task of its own (notifications/cancelled cancels it), started eagerly where Python
        # can (rule 1 above): a request that never waits is answered before the loop runs again.
        task = start_eagerly(self._serve(request, context))
        if not task.done():
            context.task = task

    async def _serve(self, request: JsonRpcRequest, context: RequestContext) -> None:
        response = await self.dispatch(request, context)
        if response is not None:
            try:
                await self.transport.send(response, request.id)
            except Exception:
                logger.debug("could not deliver the response to %r", request.id, exc_info=True)

    async def dispatch(self, request: JsonRpcRequest, context: RequestContext | None = None) -> Reply | None:
        """Run one inbound request to its response in the caller's task; None when it was cancelled.

        The inline path of ``Dispatcher``: the HTTP transport and in-process
        callers await it in the task they already have. Cancelling that task
        cancels the request: its context reports ``is_cancelled`` and its
        ``on_cancelled`` callbacks run, as for ``notifications/cancelled``.
        """
        request_id = request.id
        inflight = self._inflight  # never replaced
        if context is None:
            if request_id in inflight:
                return JsonRpcError(request_id, INVALID_REQUEST, f"Request id {request_id!r} is already in use")
            context = RequestContext(self, request)
            # Served in the caller's task: notifications/cancelled cancels that task.
            context.task = asyncio.current_task()
            inflight[request_id] = context
        token = current_context.set(context)
        try:
            result = await self.owner.handle_request(request, context)
            if context.cancelled and request.method != "initialize":
                return None  # a handler that swallowed the cancellation still gets no response
            return JsonRpcResponse(request_id, result)
        except McpError as error:
            return JsonRpcError(request_id, error.code, error.message, error.data)
        except asyncio.CancelledError:
            if not context.cancelled:
                # The caller's task was cancelled (an in-process caller's timeout, say): the
                # handler, and a worker thread polling is_cancelled, must learn of it too.
                context.mark_cancelled("the caller was cancelled")
                raise
            if request.method != "initialize":
                task = asyncio.current_task()
                if task is not None and task is context.task and task.cancelling():
                    task.uncancel()  # the cancellation was ours and ends here
                return None
            raise
        except Exception as error:
            logger.exception("handler for %s failed", request.method)
            self._failed(request_id, error)
            return JsonRpcError(request_id, INTERNAL_ERROR, "Internal error")
        finally:
            context.done = True
            current_context.reset(token)
            if inflight.get(request_id) is context:
                del inflight[request_id]
                if not inflight and request.method == "initialize":
                    # Every idle session has served initialize: don't keep the table it grew.
                    inflight.clear()

    def _failed(self, request_id: RequestId, error: Exception) -> None:
        """A handler raised ``error`` (the reply says only "Internal error"): for ``ObservedConnection``."""

    def on_close(self) -> None:
        """The transport ended (``Dispatcher``): pending calls fail, running handlers are cancelled."""
        if self.closed:
            return
        self.closed = True
        pending: dict[RequestId, asyncio.Future[JsonRpcMessage]] | None = getattr(self, "_pending", None)
        if pending:  # (a connection that never sent a request has no table: none is made here)
            self._pending = {}
            for request_id, future in pending.items():
                if not future.done():
                    future.set_result(JsonRpcError(request_id, CONNECTION_CLOSED, "Connection closed"))
        for context in list(self._inflight.values()):
            context.cancel("connection closed")
        if hasattr(self, "_progress"):
            self._progress.clear()
        try:
            self.owner.connection_closed()
        except Exception:
            logger.exception("connection_closed handler failed")

    # --- outbound --------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = 300.0,
        related_request_id: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result.

        Raises McpError for an error response (CONNECTION_CLOSED when the
        transport closes first) and TimeoutError after ``timeout`` seconds
        (None waits forever). A timeout or a cancelled caller sends
        ``notifications/cancelled`` so the peer can stop working.
        """
        if self.closed:
            raise McpError(CONNECTION_CLOSED, "Connection closed")
        request_id = self.next_request_id()
        if on_progress is not None:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = request_id
            params["_meta"] = meta
            self.add_progress_handler(request_id, on_progress)
        future = self.await_reply(request_id)
        try:
            await self.transport.send(JsonRpcRequest(request_id, method, params), related_request_id)
            if timeout is None:
                reply = await future
            else:
                try:
                    async with asyncio.timeout(timeout):
                        reply = await future
                except TimeoutError:
                    await self._cancel_remote(request_id, f"timed out after {timeout:g} s", related_request_id)
                    raise TimeoutError(f"{method} got no response within {timeout:g} s") from None
        except asyncio.CancelledError:
            # Cancelling the task cancels the future it awaits, so "cancelled" means no reply came.
            if future.cancelled() or not future.done():
                await self._cancel_remote(request_id, "cancelled by the caller", related_request_id)
            raise
        finally:
            self._pending.pop(request_id, None)
            if on_progress is not None:
                self._progress.pop(request_id, None)
        if type(reply) is JsonRpcResponse:
            return reply.result
        raise reply.to_exception()  # type: ignore[union-attr]

    async def _cancel_remote(self, request_id: RequestId, reason: str, related: RequestId | None) -> None:
        if self.closed:
            return
        try:
            await self.transport.send(
                JsonRpcNotification("notifications/cancelled", {"requestId": request_id, "reason": reason}), related
            )
        except Exception:
            logger.debug("could not send notifications/cancelled", exc_info=True)

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send a notification; silently dropped once the connection is closed."""
        if self.closed:
            return
        await self.transport.send(JsonRpcNotification(method, params), related_request_id)

    async def close_stream(self, request_id: RequestId) -> bool:
        """Close the stream ``request_id``'s messages travel on while the request goes on (the
        transport decides: False where streams cannot be resumed). ``RequestContext`` asks here,
        so that it needs no more of the engine than ``context.Peer``."""
        return await self.transport.close_stream(request_id)

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification from synchronous code without waiting for it."""
        if self.closed:
            return
        self._spawn(self.notify(method, params))

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        try:
            task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coroutine)  # type: ignore[arg-type]
        except RuntimeError:  # no running loop: nothing can be sent anyway
            coroutine.close()  # type: ignore[attr-defined]
            return
        if self._background is None:
            self._background = set()
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def add_progress_handler(self, token: str | int, callback: ProgressCallback) -> None:
        """Route notifications/progress for ``token`` to ``callback`` (for callers that send requests themselves)."""
        try:
            self._progress[token] = callback
        except AttributeError:
            self._progress = {token: callback}

    def remove_progress_handler(self, token: str | int) -> None:
        if hasattr(self, "_progress"):
            self._progress.pop(token, None)

    def await_reply(self, request_id: RequestId) -> asyncio.Future[JsonRpcMessage]:
        """A future the reply to ``request_id`` will complete (for callers that send requests
        themselves, with an id of ``next_request_id``); ``forget_reply`` when no longer awaited."""
        future: asyncio.Future[JsonRpcMessage] = asyncio.get_running_loop().create_future()
        try:
            self._pending[request_id] = future
        except AttributeError:
            self._pending = {request_id: future}
        return future

    def forget_reply(self, request_id: RequestId) -> None:
        """Stop awaiting the reply to ``request_id`` (one that comes later is ignored)."""
        if hasattr(self, "_pending"):
            self._pending.pop(request_id, None)

    def next_request_id(self) -> RequestId:
        """The id of the next request this side sends."""
        try:
            return next(self._ids)
        except AttributeError:  # the first: the ids are made now
            return next(self._outbound_ids())

    def _outbound_ids(self) -> Iterator[RequestId]:
        try:
            return self._ids
        except AttributeError:
            ids = self._ids = itertools.count(1)
            return ids

    def name_requests(self, ids: Iterator[RequestId]) -> None:
        """Take the ids of outbound requests from ``ids`` (several workers name theirs apart)."""
        self._ids = ids

    @property
    def inflight_count(self) -> int:
        return len(self._inflight)

    async def close(self) -> None:
        """Close the transport; pending calls fail and running handlers are cancelled."""
        if not self.closed:
            await self.transport.close()
        self.on_close()


class _OutboundIds:
    """An observed connection's outbound request ids: the id drawn while an observed request
    starts (``Connection.request`` draws it before its first await) is noted with its
    observation, so that its answer can be matched to it (``outbound_observation``)."""

    __slots__ = ("by_id", "ids", "starting")

    def __init__(self, ids: Iterator[RequestId]) -> None:
        self.ids = ids
        self.by_id: dict[RequestId, OutboundObservation] = {}
        self.starting: OutboundObservation | None = None

    def __iter__(self) -> _OutboundIds:
        return self

    def __next__(self) -> RequestId:
        request_id = next(self.ids)
        if self.starting is not None:
            self.by_id[request_id] = self.starting
            self.starting = None
        return request_id


class ObservedConnection(Connection):
    """A ``Connection`` that tells an observer (``engine.observe``) about every request it serves.

    A subclass, not a test in ``Connection.dispatch``: a server without telemetry makes plain
    ``Connection`` objects and runs exactly the code it ran before the seam existed. What the
    server asks its peer (``request``: elicitation, sampling, roots, ping) is observed too.
    """

    __slots__ = ("_observations", "observer", "opened")

    def __init__(self, transport: Transport, owner: ConnectionOwner, observer: Observer) -> None:
        self.observer = observer
        self.opened = time.monotonic()  # (the session's duration, when it ends)
        self._observations: dict[RequestId, Observation] = {}
        super().__init__(transport, owner)

    async def dispatch(self, request: JsonRpcRequest, context: RequestContext | None = None) -> Reply | None:
        observation = self.observer.inbound(request, self)
        if observation is None:
            return await super().dispatch(request, context)
        request_id = request.id
        observations = self._observations
        if request_id not in observations:
            observations[request_id] = observation
        try:
            reply = await super().dispatch(request, context)
        except BaseException as error:
            observation.finish(None, error)
            raise
        finally:
            if observations.get(request_id) is observation:
                del observations[request_id]
        observation.finish(reply, None)
        return reply

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = 300.0,
        related_request_id: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        params, observation = self.observer.outbound(method, params, self)
        if observation is None:
            return await super().request(
                method, params, timeout=timeout, related_request_id=related_request_id, on_progress=on_progress
            )
        ids = self._outbound_ids()
        if not isinstance(ids, _OutboundIds):  # (made on the first observed request: most never send one)
            ids = self._ids = _OutboundIds(ids)
        ids.starting = observation
        try:
            result = await super().request(
                method, params, timeout=timeout, related_request_id=related_request_id, on_progress=on_progress
            )
        except BaseException as error:
            observation.finish(None, error)
            raise
        finally:
            ids.starting = None
            for request_id in [key for key, value in ids.by_id.items() if value is observation]:
                del ids.by_id[request_id]
        observation.finish(result, None)
        return result

    def outbound_observation(self, request_id: RequestId) -> OutboundObservation | None:
        """The observation of the request ``request_id`` this side sent and awaits the answer to
        (an answer routed from another worker links to its span)."""
        ids = getattr(self, "_ids", None)
        return ids.by_id.get(request_id) if isinstance(ids, _OutboundIds) else None

    def _failed(self, request_id: RequestId, error: Exception) -> None:
        observation = self._observations.get(request_id)
        if observation is not None:
            observation.failed(error)

    def _on_notification(self, notification: JsonRpcNotification) -> None:
        if notification.method == "notifications/cancelled":
            request_id = (notification.params or {}).get("requestId")
            observation = self._observations.get(request_id) if isinstance(request_id, str | int) else None
            self.observer.notification(notification, observation)
        else:
            self.observer.notification(notification, None)
        super()._on_notification(notification)

    def on_close(self) -> None:
        if not self.closed:
            self.observer.session_ended(self.owner, time.monotonic() - self.opened, None)
        super().on_close()

    def observation(self, request_id: RequestId) -> Observation | None:
        """The observation of the in-flight request ``request_id`` (a routed cancel links to it)."""
        return self._observations.get(request_id)
