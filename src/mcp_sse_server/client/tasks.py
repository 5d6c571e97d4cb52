"""A tool call running as a task, seen from the client (``McpClient.call_tool_task``).

Rules:

1. One handle for both generations: on a 2025-11-25 session the call carries
   ``params.task`` when the server declares tasks for ``tools/call``; at
   2026-07-28 the call, and every ``tasks/*`` request of the handle, declares
   the Tasks extension. A server that runs the call inline (no task support,
   or it chose to) gives a handle that has ended already (``task_id`` None).
2. ``status()`` reads the task once (``tasks/get``); iterating the handle
   yields the Task each time its status or message changed, polling at the
   server's ``pollInterval`` (clamped to 50 ms .. 30 s), until it is terminal.
3. ``result()`` waits for the end and returns the call's ``CallToolResult``
   (``isError`` included), raises ``McpError`` for a task that failed with a
   JSON-RPC error, and ``TaskCancelledError`` for a cancelled one. Meanwhile
   the server's questions are answered by the client's handlers: at
   2025-11-25 they arrive as requests on the ``tasks/result`` stream; at
   2026-07-28 they are the task's ``inputRequests``, answered with
   ``tasks/update`` (``answer`` sends answers of your own).
4. ``cancel()`` asks the server to cancel; the handle's status is what the
   server answered (2025-11-25: the task, ``cancelled``) or read afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final, Protocol

from ..engine.jsonrpc import McpError
from ..engine.types import CallToolResult, call_tool_result_from_dict

__all__ = ["TERMINAL", "TaskCancelledError", "TaskHandle"]

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_MIN_POLL: Final = 0.05
_MAX_POLL: Final = 30.0


def _task_of(result: dict[str, Any]) -> dict[str, Any]:
    """A result that is a Task, without the result's envelope (``resultType``, ``_meta``)."""
    return {key: value for key, value in result.items() if key not in ("resultType", "_meta")}


class TaskCancelledError(Exception):
    """The task was cancelled: it has no result."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id} was cancelled")
        self.task_id = task_id


class TaskClient(Protocol):
    """What a handle asks of its client (``McpClient``)."""

    @property
    def stateless(self) -> bool:
        """True at 2026-07-28."""

    async def task_request(self, method: str, params: dict[str, Any], timeout: float | bool | None) -> dict[str, Any]:
        """A request of a task (declaring the extension at 2026-07-28); its result."""

    async def answer_inputs(self, requests: dict[str, Any]) -> dict[str, Any]:
        """The client's handlers' answers to ``inputRequests``."""


class TaskHandle:
    """A tool call the server runs as a task (rules in the module docstring).

    ``task`` is the Task as last read (``taskId``, ``status``, ``statusMessage``...; the server's
    wire form, None for a call that ran inline), ``task_id`` its id.
    """

    __slots__ = ("_answered", "_client", "_inline", "core", "task")

    def __init__(self, client: TaskClient, created: dict[str, Any]) -> None:
        self._client = client
        self._answered: set[str] = set()
        self.core = not client.stateless
        self._inline: dict[str, Any] | None = None
        if self.core and isinstance(created.get("task"), dict):
            self.task: dict[str, Any] | None = created["task"]
        elif not self.core and created.get("resultType") == "task":
            self.task = _task_of(created)
        else:
            self.task = None
            self._inline = created
        if self.task is not None and not isinstance(self.task.get("taskId"), str):
            raise McpError(-32603, "The server answered a task without a taskId")

    @classmethod
    def of(cls, client: TaskClient, task_id: str) -> TaskHandle:
        """A handle on a task started earlier (by its id; read it with ``refresh()`` first). A
        2025-11-25 task is bound to the session that made it: another session cannot reach it."""
        if client.stateless:
            return cls(client, {"resultType": "task", "taskId": task_id, "status": "working"})
        return cls(client, {"task": {"taskId": task_id, "status": "working"}})

    @property
    def task_id(self) -> str | None:
        return None if self.task is None else self.task["taskId"]

    @property
    def status(self) -> str:
        """The status last read (``"completed"`` for a call that ran inline)."""
        return "completed" if self.task is None else str(self.task.get("status"))

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def _poll_seconds(self) -> float:
        interval = (self.task or {}).get("pollInterval" if self.core else "pollIntervalMs")
        seconds = interval / 1000 if isinstance(interval, int | float) and not isinstance(interval, bool) else 1.0
        return min(max(seconds, _MIN_POLL), _MAX_POLL)

    async def refresh(self, *, timeout: float | bool | None = True) -> dict[str, Any] | None:
        """Read the task now (``tasks/get``); the Task (None for a call that ran inline)."""
        if self.task is None:
            return None
        read = await self._client.task_request("tasks/get", {"taskId": self.task_id}, timeout)
        self.task = _task_of(read)
        return self.task

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        """The Task each time its status or message changed, until terminal (the first as it is now)."""
        if self.task is None:
            return
        last: tuple[Any, Any] | None = None
        while True:
            task = await self.refresh()
            assert task is not None
            seen = (task.get("status"), task.get("statusMessage"))
            if seen != last:
                last = seen
                yield task
            if self.done:
                return
            await asyncio.sleep(self._poll_seconds())

    async def answer(self, responses: dict[str, Any], *, timeout: float | bool | None = True) -> None:
        """Answer the task's ``inputRequests`` by key (2026-07-28's ``tasks/update``)."""
        if self.core:
            raise RuntimeError("a 2025-11-25 task's questions are answered through tasks/result (result())")
        await self._client.task_request("tasks/update", {"taskId": self.task_id, "inputResponses": responses}, timeout)

    async def cancel(self, *, timeout: float | bool | None = True) -> None:
        """Ask the server to cancel the task (nothing for a call that ran inline)."""
        if self.task is None:
            return
        answered = await self._client.task_request("tasks/cancel", {"taskId": self.task_id}, timeout)
        if self.core and isinstance(answered.get("status"), str):
            self.task = _task_of(answered)
        else:
            await self.refresh(timeout=timeout)

    async def result(self, *, timeout: float | None = None) -> CallToolResult:
        """Wait for the end (at most ``timeout`` seconds: TimeoutError) and return the call's result;
        the server's questions meanwhile are answered by the client's handlers (rule 3)."""
        async with asyncio.timeout(timeout):
            return call_tool_result_from_dict(await self._outcome())

    async def _outcome(self) -> dict[str, Any]:
        if self.task is None:
            assert self._inline is not None
            return self._inline
        task_id = self.task["taskId"]
        if self.core:
            try:
                return await self._client.task_request("tasks/result", {"taskId": task_id}, None)
            except McpError:
                await self.refresh()
                if self.status == "cancelled":
                    raise TaskCancelledError(task_id) from None
                raise
        while True:
            task = await self.refresh()
            assert task is not None
            status = task.get("status")
            if status == "completed":
                result = task.get("result")
                if not isinstance(result, dict):
                    raise McpError(-32603, f"The server ended task {task_id} completed without a result")
                return result
            if status == "failed":
                error = task.get("error")
                if not isinstance(error, dict):
                    error = {}
                raise McpError(error.get("code", -32603), error.get("message", "The task failed"), error.get("data"))
            if status == "cancelled":
                raise TaskCancelledError(task_id)
            questions = task.get("inputRequests") if status == "input_required" else None
            fresh = {key: value for key, value in (questions or {}).items() if key not in self._answered}
            if fresh:
                answers = await self._client.answer_inputs(fresh)
                self._answered.update(answers)
                await self.answer(answers)
                continue
            await asyncio.sleep(self._poll_seconds())
