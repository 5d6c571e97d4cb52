"""The newcomer's two waits, before and after: `mcp-sse-server call` end to end, and a stdio
server's spawn-to-first-answer.

    PYTHONPATH=../src ../.venv/bin/python first_hour.py [--baseline REF]... [--runs N]

Rules:
1. Each row is one command run N times (default 15) from the working tree's src/ and from each
   `--baseline REF`'s (extracted by run.py's `baseline_src`), interleaved run by run so the
   machine's noise falls on all of them alike; the median and the ratio to the first baseline
   are printed. Same interpreter and environment for all; only PYTHONPATH differs.
2. `call`: `python -m mcp_sse_server call FILE.py:server add a=2 b=3` (the in-process target,
   the grammar every revision of the CLI reads), wall time to exit 0 with the answer on stdout.
3. `spawn`: `python -m mcp_sse_server serve FILE.py:server --stdio` started with an `initialize`
   already written to its stdin; wall time from spawning to the first line of stdout (its
   answer). The process is then closed (stdin EOF) and reaped.
4. Bytecode caches are warmed by one untimed run of each command first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import ROOT, baseline_src, our_python

SERVER = '''from mcp_sse_server import McpServer

server = McpServer("first-hour")


@server.tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b
'''

INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "first-hour", "version": "1"}},
}) + "\n"


def environment(src: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def time_call(src: Path, target: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([our_python(), "-m", "mcp_sse_server", "call", target, "add", "a=2", "b=3"],
                          env=environment(src), capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "5" not in done.stdout:
        sys.exit(f"call from {src} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return elapsed


def time_spawn(src: Path, target: str) -> float:
    started = time.perf_counter()
    process = subprocess.Popen([our_python(), "-m", "mcp_sse_server", "serve", target, "--stdio"],
                               env=environment(src), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    answer = process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if '"result"' not in answer:
        sys.exit(f"serve --stdio from {src} answered {answer!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", action="append", default=[], metavar="REF")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    trees = {f"ours@{commit}": src for src, commit in (baseline_src(ref) for ref in dict.fromkeys(args.baseline))}
    trees["ours (working tree)"] = ROOT / "src"
    with tempfile.TemporaryDirectory() as scratch:
        server = Path(scratch) / "first_hour_server.py"
        server.write_text(SERVER)
        target = f"{server}:server"
        rows = {"call": time_call, "spawn": time_spawn}
        samples: dict[tuple[str, str], list[float]] = {(row, name): [] for row in rows for name in trees}
        for row, measure in rows.items():
            for src in trees.values():
                measure(src, target)  # rule 4
            for _ in range(args.runs):
                for name, src in trees.items():
                    samples[row, name].append(measure(src, target))
    titles = {"call": "`mcp-sse-server call FILE.py:server add a=2 b=3`, s",
              "spawn": "`serve FILE.py:server --stdio`: spawn to the initialize answer, ms"}
    names = list(trees)
    print(f"| median of {args.runs} runs | " + " | ".join(names) + " |" + (" ratio |" if len(names) > 1 else ""))
    print("|---|" + "---:|" * len(names) + ("---:|" if len(names) > 1 else ""))
    for row in rows:
        medians = [statistics.median(samples[row, name]) for name in names]
        scale = 1.0 if row == "call" else 1000.0
        cells = [f"{value * scale:.2f}" if row == "call" else f"{value * scale:.0f}" for value in medians]
        ratio = f" {medians[-1] / medians[0]:.2f}x |" if len(names) > 1 else ""
        print(f"| {titles[row]} | " + " | ".join(cells) + " |" + ratio)


if __name__ == "__main__":
    main()
