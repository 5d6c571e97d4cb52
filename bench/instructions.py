"""Machine instructions one `tools/call add` costs the server in process, counted by valgrind: a
figure that does not move with the machine's load, for the Python side of a request (the
interpreter, the parser, orjson; not the kernel's TCP), where the timed points spread too widely.

    .venv/bin/python bench/instructions.py [--baseline a3542c1] [--points quick,json,stateless,streamed]
        [--tree NAME=PATH ...] [--cpu ROUNDS]

Each point drives the server's own HTTP protocol (what `McpHttpServer.bind` gives uvicorn: the fast
path where the tree has one) on uvloop, with a transport that keeps what is written and never
touches a socket: the request's bytes go in through `data_received`, its reply comes out of
`write`. The driver runs under `valgrind --tool=callgrind` twice, with 100 and 600 measured
requests after the same warm-up, and the figure is the difference over the 500 requests between:
start-up, imports and the warm-up cancel out. The points are fast_path.py's (`quick`: a 2025-06-18
session call answered by SSE; `json`: JSON replies; `stateless`: a 2026-07-28 call; `streamed`: a
progress notification then the reply). `ours@REF` is REF's src/ (extracted as run.py's --baseline
does), driven the same way (a commit before the fast path: uvicorn's own cycle). Needs valgrind;
about 30 s a figure. `--tree NAME=PATH` counts another src/ directory beside ours (mypyc_trial.py
passes its compiled copy); `--cpu ROUNDS` adds CPU time per request, measured the same way without
valgrind (2,000 and 20,000 requests), the trees taking turns, the median kept: that one is timed.

Fewer instructions is less work per request, not a time: a memory stall or a syscall counts the
same as an add. The timed points (fast_path.py, run.py) stay the measure of requests per second.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import re
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
BENCH = HERE.parent
POINTS = ("quick", "json", "stateless", "streamed")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = [(b"accept", b"application/json, text/event-stream"), (b"content-type", b"application/json")]
WARMUP = 300
FEW, MANY = 100, 600


class Kept(asyncio.Transport):
    """A transport that keeps what the server writes (no socket)."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 40000)}.get(name, default)


def post(headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    lines = b"".join(b"%s: %s\r\n" % pair for pair in headers)
    return b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:8000\r\n" + lines + b"content-length: %d\r\n\r\n" % len(body) + body


async def protocol_for(point: str) -> Any:
    """The server's HTTP protocol for one connection, as bind() would make it, serving ours.py's server."""
    import uvicorn
    from ours import app_arguments, make_factory

    from mcp_sse_server.transport.http import server as http_server
    from mcp_sse_server.transport.http.app import McpHttpApp

    app = McpHttpApp(make_factory()(), **app_arguments(McpHttpApp, {"path": "/mcp", "json_response": point == "json"}))
    await app.start()
    takes_app = "app" in inspect.signature(http_server._protocol_options).parameters
    options = http_server._protocol_options(app if takes_app else app.limits)
    config = uvicorn.Config(app, **options, ws="none", lifespan="off", interface="asgi3", access_log=False,
                            log_config=None, server_header=False, date_header=False)
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[])
    return config.http_protocol_class(config=config, server_state=server.server_state, app_state={})


async def drive(point: str, count: int) -> None:
    """Warm up, then `count` requests of `point` (what callgrind counts)."""
    protocol = await protocol_for(point)
    transport = Kept()
    protocol.connection_made(transport)

    async def exchange(data: bytes) -> bytes:
        # As little of the driver's own work as can be (callgrind counts it too): the protocol's
        # current cycle (uvicorn's or the fast path's) says when the response is complete.
        transport.out.clear()
        protocol.data_received(data)
        for _ in range(100):  # bounded: a reply that never completes fails the checks in drive()
            if protocol.cycle.response_complete:
                break
            await asyncio.sleep(0)
        return b"".join(transport.out)

    arguments = {"name": "add", "arguments": {"a": 1, "b": 2}}
    if point == "stateless":
        headers = [*ACCEPT, (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"),
                   (b"mcp-name", b"add")]
        params: dict[str, Any] = {**arguments, "_meta": META}
    else:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        opened = await exchange(post(ACCEPT, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                                         "params": init}).encode()))
        session = re.search(rb"mcp-session-id: ([^\r]+)", opened)
        if session is None:
            raise SystemExit(f"{point}: initialize answered {opened[:300]!r}")
        headers = [*ACCEPT, (b"mcp-session-id", session[1]), (b"mcp-protocol-version", b"2025-06-18")]
        await exchange(post(headers, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
        params = {**arguments, "_meta": {"progressToken": "p"}} if point == "streamed" else arguments
    data = post(headers, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode())
    reply = await exchange(data)
    if b'"3"' not in reply or (point == "streamed" and b"notifications/progress" not in reply):
        raise SystemExit(f"{point}: unexpected reply {reply[:300]!r}")
    for _ in range(WARMUP + count):
        await exchange(data)
    if not protocol.cycle.response_complete:
        raise SystemExit(f"{point}: a reply did not complete")


def counted(python: str, src: Path, point: str, count: int) -> int:
    """Instructions callgrind counts for the whole driver run."""
    # (A fixed hash seed: dict layouts, and so the count, the same from run to run.)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(BENCH)]), "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, str(HERE),
         "--drive", point, str(count)],
        capture_output=True, text=True, env=env, timeout=900,
    )
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"{point} at {src}: {proc.stdout[-300:]}{proc.stderr[-600:]}")
    return int(found[1])


def per_request(python: str, src: Path, point: str) -> float:
    return (counted(python, src, point, MANY) - counted(python, src, point, FEW)) / (MANY - FEW)


def cpu_seconds(python: str, src: Path, point: str, count: int) -> float:
    """CPU seconds (user and system) the driver takes for `count` requests after the warm-up."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(BENCH)]), "PYTHONHASHSEED": "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([python, str(HERE), "--drive", point, str(count)], capture_output=True, text=True,
                          env=env, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{point} at {src}: {proc.stdout[-300:]}{proc.stderr[-600:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_per_request(python: str, trees: dict[str, Path], point: str, rounds: int) -> dict[str, float]:
    """CPU microseconds per request of each tree: (CPU at 20,000 - CPU at 2,000) / 18,000, the trees
    taking turns `rounds` times, the median kept (a timed figure: it moves with the machine's load)."""
    samples: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, src in trees.items():
            many, few = cpu_seconds(python, src, point, 20_000), cpu_seconds(python, src, point, 2_000)
            samples[name].append((many - few) / 18_000 * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="a3542c1")
    parser.add_argument("--points", default=",".join(POINTS))
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="another src/ directory to count (mypyc_trial.py passes its compiled one)")
    parser.add_argument("--cpu", type=int, default=0, metavar="ROUNDS",
                        help="also time CPU per request, the trees taking turns ROUNDS times (a timed figure)")
    parser.add_argument("--drive", nargs=2, metavar=("POINT", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        import uvloop

        uvloop.run(drive(args.drive[0], int(args.drive[1])))
        return
    from run import ROOT, baseline_src, git

    trees = {f"ours ({git('rev-parse', '--short', 'HEAD') or 'tree'})": ROOT / "src"}
    for named in args.tree:
        name, _, path = named.partition("=")
        if not path or not Path(path).is_dir():
            parser.error(f"--tree {named!r}: NAME=PATH of a src/ directory")
        trees[name] = Path(path)
    if args.baseline:
        src, short = baseline_src(args.baseline)
        trees[f"ours@{short}"] = src
    compare(trees, [p for p in args.points.split(",") if p], args.cpu)


def compare(trees: dict[str, Path], points: list[str], cpu_rounds: int = 0) -> None:
    """Print the instructions per request of each tree (and, with `cpu_rounds`, CPU time per
    request), and each against the last tree."""
    from report import markdown_grid
    from run import our_python

    python = our_python()
    figures: dict[str, dict[str, float | None]] = {}
    for name, src in trees.items():
        figures[name] = {}
        for point in points:
            print(f"{name} {point} ...", file=sys.stderr, flush=True)
            try:
                figures[name][point] = per_request(python, src, point)
            except RuntimeError as error:
                print(f"  {error}", file=sys.stderr)
                figures[name][point] = None
    print("\nInstructions per request in process (callgrind), server side\n")
    print(markdown_grid("tree", points, {name: ["-" if row[p] is None else f"{row[p]:,.0f}" for p in points]
                                         for name, row in figures.items()}))
    last = list(trees)[-1]

    def ratio(ours: float | None, theirs: float | None) -> str:
        return "-" if not ours or not theirs else f"{theirs / ours:.2f}x"

    if len(trees) > 1:
        base = figures[last]
        print(f"\nAgainst {last} (its instructions over ours: how many times less work)\n")
        print(markdown_grid("tree", points, {name: [ratio(row[p], base[p]) for p in points]
                                             for name, row in figures.items()}))
    if cpu_rounds:
        timed = {point: cpu_per_request(python, trees, point, cpu_rounds) for point in points}
        print(f"\nCPU µs per request in process (median of {cpu_rounds} rounds, the trees taking turns)\n")
        print(markdown_grid("tree", points, {name: [f"{timed[p][name]:.2f}" for p in points] for name in trees}))
        if len(trees) > 1:
            print(f"\nAgainst {last} (its time over ours)\n")
            print(markdown_grid("tree", points, {name: [ratio(timed[p][name], timed[p][last]) for p in points]
                                                 for name in trees}))


if __name__ == "__main__":
    main()
