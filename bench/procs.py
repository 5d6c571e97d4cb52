"""Start a server pinned to the server core, wait until it answers, kill it;
the same for a redis-server of the run's own (RedisServer), with a tiny RESP
client to read its INFO.

Every server runs in its own process group, and every group still alive is
killed on exit (normal, exception or signal), so no run leaves a server
behind.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from mcp_http import SessionError, connect, initialize

SERVER_CPU = 0
LOAD_CPU = 1

_live: set[int] = set()  # process-group ids of servers not yet reaped


def _kill_group(pgid: int, grace: float = 3.0, leader: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the group, wait up to `grace` seconds for all of it to exit, then SIGKILL it.
    `leader`: the group's leader as started here, reaped while waiting: an exited leader
    stays a zombie, and so a member of its group, until it is reaped, and would hold the
    wait for the whole grace."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    stop_at = time.monotonic() + grace
    while time.monotonic() < stop_at:
        if leader is not None:
            leader.poll()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def kill_all() -> None:
    """Kill every server group this process started and has not reaped."""
    for pgid in list(_live):
        _kill_group(pgid, grace=1.0)
        _live.discard(pgid)


def _on_signal(signum: int, _frame: object) -> None:
    kill_all()
    raise SystemExit(128 + signum)


atexit.register(kill_all)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGHUP, _on_signal)


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerFailed(RuntimeError):
    """The server exited or never answered initialize."""


class Server:
    """A server process on SERVER_CPU; a context manager that always kills it.

    `argv` is a function of the port. `started_s` is the time from spawning
    the process to its first answered initialize (start-up time). `cpus`
    (taskset's list, SERVER_CPU by default) is where it and its workers may run.
    `token_file`: where a server serving with bearer tokens (ours.py --jwt) writes the one
    access token it accepts before it listens; every request the harness sends it then
    carries `headers` (`Authorization: Bearer <token>`), the readiness initialize included.
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        port: int,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        log_dir: Path,
        path: str = "/mcp",
        ready_timeout: float = 60.0,
        cpus: str = str(SERVER_CPU),
        token_file: Path | None = None,
    ) -> None:
        self.name, self.argv, self.port, self.cwd, self.cpus = name, argv, port, cwd, cpus
        self.token_file = token_file
        self.headers: dict[str, str] = {}  # what every request to it carries (set once the token is read)
        self.env = dict(os.environ, **(env or {}))
        self.url = f"http://127.0.0.1:{port}{path}"
        self.log_path = log_dir / (re.sub(r"[^\w@.+-]", "_", name) + ".log")  # `ours@REF` may hold a slash
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_s = 0.0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid  # taskset execs the server, so this is the server itself

    def pids(self) -> list[int]:
        """The server and its child processes (the workers of a server that forks them)."""
        return [self.pid, *children(self.pid)]

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> Server:
        if self.token_file is not None:  # (an earlier server on the same port may have left one)
            self.token_file.unlink(missing_ok=True)
        log = self.log_path.open("ab")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            ["taskset", "-c", self.cpus, *self.argv],
            cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        _live.add(self.proc.pid)
        try:
            self._wait_ready(t0)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, t0: float) -> None:
        stop_at = t0 + self.ready_timeout
        last = "no answer"
        while time.perf_counter() < stop_at:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ServerFailed(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self.token_file is not None:
                try:
                    self.headers = {"Authorization": "Bearer " + self.token_file.read_text().strip()}
                except FileNotFoundError:  # not written yet: it is written before the server listens
                    time.sleep(0.005)
                    continue
            conn, path = connect(self.url, timeout=5.0, headers=self.headers)
            try:
                initialize(conn, path, "bench-ready")
                self.started_s = time.perf_counter() - t0
                return
            except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected) as exc:
                last = repr(exc)
            except (OSError, http.client.HTTPException, SessionError) as exc:
                raise ServerFailed(f"{self.name}: {exc}\n{self.log_tail()}") from exc
            finally:
                conn.close()
            time.sleep(0.005)
        raise ServerFailed(f"{self.name} did not answer within {self.ready_timeout:.0f} s ({last})")

    def stop(self) -> None:
        if self.proc is None:
            return
        _kill_group(self.proc.pid, leader=self.proc)
        _live.discard(self.proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def children(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


class RedisServer:
    """Debian's redis-server on a free loopback port, without persistence, in a temp
    dir, pinned with taskset to `cpus`; a context manager that always stops it."""

    def __init__(self, cpus: str, log_dir: Path, extra: tuple[str, ...] = ()) -> None:
        self.cpus, self.log_path = cpus, log_dir / "redis-server.log"
        self.extra = extra  # more options (bench/cluster.py: a cluster node's)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.dir: str | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> RedisServer:
        exe = shutil.which("redis-server")
        if exe is None:
            raise ServerFailed("redis-server is not installed (scripts/setup.sh installs Debian's package)")
        self.dir = tempfile.mkdtemp(prefix="bench-redis-")
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            ["taskset", "-c", self.cpus, exe, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--daemonize", "no", "--loglevel", "warning", *self.extra],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        _live.add(self.proc.pid)
        stop_at = time.monotonic() + 10
        while time.monotonic() < stop_at:
            if self.proc.poll() is not None:
                self.stop()
                raise ServerFailed(f"redis-server exited with {self.proc.returncode}; see {self.log_path}")
            with contextlib.suppress(OSError):
                # Its own answer: if the port was taken meanwhile, another redis-server answers PING.
                if self.command("PING") == "PONG" and self.info("server").get("process_id") == str(self.pid):
                    return self
            time.sleep(0.05)
        self.stop()
        raise ServerFailed(f"redis-server did not answer on port {self.port} within 10 s")

    def command(self, *args: str) -> str | int:
        """One command over a fresh connection; its simple, integer or bulk-string reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(f"*{len(args)}\r\n".encode() + b"".join(
                f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args))
            f = s.makefile("rb")
            line = f.readline().rstrip(b"\r\n")
            kind, rest = line[:1], line[1:].decode()
            if kind == b"$":
                return f.read(int(rest) + 2)[:-2].decode() if int(rest) >= 0 else ""
            if kind == b":":
                return int(rest)
            if kind == b"-":
                raise RuntimeError(f"redis: {rest}")
            return rest

    def info(self, section: str) -> dict[str, str]:
        """INFO `section` as {field: value}."""
        lines = str(self.command("INFO", section)).splitlines()
        return dict(line.split(":", 1) for line in lines if ":" in line and not line.startswith("#"))

    def command_calls(self) -> dict[str, int]:
        """INFO commandstats: calls so far per command (those run inside scripts included)."""
        return {name.removeprefix("cmdstat_"): int(value.split("calls=", 1)[1].split(",", 1)[0])
                for name, value in self.info("commandstats").items()}

    def pin(self, cpus: str) -> None:
        """Move it (every thread) to `cpus`."""
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(self.pid)], capture_output=True, check=True, timeout=10)

    def stop(self) -> None:
        if self.proc is not None:
            _kill_group(self.proc.pid, leader=self.proc)
            _live.discard(self.proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


CGROUP_CPU = Path("/sys/fs/cgroup/cpu")  # cgroup v1's cpu controller (cfs quota), as these machines mount it


class CpuCap:
    """Each of `pids` limited to `share` of one core (a cgroup of its own, cfs quota), until exit.

    What the capped workers points stand on: with every worker held to a fraction of a core, N
    workers need N times that fraction, which two cores hold with room left for wrk and
    redis-server; so the load generator is not what limits N workers. `why_not()` says why
    caps cannot be set here (no cgroup v1 cpu controller, or no permission), None when they can.
    """

    def __init__(self, pids: list[int], share: float) -> None:
        self.pids, self.share = pids, share
        self.groups: list[Path] = []

    @staticmethod
    def why_not() -> str | None:
        if not (CGROUP_CPU / "cpu.cfs_quota_us").exists():
            return f"no cgroup v1 cpu controller at {CGROUP_CPU}"
        if not os.access(CGROUP_CPU, os.W_OK):
            return f"{CGROUP_CPU} is not writable (run as root)"
        return None

    def __enter__(self) -> CpuCap:
        # 10 ms periods (the kernel's default is 100 ms): a capped worker is held back 6 ms at a
        # time instead of 60, so a point of a few seconds sees its share evenly.
        period = 10_000
        for pid in self.pids:
            group = CGROUP_CPU / f"mcp-bench-{os.getpid()}-{pid}"
            group.mkdir(exist_ok=True)
            self.groups.append(group)
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(round(period * self.share)))
            (group / "cgroup.procs").write_text(str(pid))
        return self

    def __exit__(self, *exc_info: object) -> None:
        for pid, group in zip(self.pids, self.groups, strict=False):
            with contextlib.suppress(OSError):
                (CGROUP_CPU / "cgroup.procs").write_text(str(pid))  # back to the root group
            with contextlib.suppress(OSError):
                group.rmdir()
