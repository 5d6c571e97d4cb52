"""What tasks cost over HTTP: tasks started and completed per CPU-second, a poll, a pending task.

    python bench/tasks.py [--seconds 5] [--pending 10000] [--clients 16]

Our server (`mcp-sse-server serve`, in-process stores, then `--redis-url` on a redis-server of
this run's own) serves `done` (a task tool that answers at once), `parked` (a task tool that waits
until cancelled) and `add` (a plain tool), pinned to CPU 0, with wrk (bench/tasks.lua, 16
connections) on CPU 1, redis-server there too. Points:

- started and completed: each loop calls `done` as a task and reads it until `completed`, at
  2026-07-28 (the extension: `tools/call`, then `tasks/get`) and on a 2025-11-25 session (core
  tasks: `tools/call` with `params.task`, then `tasks/result`); server (and redis-server)
  CPU-microseconds per task;
- a poll: `tasks/get` of one completed task, against a plain `tools/call add` (both 2026-07-28);
- a pending task: RSS growth of the server (and Redis `used_memory` growth) per `parked` task,
  PENDING of them, made at 2026-07-28 by CLIENTS asyncio loops over httpx.

Prints Markdown tables (bench/README.md, "Tasks").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from loadgen import cpu_seconds, realtime_prefix, wrk
from mcp_http import rss_kb
from procs import LOAD_CPU, RedisServer, Server, free_port

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
STATELESS = "2026-07-28"
CORE = "2025-11-25"
EXTENSION = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
NAMED_BY = {"tools/call": "name", "tasks/get": "taskId", "tasks/cancel": "taskId"}

TARGET = '''
import asyncio

from mcp_sse_server import CallToolResult, McpServer, Tool, shared_server


@shared_server  # one server for every session and request, as bench/ours.py's
def build():
    server = McpServer("bench-tasks", "1.0.0")

    async def done(arguments, context):
        return CallToolResult.text("done")

    async def parked(arguments, context):
        await asyncio.Event().wait()  # until cancelled
        return CallToolResult.text("never")

    async def add(arguments, context):
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    server.add_tool(Tool("done", handler=done, task_support="optional"))
    server.add_tool(Tool("parked", handler=parked, task_support="optional"))
    server.add_tool(Tool("add", handler=add))
    return server
'''


class Driver:
    """Requests to one endpoint: 2026-07-28 ones (the extension declared) and a 2025-11-25 session's."""

    def __init__(self, url: str) -> None:
        self.url = url
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        self.http = httpx.AsyncClient(timeout=30.0, limits=limits)
        self.ids = 0
        self.session: str | None = None

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json", **headers}
        reply = await self.http.post(self.url, json=body, headers=headers)
        reply.raise_for_status()
        if reply.headers["content-type"].startswith("application/json"):
            return reply.json()  # type: ignore[no-any-return]
        for line in reply.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message: dict[str, Any] = httpx.Response(200, content=line[5:].strip()).json()
                if message.get("id") == body["id"]:
                    return message
        raise RuntimeError(f"no answer to {body['method']}")

    async def stateless(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": EXTENSION,
            "io.modelcontextprotocol/clientInfo": {"name": "bench-tasks", "version": "1"},
        }
        headers = {"mcp-protocol-version": STATELESS, "mcp-method": method}
        if method in NAMED_BY:
            headers["mcp-name"] = str(params[NAMED_BY[method]])
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": {**params, "_meta": meta}}
        return _result(await self._post(body, headers))

    async def open_session(self) -> None:
        self.ids += 1
        init = {"protocolVersion": CORE, "capabilities": {}, "clientInfo": {"name": "bench-tasks", "version": "1"}}
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "initialize", "params": init}
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        reply = await self.http.post(self.url, json=body, headers=headers)
        reply.raise_for_status()
        self.session = reply.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(self.url, json=done, headers={**headers, **self._session_headers()})

    def _session_headers(self) -> dict[str, str]:
        assert self.session is not None
        return {"mcp-session-id": self.session, "mcp-protocol-version": CORE}

    async def in_session(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        return _result(await self._post(body, self._session_headers()))


def _result(message: dict[str, Any]) -> dict[str, Any]:
    if "result" not in message:
        raise RuntimeError(f"error reply: {message.get('error')}")
    return message["result"]  # type: ignore[no-any-return]


def tasks_wrk(url: str, mode: str, seconds: float, **env: str) -> dict[str, int]:
    """bench/tasks.lua in ``mode`` for ``seconds``: {"tasks", "requests", "errors"}."""
    environment = dict(os.environ, MCP_TASKS=mode, **env)
    command = [*realtime_prefix(), "taskset", "-c", str(LOAD_CPU), "wrk", "-t1", "-c16",
               f"-d{max(1, round(seconds))}s", "--timeout", "10s", "-s", str(BENCH / "tasks.lua"), url]
    out = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=seconds + 60).stdout
    match = re.search(r"tasks=(\d+) requests=(\d+) errors=(\d+)", out)
    if match is None:
        raise RuntimeError(f"wrk ({mode}) printed no summary: {out[-300:]}")
    return dict(zip(("tasks", "requests", "errors"), map(int, match.groups()), strict=True))


async def points(url: str, pids: list[int], seconds: float, clients: int, pending: int,
                 redis: RedisServer | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    drivers = [Driver(url) for _ in range(clients)]
    try:
        core = drivers[0]
        await core.open_session()
        finished = await core.stateless("tools/call", {"name": "done", "arguments": {}})
        points: list[tuple[str, str, dict[str, str]]] = [
            ("extension", "extension", {}),
            ("core", "core", {"MCP_SESSION": core.session or ""}),
            ("poll", "poll", {"MCP_TASK": finished["taskId"]}),
        ]
        tasks_wrk(url, "extension", 1.0)  # warm-up
        for name, mode, env in points:
            start = cpu_seconds(*pids)
            measured = tasks_wrk(url, mode, seconds, **env)
            measured["cpu_us"] = round((cpu_seconds(*pids) - start) * 1e6)
            if measured["errors"]:
                raise RuntimeError(f"{name}: {measured['errors']} error replies")
            out[name] = measured
        start = cpu_seconds(*pids)
        plain = wrk(url, connections=16, seconds=seconds, revision=STATELESS)
        if not plain.ok:
            raise RuntimeError(f"plain tools/call: {plain.invalid}")
        out["plain"] = {"requests": plain.requests, "cpu_us": round((cpu_seconds(*pids) - start) * 1e6)}
        # Pending tasks: memory per parked task.
        await asyncio.sleep(0.5)
        rss0 = sum(rss_kb(pid) for pid in pids if redis is None or pid != redis.pid)
        used0 = int(redis.info("memory")["used_memory"]) if redis is not None else 0
        made = 0

        async def park(driver: Driver) -> None:
            nonlocal made
            while made < pending:
                made += 1
                created = await driver.stateless("tools/call", {"name": "parked", "arguments": {}})
                assert created["status"] == "working", created

        await asyncio.gather(*(park(driver) for driver in drivers))
        await asyncio.sleep(1.0)
        rss1 = sum(rss_kb(pid) for pid in pids if redis is None or pid != redis.pid)
        used1 = int(redis.info("memory")["used_memory"]) if redis is not None else 0
        out["pending"] = {"tasks": made, "rss_kb": rss1 - rss0, "redis_bytes": used1 - used0}
    finally:
        for driver in drivers:
            await driver.aclose()
    return out


def serve(name: str, target: Path, port: int, log_dir: Path, extra: list[str]) -> Server:
    cli = ROOT / ".venv" / "bin" / "mcp-sse-server"
    argv = [str(cli), "serve", f"{target}:build", "--host", "127.0.0.1", "--port", str(port), *extra]
    env = {"PYTHONPATH": str(ROOT / "src")}
    return Server(name, argv, port, env=env, log_dir=log_dir)


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| store | extension tasks (2026-07-28): started and completed per CPU-second (µs each) | "
             "core tasks (2025-11-25) per CPU-second (µs each) | a `tasks/get` poll, µs | a plain `tools/call`, "
             "µs | a pending task: server KB | a pending task: Redis bytes |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    def per(point: dict[str, Any]) -> str:
        return f"{point['tasks'] / point['cpu_us'] * 1e6:,.0f} ({point['cpu_us'] / point['tasks']:,.0f} µs)"

    for store, r in results.items():
        poll = r["poll"]["cpu_us"] / r["poll"]["requests"]
        plain = r["plain"]["cpu_us"] / r["plain"]["requests"]
        pending = r["pending"]
        redis_bytes = f"{pending['redis_bytes'] / pending['tasks']:,.0f}" if store != "in process" else "—"
        lines.append(f"| {store} | {per(r['extension'])} | {per(r['core'])} | {poll:,.0f} | {plain:,.0f} | "
                     f"{pending['rss_kb'] / pending['tasks']:.2f} | {redis_bytes} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    os.sched_setaffinity(0, {LOAD_CPU})
    log_dir = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    target = log_dir / "tasks_target.py"
    target.write_text(TARGET)
    results: dict[str, dict[str, Any]] = {}
    with serve("tasks-memory", target, free_port(), log_dir, []) as srv:
        results["in process"] = asyncio.run(points(srv.url, srv.pids(), args.seconds, args.clients, args.pending, None))
    redis = RedisServer(str(LOAD_CPU), log_dir)
    with redis as rs, serve("tasks-redis", target, free_port(), log_dir, ["--redis-url", rs.url]) as srv:
        pids = [*srv.pids(), rs.pid]
        results["Redis"] = asyncio.run(points(srv.url, pids, args.seconds, args.clients, args.pending, rs))
    print("\n".join(table(results)))
    for store, r in results.items():
        print(f"{store}: " + ", ".join(f"{key} {point}" for key, point in r.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
