"""Real ``mcp-sse-server serve`` processes for the Redis tests, a raw Streamable HTTP helper
(httpx, one connection per request when asked) and a round-robin TCP proxy."""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from fixtures.redis_cluster import sync_client
from fixtures.served import Served as ServeProcess

WAIT = 20.0  # bounded: a process that does not start or stop in this long has failed
SRC = Path(__file__).resolve().parents[2] / "src"


class Served(ServeProcess):
    """A ``serve`` process of this checkout (its ``src`` first on ``PYTHONPATH``); ``env`` adds to ours
    (``prefix`` and ``own_group``: ``fixtures.served.CommandProcess``)."""

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        env: dict[str, str] | None = None,
        *,
        prefix: Sequence[str] = (),
        own_group: bool = False,
    ) -> None:
        environment = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
        super().__init__(args, cwd, environment, prefix=prefix, own_group=own_group)


@contextlib.contextmanager
def serving(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    served = Served(args, cwd, env)
    try:
        yield served
    except BaseException:
        served.kill()
        served._stderr_reader.join(timeout=WAIT)
        print(f"--- stderr of serve {served.url}:\n{''.join(served.stderr)}")  # shown by pytest on failure
        raise
    finally:
        served.kill()


TESTS = SRC.parent / "tests"
TEST_SERVER = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from fixtures.http_app import Gate, build_server

def build():
    return build_server(Gate())
"""


@contextlib.contextmanager
def two_workers_on_redis(
    url: str, cwd: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[Served, Served, str]]:
    """Two ``serve --redis-url`` processes of the tests' server on the empty Redis ``url`` (a
    database, or a cluster: emptied after), and ``url``; each must stop cleanly (status 0, no traceback)."""
    client = sync_client(url)
    (cwd / "target.py").write_text(TEST_SERVER)
    args = [f"{cwd / 'target.py'}:build", "--port", "0", "--redis-url", url]
    env = {"PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)]), **(env or {})}
    try:
        with serving(args, cwd, env) as a, serving(args, cwd, env) as b:
            yield a, b, url
            for served in (a, b):
                status, stderr = served.stop()
                assert status == 0 and "Traceback" not in stderr, stderr
    finally:
        if url.startswith("redis+cluster://"):
            client.flushall(target_nodes=client.PRIMARIES)
        else:
            client.flushdb()
        client.close()


def wait_until_accepting(port: int) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing accepts on port {port}")


# --- raw Streamable HTTP -------------------------------------------------------------------------

ACCEPT = "application/json, text/event-stream"


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The SSE events of a streamed response: ``{"id": ..., "data": ...}`` (comments skipped)."""
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in event:
                yield event
            event = {}
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")


def answer_of(reply: httpx.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC answer to ``request_id`` in a streamed POST reply (a JSON body or an SSE stream)."""
    if reply.headers["content-type"].startswith("application/json"):
        return httpx.Response(200, content=reply.read()).json()  # type: ignore[no-any-return]
    for event in sse_events(reply):
        if event["data"]:
            message: dict[str, Any] = httpx.Response(200, content=event["data"]).json()
            if message.get("id") == request_id:
                return message
    raise AssertionError(f"no answer to request {request_id}")


class RawSession:
    """A 2025-era session over plain httpx; ``close_connections`` sends ``Connection: close``
    so every request opens a new connection (and may reach another worker)."""

    def __init__(self, url: str, *, version: str = "2025-11-25", close_connections: bool = True) -> None:
        self.url = url
        self.version = version
        headers = {"accept": ACCEPT}
        if close_connections:
            headers["connection"] = "close"
        self.http = httpx.Client(headers=headers, timeout=httpx.Timeout(WAIT))
        self.session_id: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {"mcp-protocol-version": self.version}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        return headers

    def open(self) -> None:
        self.open_on(self.url)

    def open_on(self, then: str) -> None:
        """``initialize`` on ``url``, then ``notifications/initialized`` on ``then``."""
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": self.version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        reply = self.http.post(self.url, json=body)
        assert reply.status_code == 200, reply.text
        self.session_id = reply.headers["mcp-session-id"]
        done = self.http.post(
            then, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers()
        )
        assert done.status_code == 202, done.text

    def call(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request; its final JSON-RPC answer (from JSON or the SSE stream)."""
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        with self.http.stream("POST", self.url, json=body, headers=self.headers()) as reply:
            assert reply.status_code == 200, reply.read()
            return answer_of(reply, request_id)

    def close(self) -> None:
        self.http.close()


# --- a round-robin TCP proxy ---------------------------------------------------------------------


class RoundRobinProxy:
    """Listens on a loopback port; each new connection goes to the next backend in turn."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.connections = 0
        self.per_backend = [0] * len(backends)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            index = self.connections % len(self.backends)
            self.connections += 1
            self.per_backend[index] += 1
            threading.Thread(target=self._pipe, args=(client, self.backends[index]), daemon=True).start()

    def _pipe(self, client: socket.socket, port: int) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        client.settimeout(None)
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        try:
            open_sides = 2
            while open_sides and not self._stop.is_set():
                for key, _ in selector.select(timeout=0.2):
                    source: socket.socket = key.fileobj  # type: ignore[assignment]
                    target: socket.socket = key.data
                    try:
                        data = source.recv(65536)
                    except OSError:
                        data = b""
                    if data:
                        target.sendall(data)
                    else:
                        selector.unregister(source)
                        with contextlib.suppress(OSError):
                            target.shutdown(socket.SHUT_WR)
                        open_sides -= 1
        except OSError:
            pass
        finally:
            selector.close()
            client.close()
            upstream.close()

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(timeout=WAIT)
