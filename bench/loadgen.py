"""Drive `tools/call add` with wrk on the load core and read its one-line summary."""

from __future__ import annotations

import functools
import os
import re
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_http import PROTOCOL_VERSION, is_modern
from procs import LOAD_CPU

LUA = Path(__file__).resolve().parent / "tools_call.lua"
_LINE = re.compile(r"requests=(\d+) errors=(\d+) rps=(\d+) p50_us=(\d+) p99_us=(\d+)")


@dataclass
class Load:
    """One wrk point. `invalid` says why it does not count (an error reply, say)."""

    requests: int = 0
    errors: int = 0
    rps: float = 0.0
    p50_us: int = 0
    p99_us: int = 0
    invalid: str | None = None
    wrk_cpu: float | None = None  # share of one core wrk used during the point
    server_cpu: float | None = None  # share of one core the server used (filled in by the caller)
    disturbed: bool = False  # the server never got its whole core: other work interfered
    counters: dict[str, float] | None = None  # the caller's counters over the point (redis-server CPU, commands)
    # ms the server (all its threads and processes) was runnable but waited for its core during the
    # point (filled in by the caller): other work on the server's CPU, which lands in the latency tail
    run_delay_ms: float | None = None

    @property
    def ok(self) -> bool:
        return self.invalid is None


@functools.cache
def realtime_prefix() -> tuple[str, ...]:
    """`chrt -f 1` when allowed: with one wrk thread per client (100 threads
    on one core) the default scheduler's wake-up delays would add tens of ms
    to p99 that belong to the load generator, not to the server."""
    try:
        ok = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return ("chrt", "-f", "1") if ok else ()


def wrk(url: str, *, connections: int, seconds: float, threads: int = 1, session: str = "",
        sessions: list[str] | None = None, revision: str = PROTOCOL_VERSION, streamed: bool = False,
        cpus: str = str(LOAD_CPU), headers: dict[str, str] | None = None) -> Load:
    """Run wrk pinned to `cpus` (LOAD_CPU); any error reply makes the point invalid. `revision`
    is the sessions' protocol revision, or a modern one (no session: each call carries the
    _meta envelope and its headers); `streamed` calls carry a progress token; `headers` go
    with every request (tools_call.lua's MCP_HEADER: an `Authorization: Bearer` one, say)."""
    env = dict(os.environ, MCP_SESSION=session, MCP_SESSIONS=",".join(sessions or []), MCP_REVISION=revision,
               MCP_ENVELOPE="1" if is_modern(revision) else "", MCP_PROGRESS="1" if streamed else "",
               MCP_HEADER="\n".join(f"{name}: {value}" for name, value in (headers or {}).items()))
    cmd = [*realtime_prefix(), "taskset", "-c", cpus, "wrk", f"-t{threads}", f"-c{connections}",
           f"-d{max(1, round(seconds))}s", "--timeout", "5s", "-s", str(LUA), url]
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        return Load(invalid="wrk did not finish")
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - t0
    wrk_cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / wall
    match = _LINE.search(proc.stdout)
    if proc.returncode != 0 or match is None:
        return Load(invalid=f"wrk failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[:300]}")
    requests, errors, rps, p50, p99 = (int(g) for g in match.groups())
    load = Load(requests, errors, float(rps), p50, p99, wrk_cpu=round(wrk_cpu, 3))
    if errors:
        first = proc.stderr.strip().splitlines()[:1]
        load.invalid = f"{errors} error replies of {requests}" + (f" ({first[0][:160]})" if first else "")
    elif requests == 0:
        load.invalid = "no request answered"
    return load


def cpu_seconds(*pids: int) -> float:
    """User + system CPU time the processes (all their threads) have used so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_delay_ms(*pids: int) -> float:
    """Milliseconds the processes (all their threads) have so far spent runnable but waiting for a
    CPU (the second field of /proc/PID/task/TID/schedstat); 0 for threads gone meanwhile."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return total / 1e6


def _cpu_ticks() -> dict[str, tuple[int, int]]:
    """(busy, total) jiffies per CPU line of /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *values = line.split()
                ticks = [int(v) for v in values]
                idle = ticks[3] + ticks[4]  # idle + iowait
                out[name] = (sum(ticks) - idle, sum(ticks))
    return out


def busy_seconds() -> float:
    """CPU-seconds every CPU of the machine has been busy so far (all processes, ours or not)."""
    return sum(busy for busy, _ in _cpu_ticks().values()) / os.sysconf("SC_CLK_TCK")


def cpu_busy(interval: float = 0.5) -> dict[str, float]:
    """Share of each CPU that was busy over `interval` seconds."""
    a = _cpu_ticks()
    time.sleep(interval)
    b = _cpu_ticks()
    return {cpu: (b[cpu][0] - a[cpu][0]) / max(1, b[cpu][1] - a[cpu][1]) for cpu in b if cpu in a}
