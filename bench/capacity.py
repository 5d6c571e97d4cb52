"""The capacity model of docs/scale-out.md (issue 42), from the latest `cluster.py` results
(bench/results/cluster.json), so the model moves with the code:

    cd bench && python3 capacity.py [--sessions 1000000] [--calls 100000] [--streamed 0.2]
                                    [--headroom 0.7] [--shard-gb 25] [--results PATH]

Inputs, all measured by cluster.py on a 3+3 cluster: the worker's CPU per quick call (point 1:
a 2025-06-18 session, the median round) and per streamed call (progress then the reply on a
2025-11-25 session: a resumable stream, written to Redis); the redis-servers' CPU per call of
each kind (all six nodes, replicas and cluster bus included, so an idle cluster's background is
charged to the calls: an overestimate at low rates); Redis commands per call on the primaries;
and bytes per idle session on the primaries, on the replicas and in a worker's RSS.

The model, for `sessions` idle sessions and `calls` calls a second of which the share `streamed`
is streamed calls, each process kept at `headroom` of a core:
- workers (one core each) = calls x (worker CPU per call of the mix) / headroom;
- Redis shards = the most of: the Redis CPU of the mix / headroom (a shard's primary is one
  thread: one core), the primaries' bytes of every session / `shard_gb`, and 3 (a cluster's least);
  each shard has a replica, which holds its bytes again;
- a worker's memory: the sessions it holds copies of x its bytes per session, between
  sessions / workers (each session served by one worker: a sticky balancer) and every session
  (each session has reached every worker: round robin over a long life).
It prints what breaks first: the resource the load needs most of, and the one limit that adding
shards does not lift, a session's own shard (all of one session's keys are in one slot).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import report

RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"


def per_call(point: dict[str, Any]) -> tuple[float, float, float]:
    """(worker CPU µs, redis-servers CPU µs, primaries' commands) per call of a cluster.py point."""
    redis = report._redis_cpu(point) or 0.0
    commands = sum(report._per_request(point).values())
    return point["server_cpu"] / point["rps"] * 1e6, redis / point["rps"] * 1e6, commands


def inputs(results: dict[str, Any]) -> dict[str, Any]:
    """The measured inputs; KeyError naming what the results lack."""
    quick = [per_call(r["cluster"]) for r in results["rounds"] if not (r.get("cluster") or {}).get("invalid")]
    if not quick:
        raise KeyError("no valid quick-call point on the cluster")
    streamed = results.get("streamed") or {}
    if not streamed or streamed.get("invalid"):
        raise KeyError("no streamed-call point (run cluster.py of issue 42's second version)")
    memory = results.get("memory") or {}
    if "primary_bytes_per_session" not in memory:
        raise KeyError("no idle-session memory point")
    return {
        "quick": tuple(statistics.median(q[i] for q in quick) for i in range(3)),
        "streamed": per_call(streamed),
        "primary_b": memory["primary_bytes_per_session"],
        "replica_b": memory["replica_bytes_per_session"],
        "worker_b": memory["worker_bytes_per_session"],
        "when": results.get("meta", {}).get("when", "?"),
    }


def model(i: dict[str, Any], sessions: int, calls: float, streamed: float, headroom: float,
          shard_gb: float) -> list[str]:
    quick = 1.0 - streamed
    worker_us = quick * i["quick"][0] + streamed * i["streamed"][0]
    redis_us = quick * i["quick"][1] + streamed * i["streamed"][1]
    commands = quick * i["quick"][2] + streamed * i["streamed"][2]
    worker_cores = calls * worker_us / 1e6
    workers = max(1, math.ceil(worker_cores / headroom))
    redis_cores = calls * redis_us / 1e6
    primary_gb = sessions * i["primary_b"] / 1e9
    replica_gb = sessions * i["replica_b"] / 1e9
    by_cpu, by_memory = math.ceil(redis_cores / headroom), math.ceil(primary_gb / shard_gb)
    shards = max(3, by_cpu, by_memory)
    worker_low = sessions / workers * i["worker_b"] / 1e9
    worker_high = sessions * i["worker_b"] / 1e9
    one_session = headroom * 1e6 / i["streamed"][1] if i["streamed"][1] else math.inf  # (one primary's core)
    needs = {"worker CPU": worker_cores / headroom, "Redis CPU": redis_cores / headroom,
             "Redis memory": primary_gb / shard_gb}
    first = max(needs, key=lambda k: needs[k])
    return [
        f"**Capacity for {sessions:,} idle sessions and {calls:,.0f} calls/s ({streamed:.0%} streamed), "
        f"each process at {headroom:.0%} of a core, shards of {shard_gb:g} GB** "
        f"(inputs: bench/results/cluster.json of {i['when']})", "",
        "| input (measured) | quick call | streamed call |", "|---|---:|---:|",
        f"| worker CPU µs per call | {i['quick'][0]:.1f} | {i['streamed'][0]:.1f} |",
        f"| redis-servers CPU µs per call (6 nodes) | {i['quick'][1]:.2f} | {i['streamed'][1]:.2f} |",
        f"| Redis commands per call (primaries) | {i['quick'][2]:.2f} | {i['streamed'][2]:.2f} |",
        "", f"Bytes per idle session: {i['primary_b']:,.0f} on the primaries, {i['replica_b']:,.0f} on the "
        f"replicas, {i['worker_b']:,.0f} in a worker's RSS.", "",
        "| need | figure |", "|---|---:|",
        f"| worker cores | {worker_cores:,.1f} |",
        f"| **workers** (one core each) | **{workers:,}** |",
        f"| Redis CPU (cores, all nodes) | {redis_cores:,.2f} |",
        f"| Redis commands per second (primaries) | {calls * commands:,.0f} |",
        f"| Redis memory: primaries / replicas (GB) | {primary_gb:,.2f} / {replica_gb:,.2f} |",
        f"| **Redis shards** (primary + replica each): by CPU / by memory / least | **{shards}** "
        f"({by_cpu} / {by_memory} / 3) |",
        f"| a worker's memory for its sessions' copies (GB): sticky / round robin | {worker_low:,.2f} / "
        f"{worker_high:,.2f} |",
        "", f"Breaks first: {first} (the most cores or shards needed). Beyond shards: one session's keys "
        f"are one slot, so one session's streamed calls all go to one primary: charged with all six nodes' "
        f"CPU per call, that core fills at about {one_session:,.0f} a second (a lower bound; quick calls "
        "on a session a worker serves send Redis nothing). A worker keeps a copy of every session it has "
        "served until the session ends. A worker that holds every session's copy (round robin over long lives) "
        "needs the larger memory figure: keep sessions sticky, or their idle timeout short, at that scale.",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--calls", type=float, default=100_000)
    parser.add_argument("--streamed", type=float, default=0.2, help="the share of streamed calls (0-1)")
    parser.add_argument("--headroom", type=float, default=0.7, help="the share of a core each process may use")
    parser.add_argument("--shard-gb", type=float, default=25.0, help="memory per primary")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    try:
        measured = inputs(json.loads(args.results.read_text()))
    except (OSError, ValueError, KeyError) as error:
        print(f"{args.results}: {error}: run cluster.py first", file=sys.stderr)
        return 1
    print("\n".join(model(measured, args.sessions, args.calls, args.streamed, args.headroom, args.shard_gb)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
