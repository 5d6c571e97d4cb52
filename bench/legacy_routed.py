"""A 2024-11-05 HTTP+SSE POST routed to another worker through the mesh (issue 42 item 3), against
a local one: two `serve --redis-url URL` processes (A and B) of bench/ours.py's `add` server on one
redis-server; a legacy stream opened on A; quick `tools/call add` POSTs sent to A (*local*: the
stream's own worker) or to B (*routed*: B checks the POST, answers 202 and sends it to A's inbox,
whose stream serves it), each answer read on A's stream.

    cd bench && python3 legacy_routed.py [--quick]

16 connections, one request in flight on each (a POST, its 202, then its answer on the stream), on
one session per round; rounds interleaved (local, routed, ...), each `--seconds` long after a
warm-up. Both workers run on CPU 0, the load generator (asyncio, raw HTTP/1.1) and redis-server on
CPU 1, as run.py's Redis points. Counted per call: the CPU of both workers, and of redis-server;
the ratio is the routed figure over the local one (the median round of each). Prints the table
and writes bench/results/legacy_routed.json. Needs redis-server (Debian's package).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import run
from loadgen import cpu_seconds
from procs import LOAD_CPU, SERVER_CPU, RedisServer, ServerFailed, free_port

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "legacy_routed.json"
CONNECTIONS = 16
START_WAIT = 30.0  # seconds: a serve process not listening by then has failed


@contextlib.contextmanager
def serving(redis_url: str, log: Path) -> Iterator[tuple[int, int]]:
    """One `serve` process of the `add` server on CPU 0 with the Redis store: (port, pid)."""
    port = free_port()
    argv = [*run.cli_launcher(), "serve", f"{BENCH / 'ours.py'}:build_server", "--host", "127.0.0.1",
            "--port", str(port), "--redis-url", redis_url]
    env = {**os.environ, **run.our_env()}
    with log.open("ab") as out:
        proc = subprocess.Popen(["taskset", "-c", str(SERVER_CPU), *argv], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + START_WAIT
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServerFailed(f"serve did not start (see {log})")
            time.sleep(0.1)
        yield port, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[bytes, bytes]]:
    status = int((await reader.readline()).split()[1])
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


class Stream:
    """A legacy stream (GET /sse) read in the background: its messages path, and each answer by id."""

    def __init__(self) -> None:
        self.path = ""
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self, port: int) -> None:
        reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        self.writer.write(f"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        status, headers = await read_head(reader)
        if status != 200:
            raise ServerFailed(f"GET /sse: HTTP {status}")
        chunked = headers.get(b"transfer-encoding") == b"chunked"
        self.task = asyncio.get_running_loop().create_task(self.read(reader, chunked))
        self.path = await asyncio.wait_for(self.opened, 10)

    async def read(self, reader: asyncio.StreamReader, chunked: bool) -> None:
        buffer = b""
        while True:
            if chunked:
                size = int((await reader.readline()).split(b";")[0], 16)
                if size == 0:
                    return
                buffer += await reader.readexactly(size)
                await reader.readexactly(2)
            else:
                data = await reader.read(65536)
                if not data:
                    return
                buffer += data
            buffer = buffer.replace(b"\r\n", b"\n")
            *events, buffer = buffer.split(b"\n\n")
            for event in events:
                self.take(event)

    def take(self, event: bytes) -> None:
        kind, data = "message", []
        for line in event.split(b"\n"):
            if line.startswith(b"event:"):
                kind = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].strip())
        if kind == "endpoint":
            self.opened.set_result(b"".join(data).decode())
        elif data:
            message = json.loads(b"\n".join(data))
            future = self.waiting.pop(message.get("id"), None) if "method" not in message else None
            if future is not None and not future.done():
                future.set_result(message)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await self.task


class Poster:
    """One keep-alive connection POSTing to the messages path of one worker."""

    def __init__(self, port: int, path: str) -> None:
        self.port, self.path = port, path
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: dict[str, Any]) -> None:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode()
        self.writer.write(
            f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        status, headers = await read_head(self.reader)
        length = int(headers.get(b"content-length", b"0"))
        reply = await self.reader.readexactly(length) if length else b""
        if status != 202:
            raise ServerFailed(f"POST {self.path}: HTTP {status} {reply[:300]!r}")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def one_round(holder: int, target: int, pids: list[int], redis_pid: int, seconds: float,
                    warmup: float) -> dict[str, Any]:
    """A new session's stream on `holder`, its calls POSTed to `target` for `warmup` + `seconds`."""
    stream = Stream()
    await stream.open(holder)
    posters = [Poster(target, stream.path) for _ in range(CONNECTIONS)]
    ids = iter(range(1, 10**9))

    async def request(poster: Poster, body: dict[str, Any]) -> dict[str, Any]:
        answer = stream.waiting[body["id"]] = asyncio.get_running_loop().create_future()
        await poster.post(body)
        return await asyncio.wait_for(answer, 10)

    init = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    await request(posters[0], {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    await posters[0].post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    counted = {"calls": 0, "errors": 0}
    measuring = False

    async def loop(poster: Poster, until: float) -> None:
        while time.monotonic() < until:
            n = next(ids)
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": n, "b": 1}}}
            answer = await request(poster, body)
            ok = answer.get("result", {}).get("content", [{}])[0].get("text") == str(n + 1)
            if measuring:
                counted["calls" if ok else "errors"] += 1

    start = time.monotonic()
    warm = asyncio.gather(*(loop(poster, start + warmup) for poster in posters))
    await warm
    measuring = True
    cpu0, redis0, t0 = cpu_seconds(*pids), cpu_seconds(redis_pid), time.monotonic()
    await asyncio.gather(*(loop(poster, t0 + seconds) for poster in posters))
    measuring = False
    cpu1, redis1, t1 = cpu_seconds(*pids), cpu_seconds(redis_pid), time.monotonic()
    for poster in posters:
        poster.close()
    await stream.close()
    calls = counted["calls"]
    if calls == 0 or counted["errors"]:
        raise ServerFailed(f"{calls} calls, {counted['errors']} wrong answers")
    return {
        "calls": calls,
        "calls_per_s": calls / (t1 - t0),
        "workers_us_per_call": (cpu1 - cpu0) / calls * 1e6,
        "redis_us_per_call": (redis1 - redis0) / calls * 1e6,
    }


def median_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round of median workers' CPU per call."""
    ranked = sorted(rounds, key=lambda point: point["workers_us_per_call"])
    return {**ranked[len(ranked) // 2], "rounds": rounds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 3 s (else 3 of 8 s)")
    options = parser.parse_args()
    seconds, warmup, rounds = (3.0, 1.0, 3) if options.quick else (8.0, 2.0, 3)
    log_dir = BENCH / "results" / "legacy_routed"
    log_dir.mkdir(parents=True, exist_ok=True)
    points: dict[str, list[dict[str, Any]]] = {"local": [], "routed": []}
    with RedisServer(str(LOAD_CPU), log_dir) as redis, serving(redis.url, log_dir / "a.log") as (a, a_pid), \
            serving(redis.url, log_dir / "b.log") as (b, b_pid):
        os.sched_setaffinity(0, {LOAD_CPU})
        for i in range(rounds):
            for name, target in (("local", a), ("routed", b)):
                point = asyncio.run(one_round(a, target, [a_pid, b_pid], redis.pid, seconds, warmup))
                print(f"round {i + 1} {name}: {point['calls_per_s']:,.0f} calls/s, workers "
                      f"{point['workers_us_per_call']:.0f} us/call, redis {point['redis_us_per_call']:.0f} us/call",
                      file=sys.stderr)
                points[name].append(point)
    local, routed = median_of(points["local"]), median_of(points["routed"])
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": run.git("rev-parse", "--short", "HEAD"),
        "seconds": seconds,
        "connections": CONNECTIONS,
        "local": local,
        "routed": routed,
        "ratio_workers_cpu": routed["workers_us_per_call"] / local["workers_us_per_call"],
        "ratio_calls_per_s": routed["calls_per_s"] / local["calls_per_s"],
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print("| legacy HTTP+SSE POST (2024-11-05) | calls/s | workers' CPU per call | redis-server CPU per call |")
    print("|---|---:|---:|---:|")
    named = (("local: to the stream's worker", local), ("routed: to another worker, through the mesh", routed))
    for name, point in named:
        print(f"| {name} | {point['calls_per_s']:,.0f} | {point['workers_us_per_call']:.0f} us "
              f"| {point['redis_us_per_call']:.0f} us |")
    print(f"| routed / local | {result['ratio_calls_per_s']:.2f}x | {result['ratio_workers_cpu']:.2f}x | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
