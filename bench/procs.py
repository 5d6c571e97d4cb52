"""Start a server pinned to the server core, wait until it answers, kill it.

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
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from mcp_http import SessionError, connect, initialize

SERVER_CPU = 0
LOAD_CPU = 1

_live: set[int] = set()  # process-group ids of servers not yet reaped


def _kill_group(pgid: int, grace: float = 3.0) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    stop_at = time.monotonic() + grace
    while time.monotonic() < stop_at:
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
    the process to its first answered initialize (start-up time).
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
    ) -> None:
        self.name, self.argv, self.port, self.cwd = name, argv, port, cwd
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

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> Server:
        log = self.log_path.open("ab")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(SERVER_CPU), *self.argv],
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
            conn, path = connect(self.url, timeout=5.0)
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
        _kill_group(self.proc.pid)
        _live.discard(self.proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
