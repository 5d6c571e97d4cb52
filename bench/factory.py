"""What serving a factory target costs against an instance: server CPU per 2026-07-28 `tools/call add`.

    python bench/factory.py [--seconds 5] [--rounds 3] [--baseline REF ...]

One target file holds `server` (an McpServer) and `build` (a factory of the same server, not
marked @shared_server, so the command line calls it once per session). `mcp-sse-server serve
FILE:server` and `serve FILE:build` run in turn on CPU 0, each loaded by wrk (bench/tools_call.lua,
16 connections, the stateless revision) on CPU 1 for SECONDS, ROUNDS times interleaved, so a
disturbance of the machine falls on both. Each `--baseline REF` serves the same two targets from
git REF's `src/` (extracted to bench/.baseline/REF, as run.py does). Prints a Markdown table:
server CPU-microseconds per call (the median of the rounds) and the factory's ratio to the
instance of the same code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from loadgen import cpu_seconds, wrk
from procs import LOAD_CPU, Server, free_port

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
STATELESS = "2026-07-28"

TARGET = '''
from mcp_sse_server import CallToolResult, McpServer, Tool


def build():
    built = McpServer("bench-factory", "1.0.0")

    async def add(arguments, context):
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    built.add_tool(Tool("add", schema, add))
    return built


server = build()
'''


def source_of(ref: str | None) -> Path:
    """The `src/` to serve: the working tree's, or REF's extracted once under bench/.baseline."""
    if ref is None:
        return ROOT / "src"
    commit = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    where = BENCH / ".baseline" / commit
    if not (where / "src").is_dir():
        where.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "src"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    return where / "src"


def measure(name: str, target: str, src: Path, seconds: float, log_dir: Path) -> float:
    """Server CPU-µs per call of one point."""
    port = free_port()
    argv = [sys.executable, "-m", "mcp_sse_server", "serve", target, "--host", "127.0.0.1", "--port", str(port)]
    with Server(name, argv, port, env={"PYTHONPATH": str(src)}, log_dir=log_dir) as served:
        wrk(served.url, connections=16, seconds=1, revision=STATELESS)  # warm-up
        start = cpu_seconds(*served.pids())
        load = wrk(served.url, connections=16, seconds=seconds, revision=STATELESS)
        used = cpu_seconds(*served.pids()) - start
    if not load.ok:
        raise RuntimeError(f"{name}: {load.invalid}")
    return used / load.requests * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", action="append", default=[])
    args = parser.parse_args()
    os.sched_setaffinity(0, {LOAD_CPU})
    log_dir = Path(tempfile.mkdtemp(prefix="bench-factory-"))
    target = log_dir / "factory_target.py"
    target.write_text(TARGET)
    codes: list[tuple[str, Path]] = [("ours", source_of(None))]
    codes += [(f"ours@{ref}", source_of(ref)) for ref in args.baseline]
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for code, src in codes:
            for kind in ("instance", "factory"):
                attribute = "server" if kind == "instance" else "build"
                cost = measure(f"{code}-{kind}", f"{target}:{attribute}", src, args.seconds, log_dir)
                samples.setdefault((code, kind), []).append(cost)
    print("| code | instance (`FILE:server`), µs per call | factory (`FILE:build`), µs per call | "
          "factory / instance |\n|---|---:|---:|---:|")
    for code, _ in codes:
        instance = statistics.median(samples[(code, "instance")])
        factory = statistics.median(samples[(code, "factory")])
        print(f"| {code} | {instance:,.1f} | {factory:,.1f} | {factory / instance:.2f}x |")
    for (code, kind), values in samples.items():
        print(f"{code} {kind}: " + ", ".join(f"{value:.1f}" for value in values), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
