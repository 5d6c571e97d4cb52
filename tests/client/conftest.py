"""Real servers for the client tests: the official SDK in a subprocess (stdio,
legacy SSE, Streamable HTTP) and our own math server over stdio.

Every subprocess is killed when its fixture ends, whatever the test did.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PYTHON = sys.executable
SDK_PEER = str(HERE / "sdk_peer.py")
MATH_STDIO = str(HERE / "math_stdio_server.py")
# Bounds for waits that only matter when something is broken.
START_TIMEOUT = 30.0
WAIT = 10.0


class Peer:
    """An SDK server process serving HTTP on a free loopback port."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [PYTHON, SDK_PEER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=HERE
        )
        self.stderr: list[str] = []
        self._watches: list[tuple[str, asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._lock = threading.Lock()
        port_line: list[str] = []
        ready = threading.Event()

        def read_stdout() -> None:
            assert self.process.stdout is not None
            port_line.append(self.process.stdout.readline().decode())
            ready.set()

        def read_stderr() -> None:
            assert self.process.stderr is not None
            for raw in self.process.stderr:
                line = raw.decode(errors="replace")
                with self._lock:
                    self.stderr.append(line)
                    for text, loop, event in self._watches:
                        if text in line:
                            loop.call_soon_threadsafe(event.set)

        threading.Thread(target=read_stdout, daemon=True).start()
        threading.Thread(target=read_stderr, daemon=True).start()
        if not ready.wait(START_TIMEOUT) or not port_line[0].startswith("PORT "):
            self.kill()
            raise RuntimeError(f"SDK peer {args} did not start: {''.join(self.stderr)[-2000:]}")
        self.port = int(port_line[0].split()[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def watch(self, text: str) -> asyncio.Event:
        """An event set once a stderr line contains ``text`` (already, or later)."""
        event = asyncio.Event()
        with self._lock:
            if any(text in line for line in self.stderr):
                event.set()
            self._watches.append((text, asyncio.get_running_loop(), event))
        return event

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)


def _peer(*args: str) -> Iterator[Peer]:
    peer = Peer(*args)
    try:
        yield peer
    finally:
        peer.kill()


@pytest.fixture(scope="session")
def sdk_http() -> Iterator[Peer]:
    """The SDK's Streamable HTTP server answering with SSE streams."""
    yield from _peer("http")


@pytest.fixture(scope="session")
def sdk_http_json() -> Iterator[Peer]:
    """The SDK's Streamable HTTP server answering with JSON bodies."""
    yield from _peer("http", "--json")


@pytest.fixture(scope="session")
def sdk_http_resumable() -> Iterator[Peer]:
    """The SDK's Streamable HTTP server with an event store: priming events, ``retry: 100``,
    streams a tool may close (``interrupted``) and Last-Event-ID replay."""
    yield from _peer("http", "--resumable")


@pytest.fixture(scope="session")
def sdk_sse() -> Iterator[Peer]:
    """The SDK's legacy HTTP+SSE server."""
    yield from _peer("sse")


@pytest.fixture
def fresh_sdk_http() -> Iterator[Peer]:
    """A Streamable HTTP peer of the test's own, for tests that kill it."""
    yield from _peer("http")


@pytest.fixture
def fresh_sdk_sse() -> Iterator[Peer]:
    yield from _peer("sse")


def python_env() -> dict[str, str]:
    """Environment for child Pythons: our sources importable, output unbuffered."""
    src = str(HERE.parents[1] / "src")
    return {"PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}


def node_peer() -> tuple[str, dict[str, str]] | None:
    """The node binary and environment for the TypeScript SDK peer, or None when
    node is not set up (``source scripts/setup.sh && setup_node``)."""
    modules = os.environ.get("MCP_TEST_NODE_MODULES") or str(HERE.parents[1] / ".tools/node/node_modules")
    node = os.environ.get("MCP_TEST_NODE") or os.path.join(modules, "node/bin/node")
    if not (os.path.isfile(node) and os.path.isdir(os.path.join(modules, "@modelcontextprotocol/sdk"))):
        return None
    return node, {"MCP_TEST_NODE_MODULES": modules}


TS_PEER = str(HERE / "ts_peer.mjs")
