"""The in-process event bus and task store: a server's defaults when no backend shares them."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any, Final

from .records import TERMINAL_STATUSES, TaskRecord
from .stores import EventBus, TaskStore

__all__ = ["MemoryEventBus", "MemoryTaskStore"]

logger: Final = logging.getLogger("mcp_sse_server")


class MemoryEventBus(EventBus):
    """Subscribers in this process, each with a bounded queue: a listener that falls
    ``queue_size`` events behind loses the oldest (it re-fetches lists on a gap)."""

    __slots__ = ("_queues", "queue_size")

    def __init__(self, queue_size: int = 1000) -> None:
        self.queue_size = queue_size
        self._queues: set[asyncio.Queue[dict[str, Any]]] = set()

    async def publish(self, event: dict[str, Any]) -> None:
        for queue in list(self._queues):
            if queue.full():
                queue.get_nowait()
                logger.warning("a subscriber fell %d events behind: the oldest was dropped", self.queue_size)
            queue.put_nowait(event)

    def subscribe(self) -> AsyncIterator[dict[str, Any]]:
        # Registered now, not at the first iteration: nothing published after this call is missed.
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self.queue_size)
        self._queues.add(queue)
        return _Subscription(queue, self._queues)

    @property
    def subscribers(self) -> int:
        return len(self._queues)


class _Subscription:
    """One subscriber's events; ``aclose()`` (or garbage collection of the bus) ends it."""

    __slots__ = ("_queue", "_queues")

    def __init__(self, queue: asyncio.Queue[dict[str, Any]], queues: set[asyncio.Queue[dict[str, Any]]]) -> None:
        self._queue = queue
        self._queues = queues

    def __aiter__(self) -> _Subscription:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self._queue not in self._queues:
            raise StopAsyncIteration
        return await self._queue.get()

    async def aclose(self) -> None:
        self._queues.discard(self._queue)


def _copy(record: TaskRecord) -> TaskRecord:
    """A copy the caller may keep (the store's own record changes in place)."""
    return dataclasses.replace(record, input_requests=dict(record.input_requests), answers=dict(record.answers))


class MemoryTaskStore(TaskStore):
    """Task records in a dict, for the tasks of this process (the default)."""

    __slots__ = ("_changed", "_of_session", "_tasks")

    def __init__(self) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._changed: dict[str, asyncio.Event] = {}  # tasks someone waits on
        self._of_session: dict[str, dict[str, None]] = {}  # session -> its tasks' ids, oldest first

    def _live(self, task_id: str, now: float) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is not None and record.expired(now):
            self._drop(task_id)
            return None
        return record

    def _drop(self, task_id: str) -> None:
        record = self._tasks.pop(task_id, None)
        if record is not None and record.session_id is not None:
            ids = self._of_session.get(record.session_id)
            if ids is not None:
                ids.pop(task_id, None)
                if not ids:
                    del self._of_session[record.session_id]
        self._wake(task_id)

    def _changed_now(self, record: TaskRecord, now: float) -> TaskRecord:
        record.version += 1
        record.updated_at = now
        self._wake(record.id)
        return _copy(record)

    def _wake(self, task_id: str) -> None:
        changed = self._changed.pop(task_id, None)
        if changed is not None:
            changed.set()

    async def create(self, record: TaskRecord) -> None:
        if record.id in self._tasks:
            raise ValueError("duplicate task id")
        self._tasks[record.id] = _copy(record)
        if record.session_id is not None:
            self._of_session.setdefault(record.session_id, {})[record.id] = None

    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        record = self._live(task_id, now)
        return None if record is None else _copy(record)

    async def ask(self, task_id: str, request: dict[str, Any], now: float) -> tuple[str, TaskRecord] | None:
        record = self._live(task_id, now)
        if record is None or record.terminal:
            return None
        record.asked += 1
        key = f"i{record.asked}"
        record.input_requests[key] = request
        record.status = "input_required"
        return key, self._changed_now(record, now)

    async def answer(self, task_id: str, responses: dict[str, Any], now: float) -> TaskRecord | None:
        record = self._live(task_id, now)
        if record is None:
            return None
        taken = [key for key in responses if key in record.input_requests]
        if not taken or record.terminal:
            return _copy(record)
        for key in taken:
            del record.input_requests[key]
            record.answers[key] = responses[key]
        if not record.input_requests:
            record.status = "working"
        return self._changed_now(record, now)

    async def take_answer(self, task_id: str, key: str) -> dict[str, Any] | None:
        record = self._tasks.get(task_id)
        return None if record is None else record.answers.pop(key, None)

    async def request_cancel(self, task_id: str, now: float) -> TaskRecord | None:
        record = self._live(task_id, now)
        if record is None:
            return None
        if record.cancel_requested or record.terminal:
            return _copy(record)
        record.cancel_requested = True
        return self._changed_now(record, now)

    async def finish(
        self, task_id: str, status: str, outcome: dict[str, Any] | None, message: str | None, now: float
    ) -> TaskRecord | None:
        if status not in TERMINAL_STATUSES:
            raise ValueError(f"not a terminal status: {status!r}")
        record = self._live(task_id, now)
        if record is None or record.terminal:
            return None
        record.status, record.outcome, record.status_message = status, outcome, message
        record.input_requests.clear()
        return self._changed_now(record, now)

    async def wait(self, task_id: str, version: int, timeout: float) -> None:
        record = self._tasks.get(task_id)
        if record is None or record.version != version:
            return
        changed = self._changed.get(task_id)
        if changed is None:
            changed = self._changed[task_id] = asyncio.Event()
        try:
            async with asyncio.timeout(timeout):
                await changed.wait()
        except TimeoutError:
            pass

    async def of_session(self, session_id: str, now: float) -> list[TaskRecord]:
        live = (self._live(task_id, now) for task_id in list(self._of_session.get(session_id, ())))
        return [_copy(record) for record in live if record is not None]

    async def owned_by(self, worker_id: str) -> list[str]:
        return [task.id for task in self._tasks.values() if task.worker_id == worker_id and not task.terminal]

    async def sweep(self, now: float) -> int:
        expired = [task_id for task_id, record in self._tasks.items() if record.expired(now)]
        for task_id in expired:
            self._drop(task_id)
        return len(expired)
