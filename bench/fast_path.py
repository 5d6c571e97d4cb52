"""Ours on the fast path against ours on uvicorn's ASGI cycle, a baseline commit and the bare ASGI app.

    .venv/bin/python bench/fast_path.py [--seconds 5] [--baseline a3542c1] [--points quick,json,stateless,streamed]
        [--servers ours,ours@] [--rounds 5]

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

The servers take one point after the other, so a change in the machine's load
during a run falls on some of them only: single runs of this script gave 1.24x,
1.71x and 1.60x for the same trees within five minutes. `--rounds N` measures
every point N times, each round starting the turn at another server, and
reports the medians and, for each ratio, the median of the rounds' own ratios
with their range (`--servers ours,ours@` keeps the run to the two trees).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import median
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
    parser.add_argument("--servers", default="", help="comma-separated names to run (default: all)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, the servers taking turns (see the docstring)")
    args = parser.parse_args()
    logs = BENCH / "results" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in args.points.split(",") if p]
    found = servers(args.baseline or None)
    if args.servers:
        wanted = [n for n in args.servers.split(",") if n]  # ("ours@" stands for the baseline's name)
        unknown = [n for n in wanted if n != "ours@" and n not in found]
        if unknown:
            parser.error(f"unknown servers {unknown}; choose from {', '.join(found)}")
        found = {n: v for n, v in found.items() if n in wanted or ("ours@" in wanted and n.startswith("ours@"))}
    names = list(found)
    # samples[name][point]: one measurement per round (None where it could not be measured).
    samples: dict[str, dict[str, list[dict[str, float] | None]]] = {n: {p: [] for p in chosen} for n in names}
    for number in range(args.rounds):
        for point in chosen:
            # Each round starts the turn at another server, so a drift in the machine's load
            # during a round does not fall on the same server every time.
            for name in names[number % len(names) :] + names[: number % len(names)]:
                argv, env, serves = found[name]
                if point in serves:
                    print(f"round {number + 1}: {name} {point} ...", file=sys.stderr, flush=True)
                    samples[name][point].append(measure(name, argv, env, POINTS[point], args.seconds, logs))
    report(samples, chosen, args.seconds, args.rounds)


def report(
    samples: dict[str, dict[str, list[dict[str, float] | None]]], chosen: list[str], seconds: float, rounds: int
) -> None:
    """The tables: each server's figures (one round: as measured; more: the medians), then ratios
    against ``ours@REF`` (more rounds: the median of the rounds' own ratios, and their range)."""
    how = "" if rounds == 1 else f", medians of {rounds} rounds"
    print(f"\nRequests per server CPU-second (req/s, p50/p99 µs), {seconds:g} s per point{how}, tree {ROOT.name}\n")

    def cell(measured: list[dict[str, float] | None]) -> str:
        got = [m for m in measured if m is not None]
        if not got:
            return "-"
        per_cpu, rps = median([m["per_cpu_s"] for m in got]), median([m["rps"] for m in got])
        p50, p99 = median([m["p50"] for m in got]), median([m["p99"] for m in got])
        return f"{per_cpu:,.0f} ({rps:,.0f}/s, {p50:.0f}/{p99:.0f})"

    print(markdown_grid("server", chosen, {name: [cell(row[p]) for p in chosen] for name, row in samples.items()}))

    def ratios(ours: list[dict[str, float] | None], base: list[dict[str, float] | None]) -> str:
        each = [m["per_cpu_s"] / b["per_cpu_s"] for m, b in zip(ours, base, strict=False) if m and b]
        if not each:
            return "-"
        if len(each) == 1:
            return f"{each[0]:.2f}x"
        return f"{median(each):.2f}x ({min(each):.2f}-{max(each):.2f})"

    base = next((n for n in samples if n.startswith("ours@")), None)
    if base is not None:
        print(f"\nRatios, per server CPU-second, against {base}:\n")
        rows = {name: [ratios(row[p], samples[base][p]) for p in chosen] for name, row in samples.items()}
        print(markdown_grid("server", chosen, rows))
    ours = samples.get("ours")
    if ours is not None and "quick" in chosen and len(chosen) > 1:
        print("\nOurs against its own session SSE call (`quick`), round by round:\n")
        print(markdown_grid("server", chosen, {"ours": [ratios(ours[p], ours["quick"]) for p in chosen]}))


if __name__ == "__main__":
    main()
