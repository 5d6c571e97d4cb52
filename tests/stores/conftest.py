"""A real redis-server for the store tests, and a fresh key prefix per test.

``redis_server`` (session-scoped) runs Debian's ``redis-server`` on a free
loopback port, without persistence, in a temp dir, and stops it at the end.
``scripts/setup.sh`` (``setup_redis``) installs it; without it the Redis tests
skip, which ``MCP_TEST_NO_SKIP=1`` turns into failures. Each test works under
its own key prefix and deletes its keys afterwards (``redis_prefix``).

``workers`` builds apps (workers) that share one Redis, one test clock and one gate,
for the tests of what crosses workers; ``open_on`` opens an initialized session on one.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

import pytest

from http_transport.conftest import Clock, Gate, Session, build_server, call, initialize_message, notification
from mcp_sse_server.stores.redis import RedisEventLog, RedisSessionStore
from mcp_sse_server.stores.redis_routing import WorkerRouter
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp

redis_asyncio = pytest.importorskip("redis.asyncio", reason="redis-py is not installed (pip install -e '.[redis]')")

# Bounded waits: a server that does not come up in this long has failed.
START_WAIT = 10.0
# The revision the cross-worker tests speak (the first with resumable streams).
NEW = "2025-11-25"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process on 127.0.0.1; ``stop()`` and ``start()`` again on the same port."""

    def __init__(self, executable: str, directory: Path, port: int | None = None) -> None:
        self.executable = executable
        self.directory = directory
        # A port picked here can be taken by another process before redis-server binds it: the
        # first start then picks another. A port given, or one already served, is kept.
        self._may_move = port is None
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        for _ in range(5):
            if self._start_once():
                self._may_move = False
                return
            self.port = free_port()
        raise RuntimeError(f"redis-server found no free port; see {self.directory}/redis.log")

    def _start_once(self) -> bool:
        """True once this redis-server answers; False when it exited and another port may be tried."""
        assert self.process is None
        log = (self.directory / "redis.log").open("ab")
        options = {
            "bind": "127.0.0.1",
            "port": str(self.port),
            "save": "",  # no persistence
            "appendonly": "no",
            "dir": str(self.directory),
            "protected-mode": "yes",
            "daemonize": "no",
            "loglevel": "warning",
        }
        arguments = [item for name, value in options.items() for item in (f"--{name}", value)]
        self.process = subprocess.Popen(
            [self.executable, *arguments],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                status = self.process.returncode
                self.process = None
                if self._may_move:
                    return False
                raise RuntimeError(f"redis-server exited with {status}; see {self.directory}/redis.log")
            if self._answers_as(self.process.pid):
                return True
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {START_WAIT} s")

    def _answers_as(self, pid: int) -> bool:
        """The server on our port answers, and it is this process (not another one's redis-server)."""
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
            s.sendall(b"INFO server\r\n")
            reply = b""
            while b"process_id:" not in reply or not reply.endswith(b"\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
            return f"process_id:{pid}\r\n".encode() in reply
        return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=START_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=START_WAIT)


def _executable() -> str:
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh: setup_redis installs Debian's package)")
    return executable


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(_executable(), tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server for this test alone (to stop and restart it)."""
    server = RedisServer(_executable(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_prefix() -> str:
    return f"t{secrets.token_hex(6)}"


@contextlib.asynccontextmanager
async def client_for(server: RedisServer, prefix: str) -> AsyncIterator[redis_asyncio.Redis]:
    """A client of ``server`` that deletes the keys under ``prefix`` when done."""
    client = redis_asyncio.Redis.from_url(server.url)
    try:
        yield client
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await client.delete(*keys)
        await client.aclose()


@pytest.fixture
async def redis_client(redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[redis_asyncio.Redis]:
    async with client_for(redis_server, redis_prefix) as client:
        yield client


@pytest.fixture
async def second_client(redis_server: RedisServer) -> AsyncIterator[redis_asyncio.Redis]:
    """Another connection pool to the same server: a second worker."""
    client = redis_asyncio.Redis.from_url(redis_server.url)
    try:
        yield client
    finally:
        await client.aclose()


class Workers(Protocol):
    """Builds one worker: an app on the shared Redis stores."""

    def __call__(self, name: str | None = None, *, heartbeat_ttl: float = 10.0) -> McpHttpApp:
        """``name`` gives the worker a ``WorkerRouter`` (routing, leases, reaping); ``None`` stores only."""
        ...


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
async def workers(gate: Gate, redis_server: RedisServer, redis_prefix: str) -> AsyncIterator[Workers]:
    """Workers on one Redis under the test's prefix, shut down at the end of the test."""
    clock = Clock()
    apps: list[McpHttpApp] = []
    async with client_for(redis_server, redis_prefix) as client:

        def worker(name: str | None = None, *, heartbeat_ttl: float = 10.0) -> McpHttpApp:
            limits = HttpLimits()
            router = (
                None if name is None else WorkerRouter(client, name, heartbeat_ttl=heartbeat_ttl, prefix=redis_prefix)
            )
            app = McpHttpApp(
                build_server(gate),
                path="/mcp",
                limits=limits,
                clock=clock,
                session_store=RedisSessionStore(client, prefix=redis_prefix),
                event_log=RedisEventLog(client, limits.backlog_limit, limits.replay_buffer_size, prefix=redis_prefix),
                router=router,
            )
            apps.append(app)
            return app

        yield worker
        for app in apps:
            await app.shutdown(deadline=0.2)


async def open_on(app: McpHttpApp, revision: str = NEW) -> str:
    """Open and initialize a session on ``app``; its id."""
    opened = await call(app, body=initialize_message(protocol_version=revision))
    assert opened.status == 200, opened.body
    session_id: str = opened.headers["mcp-session-id"]
    done = await Session(app, session_id, revision).post(notification("notifications/initialized")).finish()
    assert done.status == 202
    return session_id
