"""Side-by-side benchmark of this project's MCP server and its peers, in one
run on this machine: every server pinned to CPU 0, every load generator to
CPU 1. Run bench/setup.sh first (bench/run.sh does both).

    python3 bench/run.py [--quick] [--servers ours,ours-jwt,official,...,ours-redis] [--baseline REF]... [--src PATH]
                         [--readme]

Issue 41's rows: `raw-protocol` (raw_protocol.py, an asyncio.Protocol on httptools: Python's
ceiling for one HTTP exchange), `ours-asgi` (ours with HttpSettings(fast_path=False)) and
`ours-starlette` (McpHttpApp mounted in Starlette under plain uvicorn), each in the default
run; report.py's "fast path" tables and must-hold list read them and `ours@a3542c1`
(`--baseline a3542c1`). The chart (plot.py, matplotlib from bench/.peers/plot) goes to
bench/results/throughput.png, and with --readme to bench/throughput.png.

Prints Markdown tables (HTTP throughput and latency, many sessions, memory,
in-process round trip, start-up) with ratios against our server, and saves
them with the raw figures in bench/results/latest.{md,json}. --readme also
writes the tables into bench/README.md. --baseline REF also measures our
server from git REF's src/ as the server `ours@REF`, and adds a before/after
table. `ours-redis` (in --servers, and by default when redis-server is
installed) adds ours on the Redis store against the in-process store, 1 and
2 workers, and Redis memory per idle session, on a redis-server of the run's
own. `ours-jwt` (in the default run, and in --servers, which then brings ours
in as its comparison) is ours serving with bearer tokens (ours.py --jwt: a
JwtVerifier with a local RS256 key, one token sent on every request), at
point 1 and in the interleaved pairs only: the table "Bearer tokens" and a
must-hold row compare its server CPU per request with ours'. Any error
reply makes a point invalid: it is shown as such, never as a number. The
last tables check the targets: the issue's "must hold" list (against the
body-reading bare ASGI ceiling and the baselines ours@540ab25 and
ours@6e30da1, when given, and ours-jwt against ours), then issue 6's.

Standard library only; each server runs in its own environment.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import http.client
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import report
from loadgen import Load, busy_seconds, cpu_busy, cpu_seconds, realtime_prefix, run_delay_ms, wrk
from mcp_http import NotServed, SessionError, connect, is_modern, open_session, open_sessions, reply_shape, rss_kb
from procs import LOAD_CPU, SERVER_CPU, CpuCap, RedisServer, Server, ServerFailed, free_port, kill_all

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS = BENCH / ".peers"
BASELINES = BENCH / ".baseline"  # git-ignored: REF's src/ for --baseline REF, reused while REF names the same commit
RESULTS = BENCH / "results"
TOKENS = RESULTS / "tokens"  # ours-jwt's access tokens, one file per server (ours.py --jwt writes it)
ORDER = [report.OURS, report.OURS_JWT, report.OURS_ASGI, report.OURS_STARLETTE, "official", "fastmcp", "typescript",
         report.RAW, report.BARE, report.BARE_NOREAD]
REDIS = "ours-redis"  # --servers name of the Redis-store points (ours only), which run after the servers
BOTH_CPUS = f"{SERVER_CPU},{LOAD_CPU}"  # the workers points: server, redis-server and wrk share both cores
DISTURBED = 0.9  # a saturated server's share of its core below which other work interfered
RETRY_BUDGET = 5  # re-measured points per run at most, to keep a full run under 10 minutes
QUIET_BUDGET = 45.0  # seconds per run spent waiting for the server's core to be free of other work


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Settings:
    seconds: float  # per measured wrk point
    warmup: float  # wrk warm-up before each point, not counted
    session_counts: tuple[int, ...]  # idle-session memory points
    ours_extra: tuple[int, ...]  # more points for our server only (the 100,000-session target)
    inmemory_calls: int
    inmemory_rounds: int  # runs of inmemory.py per version of ours, interleaved; the best median kept
    import_runs: int
    pairs: tuple[int, float]  # the must-hold pairs, interleaved: rounds, and seconds per point
    mode: str


FULL = Settings(8, 2, (1000, 10000), (100_000,), 2000, 5, 7, (3, 4), "full run (8 s per load point)")
QUICK = Settings(3, 1, (1000,), (), 500, 3, 3, (3, 2),
                 "quick run (--quick: 3 s per load point, memory at 1,000 sessions only)")


@dataclass
class Peer:
    """How to start one server and what it offers."""

    name: str
    argv: Callable[[int, bool], list[str]]  # (port, json replies) -> command line
    json: bool = False  # offers JSON replies (--json)
    json_why: str = ""  # ours only: why this code offers no JSON replies
    shared: bool | None = None  # ours only: one McpServer serves every session (else one per session)
    sessions: bool = True  # stateful: issues Mcp-Session-Id
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    skip: str | None = None  # why it cannot run here
    imports: tuple[str, ...] = ()  # what a user imports to serve, for the import-time rows
    python: str | None = None
    src: Path | None = None  # ours only: the code measured (PYTHONPATH's first entry)
    cpus: str = str(SERVER_CPU)  # where the server (and its workers) may run, as taskset -c takes it
    load_cpus: str = str(LOAD_CPU)  # where wrk runs against it
    auth_why: str = ""  # ours only: why this code cannot serve with bearer tokens (ours.py --jwt)
    token_file: Callable[[int], Path] | None = None  # (port) -> where it writes the token every request carries
    point1_only: bool = False  # ours-jwt: point 1 (SSE and JSON replies) and the pairs, nothing else
    path: str = "/mcp"  # the endpoint (ours-starlette: /mcp/, a Mount's)


def our_python() -> str:
    """The Python our servers run on: BENCH_PYTHON if set (another interpreter with the locked
    packages, to compare Python versions), else .venv's."""
    chosen = os.environ.get("BENCH_PYTHON")
    if chosen:
        return chosen
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def our_env(src: Path = ROOT / "src") -> dict[str, str]:
    # src/ first, so the working tree (or a baseline's copy) is measured even with the editable install.
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}


def git(*args: str) -> str:
    """stdout of a git command in this checkout, '' when it fails."""
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def baseline_src(ref: str) -> tuple[Path, str]:
    """(src/ of git REF, its short commit): extracted into bench/.baseline/<ref>/
    with `git archive`, and reused while REF still names the same commit."""
    commit = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if not commit:
        sys.exit(f"--baseline {ref}: not a commit of {ROOT}")
    home = BASELINES / re.sub(r"[^\w.-]", "_", ref)
    stamp = home / ".commit"
    if not (stamp.exists() and stamp.read_text().strip() == commit):
        log(f"extracting src/ of {ref} ({commit[:12]}) into {home}")
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "src"],
                             capture_output=True, check=True, timeout=60).stdout
        subprocess.run(["tar", "-x", "-C", str(home)], input=tar, check=True, timeout=60)
        stamp.write_text(commit + "\n")
    return home / "src", git("rev-parse", "--short", commit)


def node_binary() -> str | None:
    """The machine's node, else the Node 22 that scripts/setup.sh's setup_node installs."""
    tools_node = ROOT / ".tools" / "node" / "node_modules" / "node" / "bin" / "node"
    return shutil.which("node") or (str(tools_node) if tools_node.exists() else None)


def ours_peer(name: str, src: Path, options: tuple[str, ...] = ()) -> Peer:
    """Our server (bench/ours.py) run from the code in `src`: the working tree's, or a baseline's.
    Same interpreter and environment either way; only PYTHONPATH differs. `options`: ours.py's
    (`--redis URL`)."""
    py = our_python()
    peer = Peer(name, lambda p, j: [py, str(BENCH / "ours.py"), str(p), *options, *(["--json"] if j else [])],
                env=our_env(src),
                imports=("import mcp_sse_server", "from mcp_sse_server import McpHttpServer, McpServer, Tool"),
                python=py, src=src)
    probe = subprocess.run([py, str(BENCH / "ours.py"), "--probe"], capture_output=True, text=True,
                           env=dict(os.environ, **peer.env), timeout=60)
    try:
        answer = json.loads(probe.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        answer = {"available": False, "reason": (probe.stderr.strip().splitlines() or ["probe failed"])[-1]}
    if not answer["available"]:
        peer.skip = f"our HTTP server is not available yet ({answer['reason']})"
    elif not options:  # (the Redis-stores peer serves point 1's SSE replies only)
        # JSON replies (bind's json_response) where this code has them; "not offered" rows otherwise.
        peer.json, peer.json_why = bool(answer.get("json")), answer.get("json_reason", "")
        peer.shared = answer.get("shared")
        peer.auth_why = "" if answer.get("auth") else answer.get("auth_reason") or "ours.py --probe says no auth"
    return peer


def token_path(port: int) -> Path:
    return TOKENS / f"{report.OURS_JWT}-{port}.jwt"


def ours_jwt_peer(src: Path) -> Peer:
    """`ours-jwt`: ours.py's `add` server with `--jwt` (bind(..., auth=ResourceServer(...)) with a
    JwtVerifier holding an RS256 key made at start, no JWKS fetched), from the code in `src`; the
    token it writes goes with every request of the harness and of wrk. Point 1 and the pairs only."""
    py = our_python()
    peer = ours_peer(report.OURS_JWT, src)
    peer.argv = lambda p, j: [py, str(BENCH / "ours.py"), str(p), "--jwt", str(token_path(p)),
                              *(["--json"] if j else [])]
    peer.imports, peer.token_file, peer.point1_only = (), token_path, True
    if not peer.skip and peer.auth_why:
        peer.skip = f"this code cannot serve with bearer tokens ({peer.auth_why})"
    return peer


def ours_asgi_peers(src: Path) -> list[Peer]:
    """Ours on the ASGI path (issue 41): `ours-asgi`, bind() with `HttpSettings(fast_path=False)`
    (ours.py --asgi: every request through uvicorn's cycle), and `ours-starlette`, the same
    McpHttpApp mounted in Starlette and run by plain uvicorn (ours.py --starlette, at /mcp/).
    Both get point 1, the 100 sessions, every revision's quick and streamed points, the stateless point,
    the idle-session memory points (the same sessions as ours, held by another server side) and the pairs."""
    py, made = our_python(), []
    for name, flag, path in ((report.OURS_ASGI, "--asgi", "/mcp"), (report.OURS_STARLETTE, "--starlette", "/mcp/")):
        peer = ours_peer(name, src)
        peer.argv = (lambda f: lambda p, j: [py, str(BENCH / "ours.py"), str(p), f, *(["--json"] if j else [])])(flag)
        peer.imports, peer.path = (), path
        made.append(peer)
    return made


def cli_launcher() -> list[str]:
    """How to run this project's `mcp-sse-server` command (the .venv's script, else the module)."""
    script = ROOT / ".venv" / "bin" / "mcp-sse-server"
    return [str(script)] if script.exists() else [
        our_python(), "-c", "import sys; from mcp_sse_server.cli import main; sys.exit(main())"]


def served_by_cli(name: str, src: Path, options: list[str], cpus: str = str(SERVER_CPU)) -> Peer:
    """Ours' `add` server (bench/ours.py:build_server) run by `mcp-sse-server serve` with `options`
    (`--redis-url URL --workers N`, or none: the in-process store), on `cpus` with wrk; skipped
    when that CLI has no `--redis-url` (before it had one)."""
    env = our_env(src)
    argv = [*cli_launcher(), "serve", f"{BENCH / 'ours.py'}:build_server", "--host", "127.0.0.1",
            "--max-sessions", "200000", *options]
    peer = Peer(name, lambda p, j: [*argv, "--port", str(p)], env=env, python=our_python(), src=src,
                cpus=cpus, load_cpus=cpus if cpus != str(SERVER_CPU) else str(LOAD_CPU))
    probe = subprocess.run([*cli_launcher(), "serve", "--help"], capture_output=True, text=True,
                           env=dict(os.environ, **env), timeout=60)
    if "--redis-url" not in probe.stdout:
        peer.skip = "`mcp-sse-server serve` has no --redis-url here"
    return peer


def peers(baselines: dict[str, Path], src: Path = ROOT / "src") -> list[Peer]:
    """The servers, with a skip reason for any whose environment is missing;
    `baselines` ({name: src}) are more of ours, right after ours (whose code is `src`)."""
    py = our_python()
    official = str(PEERS / "official" / "bin" / "python")
    fast = str(PEERS / "fastmcp" / "bin" / "python")
    node = node_binary()
    ts_dir = PEERS / "ts"

    def flag(json_: bool) -> list[str]:
        return ["--json"] if json_ else []

    ours = [ours_peer(report.OURS, src)] + [ours_peer(name, base) for name, base in baselines.items()]
    ours.append(ours_jwt_peer(src))  # (not one of ours' versions: report.is_ours says no)
    ours += ours_asgi_peers(src)  # (nor these: the same code as ours, on the ASGI path)
    others = [
        Peer("official", lambda p, j: [official, str(BENCH / "peers" / "peer_official_sdk.py"), str(p), *flag(j)],
             json=True, imports=("from mcp.server.mcpserver import MCPServer",), python=official),
        Peer("fastmcp", lambda p, j: [fast, str(BENCH / "peers" / "peer_fastmcp.py"), str(p), *flag(j)],
             json=True, imports=("from fastmcp import FastMCP",), python=fast),
        Peer("typescript", lambda p, j: [node or "node", str(ts_dir / "peer_typescript_sdk.mjs"), str(p), *flag(j)],
             json=True, cwd=ts_dir),
        # Python's ceiling for one HTTP exchange: no framework, an asyncio.Protocol on httptools (issue 41).
        Peer(report.RAW, lambda p, j: [py, str(BENCH / "raw_protocol.py"), str(p), *flag(j)], json=True,
             sessions=False, python=py),
        # The ceiling: reads each body, as every MCP server must; then the same app without reading it.
        Peer(report.BARE, lambda p, j: [py, str(BENCH / "bare_asgi.py"), str(p), *flag(j)], json=True,
             sessions=False, python=py),
        Peer(report.BARE_NOREAD, lambda p, j: [py, str(BENCH / "bare_asgi.py"), str(p), "--no-read", *flag(j)],
             json=True, sessions=False, python=py),
    ]
    for peer, missing in ((others[0], not Path(official).exists()), (others[1], not Path(fast).exists()),
                          (others[2], node is None or not (ts_dir / "node_modules").is_dir())):
        if missing:
            peer.skip = "not installed: run bench/setup.sh"
    return ours + others


class Run:
    """One benchmark run: results accumulate in self.results (plain dicts)."""

    def __init__(self, settings: Settings, selected: list[Peer], ours: list[Peer]) -> None:
        self.s = settings
        self.peers = selected
        self.ours = ours  # ours and its baselines: the in-process and CLI rows run for these, whatever --servers says
        self.retries_left = RETRY_BUDGET
        self.quiet_budget = QUIET_BUDGET
        self.log_dir = RESULTS / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for old in self.log_dir.glob("*.log"):
            old.unlink()
        TOKENS.mkdir(parents=True, exist_ok=True)
        for old in TOKENS.glob("*.jwt"):
            old.unlink()
        self.results: dict[str, Any] = {
            "order": [p.name for p in selected], "http": {}, "memory": {}, "startup": {}, "redis": {},
            "inmemory": {}, "imports": {}, "cli": {}, "pairs": {}, "meta": self.meta(),
        }

    def meta(self) -> dict[str, Any]:
        cpu = "unknown CPU"
        try:
            cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                       if line.startswith("model name"))
        except (OSError, StopIteration):
            pass
        versions = [f"Python {platform.python_version()}"]
        for name in ("official", "fastmcp", "ts"):
            stamp = PEERS / name / ".installed"
            if stamp.exists():
                versions.append(stamp.read_text().strip())
        node = node_binary()
        if node:
            node_v = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
            versions.append(f"node {node_v}")
        wrk_v = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split("[")[0].strip()
        versions.append(wrk_v or "wrk")
        if not realtime_prefix():
            versions.append("wrk without realtime priority (chrt refused)")
        return {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "load_before": os.getloadavg()[0],
                "tree": self.tree(),
                "machine": f"{os.cpu_count()} x {cpu}, Linux {platform.release()}",
                "mode": self.s.mode, "versions": ", ".join(versions)}

    @staticmethod
    def tree() -> str:
        """Which code of ours was measured: the commit, and whether src/ had uncommitted changes."""
        head = git("rev-parse", "--short", "HEAD") or "unknown commit"
        return head + (" with uncommitted changes in src/" if git("status", "--porcelain", "--", "src") else "")

    def server(self, peer: Peer, json_replies: bool = False, tag: str = "") -> Server:
        port = free_port()
        name = f"{peer.name}{'-json' if json_replies else ''}{tag}"
        return Server(name, peer.argv(port, json_replies), port, cwd=peer.cwd, env=peer.env, log_dir=self.log_dir,
                      cpus=peer.cpus, path=peer.path, token_file=peer.token_file(port) if peer.token_file else None)

    def started(self, peer: Peer, srv: Server) -> None:
        self.results["startup"].setdefault(peer.name, []).append(srv.started_s)

    def point(self, srv: Server, counters: Callable[[], dict[str, float]] | None = None, full: float = 1.0,
              **kw: Any) -> dict[str, Any]:
        """Warm up, then one measured wrk point; an invalid warm-up invalidates it.

        Records the CPU share the server (with its workers) and wrk used, how long the server
        waited for its core while runnable (run_delay_ms: other work on its CPU, which shows in
        p99), and how much each of `counters` (cumulative figures: a redis-server's CPU seconds,
        its commands) grew during the measured point. Every server here
        saturates its core under this load (`full` cores: capped workers), so a share below DISTURBED means
        other work on the machine took part of the core: the point is measured
        again (at most twice, within the run's retry budget) and the best kept,
        marked as disturbed if it never got its core.
        """
        warm = wrk(srv.url, seconds=self.s.warmup, headers=srv.headers, **kw)
        if not warm.ok:
            return asdict(Load(invalid=f"during warm-up: {warm.invalid}"))
        best: Load | None = None
        for _ in range(3):
            self.wait_quiet(srv)
            pids = srv.pids()
            before = counters() if counters else {}
            cpu0, t0, waited0 = cpu_seconds(*pids), time.monotonic(), run_delay_ms(*pids)
            load = wrk(srv.url, seconds=self.s.seconds, headers=srv.headers, **kw)
            load.server_cpu = round((cpu_seconds(*pids) - cpu0) / (time.monotonic() - t0), 3)
            load.run_delay_ms = round(run_delay_ms(*pids) - waited0)
            if counters:
                after = counters()
                load.counters = {k: round(v - before.get(k, 0), 3) for k, v in after.items()}
                load.counters["seconds"] = round(time.monotonic() - t0, 3)
            if not load.ok or load.server_cpu >= DISTURBED * full:
                return asdict(load)
            if best is None or load.server_cpu > (best.server_cpu or 0):
                best = load
            if self.retries_left <= 0:
                break
            self.retries_left -= 1
            log(f"  the server got {load.server_cpu:.0%} of its core (other work on the machine): measuring again")
        assert best is not None
        best.disturbed = True
        return asdict(best)

    def wait_quiet(self, srv: Server) -> None:
        """Before a measured point, wait (bounded, per point and per run) until
        other work on this shared machine leaves the server's core idle. The
        server's own CPU time (finishing the warm-up, say) is not counted."""
        t0, limit = time.monotonic(), min(15.0, self.quiet_budget)
        while True:
            pids = srv.pids()
            own = cpu_seconds(*pids)
            busy = cpu_busy(0.5).get(f"cpu{SERVER_CPU}", 0.0) - (cpu_seconds(*pids) - own) / 0.5
            if busy < 0.1 or time.monotonic() - t0 >= limit:
                break
            if time.monotonic() - t0 < 0.6:
                log(f"  CPU {SERVER_CPU} is {busy:.0%} busy with other work: waiting up to {limit:.0f} s")
        self.quiet_budget = max(0.0, self.quiet_budget - (time.monotonic() - t0 - 0.5))

    def http(self, peer: Peer) -> None:
        entry: dict[str, Any] = {"json_offered": peer.json}
        self.results["http"][peer.name] = entry
        if peer.skip:
            entry["skip"] = peer.skip
            return
        if report.is_ours(peer.name):
            entry["shared_server"] = peer.shared
            if not peer.json:
                entry["json"] = {"not_offered": peer.json_why or "no JSON reply mode"}
        for json_replies in ((False, True) if peer.json else (False,)):
            key = "json" if json_replies else "sse"
            try:
                with self.server(peer, json_replies) as srv:
                    self.started(peer, srv)
                    self.one_session(peer, srv, entry, key)
                    if json_replies or peer.name == report.BARE_NOREAD or peer.point1_only:
                        continue  # (the app not reading the body: its 100-session point is the ceiling's)
                    log(f"{peer.name}: 100 sessions, 1 request each in flight")
                    opened = open_sessions(srv.url, 100, deadline=60)
                    if opened.error:
                        entry["sessions100"] = {"invalid": f"opening 100 sessions: {opened.error}"}
                    else:
                        entry["sessions100"] = self.point(srv, connections=100, threads=100,
                                                          sessions=opened.ids)
                    log(f"  {self.brief(entry['sessions100'])}")
                    if peer.name == report.BARE:
                        # The load generator's own check: the same 100 connections from one wrk
                        # thread. Similar figures mean thread-per-session wrk is not the limit.
                        log(f"{peer.name}: 100 connections from one wrk thread (load generator check)")
                        entry["gen_check"] = self.point(srv, connections=100)
                        log(f"  {self.brief(entry['gen_check'])}")
            except ServerFailed as exc:
                entry.setdefault(key, {"invalid": f"server failed: {first_last(exc)}"})
                log(f"{peer.name}: {exc}")
        if report.on_every_revision(peer.name):
            # Ours on each protocol revision, quick and streamed calls: stream logs live on 30 s
            # after each call, so these points are kept apart from the others.
            self.own_server(peer, entry, [key for key in report.REVISION_POINTS if key != "sse"], "-revisions")
        if not report.is_bare(peer.name) and not peer.point1_only:  # the bare app answers a fixed body
            self.own_server(peer, entry, [report.MODERN_KEY], "-modern")

    def one_session(self, peer: Peer, srv: Server, entry: dict[str, Any], key: str,
                    counters: Callable[[], dict[str, float]] | None = None, full: float = 1.0) -> None:
        """The 16-connection point, into entry[key]: "sse" or "json" replies (quick calls on a
        2025-06-18 session), or one of report.POINTS16: quick or streamed calls (the latter
        with a progress token each) on a session of that revision, or at a modern revision
        without a session (each call carries the _meta envelope and its headers). Also records
        how one reply travelled and the server's RSS after the point (what a stream log holds).
        A server that does not serve the revision gets {"not_served": why}."""
        call, revision = report.POINTS16.get(report.redis_point_call(key), report.POINTS16["sse"])
        streamed = call == report.STREAMED
        what = f"{key.upper()} replies" if key in ("sse", "json") else report.point_label(call, revision)
        conn, path = connect(srv.url, headers=srv.headers)
        try:
            sid = "" if is_modern(revision) else open_session(conn, path, "bench-wrk", revision)
            shape = reply_shape(conn, path, sid, revision, streamed)
        except NotServed as exc:
            entry[key] = {"not_served": str(exc)}
            log(f"{peer.name}: {what}: not served ({exc})")
            return
        except (OSError, http.client.HTTPException, SessionError) as exc:
            before = "the first call" if is_modern(revision) else "opening the session"
            entry[key] = {"invalid": f"{before}: {type(exc).__name__}: {exc}"}
            log(f"{peer.name}: {what}: {entry[key]['invalid']}")
            return
        finally:
            conn.close()
        log(f"{peer.name}: 16 connections, {'' if is_modern(revision) else 'one session, '}{what}")
        entry[key] = self.point(srv, counters, connections=16, session=sid, revision=revision, streamed=streamed,
                                cpus=peer.load_cpus, full=full)
        entry[key].update(reply=shape, rss_kb=sum(rss_kb(pid) for pid in srv.pids()))
        log(f"  {self.brief(entry[key])}; reply {shape}")

    def own_server(self, peer: Peer, entry: dict[str, Any], points: list[str], tag: str,
                   counters: Callable[[], dict[str, float]] | None = None) -> None:
        """16-connection points (keys of report.POINTS16, or report.REDIS_POINTS with `counters`),
        one after the other, on a server of their own, started fresh like the SSE point's."""
        try:
            with self.server(peer, tag=tag) as srv:
                self.started(peer, srv)
                for key in points:
                    self.one_session(peer, srv, entry, key, counters)
        except ServerFailed as exc:
            for key in points:
                entry.setdefault(key, {"invalid": f"server failed: {first_last(exc)}"})
            log(f"{peer.name}: {exc}")

    @staticmethod
    def brief(point: dict[str, Any]) -> str:
        if point.get("invalid"):
            return f"INVALID: {point['invalid']}"
        return (f"{point['rps']:,.0f} req/s, p50 {point['p50_us'] / 1000:.2f} ms, p99 {point['p99_us'] / 1000:.2f} ms,"
                f" CPU server {point['server_cpu']:.0%} wrk {point['wrk_cpu']:.0%}"
                + (f", server waited {point['run_delay_ms']:,} ms for its core" if point.get("run_delay_ms") else ""))

    def memory(self, peer: Peer) -> None:
        if peer.name == report.BARE_NOREAD or peer.point1_only:
            return  # the ceiling's process, reading or not: measured once; ours-jwt: point 1 only
        m: dict[str, Any] = {}
        self.results["memory"][peer.name] = m
        if peer.shared is not None:
            m["shared_server"] = peer.shared
        if peer.skip:
            m["skip"] = peer.skip
            return
        try:
            with self.server(peer, tag="-memory") as srv:
                self.started(peer, srv)
                time.sleep(0.5)
                m["empty_kb"] = rss_kb(srv.pid)
                log(f"{peer.name}: empty server {m['empty_kb'] / 1024:.1f} MB resident")
                if not peer.sessions:
                    return
                warm = open_sessions(srv.url, 20, workers=1)  # warm allocators and caches first
                if warm.error:
                    m["error"] = f"opening sessions: {warm.error}"
                    return
                time.sleep(0.5)
                # Points count every session the server holds (the start-up probe's and the
                # warm-up ones too): the official SDK and fastmcp refuse the 10,001st.
                held = 1 + len(warm.ids)
                before, opened = rss_kb(srv.pid), 0
                # The 100,000-session point (the 1 GB target) for ours only, not for its baselines.
                for count in self.s.session_counts + (self.s.ours_extra if peer.name == report.OURS else ()):
                    got = open_sessions(srv.url, count - held - opened, deadline=max(150.0, count / 400))
                    opened += len(got.ids)
                    if got.error:
                        m[f"error_{count}"] = f"stopped after {held + opened:,} sessions: {got.error}"
                        log(f"{peer.name}: {m[f'error_{count}']}")
                        return
                    time.sleep(1.0)
                    m[f"rss_kb_{count}"] = rss_kb(srv.pid)
                    m[f"per_kb_{count}"] = (m[f"rss_kb_{count}"] - before) / opened
                    log(f"{peer.name}: {count:,} idle sessions, {m[f'per_kb_{count}']:.1f} KB each")
        except ServerFailed as exc:
            m["error"] = f"server failed: {first_last(exc)}"
            log(f"{peer.name}: {exc}")

    def redis(self, ours: Peer) -> None:
        """Ours with its sessions in Redis (a redis-server of this run's own), into results["redis"],
        served by the CLI (`mcp-sse-server serve bench/ours.py:build_server`, with `--redis-url URL
        --workers N` or without: the in-process store), so both stores go through the same code:
        the 16-connection point on the in-process store and on the Redis store, one worker on the
        server core with redis-server and wrk on the load core (each on a fresh server, back to
        back); the same on the Redis store with 1 and 2 workers, where workers, redis-server and
        wrk all share both cores; and Redis's memory per idle session. Every point also records
        the redis-server's CPU time and commands (INFO commandstats) over the measured seconds."""
        entry: dict[str, Any] = self.results["redis"]
        if ours.skip:
            entry["skip"] = ours.skip
            return
        try:
            with RedisServer(str(LOAD_CPU), self.log_dir) as rs:
                entry["version"] = rs.info("server").get("redis_version", "?")

                def counters() -> dict[str, float]:
                    calls = {f"calls:{k}": v for k, v in rs.command_calls().items() if k != "info"}
                    return {"redis_cpu_s": cpu_seconds(rs.pid), "busy_cpu_s": busy_seconds(), **calls}

                src = ours.src or ROOT / "src"
                on_redis = ["--redis-url", rs.url, "--workers"]
                stores = {report.MEMORY_STORE: served_by_cli(f"{ours.name}-cli-{report.MEMORY_STORE}", src, []),
                          report.STORES_ALONE: ours_peer(f"{ours.name}-{report.STORES_ALONE}", src,
                                                         ("--redis", rs.url)),
                          report.REDIS_STORE: served_by_cli(f"{ours.name}-cli-{report.REDIS_STORE}", src,
                                                            [*on_redis, "1"])}
                if stores[report.REDIS_STORE].skip:
                    entry["skip"] = stores[report.REDIS_STORE].skip
                    return
                for key, peer in stores.items():
                    points = [key] if key == report.STORES_ALONE else [key, report.streamed_key(key)]
                    self.own_server(peer, entry, points, "", counters)
                rs.pin(BOTH_CPUS)
                for workers in report.WORKERS:
                    key = report.workers_key(workers)
                    peer = served_by_cli(f"{ours.name}-cli-{key}", src, [*on_redis, str(workers)], BOTH_CPUS)
                    self.own_server(peer, entry, [key], "", counters)
                self.capped_workers(ours.name, src, on_redis, entry, counters)
                self.redis_memory(stores[report.REDIS_STORE], rs, entry)
        except ServerFailed as exc:
            entry.setdefault("error", first_last(exc))
            log(f"redis: {exc}")

    def capped_workers(self, name: str, src: Path, on_redis: list[str], entry: dict[str, Any],
                       counters: Callable[[], dict[str, float]]) -> None:
        """1 and 2 workers on Redis, each held to report.WORKER_SHARE of a core (procs.CpuCap):
        two workers then need less than a core, and wrk and redis-server have the rest of the
        machine, so the ratio of their requests/s is the workers' scaling, not wrk's limit.

        Both servers are alive at once (idle but for their turn) and take turns, one point each,
        for the pairs' number of rounds: each round's ratio sees one state of this shared machine
        (points minutes apart drifted from 1.5x to 2.5x). Every round goes into
        entry[report.CAPPED_ROUNDS]; entry[capped_key(n)] holds the round of the median ratio."""
        why = CpuCap.why_not()
        keys = [report.capped_key(workers) for workers in report.WORKERS]
        if why:
            for key in keys:
                entry[key] = {"invalid": f"not measured: {why}"}
            return
        rounds: list[dict[str, Any]] = []
        try:
            with contextlib.ExitStack() as stack:
                servers = []
                for workers, key in zip(report.WORKERS, keys, strict=True):
                    peer = served_by_cli(f"{name}-cli-{key}", src, [*on_redis, str(workers)], BOTH_CPUS)
                    srv = stack.enter_context(self.server(peer))
                    self.started(peer, srv)
                    worker_pids = srv.pids()[1:] if workers > 1 else srv.pids()  # (not the idle supervisor)
                    stack.enter_context(CpuCap(worker_pids, report.WORKER_SHARE))
                    servers.append((workers, key, peer, srv))
                for i in range(self.s.pairs[0]):
                    log(f"capped workers, round {i + 1}")
                    measured: dict[str, Any] = {}
                    for workers, key, peer, srv in servers:
                        self.one_session(peer, srv, measured, key, counters, full=workers * report.WORKER_SHARE)
                    rounds.append(measured)
        except ServerFailed as exc:
            for key in keys:
                entry.setdefault(key, {"invalid": f"server failed: {first_last(exc)}"})
            log(f"capped workers: {exc}")
        entry[report.CAPPED_ROUNDS] = rounds
        median = report.median_capped_round(rounds)
        if median is not None:
            entry.update(median)
        elif rounds:
            entry.update(rounds[-1])

    def redis_memory(self, peer: Peer, rs: RedisServer, entry: dict[str, Any]) -> None:
        """Redis's used_memory (INFO memory) and the server's RSS before and after opening idle sessions."""
        count = min(max(self.s.session_counts), 10_000)
        m: dict[str, Any] = {"sessions": count}
        entry["memory"] = m
        with self.server(peer, tag="-memory") as srv:
            open_sessions(srv.url, 20, workers=1)  # warm up, as the memory points do
            time.sleep(0.5)
            keys0, used0, rss0 = rs.command("DBSIZE"), int(rs.info("memory")["used_memory"]), rss_kb(srv.pid)
            got = open_sessions(srv.url, count, deadline=max(150.0, count / 200))
            time.sleep(1.0)
            if got.error:
                m["error"] = f"stopped after {len(got.ids):,} sessions: {got.error}"
            used1 = int(rs.info("memory")["used_memory"])
            m.update(opened=len(got.ids), keys=int(rs.command("DBSIZE")) - int(keys0), used_before=used0,
                     used_after=used1, rss_kb_before=rss0, rss_kb_after=rss_kb(srv.pid))
        if got.ids:
            m["bytes_per_session"] = (used1 - used0) / len(got.ids)
            log(f"redis: {len(got.ids):,} idle sessions, {m['bytes_per_session']:,.0f} bytes of Redis memory each")

    def inmemory(self) -> None:
        rows = self.results["inmemory"]
        official = PEERS / "official" / "bin" / "python"
        if official.exists():
            out = self.pinned([str(official), str(BENCH / "peers" / "peer_inmemory_latency.py")])
            match = re.search(r"median_us=([\d.]+)", out)
            rows["official-sdk"] = {"median_us": float(match[1])} if match else {"invalid": out[-300:]}
        else:
            rows["official-sdk"] = {"skipped": "not installed: run bench/setup.sh"}
        # Rows "inmemory-client" for ours, "inmemory-client@REF" for ours@REF. Each version runs
        # inmemory_rounds times, the versions taking turns, so they all see the machine's same
        # moments; the round with the lowest median is kept (other work only ever slows a round
        # down), and every round's median is listed ("medians").
        for _ in range(self.s.inmemory_rounds):
            for peer in self.ours:
                out = self.pinned([our_python(), str(BENCH / "inmemory.py"), str(self.s.inmemory_calls)], peer.env)
                lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
                if not lines:
                    for way in ("memory-transport", "inmemory-client"):
                        rows.setdefault(way + report.ref_suffix(peer.name), {"invalid": out[-300:]})
                for row in lines:
                    key = row.pop("name") + report.ref_suffix(peer.name)
                    kept = rows.get(key)
                    medians = (kept or {}).get("medians", [])
                    if "median_us" in row:
                        medians = [*medians, row["median_us"]]
                        if kept is None or row["median_us"] < kept.get("median_us", float("inf")):
                            kept = rows[key] = row
                    elif kept is None:
                        kept = rows[key] = row
                    if medians:
                        kept["medians"] = medians
        for name, row in rows.items():
            log(f"in-memory {name}: {row}")

    def pinned(self, argv: list[str], env: dict[str, str] | None = None) -> str:
        """Run a short in-process benchmark on the server core; its stdout (or why it failed)."""
        try:
            proc = subprocess.run(["taskset", "-c", str(SERVER_CPU), *argv], capture_output=True, text=True,
                                  env=dict(os.environ, **(env or {})), timeout=300, cwd=BENCH)
        except subprocess.TimeoutExpired:
            return "timed out"
        return proc.stdout if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"

    def imports(self) -> None:
        """Wall time of `python -c STATEMENT` less that of `python -c pass`, medians."""
        for peer in self.peers:
            if not peer.imports or (peer.skip and not report.is_ours(peer.name)) or not peer.python:
                continue
            env = dict(os.environ, **peer.env)

            def timed(code: str, python: str = peer.python, env: dict[str, str] = env) -> tuple[float, float] | None:
                """(wall, CPU) seconds of one interpreter running `code`; CPU time is what
                other work on the machine cannot inflate."""
                before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                ok = subprocess.run(["taskset", "-c", str(SERVER_CPU), python, "-c", code], env=env,
                                    capture_output=True, timeout=60).returncode == 0
                wall = time.perf_counter() - t
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                return (wall, cpu) if ok else None

            rows = self.results["imports"][peer.name] = []
            for code in peer.imports:
                bare, full = [], []
                for _ in range(self.s.import_runs):  # interleaved, so both see the same conditions
                    bare.append(timed("pass"))
                    full.append(timed(code))
                if None in full or None in bare:
                    rows.append({"code": code, "error": "failed"})
                    continue
                row = {"code": code}
                for i, what in enumerate(("ms", "cpu_ms")):
                    row[what] = (statistics.median(f[i] for f in full if f)  # type: ignore[index]
                                 - statistics.median(b[i] for b in bare if b)) * 1000  # type: ignore[index]
                rows.append(row)
                log(f"{code}: {row['ms']:.1f} ms, CPU {row['cpu_ms']:.1f} ms")

    def cli(self, peer: Peer) -> None:
        """Spawn `mcp-sse-server serve` (from `peer`'s code) to its first answered initialize, a few times."""
        cli: dict[str, Any] = {}
        self.results["cli"][peer.name] = cli
        launcher = cli_launcher()
        env = peer.env
        probe = subprocess.run([*launcher, "serve", "--help"], capture_output=True, text=True,
                               env=dict(os.environ, **env), timeout=60)
        if probe.returncode != 0:
            cli["skip"] = "the CLI's `serve` is not available yet"
            log(f"{peer.name} CLI: {cli['skip']}")
            return
        cli["help"] = probe.stdout
        times = []
        for i in range(3):
            port = free_port()
            argv = [*launcher, *cli_serve_args(probe.stdout, port)]
            try:
                with Server(f"{peer.name}-cli-{i}", argv, port, env=env, log_dir=self.log_dir) as srv:
                    times.append(srv.started_s)
            except ServerFailed as exc:
                cli["error"] = first_last(exc)
                log(f"{peer.name} CLI: {exc}")
                return
        cli["seconds"] = times
        log(f"{peer.name} CLI serve → first answer: {statistics.median(times) * 1000:.0f} ms")

    def pairs(self) -> None:
        """The must-hold comparisons measured again side by side, into results["pairs"]: ours'
        quick call on a 2025-06-18 session (SSE), the same call at the stateless revision and
        with JSON replies, ours-jwt's SSE and JSON calls (each right after ours' same call), ours'
        streamed call (progress, then the reply), ours-asgi's, ours-starlette's and the raw
        protocol's quick call (issue 41), the body-reading ceiling's, and every baseline's quick
        and streamed calls (ours@540ab25, ours@a3542c1, ...), each on a server of
        its own started for this (all alive at once, idle but for their turn), 16 connections,
        one point each in turn, for a few rounds. Taking turns, every figure of a round sees the
        same state of this shared machine, so their ratios do not drift with it the way points
        measured minutes apart do. report.must_hold compares the median of the rounds."""
        rounds, seconds = self.s.pairs
        by_name = {peer.name: peer for peer in self.peers if not peer.skip}
        ours = by_name.get(report.OURS)
        if ours is None:
            return
        # Every baseline's quick call (540ab25's, a3542c1's, ...), and its streamed one (issue 41).
        bases = [p.name for p in self.ours if p.name != report.OURS and p.name in by_name]
        streamed = report.revision_key(report.STREAMED, report.REVISIONS[0])
        jwt = by_name.get(report.OURS_JWT)
        # (key, peer, JSON replies, revision); the key names the point in results["pairs"]
        wanted = [(report.pair_key(report.OURS, "sse"), ours, False, report.REVISIONS[0])]
        if jwt:
            wanted.append((report.pair_key(report.OURS_JWT, "sse"), jwt, False, report.REVISIONS[0]))
        wanted.append((report.pair_key(report.OURS, report.MODERN_KEY), ours, False, report.MODERN))
        if ours.json:
            wanted.append((report.pair_key(report.OURS, "json"), ours, True, report.REVISIONS[0]))
            if jwt and jwt.json:
                wanted.append((report.pair_key(report.OURS_JWT, "json"), jwt, True, report.REVISIONS[0]))
        wanted.append((report.pair_key(report.OURS, streamed), ours, False, report.REVISIONS[0]))
        for name in (report.OURS_ASGI, report.OURS_STARLETTE, report.RAW, report.BARE):
            if name in by_name:
                wanted.append((report.pair_key(name, "sse"), by_name[name], False, report.REVISIONS[0]))
        for name in bases:
            wanted.append((report.pair_key(name, "sse"), by_name[name], False, report.REVISIONS[0]))
            wanted.append((report.pair_key(name, streamed), by_name[name], False, report.REVISIONS[0]))
        entry: dict[str, Any] = self.results["pairs"]
        entry.update(rounds=rounds, seconds=seconds, points={key: [] for key, *_ in wanted})
        log(f"must-hold pairs, interleaved: {', '.join(entry['points'])}; {rounds} rounds of {seconds:g} s points")
        try:
            with contextlib.ExitStack() as stack:
                servers: dict[tuple[str, bool], Server] = {}
                points = []
                for key, peer, json_replies, revision in wanted:
                    srv = servers.get((peer.name, json_replies))
                    if srv is None:
                        srv = servers[(peer.name, json_replies)] = stack.enter_context(
                            self.server(peer, json_replies, tag="-pairs"))
                    conn, path = connect(srv.url, headers=srv.headers)
                    try:
                        sid = "" if is_modern(revision) else open_session(conn, path, "bench-pairs", revision)
                    finally:
                        conn.close()
                    points.append((key, srv, sid, revision, key.endswith(":" + streamed)))
                for i in range(rounds):
                    for key, srv, sid, revision, progress in points:
                        warm = wrk(srv.url, connections=16, seconds=1, session=sid, revision=revision,
                                   headers=srv.headers, streamed=progress)
                        if not warm.ok:
                            entry["points"][key].append(asdict(Load(invalid=f"during warm-up: {warm.invalid}")))
                            continue
                        self.wait_quiet(srv)
                        pids = srv.pids()
                        cpu0, t0 = cpu_seconds(*pids), time.monotonic()
                        load = wrk(srv.url, connections=16, seconds=seconds, session=sid, revision=revision,
                                   headers=srv.headers, streamed=progress)
                        load.server_cpu = round((cpu_seconds(*pids) - cpu0) / (time.monotonic() - t0), 3)
                        entry["points"][key].append(asdict(load))
                        log(f"  round {i + 1} {key}: {self.brief(asdict(load))}")
        except (ServerFailed, OSError, http.client.HTTPException, SessionError) as exc:
            entry["error"] = first_last(exc)
            log(f"must-hold pairs: {entry['error']}")

    def go(self, redis: bool = False) -> dict[str, Any]:
        for peer in self.peers:
            if peer.skip:
                log(f"{peer.name}: skipped: {peer.skip}")
            self.http(peer)
            self.memory(peer)
        self.pairs()
        if redis:
            self.redis(next(p for p in self.ours if p.name == report.OURS))
        self.inmemory()
        self.imports()
        for peer in self.ours:
            self.cli(peer)
        return self.results


def first_last(exc: Exception) -> str:
    """The first and last lines of a failure (what happened, and the server's last word)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " … ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else type(exc).__name__


def cli_serve_args(help_text: str, port: int) -> list[str]:
    """`serve` arguments on `port`, loopback: no target, the built-in demo (as scripts/serve.sh)."""
    args = ["serve", "--port", str(port)]
    if "--host" in help_text:
        args += ["--host", "127.0.0.1"]
    return args


def chart(readme: bool) -> None:
    """plot.py's chart of latest.json, with matplotlib from bench/.peers/plot (bench/setup.sh), into
    results/throughput.png, and with --readme into bench/throughput.png too; skipped, saying so,
    where matplotlib is not installed."""
    python = PEERS / "plot" / "bin" / "python"
    if not python.exists():
        log("chart skipped: matplotlib is not installed (bench/setup.sh puts it in bench/.peers/plot)")
        return
    for out in [RESULTS / "throughput.png", *([BENCH / "throughput.png"] if readme else [])]:
        done = subprocess.run([str(python), str(BENCH / "plot.py"), str(RESULTS / "latest.json"), str(out)],
                              capture_output=True, text=True, cwd=BENCH, timeout=120)
        log(f"chart: {out}" if done.returncode == 0 else f"chart failed: {done.stderr.strip()[-300:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter points, memory at 1,000 sessions only")
    parser.add_argument("--servers", help=f"comma-separated subset of {','.join([*ORDER, REDIS])} ({REDIS}: ours"
                        " on the Redis store, 1 and 2 workers; needs redis-server, skipped without it by default;"
                        f" {report.OURS_JWT}: ours with bearer tokens, point 1 only, with ours beside it)")
    parser.add_argument("--sessions", help="idle-session memory points, e.g. 1000,10000,100000")
    parser.add_argument("--baseline", action="append", default=[], metavar="REF",
                        help="also measure ours from git REF's src/ (as server ours@REF) and compare before/after;"
                        " repeatable")
    parser.add_argument("--src", type=Path, default=ROOT / "src", metavar="PATH",
                        help="measure ours from PATH (a copy of src/, say) instead of the working tree's src/")
    parser.add_argument("--readme", action="store_true", help="write the tables into bench/README.md")
    args = parser.parse_args()
    if os.cpu_count() is None or os.cpu_count() < 2:  # type: ignore[operator]
        sys.exit("needs two CPUs: one for the servers, one for the load generator")
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: run bench/setup.sh")
    os.sched_setaffinity(0, {LOAD_CPU})  # this process opens sessions: it is load, too
    settings = QUICK if args.quick else FULL
    if args.sessions:
        settings.session_counts = tuple(sorted(int(n) for n in args.sessions.split(",")))
        settings.ours_extra = ()
    wanted = args.servers.split(",") if args.servers else [*ORDER, *([REDIS] if shutil.which("redis-server") else [])]
    if report.BARE in wanted:  # the ceiling comes with its second row, the app that does not read the body
        wanted.append(report.BARE_NOREAD)
    if report.OURS_JWT in wanted and report.OURS not in wanted:  # ours-jwt is compared with ours
        wanted.append(report.OURS)
    unknown = set(wanted) - {*ORDER, REDIS}
    if unknown:
        sys.exit(f"unknown servers: {', '.join(sorted(unknown))}")
    baselines = {report.OURS + "@" + ref: baseline_src(ref) for ref in dict.fromkeys(args.baseline)}
    ours_src = args.src.resolve()
    if not (ours_src / "mcp_sse_server").is_dir():
        sys.exit(f"--src {args.src}: no mcp_sse_server package there")
    everything = peers({name: base for name, (base, _) in baselines.items()}, ours_src)
    ours = [p for p in everything if report.is_ours(p.name)]  # (not ours-jwt: same code as ours)
    # A before/after comparison needs ours: --baseline brings it in, whatever --servers says.
    selected = [p for p in everything if p.name in wanted or (baselines and report.is_ours(p.name))]
    # Byte-compile our package as installing a wheel would (the peers' pip installs did so
    # for theirs): with PYTHONDONTWRITEBYTECODE set, src/ would otherwise be compiled at
    # every start, and import and start-up times would count the compiler.
    for src in (p.src for p in ours if p.src):
        subprocess.run([our_python(), "-m", "compileall", "-q", str(src / "mcp_sse_server")],
                       capture_output=True, timeout=300)
    t0 = time.monotonic()
    run = Run(settings, selected, ours)
    run.results["meta"]["baselines"] = {name: commit for name, (_, commit) in baselines.items()}
    if ours_src != (ROOT / "src").resolve():
        run.results["meta"]["tree"] = f"{ours_src} (--src)"
    try:
        results = run.go(redis=REDIS in wanted)
    finally:
        kill_all()
    results["meta"]["load_after"] = os.getloadavg()[0]
    table = report.render(results)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=1))
    (RESULTS / "latest.md").write_text(table)
    if args.readme:
        report.splice_readme(BENCH / "README.md", table)
    chart(args.readme)
    print(table)
    log(f"done in {time.monotonic() - t0:.0f} s; tables in {RESULTS / 'latest.md'}, server logs in {RESULTS / 'logs'}")


if __name__ == "__main__":
    main()
