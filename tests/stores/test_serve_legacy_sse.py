"""The HTTP+SSE transport of revision 2024-11-05 served by two ``serve`` processes on one Redis (a
database, or a whole Redis Cluster: ``redis_url``): a stream opened on A, its POSTs sent to B,
answered on A's stream (B checks them as A would, answers 202 and sends them to A through the
workers' inboxes); the official SDK 1.2.1 client through a round-robin front over both."""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

from cli.test_old_clients import old_python, run_client

from .serving import WAIT, RawSession, RoundRobinProxy, serving, two_workers_on_redis

SSE = {"accept": "text/event-stream"}


def init(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"protocolVersion": "2024-11-05", "capabilities": capabilities or {}, "clientInfo": {"name": "raw"}}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": 99, "method": "ping"}


def call(request_id: int, name: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class LegacyStream:
    """A 2024-11-05 stream read in a thread: ``endpoint`` (the messages path it named), then its
    messages (``message()``), each within WAIT seconds."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.http = httpx.Client(timeout=httpx.Timeout(WAIT, read=None), headers=headers)
        self._events: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url,), daemon=True)
        self._thread.start()
        kind, data = self.next()
        assert kind == "endpoint", (kind, data)
        self.path = data  # the messages path and query, as the endpoint event named them

    def _read(self, url: str) -> None:
        try:
            with self.http.stream("GET", url, headers=SSE) as response:
                assert response.status_code == 200, response.status_code
                kind, data = "message", []
                for line in response.iter_lines():
                    if not line:
                        if data:
                            self._events.put((kind, "\n".join(data)))
                        kind, data = "message", []
                    elif line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: "):
                        data.append(line[6:])
        except (httpx.HTTPError, RuntimeError):
            pass  # (closed by the test)
        finally:
            self._events.put(None)

    def next(self) -> tuple[str, str]:
        try:
            event = self._events.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"nothing on the stream within {WAIT} s") from None
        if event is None:
            raise EOFError("the stream ended")
        return event

    def message(self) -> dict[str, Any]:
        kind, data = self.next()
        assert kind == "message"
        result: dict[str, Any] = json.loads(data)
        return result

    def answer(self, request_id: int) -> dict[str, Any]:
        """The next message with this id (notifications before it skipped)."""
        while (message := self.message()).get("id") != request_id or "method" in message:
            pass
        return message

    def nothing_more(self) -> bool:
        return self._events.empty()

    def close(self, url: str) -> None:
        """Leave, and wait until the process serving ``url`` (holding the stream) took it in: its
        messages URL there is 404 (so nothing of the stream is left when the process stops)."""
        self.http.close()
        self._thread.join(timeout=WAIT)
        with httpx.Client(timeout=WAIT, headers={**self.http.headers, "connection": "close"}) as client:
            deadline = time.monotonic() + WAIT
            while client.post(on(url, self), json=PING).status_code == 202:
                assert time.monotonic() < deadline, "the stream's session did not end"
                time.sleep(0.05)


@contextlib.contextmanager
def legacy_stream(url: str) -> Iterator[LegacyStream]:
    stream = LegacyStream(urljoin(url, "/sse"))
    try:
        yield stream
    finally:
        stream.close(url)


def on(served_url: str, stream: LegacyStream) -> str:
    """The stream's messages URL on the process serving ``served_url``."""
    return urljoin(served_url, stream.path)


def test_posts_sent_to_b_are_answered_on_the_stream_held_by_a(redis_url: str, tmp_path: Path) -> None:
    with (
        two_workers_on_redis(redis_url, tmp_path) as (a, b, _),
        httpx.Client(timeout=WAIT, headers={"connection": "close"}) as client,
        legacy_stream(a.url) as stream,
    ):
        messages = on(b.url, stream)
        assert messages.startswith(b.url.rsplit("/", 1)[0] + "/messages/?session_id=")
        posted = client.post(messages, json=init({"sampling": {}}))
        assert (posted.status_code, posted.content) == (202, b"")
        assert stream.answer(1)["result"]["protocolVersion"] == "2024-11-05"
        assert client.post(messages, json=INITIALIZED).status_code == 202
        assert client.post(messages, json=call(2, "add", {"a": 20, "b": 22})).status_code == 202
        assert stream.answer(2)["result"]["content"][0]["text"] == "42"
        # What relates to a request follows it down the stream, in order.
        assert client.post(messages, json=call(3, "chatty", progressToken="p")).status_code == 202
        got = [stream.message() for _ in range(4)]
        assert [m.get("method") for m in got[:3]] == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
        ]
        assert got[3]["id"] == 3 and got[3]["result"]["content"][0]["text"] == "chatty done"
        # A server-to-client request A sends, answered by a POST to B.
        assert client.post(messages, json=call(4, "sample", {"prompt": "hi"})).status_code == 202
        asked = stream.message()
        assert asked["method"] == "sampling/createMessage"
        reply = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
        answered = client.post(messages, json={"jsonrpc": "2.0", "id": asked["id"], "result": reply})
        assert answered.status_code == 202
        assert stream.answer(4)["result"]["content"][0]["text"] == "model said: hello"
        # A request held in flight on A: its id again is refused there (on the stream); cancelled
        # through B, it stops on A, and the id is free again.
        assert client.post(messages, json=call(5, "wait")).status_code == 202
        assert stream.message()["params"]["data"] == "waiting"
        assert client.post(messages, json=call(5, "wait")).status_code == 202
        conflict = stream.message()  # (as one process answers it: the HTTP 409's body)
        assert conflict["id"] == 5 and "request id 5 is already in flight" in conflict["error"]["message"]
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        assert client.post(messages, json=cancel).status_code == 202
        assert client.post(messages, json={"jsonrpc": "2.0", "id": 6, "method": "ping"}).status_code == 202
        assert stream.answer(6) == {"jsonrpc": "2.0", "id": 6, "result": {}}
        assert client.post(messages, json=call(5, "wait")).status_code == 202
        assert stream.message()["params"]["data"] == "waiting"  # (a new call with id 5: the first was cancelled)
        assert client.post(messages, json=cancel).status_code == 202
        assert client.post(messages, json={"jsonrpc": "2.0", "id": 7, "method": "ping"}).status_code == 202
        assert stream.answer(7)["id"] == 7


def test_b_refuses_as_a_would(redis_url: str, tmp_path: Path) -> None:
    with (
        two_workers_on_redis(redis_url, tmp_path) as (a, b, _),
        httpx.Client(timeout=WAIT, headers={"connection": "close"}) as client,
    ):
        base = urljoin(b.url, "/messages/")
        unknown = client.post(base + "?session_id=nope", json=init())
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == -32600
        assert unknown.json()["error"]["message"].startswith("Session not found")
        assert client.post(base, json=init()).status_code == 400
        # A Streamable HTTP session has no stream: its id on the messages path is unknown there.
        session = RawSession(a.url)
        try:
            session.open()
            assert session.session_id is not None
            assert client.post(base + "?session_id=" + session.session_id, json=init()).status_code == 404
        finally:
            session.close()
        with legacy_stream(a.url) as stream:
            messages = on(b.url, stream)
            malformed = client.post(messages, content=b"{nope", headers={"content-type": "application/json"})
            assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32700
            wrong_type = client.post(messages, content=b"{}", headers={"content-type": "text/plain"})
            assert wrong_type.status_code == 415
            too_big = client.post(messages, json={"jsonrpc": "2.0", "id": 1, "method": "x" * (5 << 20)})
            assert too_big.status_code == 413
            assert client.post(messages, json=init()).status_code == 202
            assert stream.answer(1)["result"]["serverInfo"]
            assert stream.nothing_more()  # (none of the refused POSTs reached the stream)
        # The stream closed: its session ends on A (once A sees the client gone), and B says so.
        deadline = time.monotonic() + WAIT
        while (gone := client.post(messages, json=PING)).status_code == 202 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone.status_code == 404 and gone.json()["error"]["message"].startswith("Session not found")


def test_two_streams_each_get_only_their_own_answers(redis_url: str, tmp_path: Path) -> None:
    with (
        two_workers_on_redis(redis_url, tmp_path) as (a, b, _),
        httpx.Client(timeout=WAIT, headers={"connection": "close"}) as client,
        legacy_stream(a.url) as one,
        legacy_stream(b.url) as two,
    ):
        # Each stream's POSTs go to the process not holding it.
        for stream, other in ((one, b), (two, a)):
            assert client.post(on(other.url, stream), json=init()).status_code == 202
            assert stream.answer(1)["result"]["serverInfo"]
            assert client.post(on(other.url, stream), json=INITIALIZED).status_code == 202
        for n in range(2, 8):
            assert client.post(on(b.url, one), json=call(n, "add", {"a": n, "b": 1000})).status_code == 202
            assert client.post(on(a.url, two), json=call(n, "add", {"a": n, "b": 2000})).status_code == 202
        for n in range(2, 8):
            assert one.message()["result"]["content"][0]["text"] == str(n + 1000)
            assert two.message()["result"]["content"][0]["text"] == str(n + 2000)
        assert one.nothing_more() and two.nothing_more()


def test_the_sdk_1_2_1_client_through_a_round_robin_front(redis_url: str, tmp_path: Path) -> None:
    # The client's GET holds one connection and its POSTs take others, spread over both processes
    # by the front: some of them reach the process not holding the stream.
    python = old_python()
    args = ["demo", "--port", "0", "--redis-url", redis_url]
    with serving(args, tmp_path) as a, serving(args, tmp_path) as b:
        proxy = RoundRobinProxy([a.port, b.port])
        try:
            for _ in range(2):
                result = run_client("sse", f"http://127.0.0.1:{proxy.port}/sse", python=python)
                assert result["revision"] == "2024-11-05"
                assert {"add", "divide"} <= set(result["tools"])
                assert result["text"] == ["5"] and not result["isError"]
                socket.create_connection(("127.0.0.1", proxy.port)).close()  # (moves the next stream along)
            assert proxy.per_backend[0] >= 2 and proxy.per_backend[1] >= 2, proxy.per_backend
        finally:
            proxy.close()
        for served in (a, b):
            status, stderr = served.stop()
            assert status == 0 and "Traceback" not in stderr, stderr


SCOPED_SERVER = """
from mcp_sse_server import McpServer


def build():
    server = McpServer("scoped")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool(scopes=["ops:write"])
    def deploy(service: str) -> str:
        return f"deployed {service}"

    return server
"""


def test_b_checks_the_token_as_a_would(redis_url: str, tmp_path: Path) -> None:
    from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey

    key = SigningKey("legacy-key", "ES256")
    key_set = KeySetServer([key])
    (tmp_path / "scoped.py").write_text(SCOPED_SERVER)
    args = [f"{tmp_path / 'scoped.py'}:build", "--port", "0", "--redis-url", redis_url]
    args += ["--auth-issuer", ISSUER, "--auth-jwks-uri", key_set.url, "--auth-resource", RESOURCE]
    alice = {"authorization": f"Bearer {key.sign()}", "connection": "close"}
    bob = {"authorization": f"Bearer {key.sign(sub='bob')}", "connection": "close"}
    admin = {"authorization": f"Bearer {key.sign(scope='mcp:tools ops:write')}", "connection": "close"}
    try:
        with (
            serving(args, tmp_path) as a,
            serving(args, tmp_path) as b,
            httpx.Client(timeout=WAIT) as client,
        ):
            stream = LegacyStream(urljoin(a.url, "/sse"), alice)
            try:
                messages = on(b.url, stream)
                assert client.post(messages, json=init()).status_code == 401  # no token
                other = client.post(messages, json=init(), headers=bob)  # another principal's token
                assert other.status_code == 404 and other.json()["error"]["message"].startswith("Session not found")
                assert client.post(messages, json=init(), headers=alice).status_code == 202
                assert stream.answer(1)["result"]["serverInfo"]["name"] == "scoped"
                assert client.post(messages, json=INITIALIZED, headers=alice).status_code == 202
                deploy = call(2, "deploy", {"service": "db"})
                narrow = client.post(messages, json=deploy, headers=alice)
                assert narrow.status_code == 403 and "ops:write" in narrow.json()["error"]["message"]
                assert "insufficient_scope" in narrow.headers["www-authenticate"]
                assert client.post(messages, json=call(3, "echo", {"text": "hi"}), headers=alice).status_code == 202
                assert stream.answer(3)["result"]["content"][0]["text"] == "hi"
                assert client.post(messages, json=deploy, headers=admin).status_code == 202  # alice, more scopes
                assert stream.answer(2)["result"]["content"][0]["text"] == "deployed db"
                assert stream.nothing_more()
            finally:
                stream.close(a.url)
            for served in (a, b):
                status, stderr = served.stop()
                assert status == 0 and "Traceback" not in stderr, stderr
    finally:
        key_set.close()


class _Raw:
    """One HTTP/1.1 connection written and read raw: nothing between the endpoint event and the POST."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.host = f"127.0.0.1:{port}"
        self.buffer = b""

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError(self.buffer)
            self.buffer += data
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    def post_status(self, path: str, body: bytes) -> int:
        self.sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = self.until(b"\r\n\r\n").decode("latin-1")
        length = next((int(line[15:]) for line in head.lower().split("\r\n") if line.startswith("content-length:")), 0)
        while len(self.buffer) < length:
            self.buffer += self.sock.recv(65536)
        self.buffer = self.buffer[length:]
        return int(head.split()[1])


def test_a_post_right_after_the_endpoint_event_finds_the_stream(redis_url: str, tmp_path: Path) -> None:
    # The endpoint event goes out only once a POST on any worker can find the stream: one sent the
    # moment it is read, to the stream's worker or to the other, is 202 every time.
    with two_workers_on_redis(redis_url, tmp_path) as (a, b, _):
        posters = {a.port: _Raw(a.port), b.port: _Raw(b.port)}
        statuses: list[tuple[int, int]] = []
        try:
            for n in range(120):  # (before the fix: 1 to 30 of 60 refused by the other worker)
                target = b.port if n % 2 else a.port
                stream = _Raw(a.port)
                stream.sock.sendall(
                    f"GET /sse HTTP/1.1\r\nHost: {stream.host}\r\nAccept: text/event-stream\r\n\r\n".encode()
                )
                stream.until(b"event: endpoint\ndata: ")
                path = stream.until(b"\n").decode()
                statuses.append((target, posters[target].post_status(path, json.dumps(PING).encode())))
                stream.sock.close()
        finally:
            for poster in posters.values():
                poster.sock.close()
        refused = [(target == b.port, status) for target, status in statuses if status != 202]
        assert not refused, f"{len(refused)} of {len(statuses)} refused (to the other worker, status): {refused}"


def test_a_stream_still_open_at_shutdown_ends_cleanly(redis_url: str, tmp_path: Path) -> None:
    # two_workers_on_redis stops both processes with this stream open (the stream's client leaves
    # only after): each must stop with status 0 and no traceback, its lease released.
    stream = None
    try:
        with two_workers_on_redis(redis_url, tmp_path) as (a, b, _), httpx.Client(timeout=WAIT) as client:
            stream = LegacyStream(urljoin(a.url, "/sse"))
            assert client.post(on(b.url, stream), json=init()).status_code == 202
            assert stream.answer(1)["result"]["protocolVersion"] == "2024-11-05"
            assert client.post(on(a.url, stream), json=INITIALIZED).status_code == 202
    finally:
        if stream is not None:
            stream.http.close()
