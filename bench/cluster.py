"""Ours on a Redis Cluster against one Redis, in the same run (issue 42): run.py's Redis points
(`--servers ours-redis`) with a 3+3 cluster of the run's own beside its single redis-server.

    cd bench && python3 cluster.py [--quick]

1. *Quick calls, one worker*: point 1's call (16 connections, one 2025-06-18 session, quick
   replies) on `serve --redis-url URL --workers 1`, URL the single redis-server's and then the
   cluster's (`redis+cluster://...`), in interleaved rounds (run.py's pairs: 3), each on a fresh
   server. As in run.py, the worker runs on CPU 0 and wrk with every redis-server on CPU 1; the
   CPU counted is the worker's plus every redis-server's (the cluster's six nodes: primaries,
   replicas and their cluster bus), per request. Must hold: the cluster at most 1.3x one Redis
   (the median round).
2. *Capped workers on the cluster*: run.py's capped workers (`Run.capped_workers`: 1 and 2
   workers, each held to 0.4 of a core, interleaved rounds) with the cluster's URL, every node
   free on both cores. Must hold: 2 workers at least 1.7x the requests/s of one. Then the same
   on the single Redis, for comparison (what the machine allowed at that moment).
3. *Streamed calls* on the cluster (a 2025-11-25 session, progress then the reply: resumable
   streams written to Redis), and *bytes per idle session* on the primaries, the replicas and in
   the worker: the inputs of capacity.py.

Prints the table and writes bench/results/cluster.json (logs: bench/results/cluster/logs). Needs
redis-server and redis-cli (Debian's redis-server package), wrk (bench/setup.sh).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import report
import run
from loadgen import busy_seconds, cpu_seconds
from mcp_http import open_sessions, rss_kb
from procs import LOAD_CPU, RedisServer, ServerFailed, free_port

CLUSTER_CPU_TARGET = 1.3  # the cluster's CPU per quick call (workers + every redis-server) over one Redis's
SINGLE, CLUSTER = "single", "cluster"
NODES = 6  # 3 primaries, a replica each
FORM_WAIT = 30.0  # seconds: a cluster not formed by then has failed


class Cluster:
    """Six `redis-server --cluster-enabled yes` (procs.RedisServer with a node's options) made one
    cluster by `redis-cli --cluster create ... --cluster-replicas 1`; stopped at the end."""

    def __init__(self, cpus: str, log_dir: Path) -> None:
        self.nodes = [
            RedisServer(cpus, log_dir, ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                        "--cluster-port", str(free_port()), "--cluster-node-timeout", "2000"))
            for _ in range(NODES)
        ]
        self.url = "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def __enter__(self) -> Cluster:
        with contextlib.ExitStack() as stack:
            for node in self.nodes:
                stack.enter_context(node)
            cli = shutil.which("redis-cli")
            if cli is None:
                raise ServerFailed("redis-cli is not installed (Debian's redis-tools)")
            seeds = [f"127.0.0.1:{node.port}" for node in self.nodes]
            made = subprocess.run([cli, "--cluster", "create", *seeds, "--cluster-replicas", "1", "--cluster-yes"],
                                  capture_output=True, text=True, timeout=FORM_WAIT)
            if made.returncode != 0:
                raise ServerFailed(f"redis-cli --cluster create failed: {made.stdout[-500:]}{made.stderr[-500:]}")
            deadline = time.monotonic() + FORM_WAIT
            while not all("cluster_state:ok" in str(node.command("CLUSTER", "INFO")) for node in self.nodes):
                if time.monotonic() > deadline:
                    raise ServerFailed("the cluster did not form")
                time.sleep(0.1)
            stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        for node in self.nodes:
            node.stop()

    @property
    def pids(self) -> list[int]:
        return [node.pid for node in self.nodes]

    def pin(self, cpus: str) -> None:
        for node in self.nodes:
            node.pin(cpus)

    def primaries(self) -> list[RedisServer]:
        return [node for node in self.nodes if node.info("replication").get("role") == "master"]

    def command_calls(self) -> dict[str, int]:
        """Commands so far, summed over the primaries (a replica's replayed writes not counted again)."""
        total: dict[str, int] = {}
        for node in self.primaries():
            for name, calls in node.command_calls().items():
                total[name] = total.get(name, 0) + calls
        return total


def counters_of(pids: Callable[[], list[int]], calls: Callable[[], dict[str, int]]) -> Callable[[], dict[str, float]]:
    """run.Run.point's counters: the redis-servers' CPU seconds (all of them) and their commands."""
    def counters() -> dict[str, float]:
        commands = {f"calls:{k}": float(v) for k, v in calls().items() if k not in ("info", "cluster")}
        return {"redis_cpu_s": cpu_seconds(*pids()), "busy_cpu_s": busy_seconds(), **commands}
    return counters


def per_call_us(point: dict[str, Any]) -> float | None:
    """CPU µs per request, the worker's plus the redis-servers'."""
    per = report._per_cpu_with_redis(point) if point and not point.get("invalid") else None
    return 1e6 / per if per else None


@contextlib.contextmanager
def own_results() -> Iterator[Path]:
    """run.Run keeps its logs and tokens under RESULTS (and empties them): ours go elsewhere, so a
    run.py going on meanwhile keeps its own."""
    where = run.RESULTS / "cluster"
    run.RESULTS, run.TOKENS = where, where / "tokens"
    yield where


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="run.py's --quick settings (3 s per point)")
    args = parser.parse_args()
    settings = run.QUICK if args.quick else run.FULL
    if shutil.which("redis-server") is None:
        print("redis-server is not installed: nothing measured", file=sys.stderr)
        return 1
    src = run.ROOT / "src"
    results: dict[str, Any] = {"meta": {"settings": settings.mode, "when": time.strftime("%Y-%m-%d %H:%M:%S")}}
    with own_results() as where:
        bench = run.Run(settings, [], [])
        with RedisServer(str(LOAD_CPU), bench.log_dir) as single, Cluster(str(LOAD_CPU), bench.log_dir) as cluster:
            results["meta"]["redis_version"] = single.info("server").get("redis_version", "?")
            single_counters = counters_of(lambda: [single.pid], single.command_calls)
            cluster_counters = counters_of(lambda: cluster.pids, cluster.command_calls)
            peers = {key: (run.served_by_cli(f"ours-cli-{key}", src, ["--redis-url", url, "--workers", "1"]), counters)
                     for key, url, counters in ((SINGLE, single.url, single_counters),
                                                (CLUSTER, cluster.url, cluster_counters))}
            rounds: list[dict[str, Any]] = []
            for i in range(settings.pairs[0]):
                run.log(f"quick calls, one worker, round {i + 1}: one Redis, then the cluster")
                measured: dict[str, Any] = {}
                for key, (peer, counters) in peers.items():
                    bench.own_server(peer, measured, [key], "", counters)
                rounds.append(measured)
            results["rounds"] = rounds
            run.log("streamed calls on a 2025-11-25 session, one worker, the cluster")
            streamed: dict[str, Any] = {}
            bench.own_server(peers[CLUSTER][0], streamed, [report.streamed_key(CLUSTER)], "", cluster_counters)
            results["streamed"] = streamed.get(report.streamed_key(CLUSTER))
            results["memory"] = idle_memory(bench, peers[CLUSTER][0], cluster, settings)
            cluster.pin(run.BOTH_CPUS)
            capped: dict[str, Any] = {}
            bench.capped_workers("ours", src, ["--redis-url", cluster.url, "--workers"], capped, cluster_counters)
            results["capped"] = capped
            # The same on the single Redis, right after: what this machine's state allows today.
            single.pin(run.BOTH_CPUS)
            capped_single: dict[str, Any] = {}
            bench.capped_workers("ours", src, ["--redis-url", single.url, "--workers"], capped_single, single_counters)
            results["capped_single"] = capped_single
    (where.parent / "cluster.json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(table(results)))
    return 0


def idle_memory(bench: run.Run, peer: run.Peer, cluster: Cluster, settings: run.Settings) -> dict[str, Any]:
    """Bytes per idle session: the cluster's used_memory (primaries, and replicas apart) and the
    worker's RSS, before and after opening sessions on one worker (run.py's redis_memory, summed
    over the nodes)."""
    count = min(max(settings.session_counts), 10_000)
    m: dict[str, Any] = {"sessions": count}

    def used(nodes: list[RedisServer]) -> int:
        return sum(int(node.info("memory")["used_memory"]) for node in nodes)

    primaries = cluster.primaries()
    replicas = [node for node in cluster.nodes if node not in primaries]
    with bench.server(peer, tag="-memory") as srv:
        open_sessions(srv.url, 20, workers=1)
        time.sleep(0.5)
        before = used(primaries), used(replicas), rss_kb(srv.pid)
        got = open_sessions(srv.url, count, deadline=max(150.0, count / 200))
        time.sleep(1.0)
        after = used(primaries), used(replicas), rss_kb(srv.pid)
    m["opened"] = len(got.ids)
    if got.error:
        m["error"] = got.error
    if got.ids:
        m["primary_bytes_per_session"] = (after[0] - before[0]) / len(got.ids)
        m["replica_bytes_per_session"] = (after[1] - before[1]) / len(got.ids)
        m["worker_bytes_per_session"] = (after[2] - before[2]) * 1024 / len(got.ids)
        run.log(f"cluster: {len(got.ids):,} idle sessions, {m['primary_bytes_per_session']:,.0f} B on the primaries, "
                f"{m['replica_bytes_per_session']:,.0f} B on the replicas, {m['worker_bytes_per_session']:,.0f} B "
                "of the worker's RSS each")
    return m


def table(results: dict[str, Any]) -> list[str]:
    lines = [f"**Redis Cluster (3 primaries + 3 replicas) against one Redis, `serve --redis-url URL --workers 1`, "
             f"point 1's quick calls ({results['meta']['settings']}, redis-server "
             f"{results['meta'].get('redis_version', '?')})**", "",
             "| round | store | requests/s | worker CPU | redis-servers CPU | CPU µs per call (worker + redis) | "
             "p99 ms |", "|---:|---|---:|---:|---:|---:|---:|"]
    ratios = []
    for i, measured in enumerate(results["rounds"], 1):
        for key in (SINGLE, CLUSTER):
            point = measured.get(key) or {}
            if point.get("invalid"):
                lines.append(f"| {i} | {key} | invalid: {point['invalid']} | | | | |")
                continue
            redis = report._redis_cpu(point)
            lines.append(f"| {i} | {key} | {point['rps']:,.0f} | {point['server_cpu']:.2f} | "
                         f"{redis or 0:.2f} | {per_call_us(point) or 0:.1f} | {point['p99_us'] / 1000:.2f} |")
        one, many = per_call_us(measured.get(SINGLE) or {}), per_call_us(measured.get(CLUSTER) or {})
        if one and many:
            ratios.append(many / one)
    streamed = results.get("streamed") or {}
    if streamed and not streamed.get("invalid"):
        commands = sum(report._per_request(streamed).values())
        lines += ["", f"Streamed calls on a 2025-11-25 session, one worker on the cluster: {streamed['rps']:,.0f} "
                  f"requests/s, worker {streamed['server_cpu']:.2f} core, redis-servers "
                  f"{report._redis_cpu(streamed) or 0:.2f}, {per_call_us(streamed) or 0:.1f} CPU µs per call, "
                  f"{commands:.1f} Redis commands per call on the primaries (inside scripts counted)."]
    memory = results.get("memory") or {}
    if "primary_bytes_per_session" in memory:
        lines += ["", f"Idle sessions ({memory['opened']:,} on one worker): "
                  f"{memory['primary_bytes_per_session']:,.0f} bytes each on the primaries, "
                  f"{memory['replica_bytes_per_session']:,.0f} on the replicas, "
                  f"{memory['worker_bytes_per_session']:,.0f} of the worker's RSS."]
    capped = results["capped"]
    workers = [x for points in capped.get(report.CAPPED_ROUNDS) or () if (x := report.capped_ratio(points))]
    cost = statistics.median(ratios) if ratios else None
    scale = report.capped_ratio(capped)
    lines += ["", "| must hold | measured | verdict |", "|---|---|---|",
              f"| cluster CPU per quick call ≤ {CLUSTER_CPU_TARGET:g}x one Redis's (worker + every redis-server) | "
              + (f"{cost:.2f}x (median of rounds: {', '.join(f'{x:.2f}x' for x in ratios)})" if cost else "missing")
              + f" | {('met' if cost <= CLUSTER_CPU_TARGET else 'MISSED') if cost else 'not measured'} |",
              f"| 2 workers on the cluster ≥ {report.WORKERS_TARGET:g}x one (each held to {report.WORKER_SHARE:g} "
              f"of a core) | " + (f"{scale:.2f}x (rounds: {', '.join(f'{x:.2f}x' for x in workers)})" if scale
                                  else "missing")
              + f" | {('met' if scale >= report.WORKERS_TARGET else 'MISSED') if scale else 'not measured'} |"]
    single = results.get("capped_single") or {}
    rounds = [x for points in single.get(report.CAPPED_ROUNDS) or () if (x := report.capped_ratio(points))]
    if rounds:
        lines += ["", f"The same on the single Redis right after (the machine's state, for comparison): "
                  f"{report.capped_ratio(single) or 0:.2f}x (rounds: {', '.join(f'{x:.2f}x' for x in rounds)})."]
    return lines


if __name__ == "__main__":
    sys.exit(main())
