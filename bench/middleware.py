"""What the built-in middleware costs: server CPU per `tools/call` with none, one pass-through
`on_request`, `RequestLog`, `RateLimit` in process and `RateLimit` on Redis.

    python bench/middleware.py [--seconds 5] [--rounds 3] [--connections 16]

Our server (`mcp-sse-server serve`, one process, in-process stores) serves `add`, pinned to CPU 0;
wrk (bench/tools_call.lua, 2026-07-28 requests: no session, each a whole call) and, for the Redis
row, a redis-server of this run's own run on CPU 1. Each configuration is one server process
(`MCP_BENCH_MIDDLEWARE` picks it in the target below); the rounds go through the configurations
in turn, so drift on the shared machine spreads over all of them, and each row is the median of
its rounds. CPU is the server's (and, for the Redis row, redis-server's) user + system time over
the point, divided by the requests wrk completed.

- `RequestLog` rows: `logging-sink` hands records to a bounded deque; `logging-jsonl` writes them
  to a file with the `JsonLines` sink (buffered JSON lines); `logging-null` makes a `LogRecord`
  per request that a `NullHandler` drops; `logging` writes every record through a
  `logging.FileHandler` (the default format) to a file in the run's temporary directory.
- `RateLimit` never refuses here (`rate` and `burst` far above the load): every request takes
  a token, which is the work measured. All requests are anonymous: one bucket.

Prints a Markdown table (bench/README.md, "Middleware") and the bounds of issue 38: pass-through
at most 1.10x none, `RequestLog` at most 1.25x none (to a sink, and to a file with `JsonLines`),
the Redis limiter at most 1.5x the in-process one. The rows through the `logging` module are
reported, not bounded: what a `LogRecord` and a `FileHandler` cost is the logging module's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from loadgen import cpu_seconds, wrk
from procs import LOAD_CPU, RedisServer, Server, free_port

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
STATELESS = "2026-07-28"

TARGET = """
import logging
import os

from mcp_sse_server import CallToolResult, McpServer, Tool, shared_server
from mcp_sse_server.engine.middleware import Middleware


class PassThrough(Middleware):
    async def on_request(self, context, params, call_next):
        return await call_next(params)


def middleware(kind):
    if kind == "none":
        return []
    if kind == "pass-through":
        return [PassThrough()]
    if kind.startswith("logging"):
        from collections import deque

        from mcp_sse_server.middleware import RequestLog

        logger = logging.getLogger("bench.requests")
        logger.setLevel(logging.INFO)
        logger.propagate = False
        if kind == "logging-sink":  # records to a bounded deque; the logger would drop the level
            logger.setLevel(logging.WARNING)
            return [RequestLog(logger, sink=deque(maxlen=1000).append)]
        if kind == "logging-jsonl":  # a log that is kept: one JSON line a request in a file
            from mcp_sse_server.middleware import JsonLines

            logger.setLevel(logging.WARNING)
            return [RequestLog(logger, sink=JsonLines(os.environ["MCP_BENCH_LOG"] + "l"))]
        if kind == "logging-null":  # a LogRecord made per request, then dropped by the handler
            logger.addHandler(logging.NullHandler())
        else:  # a log that is kept: one line a request in a file
            logger.addHandler(logging.FileHandler(os.environ["MCP_BENCH_LOG"]))
        return [RequestLog(logger)]
    from mcp_sse_server.middleware import RateLimit, RedisBuckets

    if kind == "limiter":
        return [RateLimit(rate=1e9, burst=10**9)]
    if kind == "limiter-redis":
        from redis.asyncio import Redis

        store = RedisBuckets(Redis.from_url(os.environ["MCP_BENCH_REDIS"]), prefix="bench")
        return [RateLimit(rate=1e9, burst=10**9, store=store)]
    raise ValueError(kind)


@shared_server  # one server for every request, as bench/ours.py's
def build():
    server = McpServer("bench-middleware", "1.0.0", middleware=middleware(os.environ["MCP_BENCH_MIDDLEWARE"]))

    async def add(arguments, context):
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    server.add_tool(Tool("add", handler=add))
    return server
"""

CONFIGS = (
    "none",
    "pass-through",
    "logging-sink",
    "logging-jsonl",
    "logging-null",
    "logging",
    "limiter",
    "limiter-redis",
)
BOUNDS = (
    ("pass-through", "none", 1.10),
    ("logging-sink", "none", 1.25),
    ("logging-jsonl", "none", 1.25),
    ("limiter-redis", "limiter", 1.5),
)


def serve(kind: str, target: Path, log_dir: Path, redis_url: str) -> Server:
    cli = ROOT / ".venv" / "bin" / "mcp-sse-server"
    port = free_port()
    argv = [str(cli), "serve", f"{target}:build", "--host", "127.0.0.1", "--port", str(port)]
    env = {
        "PYTHONPATH": str(ROOT / "src"),
        "MCP_BENCH_MIDDLEWARE": kind,
        "MCP_BENCH_LOG": str(log_dir / "requests.log"),
        "MCP_BENCH_REDIS": redis_url,
    }
    return Server(f"middleware-{kind}", argv, port, env=env, log_dir=log_dir)


def point(kind: str, target: Path, log_dir: Path, redis: RedisServer, seconds: float, connections: int) -> float:
    """CPU microseconds per request of one configuration (server, plus redis-server when it is used)."""
    with serve(kind, target, log_dir, redis.url) as server:
        pids = server.pids()
        wrk(server.url, connections=connections, seconds=1.0, revision=STATELESS)  # warm-up
        start, redis_start = cpu_seconds(*pids), cpu_seconds(redis.pid)
        load = wrk(server.url, connections=connections, seconds=seconds, revision=STATELESS)
        used, redis_used = cpu_seconds(*pids) - start, cpu_seconds(redis.pid) - redis_start
    if not load.ok or not load.requests:
        raise RuntimeError(f"{kind}: {load.invalid or 'no requests'}")
    if kind == "limiter-redis":
        print(
            f"{kind}: server {used / load.requests * 1e6:.1f} µs, redis-server "
            f"{redis_used / load.requests * 1e6:.1f} µs per request",
            file=sys.stderr,
        )
        used += redis_used
    return used / load.requests * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--only", default=",".join(CONFIGS), help="the configurations to run, comma-separated")
    args = parser.parse_args()
    kinds = [kind for kind in CONFIGS if kind in args.only.split(",")]
    os.sched_setaffinity(0, {LOAD_CPU})
    log_dir = Path(tempfile.mkdtemp(prefix="bench-middleware-"))
    target = log_dir / "middleware_target.py"
    target.write_text(TARGET)
    rounds: dict[str, list[float]] = {kind: [] for kind in kinds}
    with RedisServer(str(LOAD_CPU), log_dir) as redis:
        for _ in range(args.rounds):
            for kind in kinds:
                rounds[kind].append(point(kind, target, log_dir, redis, args.seconds, args.connections))
    median = {kind: statistics.median(values) for kind, values in rounds.items()}
    print("| middleware | CPU µs per `tools/call` (median) | rounds | vs none |")
    print("|---|---:|---|---:|")
    for kind in kinds:
        spread = ", ".join(f"{value:.0f}" for value in rounds[kind])
        versus = f"{median[kind] / median['none']:.3f}x" if "none" in median else "-"
        print(f"| {kind} | {median[kind]:.1f} | {spread} | {versus} |")
    failed = 0
    for kind, base, bound in BOUNDS:
        if kind not in median or base not in median:
            continue
        ratio = median[kind] / median[base]
        failed += ratio > bound
        print(f"{kind} / {base}: {ratio:.3f}x (bound {bound:.2f}x) {'ok' if ratio <= bound else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
