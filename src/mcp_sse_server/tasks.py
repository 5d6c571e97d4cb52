"""Tasks: tool calls that outlive their request (the Tasks extension of 2026-07-28, SEP-2663).

Rules, in the order a call meets them:

1. A ``tools/call`` becomes a task when its tool's ``task_support`` is
   ``"optional"`` or ``"required"`` and the request declares the extension
   (``_meta`` client capabilities ``extensions["io.modelcontextprotocol/tasks"]``).
   A required tool called without it is -32021 naming the extension, before
   its handler runs; anything else runs inline, as any call.
2. The handler runs in an asyncio task of its own, not tied to the HTTP
   request. The task starts (its record is in the store, readable by every
   worker sharing it, and the request answers ``CreateTaskResult``) before the
   handler runs, or, for a tool registered with ``task_starts="in_handler"``,
   when the handler calls ``context.start_task()``: until then the handler is
   part of the request, and its questions are ``input_required`` rounds.
3. A handler's outcome: a result is ``completed`` (with ``isError`` too), an
   ``McpError`` is ``failed`` with that error, any other exception ``failed``
   with -32603, and a cancellation after ``tasks/cancel`` ``cancelled``. A
   terminal status never changes.
4. Inside a task, a question to the client (``context.session.elicit``,
   ``create_message``, ``list_roots``) is one of the task's ``inputRequests``
   (the task is ``input_required``) until ``tasks/update`` answers it; only
   capabilities the creating request declared may be asked. Progress and log
   notifications are not sent for a task.
5. ``tasks/get`` reads the store, ``tasks/update`` answers questions
   outstanding (others are ignored), ``tasks/cancel`` asks for the
   cancellation and stops the handler where it runs. Each needs the extension
   declared on its own request (-32021); an unknown or expired task is -32602.
6. A task is readable for its ttl (``ttl_ms``, from creation), then swept.
7. A task whose server stops (``TaskRuntime.aclose``, at the app's shutdown)
   ends ``failed`` with -32603 "the server instance running it stopped":
   never ``working`` forever.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final, TypeAlias

from .context import RequestContext
from .jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CLIENT_CAPABILITY, McpError
from .records import TASK_INTERRUPTED, TaskRecord
from .stores.base import StoreUnavailable, TaskStore
from .types import TaskStarts

__all__ = [
    "TASKS_EXTENSION",
    "RunningTask",
    "TaskRuntime",
    "declares_tasks",
    "missing_tasks_extension",
]

logger = logging.getLogger("mcp_sse_server")

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

_CALL: TypeAlias = Callable[[], Awaitable[dict[str, Any]]]

_STOPPED: Final = TASK_INTERRUPTED

# How long a task waits between looks at its record while a question is outstanding; an answer or
# a cancellation wakes it at once (``TaskStore.wait``).
_ANSWER_POLL: Final = 5.0


def declares_tasks(capabilities: dict[str, Any] | None) -> bool:
    """True when a request's client capabilities declare the Tasks extension."""
    extensions = (capabilities or {}).get("extensions")
    return type(extensions) is dict and type(extensions.get(TASKS_EXTENSION)) is dict


def missing_tasks_extension(what: str) -> McpError:
    """-32021 for a request that needs the Tasks extension declared."""
    return McpError(
        MISSING_CLIENT_CAPABILITY,
        f"{what} needs the client capability extensions[{TASKS_EXTENSION!r}], not declared on this request",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(record: TaskRecord) -> dict[str, Any]:
    """The Task of the extension's wire format (``taskId``, ``status``, times, ``ttlMs``, ...)."""
    out: dict[str, Any] = {
        "taskId": record.id,
        "status": record.status,
        "createdAt": _iso(record.created_at),
        "lastUpdatedAt": _iso(record.updated_at),
        "ttlMs": record.ttl_ms,
        "pollIntervalMs": record.poll_interval_ms,
    }
    if record.status_message is not None:
        out["statusMessage"] = record.status_message
    return out


def detailed_task(record: TaskRecord) -> dict[str, Any]:
    """``tasks/get``'s DetailedTask: the Task, and by status its questions, result or error."""
    out = task_fields(record)
    if record.status == "input_required":
        out["inputRequests"] = dict(record.input_requests)
    elif record.outcome is not None and record.status in ("completed", "failed"):
        out.update(record.outcome)
    return out


class TaskRuntime:
    """The tasks of one server: their store, the handlers running here, and the wire methods.

    ``ttl_ms`` is how long a task stays readable from its creation, ``poll_interval_ms`` the
    polling interval suggested to clients; ``clock`` is wall-clock seconds (every worker sharing
    the store must agree on it).
    """

    __slots__ = ("_running", "_sweeper", "clock", "poll_interval_ms", "store", "ttl_ms", "worker_id")

    def __init__(
        self,
        store: TaskStore,
        *,
        ttl_ms: int = 3_600_000,
        poll_interval_ms: int = 1_000,
        clock: Callable[[], float] = time.time,
        worker_id: str | None = None,
    ) -> None:
        if ttl_ms < 1 or poll_interval_ms < 1:
            raise ValueError("ttl_ms and poll_interval_ms must be positive")
        self.store = store
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.clock = clock
        self.worker_id = worker_id
        self._running: dict[str, RunningTask] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # --- running a call as a task -------------------------------------------------------

    async def call(self, tool: str, starts: TaskStarts, context: RequestContext, call: _CALL) -> dict[str, Any]:
        """Run ``call`` (the tool call, inline) as a task of ``context``'s request: its result when
        it ends before the task starts (rule 2), else the ``CreateTaskResult``."""
        running = RunningTask(self, tool, context)
        context.session.task = running
        if starts == "at_call":
            await running.start()
        job = running.job = asyncio.get_running_loop().create_task(running.run(call))
        try:
            await asyncio.wait((job, running.started), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not running.started.done():
                job.cancel()  # the request went away before its task started: the call goes with it
            raise
        if running.started.done():
            return {"resultType": "task", **task_fields(running.started.result())}
        running.started.cancel()
        return job.result()

    async def aclose(self) -> None:
        """Stop: every handler running here ends its task ``failed`` with -32603 ("the server
        instance running it stopped"), and expired tasks are no longer swept (rule 7)."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
        jobs = [running.stop() for running in list(self._running.values())]
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)

    def _started(self, running: RunningTask) -> None:
        self._running[running.task_id] = running
        if self.store.shared:  # a tasks/cancel may reach another worker: watch the record
            running.watcher = asyncio.get_running_loop().create_task(running.watch_for_cancel())
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())

    def _ended(self, running: RunningTask) -> None:
        self._running.pop(running.task_id, None)
        watcher, running.watcher = running.watcher, None
        if watcher is not None:
            watcher.cancel()

    async def _sweep_forever(self) -> None:
        try:
            while True:
                await asyncio.sleep(max(1.0, self.ttl_ms / 1000 / 10))
                await self.store.sweep(self.clock())
        finally:
            self._sweeper = None

    def new_record(self, tool: str) -> TaskRecord:
        """A new task's record: an unguessable id (it is the client's handle on the task)."""
        now = self.clock()
        return TaskRecord(
            id=secrets.token_urlsafe(18),
            revision="2026-07-28",
            created_at=now,
            updated_at=now,
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            tool=tool,
            worker_id=self.worker_id,
        )

    # --- the extension's methods -----------------------------------------------------------

    async def _record(self, params: dict[str, Any], method: str, context: RequestContext) -> TaskRecord:
        if not declares_tasks(context.session.client_capabilities):
            raise missing_tasks_extension(method)
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise McpError(INVALID_PARAMS, 'Missing or invalid "taskId": expected a string')
        record = await self.store.get(task_id, self.clock())
        if record is None:
            raise McpError(INVALID_PARAMS, f"Unknown task: {task_id}")
        return record

    async def get(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/get``: the task as it is now (a pure read)."""
        return detailed_task(await self._record(params, "tasks/get", context))

    async def update(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/update``: answers to the task's questions; an empty acknowledgement."""
        responses = params.get("inputResponses")
        if type(responses) is not dict:
            raise McpError(INVALID_PARAMS, 'Missing or invalid "inputResponses": expected an object of results by key')
        record = await self._record(params, "tasks/update", context)
        await self.store.answer(record.id, responses, self.clock())
        return {}

    async def cancel(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/cancel``: ask for the cancellation (the handler is stopped where it runs); an
        empty acknowledgement, for a task that ended already too."""
        record = await self._record(params, "tasks/cancel", context)
        if not record.terminal:
            await self.store.request_cancel(record.id, self.clock())
            running = self._running.get(record.id)
            if running is not None:
                running.cancel()
        return {}


class RunningTask:
    """One task call while its handler runs here: what the request waits on (``started``), and
    what the handler's questions go through once it is a task (``ask``)."""

    __slots__ = ("context", "job", "record", "runtime", "started", "stopping", "tool", "watcher")

    def __init__(self, runtime: TaskRuntime, tool: str, context: RequestContext) -> None:
        self.runtime = runtime
        self.tool = tool
        self.context = context
        self.record: TaskRecord | None = None
        self.started: asyncio.Future[TaskRecord] = asyncio.get_running_loop().create_future()
        self.job: asyncio.Task[dict[str, Any]] | None = None
        self.stopping = False  # the server stops: the task fails (rule 7), it is not cancelled
        self.watcher: asyncio.Task[None] | None = None  # with a shared store: a cancel from elsewhere

    @property
    def task_id(self) -> str:
        return self.record.id if self.record is not None else ""

    @property
    def in_task(self) -> bool:
        """True once the call is a task (its questions go to the task, not to the request)."""
        return self.record is not None

    async def start(self) -> None:
        """Make the call a task now: its record is in the store when this returns (rule 2)."""
        if self.record is not None:
            return
        record = self.runtime.new_record(self.tool)
        await self.runtime.store.create(record)
        self.record = record
        self.runtime._started(self)
        if not self.started.done():
            self.started.set_result(record)

    def cancel(self) -> None:
        """Stop the handler (``tasks/cancel``): it ends ``cancelled``."""
        self.context.mark_cancelled("task cancelled")
        if self.job is not None:
            self.job.cancel("task cancelled")

    async def watch_for_cancel(self) -> None:
        """With a shared store: stop the handler when a ``tasks/cancel`` reached another worker."""
        store, runtime = self.runtime.store, self.runtime
        while True:
            try:
                record = await store.get(self.task_id, runtime.clock())
                if record is None or record.terminal:
                    return
                if record.cancel_requested:
                    self.cancel()
                    return
                await store.wait(self.task_id, record.version, _ANSWER_POLL)
            except StoreUnavailable as error:
                logger.warning("task %s: cannot watch for a cancellation: %s", self.task_id[:8], error)
                await asyncio.sleep(_ANSWER_POLL)

    async def stop(self) -> None:
        """Stop the handler because the server stops, and wait for its task to end (rule 7)."""
        job = self.job
        if job is None or job.done():
            return
        self.stopping = True
        job.cancel("the server stops")
        await asyncio.wait((job,))

    async def run(self, call: _CALL) -> dict[str, Any]:
        """The handler's asyncio task: the call's result while it is not a task yet (rule 2),
        else its outcome goes to the store (rule 3)."""
        try:
            result = await call()
        except McpError as error:
            if not self.in_task:
                raise
            await self._finish("failed", {"error": error.to_error_object()}, error.message)
        except asyncio.CancelledError:
            if not self.in_task:
                raise
            if self.stopping:
                stopped = McpError(INTERNAL_ERROR, _STOPPED)
                await self._finish("failed", {"error": stopped.to_error_object()}, _STOPPED)
            else:
                await self._finish("cancelled", None, "The task was cancelled")
        except Exception:
            if not self.in_task:
                raise
            logger.exception("task %s (tool %s) failed", self.task_id[:8], self.tool)
            internal = McpError(INTERNAL_ERROR, f"Tool {self.tool} failed with an internal error")
            await self._finish("failed", {"error": internal.to_error_object()}, internal.message)
        else:
            if not self.in_task:
                return result
            await self._finish("completed", {"result": result}, None)
        finally:
            if self.in_task:
                self.runtime._ended(self)
        return {}

    async def _finish(self, status: str, outcome: dict[str, Any] | None, message: str | None) -> None:
        # Shielded: a cancellation that arrives now must not lose the outcome.
        runtime = self.runtime
        finish = runtime.store.finish(self.task_id, status, outcome, message, runtime.clock())
        if await asyncio.shield(finish) is None:
            logger.info("task %s ended %s after it had ended or expired", self.task_id[:8], status)

    async def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """A question of the task to the client: one of its inputRequests until answered (rule 4)."""
        store, runtime = self.runtime.store, self.runtime
        asked = await store.ask(self.task_id, {"method": method, "params": params or {}}, runtime.clock())
        if asked is None:
            raise asyncio.CancelledError("the task ended")
        key, _ = asked
        while True:
            record = await store.get(self.task_id, runtime.clock())
            if record is None or record.terminal or record.cancel_requested:
                raise asyncio.CancelledError("the task was cancelled")
            answer = await store.take_answer(self.task_id, key)
            if answer is not None:
                return answer
            await store.wait(self.task_id, record.version, _ANSWER_POLL)
