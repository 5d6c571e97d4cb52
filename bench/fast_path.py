"""Ours on the fast path against ours on uvicorn's ASGI cycle, a baseline commit and the bare ASGI app.

    .venv/bin/python bench/fast_path.py [--seconds 5] [--baseline a3542c1] [--points quick,json,stateless,streamed]

One server at a time on CPU 0, wrk (tools_call.lua) on CPU 1 with 16 keep-alive
connections, as run.py's point 1: `ours` (the working tree, the fast path:
`HttpSettings(fast_path=True)`, the default), `ours-asgi` (the same with
`fast_path=False`: every request through uvicorn's cycle), `ours@REF` (REF's
src/, extracted as run.py's --baseline does) and `bare-asgi` (bare_asgi.py: the
ASGI ceiling, body read). Points: `quick` (a session call at 2025-06-18, SSE
reply), `json` (the same with JSON replies), `stateless` (2026-07-28, no
session) and `streamed` (a progress notification then the reply, chunked).
Each point: a warm-up of 2 s, then `--seconds` measured; the figure is requests
per server CPU-second (the server's user+system time over the point), with
p50/p99 from wrk. Prints one Markdown table and the ratios against `ours@REF`.
A commit or server that does not serve a point gets "-".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from loadgen import cpu_seconds, wrk
from procs import Server
from report import markdown_grid
from run import BENCH, ROOT, baseline_src, our_env, our_python

POINTS = {
    "quick": {"revision": "2025-06-18", "streamed": False, "json": False},
    "json": {"revision": "2025-06-18", "streamed": False, "json": True},
    "stateless": {"revision": "2026-07-28", "streamed": False, "json": False},
    "streamed": {"revision": "2025-06-18", "streamed": True, "json": False},
}


def servers(baseline: str | None) -> dict[str, tuple[list[str], dict[str, str], set[str]]]:
    """name -> (argv, PORT standing for the port; environment; points it serves)."""
    python, ours = our_python(), str(BENCH / "ours.py")
    found: dict[str, tuple[list[str], dict[str, str], set[str]]] = {
        "ours": ([python, ours, "PORT"], our_env(), set(POINTS)),
        "ours-asgi": ([python, ours, "PORT", "--asgi"], our_env(), set(POINTS)),
    }
    if baseline:
        src, short = baseline_src(baseline)
        found[f"ours@{short}"] = ([python, ours, "PORT"], our_env(src), set(POINTS))
    found["bare-asgi"] = ([python, str(BENCH / "bare_asgi.py"), "PORT"], our_env(), {"quick", "json"})
    return found


def measure(
    name: str, argv: list[str], env: dict[str, str], point: dict[str, Any], seconds: float, logs: Path
) -> dict[str, float] | None:
    """One point on a fresh server; None when it cannot be measured (an error reply, say)."""
    flags = ["--json"] if point["json"] else []
    from procs import free_port

    port = free_port()
    with Server(
        f"{name}-{point['revision']}",
        [str(port) if a == "PORT" else a for a in argv] + flags,
        port,
        env=env,
        log_dir=logs,
    ) as srv:
        session = ""
        if point["revision"] != "2026-07-28":
            from mcp_http import connect, open_session

            conn, path = connect(srv.url)
            session = open_session(conn, path, revision=point["revision"])
            conn.close()
        kw = {"connections": 16, "session": session, "revision": point["revision"], "streamed": point["streamed"]}
        warm = wrk(srv.url, seconds=2, **kw)
        if not warm.ok:
            print(f"  {name}: {warm.invalid}", file=sys.stderr)
            return None
        cpu0, t0 = cpu_seconds(srv.pid), time.monotonic()
        load = wrk(srv.url, seconds=seconds, **kw)
        cpu = cpu_seconds(srv.pid) - cpu0
        wall = time.monotonic() - t0
    if not load.ok or cpu <= 0:
        print(f"  {name}: {load.invalid}", file=sys.stderr)
        return None
    return {
        "rps": load.rps,
        "per_cpu_s": load.requests / cpu,
        "cpu": cpu / wall,
        "p50": load.p50_us,
        "p99": load.p99_us,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--baseline", default="a3542c1")
    parser.add_argument("--points", default=",".join(POINTS))
    args = parser.parse_args()
    logs = BENCH / "results" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in args.points.split(",") if p]
    table: dict[str, dict[str, dict[str, float] | None]] = {}
    for name, (argv, env, serves) in servers(args.baseline or None).items():
        for point in chosen:
            if point in serves:
                print(f"{name} {point} ...", file=sys.stderr, flush=True)
                table.setdefault(name, {})[point] = measure(name, argv, env, POINTS[point], args.seconds, logs)
    print(f"\nRequests per server CPU-second (req/s, p50/p99 µs), {args.seconds:g} s per point, tree {ROOT.name}\n")
    def cell(m: dict[str, float] | None) -> str:
        return "-" if m is None else f"{m['per_cpu_s']:,.0f} ({m['rps']:,.0f}/s, {m['p50']}/{m['p99']})"

    print(markdown_grid("server", chosen, {name: [cell(row.get(p)) for p in chosen] for name, row in table.items()}))
    base = next((n for n in table if n.startswith("ours@")), None)
    if base is not None:
        print(f"\nRatios, per server CPU-second, against {base}:\n")

        def ratio(m: dict[str, float] | None, b: dict[str, float] | None) -> str:
            return "-" if m is None or b is None else f"{m['per_cpu_s'] / b['per_cpu_s']:.2f}x"

        rows = {name: [ratio(row.get(p), table[base].get(p)) for p in chosen] for name, row in table.items()}
        print(markdown_grid("server", chosen, rows))


if __name__ == "__main__":
    main()
