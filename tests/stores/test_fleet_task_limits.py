"""Task limits across the fleet (engine/tasks.py rule 8): ``RedisTaskStore.admit`` on one Redis and
on a Redis Cluster (real servers), several workers' stores racing for the last places; then two
``serve`` processes sharing a Redis or a cluster, a 2025-11-25 session creating tasks through both."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from fixtures.redis_cluster import RedisCluster
from fixtures.redis_server import RedisServer, client_for
from mcp_sse_server.stores.redis_cluster import client_for_url
from mcp_sse_server.stores.redis_tasks import RedisTaskStore

from .serving import SRC, TESTS, WAIT, RawSession, serving

ALICE = orjson.dumps(["session", "alice"]).decode()
BOB = orjson.dumps(["session", "bob"]).decode()


@pytest.fixture(params=["single", "cluster"])
async def stores(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[list[RedisTaskStore]]:
    """Three workers' task stores (each its own client) on one Redis, or on a Redis Cluster."""
    if request.param == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        clients = [client_for_url(cluster.url) for _ in range(3)]
        yield [RedisTaskStore(client, prefix=redis_prefix) for client in clients]
        for client in clients:
            await client.aclose()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    async with (
        client_for(server, redis_prefix) as a,
        client_for(server, redis_prefix) as b,
        client_for(server, redis_prefix) as c,
    ):
        yield [RedisTaskStore(client, prefix=redis_prefix) for client in (a, b, c)]


async def admit_all(
    stores: list[RedisTaskStore], clients: list[str], max_tasks: int, max_per_client: int
) -> list[tuple[str, str, tuple[str, int] | None]]:
    """Every (store, client) pair admits a task at once; (task id, client, refusal) of each."""
    now = time.time()  # (the sets expire by the wall clock, as the workers' clocks read it)
    asks = [(f"t{n}", client, store) for n, (store, client) in enumerate((s, c) for s in stores for c in clients * 3)]
    answers = await asyncio.gather(
        *(store.admit(task_id, client, max_tasks, max_per_client, now, now + 60) for task_id, client, store in asks)
    )
    return [(task_id, client, answer) for (task_id, client, _), answer in zip(asks, answers, strict=True)]


async def counted(store: RedisTaskStore, client: str | None) -> int:
    return int(await store.redis.zcard(store.unfinished_key(client)))


async def test_workers_racing_admit_exactly_the_clients_limit(stores: list[RedisTaskStore]) -> None:
    results = await admit_all(stores, [ALICE], max_tasks=100, max_per_client=5)  # 9 racing for 5 places
    admitted = [task_id for task_id, _, refused in results if refused is None]
    assert len(admitted) == 5
    assert {refused for _, _, refused in results if refused is not None} == {("client", 5)}
    assert await counted(stores[0], ALICE) == 5
    assert await counted(stores[1], None) == 5  # the refused ones took no place in the fleet's count


async def test_workers_racing_admit_exactly_the_fleets_limit(stores: list[RedisTaskStore]) -> None:
    results = await admit_all(stores, [ALICE, BOB], max_tasks=4, max_per_client=100)  # 18 for 4
    assert sum(refused is None for _, _, refused in results) == 4
    assert {refused for _, _, refused in results if refused is not None} == {("tasks", 4)}
    assert await counted(stores[2], None) == 4
    assert await counted(stores[0], ALICE) + await counted(stores[0], BOB) == 4


async def test_a_place_is_freed_by_a_release_on_any_worker_and_a_renewal_does_not_take_it_back(
    stores: list[RedisTaskStore],
) -> None:
    a, b, _ = stores
    now = time.time()  # (the sets expire by the wall clock)
    assert await a.admit("t1", ALICE, 10, 1, now, now + 60) is None
    assert await b.admit("t2", ALICE, 10, 1, now, now + 60) == ("client", 1)
    await b.release("t1", ALICE)  # (any worker's store may release it: the sets are shared)
    await a.renew({"t1": ALICE}, now + 90)  # a renewal racing the release: released stays released
    assert await counted(a, ALICE) == 0 and await counted(a, None) == 0
    assert await b.admit("t2", ALICE, 10, 1, now, now + 60) is None


async def test_a_task_past_its_deadline_stops_counting_unless_renewed(stores: list[RedisTaskStore]) -> None:
    a, b, _ = stores
    now = time.time()  # (the sets expire by the wall clock)
    assert await a.admit("kept", ALICE, 10, 2, now, now + 30) is None
    assert await a.admit("lost", ALICE, 10, 2, now, now + 30) is None  # its worker dies: never renewed
    await a.renew({"kept": ALICE}, now + 60)
    assert await b.admit("new", ALICE, 10, 2, now + 31, now + 91) is None  # "lost" lapsed at +30, "kept" counts
    assert await b.admit("more", ALICE, 10, 2, now + 31, now + 91) == ("client", 2)
    members = await a.redis.zrange(a.unfinished_key(ALICE), 0, -1)
    assert sorted(members) == [b"kept", b"new"]


# --- two serve processes ---------------------------------------------------------------------------

LIMITS_SERVER = f"""
import asyncio, sys
sys.path.insert(0, {str(TESTS)!r})
from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.tasks import TaskRuntime
from mcp_sse_server.stores import MemoryTaskStore

def build():
    runtime = TaskRuntime(MemoryTaskStore(), max_tasks=5, max_tasks_per_client=3, lease=2.0)
    server = McpServer("limits", "1.0.0", tasks=runtime)

    async def hold(arguments, context):
        await asyncio.sleep(arguments["seconds"])
        return CallToolResult.text("held")

    server.add_tool(Tool("hold", handler=hold, task_support="optional"))
    return server
"""
CLIENT_LIMIT = (
    "Too many tasks: this client has 3 unfinished tasks (the limit is 3); wait for some to end or cancel them"
)
FLEET_LIMIT = "Too many tasks: 5 unfinished tasks run on this server (the limit); try again once some have ended"


def processes(tmp_path: Path, redis_url: str, workers: int = 1) -> tuple[list[str], dict[str, str]]:
    """``serve`` of the limits' server (``workers`` processes on its port) on ``redis_url``."""
    (tmp_path / "limits_target.py").write_text(LIMITS_SERVER)
    args = [f"{tmp_path / 'limits_target.py'}:build", "--port", "0", "--redis-url", redis_url, "--worker-ttl", "1s"]
    return [*args, "--workers", str(workers)], {"PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)])}


class Tasks:
    """A 2025-11-25 session creating core tasks on the worker named at each call."""

    def __init__(self, first: str) -> None:
        self.session = RawSession(first)
        self.session.open()
        self.ids = 0

    def on(self, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.session.url = url
        return self.session.call(self.ids, method, params)

    def create(self, url: str, seconds: float) -> dict[str, Any]:
        params = {"name": "hold", "arguments": {"seconds": seconds}, "task": {"ttl": 120_000}}
        return self.on(url, "tools/call", params)

    def until_admitted(self, url: str, seconds: float) -> str:
        """Create a task on ``url`` until it is admitted (a place frees itself asynchronously)."""
        deadline = time.monotonic() + WAIT
        while "error" in (answer := self.create(url, seconds)):
            assert answer["error"]["message"] in (CLIENT_LIMIT, FLEET_LIMIT), answer
            assert time.monotonic() < deadline, f"never admitted: {answer}"
            time.sleep(0.1)
        task_id: str = answer["result"]["task"]["taskId"]
        return task_id

    def status(self, url: str, task_id: str) -> str:
        status: str = self.on(url, "tasks/get", {"taskId": task_id})["result"]["status"]
        return status

    def close(self) -> None:
        self.session.close()


def refused(answer: dict[str, Any], message: str, limit: int) -> bool:
    return answer.get("error") == {"code": -32600, "message": message, "data": {"limit": limit}}


def test_a_clients_limit_counts_its_tasks_on_every_worker(redis_url: str, tmp_path: Path) -> None:
    """Two ``serve --workers 2``: four workers, each request on a new connection (any of a port's two)."""
    args, env = processes(tmp_path, redis_url, workers=2)
    with serving(args, tmp_path, env) as a, serving(args, tmp_path, env) as b:
        tasks = Tasks(a.url)
        try:
            short = tasks.create(a.url, 1.0)["result"]["task"]["taskId"]
            cancelled = tasks.create(b.url, 60)["result"]["task"]["taskId"]
            tasks.create(a.url, 60)
            for url in (a.url, b.url, a.url):  # 3 unfinished on 2 workers: refused whichever gets it
                assert refused(tasks.create(url, 60), CLIENT_LIMIT, 3)
            deadline = time.monotonic() + WAIT
            while tasks.status(b.url, short) != "completed":  # ended on A, read through B
                assert time.monotonic() < deadline
                time.sleep(0.1)
            tasks.until_admitted(b.url, 60)  # the completed task's place, taken on the other worker
            assert refused(tasks.create(a.url, 60), CLIENT_LIMIT, 3)
            assert tasks.on(a.url, "tasks/cancel", {"taskId": cancelled})["result"]["status"] == "cancelled"
            tasks.until_admitted(a.url, 60)  # the place of the one cancelled through A, run on B
            assert refused(tasks.create(b.url, 60), CLIENT_LIMIT, 3)
        finally:
            tasks.close()


def test_the_fleets_limit_counts_every_client_on_every_worker_and_a_dead_workers_lapse(
    redis_url: str, tmp_path: Path
) -> None:
    args, env = processes(tmp_path, redis_url)
    with serving(args, tmp_path, env) as a, serving(args, tmp_path, env) as b:
        first, second = Tasks(a.url), Tasks(b.url)
        try:
            for url in (a.url, a.url, a.url):
                first.create(url, 60)  # 3 of the fleet's 5, all on A
            second.create(b.url, 60)
            second.create(b.url, 60)
            for url in (a.url, b.url):
                assert refused(second.create(url, 60), FLEET_LIMIT, 5)
            a.process.send_signal(signal.SIGKILL)  # A's 3 tasks can never be released by A
            a.process.wait(timeout=WAIT)
            killed = time.monotonic()
            second.until_admitted(b.url, 60)  # once one of A's entries lapsed (lease 2 s)
            deadline = time.monotonic() + WAIT
            while refused(answer := second.create(b.url, 60), FLEET_LIMIT, 5):  # until all of A's lapsed
                assert time.monotonic() < deadline, "a dead worker's tasks kept counting"
                time.sleep(0.1)
            print(f"a dead worker's tasks stopped counting {time.monotonic() - killed:.2f} s after the kill")
            assert refused(answer, CLIENT_LIMIT, 3)  # then only B's client's limit: its 3 tasks on B
        finally:
            first.close()
            second.close()
