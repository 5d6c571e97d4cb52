"""What `WAIT`-based durable task records cost (issue 42 item 2): `RedisTaskStore` on a redis-server
with one replica (both of the run's own), a task created and finished (`create` + `finish`, what a
task's start and end write) `--tasks` times in a row, with `durable_replicas` 0 and 1 in
interleaved rounds; 16 tasks at a time (asyncio), so the figure is the one of a busy worker.

    cd bench && PYTHONPATH=../src python3 durable_tasks.py [--tasks N] [--rounds N]

Prints, per setting (the median round): tasks per second, the worker's CPU per task (this
process's), the primary's, and the wall time of one create + finish. The primary and the replica
on CPU 1, this process on CPU 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from loadgen import cpu_seconds
from procs import LOAD_CPU, SERVER_CPU, RedisServer
from redis.asyncio import Redis

from mcp_sse_server.engine.records import TaskRecord
from mcp_sse_server.stores.redis_tasks import RedisTaskStore

CONCURRENCY = 16


async def one_round(url: str, primary_pid: int, replicas: int, tasks: int, tag: str) -> dict[str, Any]:
    client = Redis.from_url(url)
    store = RedisTaskStore(client, prefix=f"bench{tag}", durable_replicas=replicas, durable_ms=1000)
    ids = iter(range(tasks))
    walls: list[float] = []

    async def worker() -> None:
        for n in ids:
            now = time.time()
            record = TaskRecord(
                id=f"t{n}", revision="2026-07-28", created_at=now, updated_at=now, ttl_ms=60_000, poll_interval_ms=1000
            )
            started = time.perf_counter()
            await store.create(record)
            await store.finish(record.id, "completed", {"result": {"content": []}}, None, time.time())
            walls.append(time.perf_counter() - started)

    await asyncio.gather(worker())  # warm: scripts loaded, connections open
    ids = iter(range(tasks, 2 * tasks))
    walls.clear()
    cpu0, redis0, t0 = time.process_time(), cpu_seconds(primary_pid), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    cpu1, redis1, t1 = time.process_time(), cpu_seconds(primary_pid), time.perf_counter()
    await client.aclose()
    return {
        "tasks_per_s": tasks / (t1 - t0),
        "worker_us": (cpu1 - cpu0) / tasks * 1e6,
        "primary_us": (redis1 - redis0) / tasks * 1e6,
        "wall_ms": statistics.median(walls) * 1000,
        "unreplicated": store.unreplicated,
    }


def ratio(value: float, base: float) -> str:
    """``value`` over ``base``, or "-" where the base measured nothing (a run too short to see the
    primary's CPU, say)."""
    return f"{value / base:.2f}x" if base > 0 else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    log_dir = Path(__file__).resolve().parent / "results" / "durable_tasks"
    log_dir.mkdir(parents=True, exist_ok=True)
    os.sched_setaffinity(0, {SERVER_CPU})
    points: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    with contextlib.ExitStack() as servers:
        primary = servers.enter_context(RedisServer(str(LOAD_CPU), log_dir))
        replica_of = ("--replicaof", "127.0.0.1", str(primary.port))
        replica = servers.enter_context(RedisServer(str(LOAD_CPU), log_dir, replica_of))
        deadline = time.monotonic() + 10
        while "master_link_status:up" not in str(replica.command("INFO", "replication")):
            if time.monotonic() > deadline:
                raise SystemExit("the replica never synced")
            time.sleep(0.05)
        for i in range(options.rounds):
            for replicas in (0, 1):
                point = asyncio.run(one_round(primary.url, primary.pid, replicas, options.tasks, f"{i}{replicas}"))
                print(f"round {i + 1}, durable_replicas={replicas}: {point}", file=sys.stderr)
                points[replicas].append(point)
    print(
        "| task records | tasks/s (create + finish, 16 at a time) | worker CPU per task | primary's CPU per task "
        "| one create + finish (median) |"
    )
    print("|---|---:|---:|---:|---:|")
    rows = {}
    for replicas, name in ((0, "as written (no WAIT)"), (1, "durable_replicas=1 (WAIT 1 after each)")):
        point = sorted(points[replicas], key=lambda p: p["worker_us"])[len(points[replicas]) // 2]
        rows[replicas] = point
        print(
            f"| {name} | {point['tasks_per_s']:,.0f} | {point['worker_us']:.0f} µs | {point['primary_us']:.0f} µs "
            f"| {point['wall_ms']:.2f} ms |"
        )
    durable, written = rows[1], rows[0]
    cells = [ratio(durable[key], written[key]) for key in ("tasks_per_s", "worker_us", "primary_us", "wall_ms")]
    print("| durable / as written | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
