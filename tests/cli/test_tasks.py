"""``call --task``, ``call --detach`` and ``task get|result|cancel``: the CLI (a real process)
following tasks of a server with task tools (fixtures/tasks.py), on both task generations."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.commands import Cli
from fixtures.tasks import build
from mcp_sse_server.engine.tasks import TaskRuntime
from mcp_sse_server.stores import MemoryTaskStore
from mcp_sse_server.transport.http import McpHttpServer

WAIT = 30.0


class Served:
    """The tasks server on a loop of its own thread (the CLI runs as a blocking subprocess)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.server: Any = None
        self.http: McpHttpServer | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(WAIT)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def bind() -> None:
            self.server = build(TaskRuntime(MemoryTaskStore(), poll_interval_ms=20))
            self.http = await McpHttpServer.bind(self.server, port=0)
            self.ready.set()

        self.loop.run_until_complete(bind())
        self.loop.run_forever()

    @property
    def endpoint(self) -> str:
        assert self.http is not None
        return self.http.endpoint

    def release(self) -> None:
        self.loop.call_soon_threadsafe(self.server.release.set)

    def close(self) -> None:
        assert self.http is not None
        asyncio.run_coroutine_threadsafe(self.http.close(), self.loop).result(WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)


@pytest.fixture
def served() -> Iterator[Served]:
    served = Served()
    try:
        yield served
    finally:
        served.close()


@pytest.mark.parametrize("mode", ["auto", "session"])
def test_call_task_prints_the_status_changes_then_the_result(cli: Cli, served: Served, mode: str) -> None:
    done = cli("call", "--task", "--mode", mode, served.endpoint, "slow", "n=3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "slow 3"
    assert "completed" in done.stderr and "task " in done.stderr, done.stderr
    failed = cli("call", "--task", "--mode", mode, served.endpoint, "broken")
    assert failed.returncode == 1 and "no luck" in failed.stdout + failed.stderr


def test_a_detached_task_is_read_cancelled_and_waited_for_by_its_id(cli: Cli, served: Served) -> None:
    started = cli("call", "--detach", served.endpoint, "slow", "wait=yes")
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    read = cli("task", "get", served.endpoint, task_id)
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["status"] == "working"
    cancelled = cli("task", "cancel", served.endpoint, task_id)
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == f"task {task_id}: cancelled", cancelled.stderr
    waited = cli("task", "result", served.endpoint, task_id)
    assert waited.returncode == 1 and "cancelled" in waited.stderr

    finished = cli("call", "--detach", served.endpoint, "slow", "n=9")
    result = cli("task", "result", served.endpoint, finished.stdout.strip())
    assert result.returncode == 0 and result.stdout.strip() == "slow 9", result.stderr
    unknown = cli("task", "get", served.endpoint, "no-such-task")
    assert unknown.returncode == 1 and "Unknown task" in unknown.stderr


def test_detach_refuses_a_session_whose_tasks_end_with_it(cli: Cli, served: Served) -> None:
    refused = cli("call", "--detach", "--mode", "session", served.endpoint, "slow", "n=1")
    assert refused.returncode != 0
    assert "--detach needs a server speaking 2026-07-28" in refused.stderr, refused.stderr
