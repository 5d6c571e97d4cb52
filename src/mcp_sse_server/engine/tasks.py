"""Tasks: tool calls that outlive their request, in both wire generations.

A task belongs to the revision of the request that made it, and only that
generation's methods serve it (the two are not wire-compatible):

- core tasks, on 2025-11-25 sessions (SEP-1686): the server declares the
  ``tasks`` capability and each tool's ``execution.taskSupport``; the client
  asks for a task with ``params.task``; ``tasks/get``, ``tasks/result``,
  ``tasks/list`` and ``tasks/cancel``, bound to the session;
- the Tasks extension, on 2026-07-28 requests (SEP-2663, ``TASKS_EXTENSION``):
  the server decides, for requests that declare the extension;
  ``tasks/get``, ``tasks/update`` and ``tasks/cancel``.

Rules, in the order a call meets them:

1. A ``tools/call`` becomes a task when its tool's ``task_support`` is
   ``"optional"`` or ``"required"`` and, at 2026-07-28, the request declares
   the extension (``_meta`` client capabilities), or, on a 2025-11-25
   session, the call carries ``params.task``. Before its handler runs, a
   required tool called otherwise is -32021 naming the extension (2026-07-28)
   or -32601 (a session; at 2025-06-18 it cannot run at all), and
   ``params.task`` on a tool that forbids tasks is -32601 at 2025-11-25
   (ignored at 2026-07-28, unknown at 2025-06-18). Anything else runs inline.
2. The handler runs in an asyncio task of its own, not tied to the HTTP
   request. The task starts (its record is in the store, readable by every
   worker sharing it, and the request answers ``CreateTaskResult``) before the
   handler runs, or, for a tool registered with ``task_starts="in_handler"``,
   when the handler calls ``context.start_task()``: until then the handler is
   part of the request (its questions are the request's: ``input_required``
   rounds at 2026-07-28, requests on the call's stream on a session).
3. A handler's outcome: a result is ``completed`` (with ``isError`` too for
   the extension; a core task with ``isError`` is ``failed``, its result kept
   for ``tasks/result``), an ``McpError`` is ``failed`` with that error, any
   other exception ``failed`` with -32603, and a cancellation after
   ``tasks/cancel`` ``cancelled``. A terminal status never changes.
4. Inside a task, a question to the client (``context.session.elicit``,
   ``create_message``, ``list_roots``) is one of the task's ``inputRequests``
   (the task is ``input_required``) until the client answers it: through
   ``tasks/update`` (extension), or, for a core task, through ``tasks/result``,
   which sends each question outstanding as a real request on its own stream,
   tagged with the related-task ``_meta``, and stores the client's answer.
   Only capabilities the client declared may be asked. An extension task sends
   no progress or log notifications; a core task's logs go to its session's
   standalone stream (the call's stream has ended), and so does its progress
   (the call's ``progressToken`` stays valid for the task), each tagged with
   the related-task ``_meta``.
   A core task's session gets ``notifications/tasks/status`` (the Task) at
   each change made where it runs or is answered or cancelled; it is a hint:
   the store is what ``tasks/get`` reads.
5. Every method reads the task by id for the request's own generation: an
   unknown or expired id, or a task of another generation, another 2025-11-25
   session or another authenticated principal, is -32602 "Unknown task" (never
   another client's task). The extension's methods need the extension
   declared on their own request (-32021, before the lookup); so does a
   ``subscriptions/listen`` with ``notifications.taskIds``, which then gets
   ``notifications/tasks`` (the DetailedTask) at each change of those tasks
   until they end.
6. ``tasks/cancel``: the extension's asks for the cancellation (the handler is
   stopped where it runs, wherever that is) and answers an empty
   acknowledgement, for a task that ended already too; the core one refuses a
   terminal task (-32602), else makes the task ``cancelled`` before it
   answers the task, and stops the handler.
7. A task is readable for its ttl from creation (``ttl_ms``; a core call's
   ``params.task.ttl``, at most ``max_ttl_ms``), then swept.
8. Limits, checked before the handler runs: at most ``max_tasks`` unfinished
   tasks, and at most ``max_tasks_per_client`` of them for one client (its
   principal when the request is authenticated, else its 2025-11-25 session);
   beyond, -32600 naming the limit. On a store that is not shared they count
   the tasks running on this runtime. On a shared one (``TaskStore.counts_fleet``:
   Redis, Redis Cluster) they count the whole fleet: the store admits each task
   in one atomic step per limit (a sorted set of task ids per limit, scored by
   a deadline), before it starts, so no two workers admit the one past a limit;
   the task counts until it ends in any way (completed, failed, cancelled, or
   never started: released where it ran) or, on a worker that died, until its
   deadline: the worker running a task pushes it ``lease`` seconds (30) ahead
   every ``lease / 3``, and an admission drops the entries past theirs first.
   On a Redis Cluster the two sets are in two hash slots (the fleet's, the
   client's): a task is admitted by the fleet's set, then by the client's, and
   a refusal by the second takes it out of the first again. Neither limit is
   ever exceeded; in the moment between the two steps another admission may
   see one task more than there is and be refused (never one too many admitted).
9. A task whose server stops (``TaskRuntime.aclose``, at the app's shutdown)
   ends ``failed`` with -32603 "the server instance running it stopped":
   never ``working`` forever.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import orjson

from .context import RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    McpError,
)
from .records import TASK_INTERRUPTED, TaskRecord
from .stateless import RequestSession
from .stateless_meta import RELATED_TASK, TASKS_EXTENSION
from .stores import StoreUnavailable, TaskStore
from .types import TaskStarts, TaskSupport

if TYPE_CHECKING:
    from .observe import TaskObservation

__all__ = [
    "RELATED_TASK",
    "TASKS_EXTENSION",
    "RunningTask",
    "TaskHost",
    "TaskMethods",
    "TaskRuntime",
    "declares_tasks",
    "missing_tasks_extension",
    "task_call",
]

logger = logging.getLogger("mcp_sse_server")


_CALL: TypeAlias = Callable[[], Awaitable[dict[str, Any]]]

_STOPPED: Final = TASK_INTERRUPTED
_EXTENSION_REVISION: Final = "2026-07-28"  # (the revision of the extension's tasks; see versions.py)

# How long a task waits between looks at its record while a question is outstanding; an answer or
# a cancellation wakes it at once (``TaskStore.wait``).
_ANSWER_POLL: Final = 5.0
_LIST_PAGE: Final = 100  # core tasks/list: tasks per page


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


def task_call(
    tool: str,
    support: TaskSupport | None,
    params: dict[str, Any],
    context: RequestContext,
    declared: Callable[[], bool],
) -> dict[str, Any] | None:
    """Whether a ``tools/call`` runs as a task (rule 1): None when inline, else the core call's
    ``params.task`` (an empty one for the extension); the errors the rule names. ``support`` is
    the tool's ``task_support`` (None for "forbidden"), ``declared`` whether the server declares
    tasks (asked only for a 2025-11-25 session)."""
    if context.tool_task is not None:  # (the task's own run of the call)
        return None
    session = context.session
    if type(session) is RequestSession:
        if support is None:
            return None  # (a "task" member is not part of this revision: ignored)
        if declares_tasks(session.record.client_capabilities):
            return {}
        if support == "required":
            raise missing_tasks_extension(f"Tool {tool}")
        return None
    protocol = session.protocol
    if protocol is not None and protocol.core_tasks and declared():
        requested = params.get("task")
        if requested is not None:
            if support is None:
                raise McpError(METHOD_NOT_FOUND, f'Tool {tool} does not run as a task: call it without "task"')
            if type(requested) is not dict:
                raise McpError(INVALID_PARAMS, 'Invalid "task": expected an object (with an optional "ttl")')
            return requested
        if support == "required":
            raise McpError(METHOD_NOT_FOUND, f'Tool {tool} runs only as a task: call it with "task"')
        return None
    if support == "required":
        raise McpError(
            METHOD_NOT_FOUND,
            f"Tool {tool} runs only as a task, which a {session.record.revision} session cannot start",
        )
    return None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _wire_task(record: TaskRecord, ttl: str, poll_interval: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": record.id,
        "status": record.status,
        "createdAt": _iso(record.created_at),
        "lastUpdatedAt": _iso(record.updated_at),
        ttl: record.ttl_ms,
        poll_interval: record.poll_interval_ms,
    }
    if record.status_message is not None:
        out["statusMessage"] = record.status_message
    return out


def task_fields(record: TaskRecord) -> dict[str, Any]:
    """The Task of the extension's wire format (``taskId``, ``status``, times, ``ttlMs``, ...)."""
    return _wire_task(record, "ttlMs", "pollIntervalMs")


def core_task_fields(record: TaskRecord) -> dict[str, Any]:
    """The Task of the 2025-11-25 wire format (``ttl``, ``pollInterval``)."""
    return _wire_task(record, "ttl", "pollInterval")


def detailed_task(record: TaskRecord) -> dict[str, Any]:
    """``tasks/get``'s DetailedTask: the Task, and by status its questions, result or error."""
    out = task_fields(record)
    if record.status == "input_required":
        out["inputRequests"] = dict(record.input_requests)
    elif record.outcome is not None and record.status in ("completed", "failed"):
        out.update(record.outcome)
    return out


def _related(task_id: str, meta: Any) -> dict[str, Any]:
    """``meta`` (a ``_meta`` object or None) with the related-task entry of ``task_id``."""
    return {**(meta if type(meta) is dict else {}), RELATED_TASK: {"taskId": task_id}}


def _error_text(result: dict[str, Any]) -> str:
    """A core task's statusMessage for a tool result with ``isError``: its first text."""
    for block in result.get("content") or ():
        text = block.get("text") if type(block) is dict and block.get("type") == "text" else None
        if isinstance(text, str):
            return text[:500]
    return "The tool reported an error"


def _cursor(record: TaskRecord) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([record.created_at, record.id])).decode()


def _after_cursor(cursor: Any) -> tuple[float, str]:
    """The (created_at, id) a tasks/list cursor names; -32602 for anything else."""
    try:
        if not isinstance(cursor, str):
            raise ValueError
        created, task_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
        if not isinstance(created, int | float) or not isinstance(task_id, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise McpError(INVALID_PARAMS, "Invalid cursor") from None
    return float(created), task_id


async def announce(context: RequestContext, record: TaskRecord | None) -> None:
    """``notifications/tasks/status`` to a core task's session (rule 4b); nothing for others."""
    if record is None or record.session_id is None:
        return
    try:
        await context.session.notify("notifications/tasks/status", core_task_fields(record))
    except Exception as error:  # (a notification is optional: the task goes on)
        logger.debug("task %s: status notification not sent: %s", record.id[:8], error)


def _principal(context: RequestContext) -> list[str | None] | None:
    token = context.auth
    return None if token is None else list(token.principal)


def _session_key(session: Any) -> str:
    """What binds core tasks to their session: its id (an in-process session has none: its identity)."""
    key: str = session.record.id or f"local:{id(session):x}"
    return key


class TaskRuntime:
    """The tasks of one server: their store, the handlers running here, and the wire methods of
    both generations (the rules are the module's).

    ``ttl_ms`` is how long a task stays readable from its creation (a core call may ask for
    another, at most ``max_ttl_ms``), ``poll_interval_ms`` the polling interval suggested to
    clients; ``max_tasks`` and ``max_tasks_per_client`` bound the unfinished tasks, of this runtime
    or, on a store that counts the fleet, of every worker sharing it (rule 8); ``lease`` is how long
    a task of a worker that died keeps counting there. ``clock`` is wall-clock seconds (every
    worker sharing the store must agree on it).
    """

    __slots__ = (
        "_held",
        "_renewer",
        "_running",
        "_sweeper",
        "clock",
        "lease",
        "max_tasks",
        "max_tasks_per_client",
        "max_ttl_ms",
        "poll_interval_ms",
        "store",
        "ttl_ms",
        "worker_id",
    )

    def __init__(
        self,
        store: TaskStore,
        *,
        ttl_ms: int = 3_600_000,
        max_ttl_ms: int | None = None,
        poll_interval_ms: int = 1_000,
        max_tasks: int = 10_000,
        max_tasks_per_client: int = 100,
        clock: Callable[[], float] = time.time,
        worker_id: str | None = None,
        lease: float = 30.0,
    ) -> None:
        if ttl_ms < 1 or poll_interval_ms < 1:
            raise ValueError("ttl_ms and poll_interval_ms must be positive")
        if max_tasks < 1 or max_tasks_per_client < 1:
            raise ValueError("max_tasks and max_tasks_per_client must be positive")
        if lease <= 0:
            raise ValueError("lease must be positive")
        self.store = store
        self.ttl_ms = ttl_ms
        self.max_ttl_ms = max(ttl_ms, max_ttl_ms if max_ttl_ms is not None else ttl_ms)
        self.poll_interval_ms = poll_interval_ms
        self.max_tasks = max_tasks
        self.max_tasks_per_client = max_tasks_per_client
        self.clock = clock
        self.worker_id = worker_id
        self.lease = lease
        self._running: dict[str, RunningTask] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._held: dict[str, str | None] = {}  # tasks the store admitted here: id -> client (renewed)
        self._renewer: asyncio.Task[None] | None = None

    def settings(self) -> dict[str, Any]:
        """This runtime's keywords (ttls, poll interval, limits, lease): for a runtime over another
        store with the same behaviour."""
        return {
            "ttl_ms": self.ttl_ms,
            "max_ttl_ms": self.max_ttl_ms,
            "poll_interval_ms": self.poll_interval_ms,
            "max_tasks": self.max_tasks,
            "max_tasks_per_client": self.max_tasks_per_client,
            "lease": self.lease,
        }

    # --- running a call as a task -------------------------------------------------------

    async def call(
        self,
        tool: str,
        starts: TaskStarts,
        context: RequestContext,
        call: _CALL,
        requested: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run ``call`` (the tool call, inline) as a task of ``context``'s request: its result when
        it ends before the task starts (rule 2), else the ``CreateTaskResult`` of the request's
        generation. ``requested`` is a core call's ``params.task``."""
        running = RunningTask(self, tool, context, self._template(context, requested))
        if self.store.counts_fleet:
            await self._admit(running)
        else:
            self._check_limits(running.client)
        context.tool_task = running
        try:
            if starts == "at_call":
                await running.start()
            job = running.job = asyncio.get_running_loop().create_task(running.run(call))
        except BaseException:
            await asyncio.shield(self._release(running))  # (the job that would release it never ran)
            raise
        try:
            await asyncio.wait((job, running.started), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not running.started.done():
                job.cancel()  # the request went away before its task started: the call goes with it
            raise
        if running.started.done():
            record = running.started.result()
            if running.core:
                return {"task": core_task_fields(record)}
            return {"resultType": "task", **task_fields(record)}
        running.started.cancel()
        return job.result()

    def _template(self, context: RequestContext, requested: dict[str, Any] | None) -> TaskRecord:
        """What the task's record will say of its request (times are set when it starts): a core
        task for a 2025-11-25 session, else an extension task."""
        session = context.session
        protocol = session.protocol
        core = protocol is not None and protocol.core_tasks
        ttl_ms = self.ttl_ms
        asked = (requested or {}).get("ttl") if core else None
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            ttl_ms = min(asked, self.max_ttl_ms)
        return TaskRecord(
            id="",
            revision=session.record.revision if core else _EXTENSION_REVISION,
            created_at=0.0,
            updated_at=0.0,
            ttl_ms=ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            principal=_principal(context),
            session_id=_session_key(session) if core else None,
            worker_id=self.worker_id,
        )

    def _check_limits(self, client: tuple[Any, ...] | None) -> None:
        if len(self._running) >= self.max_tasks:
            raise self._too_many()
        if client is not None:
            mine = sum(1 for running in self._running.values() if running.client == client)
            if mine >= self.max_tasks_per_client:
                raise self._too_many_of_client(mine)

    def _too_many(self) -> McpError:
        return McpError(
            INVALID_REQUEST,
            f"Too many tasks: {self.max_tasks} unfinished tasks run on this server (the limit); "
            "try again once some have ended",
            {"limit": self.max_tasks},
        )

    def _too_many_of_client(self, mine: int) -> McpError:
        return McpError(
            INVALID_REQUEST,
            f"Too many tasks: this client has {mine} unfinished tasks (the limit is "
            f"{self.max_tasks_per_client}); wait for some to end or cancel them",
            {"limit": self.max_tasks_per_client},
        )

    async def _admit(self, running: RunningTask) -> None:
        """Rule 8 on a store that counts the fleet: the task gets its id now, and the store counts
        it (or refuses it) before it starts."""
        task_id = running.template.id = secrets.token_urlsafe(18)
        client = running.client_key
        now = self.clock()
        refused = await self.store.admit(
            task_id, client, self.max_tasks, self.max_tasks_per_client, now, now + self.lease
        )
        if refused is not None:
            limit, count = refused
            raise self._too_many() if limit == "tasks" else self._too_many_of_client(count)
        running.admitted = True
        self._held[task_id] = client
        if self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(self._renew_forever())

    async def _release(self, running: RunningTask) -> None:
        """The store stops counting a task it admitted (it ended, or never started); a store that
        cannot be reached now lets the entry lapse at its deadline instead."""
        if not running.admitted:
            return
        running.admitted = False
        task_id = running.template.id
        client = self._held.pop(task_id, None)
        try:
            await self.store.release(task_id, client)
        except StoreUnavailable as error:
            logger.warning("task %s: not released from the limits now (it lapses): %s", task_id[:8], error)

    async def _renew_forever(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.lease / 3)
                if self._held:
                    try:
                        await self.store.renew(dict(self._held), self.clock() + self.lease)
                    except StoreUnavailable as error:
                        logger.warning("tasks running here: limits not renewed: %s", error)
        finally:
            self._renewer = None

    async def aclose(self) -> None:
        """Stop: every handler running here ends its task ``failed`` with -32603 ("the server
        instance running it stopped"), and expired tasks are no longer swept (rule 9)."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
        jobs = [running.stop() for running in list(self._running.values())]
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)
        renewer, self._renewer = self._renewer, None
        if renewer is not None:
            renewer.cancel()

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

    def new_record(self, template: TaskRecord) -> TaskRecord:
        """A new task's record from its ``template``: an unguessable id (it is the client's handle
        on the task; the one its admission gave it, if any), created now."""
        now = self.clock()
        task_id = template.id or secrets.token_urlsafe(18)
        return dataclasses.replace(template, id=task_id, created_at=now, updated_at=now)

    # --- reading a task for a request (rule 5) ----------------------------------------------

    async def _record(self, params: dict[str, Any], context: RequestContext, core: bool) -> TaskRecord:
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise McpError(INVALID_PARAMS, 'Missing or invalid "taskId": expected a string')
        record = await self.store.get(task_id, self.clock())
        if record is None or not self._visible(record, context, core):
            raise McpError(INVALID_PARAMS, f"Unknown task: {task_id}")
        return record

    @staticmethod
    def _visible(record: TaskRecord, context: RequestContext, core: bool) -> bool:
        """True when ``record`` is a task of this request's generation and client."""
        if record.principal != _principal(context):
            return False
        if core:
            return record.session_id is not None and record.session_id == _session_key(context.session)
        return record.session_id is None

    def _declared(self, method: str, context: RequestContext) -> None:
        if not declares_tasks(context.session.client_capabilities):
            raise missing_tasks_extension(method)

    # --- the extension's methods (2026-07-28) -------------------------------------------------

    async def get(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/get``: the task as it is now (a pure read)."""
        self._declared("tasks/get", context)
        return detailed_task(await self._record(params, context, core=False))

    async def update(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/update``: answers to the task's questions; an empty acknowledgement."""
        self._declared("tasks/update", context)
        responses = params.get("inputResponses")
        if type(responses) is not dict:
            raise McpError(INVALID_PARAMS, 'Missing or invalid "inputResponses": expected an object of results by key')
        record = await self._record(params, context, core=False)
        await self.store.answer(record.id, responses, self.clock())
        return {}

    async def cancel(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/cancel``: ask for the cancellation (the handler is stopped where it runs); an
        empty acknowledgement, for a task that ended already too."""
        self._declared("tasks/cancel", context)
        record = await self._record(params, context, core=False)
        if not record.terminal:
            await self.store.request_cancel(record.id, self.clock())
            running = self._running.get(record.id)
            if running is not None:
                running.cancel()
        return {}

    async def listened(self, task_ids: Any, context: RequestContext) -> list[str]:
        """The ``notifications.taskIds`` of a ``subscriptions/listen`` this request may follow
        (rule 5: its own generation and principal; unknown ids are left out); -32021 without
        the extension declared, -32602 for a filter that is not a list of ids."""
        self._declared("subscriptions/listen with taskIds", context)
        if type(task_ids) is not list or not all(isinstance(task_id, str) for task_id in task_ids):
            raise McpError(INVALID_PARAMS, 'Invalid "notifications.taskIds": expected task ids')
        now = self.clock()
        found = [await self.store.get(task_id, now) for task_id in dict.fromkeys(task_ids)]
        return [record.id for record in found if record is not None and self._visible(record, context, core=False)]

    async def follow(self, task_id: str, notify: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Call ``notify`` with the task's DetailedTask now and at every change, until it is terminal
        or gone (``notifications/tasks`` of a listen)."""
        version = -1
        while True:
            try:
                record = await self.store.get(task_id, self.clock())
                if record is None:
                    return
                if record.version != version:
                    version = record.version
                    await notify(detailed_task(record))
                if record.terminal:
                    return
                await self.store.wait(task_id, version, _ANSWER_POLL)
            except StoreUnavailable as error:
                logger.warning("task %s: cannot follow it for a listener: %s", task_id[:8], error)
                await asyncio.sleep(_ANSWER_POLL)

    # --- the core methods (2025-11-25 sessions) -----------------------------------------------

    async def core_get(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/get``: the Task as it is now."""
        return core_task_fields(await self._record(params, context, core=True))

    async def core_list(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/list``: the session's tasks, oldest first, a page at a time."""
        records = await self.store.of_session(_session_key(context.session), self.clock())
        principal = _principal(context)
        records = [record for record in records if record.principal == principal]
        if "cursor" in params and params["cursor"] is not None:
            after = _after_cursor(params["cursor"])
            records = [record for record in records if (record.created_at, record.id) > after]
        page = records[:_LIST_PAGE]
        result: dict[str, Any] = {"tasks": [core_task_fields(record) for record in page]}
        if len(records) > _LIST_PAGE:
            result["nextCursor"] = _cursor(page[-1])
        return result

    async def core_cancel(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/cancel``: the task, ``cancelled`` before this answers (-32602 once terminal)."""
        record = await self._record(params, context, core=True)
        if record.terminal:
            raise McpError(INVALID_PARAMS, f"Task {record.id} is {record.status} already: it cannot be cancelled")
        now = self.clock()
        await self.store.request_cancel(record.id, now)  # (the worker running it stops its handler)
        ended = await self.store.finish(record.id, "cancelled", None, "The task was cancelled", now)
        await announce(context, ended)
        running = self._running.get(record.id)
        if running is not None:
            running.cancel()
        if ended is None:  # it ended meanwhile, or expired
            ended = await self._record(params, context, core=True)
            if ended.status != "cancelled":
                raise McpError(INVALID_PARAMS, f"Task {record.id} is {ended.status} already: it cannot be cancelled")
        return core_task_fields(ended)

    async def core_result(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/result``: wait for the task's end, sending the client its questions meanwhile
        (rule 4); then what the call itself would have answered, result or error."""
        record = await self._record(params, context, core=True)
        task_id = record.id
        relays: dict[str, asyncio.Task[None]] = {}
        try:
            while not record.terminal:
                for key, question in record.input_requests.items():
                    if key not in relays:  # (each question once per tasks/result: a failed one waits for the next)
                        relays[key] = asyncio.get_running_loop().create_task(
                            self._relay(task_id, key, question, context)
                        )
                await self.store.wait(task_id, record.version, _ANSWER_POLL)
                record = await self._record(params, context, core=True)
        finally:
            for relay in relays.values():
                relay.cancel()
        outcome = record.outcome or {}
        if "error" in outcome:
            error = outcome["error"]
            raise McpError(
                error.get("code", INTERNAL_ERROR), error.get("message", "The task failed"), error.get("data")
            )
        result = outcome.get("result")
        if type(result) is not dict:
            raise McpError(INTERNAL_ERROR, f"Task {task_id} was {record.status}: it has no result")
        return {**result, "_meta": _related(task_id, result.get("_meta"))}

    async def _relay(self, task_id: str, key: str, question: dict[str, Any], context: RequestContext) -> None:
        """Ask the client a core task's question on the ``tasks/result`` stream; store its answer.
        A question the client does not answer stays outstanding (the next tasks/result asks again)."""
        params = dict(question.get("params") or {})
        params["_meta"] = _related(task_id, params.get("_meta"))
        try:
            answer = await context.send_request(question.get("method", ""), params)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # (the client's error reply, a timeout, the stream gone)
            logger.info("task %s: question %s was not answered: %s", task_id[:8], key, error)
            return
        answered = await self.store.answer(task_id, {key: answer}, self.clock())
        if answered is not None and answered.status == "working":
            await announce(context, answered)


class RunningTask:
    """One task call while its handler runs here: what the request waits on (``started``), and
    what the handler's questions go through once it is a task (``ask``)."""

    __slots__ = (
        "admitted",
        "client",
        "context",
        "core",
        "job",
        "observation",
        "record",
        "runtime",
        "started",
        "stopping",
        "template",
        "watcher",
    )

    def __init__(self, runtime: TaskRuntime, tool: str, context: RequestContext, template: TaskRecord) -> None:
        self.runtime = runtime
        self.context = context
        template.tool = tool
        self.template = template
        self.core = template.session_id is not None  # (a 2025-11-25 core task)
        # Who the limit per client counts this task against (rule 8).
        principal = template.principal
        self.client: tuple[Any, ...] | None = (
            ("principal", *principal)
            if principal is not None
            else ("session", template.session_id)
            if self.core
            else None
        )
        self.record: TaskRecord | None = None
        self.started: asyncio.Future[TaskRecord] = asyncio.get_running_loop().create_future()
        self.job: asyncio.Task[dict[str, Any]] | None = None
        self.stopping = False  # the server stops: the task fails (rule 9), it is not cancelled
        self.watcher: asyncio.Task[None] | None = None  # with a shared store: a cancel from elsewhere
        self.observation: TaskObservation | None = None  # telemetry: the task's span (engine/observe.py)
        self.admitted = False  # counted by a store that counts the fleet, until released (rule 8)

    @property
    def client_key(self) -> str | None:
        """``client`` as a store keys it (JSON), None for a task no client limit counts."""
        return None if self.client is None else orjson.dumps(self.client).decode()

    @property
    def tool(self) -> str:
        return self.template.tool

    @property
    def task_id(self) -> str:
        return self.record.id if self.record is not None else ""

    @property
    def in_task(self) -> bool:
        """True once the call is a task (its questions go to the task, not to the request)."""
        return self.record is not None

    @property
    def related_meta(self) -> dict[str, Any] | None:
        """A core task's related-task ``_meta`` (its progress and logs go on); None for an extension
        task (it sends neither, rule 4)."""
        return {RELATED_TASK: {"taskId": self.task_id}} if self.core else None

    async def start(self) -> None:
        """Make the call a task now: its record is in the store when this returns (rule 2)."""
        if self.record is not None:
            return
        record = self.runtime.new_record(self.template)
        await self.runtime.store.create(record)
        self.record = record
        observer = getattr(self.context.connection, "observer", None)  # (an ObservedConnection's)
        if observer is not None:
            self.observation = observer.task_started(record, self.core)
        self.runtime._started(self)
        await announce(self.context, record)
        if not self.started.done():
            self.started.set_result(record)

    def cancel(self) -> None:
        """Stop the handler (``tasks/cancel``): it ends ``cancelled``."""
        job = self.job
        if job is not None and job.done():
            return
        self.context.mark_cancelled("task cancelled")
        if job is not None:
            job.cancel("task cancelled")

    async def watch_for_cancel(self) -> None:
        """With a shared store: stop the handler when a ``tasks/cancel`` reached another worker
        (or the task ended there: a core cancel ends it before the handler stops)."""
        store, runtime = self.runtime.store, self.runtime
        version = self.record.version if self.record is not None else 0  # (as created: read only once it moves)
        while True:
            try:
                await store.wait(self.task_id, version, _ANSWER_POLL)
                record = await store.get(self.task_id, runtime.clock())
                if record is None or record.terminal or record.cancel_requested:
                    self.cancel()
                    return
                version = record.version
            except StoreUnavailable as error:
                logger.warning("task %s: cannot watch for a cancellation: %s", self.task_id[:8], error)
                await asyncio.sleep(_ANSWER_POLL)

    async def stop(self) -> None:
        """Stop the handler because the server stops, and wait for its task to end (rule 9)."""
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
            if self.core and result.get("isError") is True:
                await self._finish("failed", {"result": result}, _error_text(result))
            else:
                await self._finish("completed", {"result": result}, None)
        finally:
            if self.in_task:
                self.runtime._ended(self)
            if self.admitted:
                await asyncio.shield(self.runtime._release(self))
        return {}

    async def _finish(self, status: str, outcome: dict[str, Any] | None, message: str | None) -> None:
        # The watcher stops first: it would see the terminal status written here as a cancel from
        # elsewhere and cancel this job mid-finish (losing the announcement and the task's span).
        watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.cancel()
        # Shielded: a cancellation that arrives now must not lose the outcome.
        runtime = self.runtime
        finish = runtime.store.finish(self.task_id, status, outcome, message, runtime.clock())
        try:
            ended = await asyncio.shield(finish)
        finally:  # (the span ends with the status written, even if the server stops meanwhile)
            if self.observation is not None:
                self.observation.ended(status, outcome)
        if ended is None:
            logger.info("task %s ended %s after it had ended or expired", self.task_id[:8], status)
        await announce(self.context, ended)

    async def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """A question of the task to the client: one of its inputRequests until answered (rule 4)."""
        store, runtime = self.runtime.store, self.runtime
        asked = await store.ask(self.task_id, {"method": method, "params": params or {}}, runtime.clock())
        if asked is None:
            raise asyncio.CancelledError("the task ended")
        key, asking = asked
        if self.observation is not None:
            self.observation.status("input_required", method)
        await announce(self.context, asking)
        while True:
            record = await store.get(self.task_id, runtime.clock())
            if record is None or record.terminal or record.cancel_requested:
                raise asyncio.CancelledError("the task was cancelled")
            answer = await store.take_answer(self.task_id, key)
            if answer is not None:
                return answer
            await store.wait(self.task_id, record.version, _ANSWER_POLL)


class TaskHost(Protocol):
    """What the tasks' methods ask of the server they serve (``McpServer`` is one)."""

    @property
    def tasks(self) -> TaskRuntime:
        """The server's task runtime (made on first use)."""

    @property
    def tasks_declared(self) -> bool:
        """True when some tool of the server may run as a task."""


class TaskMethods:
    """The ``tasks/*`` methods of a server: the core ones for a 2025-11-25 session, the
    extension's for a 2026-07-28 request (which revision lists which: ``versions.py``)."""

    __slots__ = ("host",)

    def __init__(self, host: TaskHost) -> None:
        self.host = host

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve ``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/update`` and ``tasks/cancel``."""
        handlers.register("tasks/get", self.get_task)
        handlers.register("tasks/result", self.task_result)
        handlers.register("tasks/list", self.list_tasks)
        handlers.register("tasks/update", self.update_task)
        handlers.register("tasks/cancel", self.cancel_task)

    def _runtime(self, context: RequestContext) -> TaskRuntime:
        """The task runtime, for a request that may reach it (-32601 on a session of a server
        that declared no tasks: the methods are not there for it)."""
        if type(context.session) is not RequestSession and not self.host.tasks_declared:
            raise McpError(METHOD_NOT_FOUND, "This server runs no tool as a task: tasks/* are not served")
        return self.host.tasks

    async def get_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/get``, of either generation."""
        tasks = self._runtime(context)
        core = type(context.session) is not RequestSession
        return await (tasks.core_get if core else tasks.get)(params, context)

    async def task_result(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/result`` (core only)."""
        return await self._runtime(context).core_result(params, context)

    async def list_tasks(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/list`` (core only)."""
        return await self._runtime(context).core_list(params, context)

    async def update_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/update`` (the extension only)."""
        return await self.host.tasks.update(params, context)

    async def cancel_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tasks/cancel``, of either generation."""
        tasks = self._runtime(context)
        core = type(context.session) is not RequestSession
        return await (tasks.core_cancel if core else tasks.cancel)(params, context)
