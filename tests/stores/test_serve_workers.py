"""``serve --redis-url`` for real: worker processes on one port (``--workers``), several ``serve``
processes on one Redis, a killed worker's requests ended by another's reaper, Redis outages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from fixtures.redis_cluster import sync_client
from fixtures.redis_server import RedisServer

from .serving import WAIT, RawSession, serving, sse_events


def workers_registered(url: str) -> list[bytes]:
    client = sync_client(url)
    try:
        return list(client.zrange("mcp:{workers}", 0, -1))
    finally:
        client.close()


def test_workers_above_1_without_redis_are_refused_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sse_server", "serve", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "--workers above 1 needs --redis-url" in done.stderr
    assert "only the sessions it opened" in done.stderr


def test_an_unreachable_redis_is_one_line_before_anything_listens(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sse_server", "serve", "--port", "0", "--redis-url", "redis://127.0.0.1:1/0"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "cannot reach Redis at redis://127.0.0.1:1/0" in done.stderr and "Traceback" not in done.stderr


def test_two_workers_serve_a_session_whose_requests_open_new_connections(redis_url: str, tmp_path: Path) -> None:
    with serving(["--port", "0", "--workers", "2", "--redis-url", redis_url], tmp_path) as served:
        session = RawSession(served.url, close_connections=True)
        try:
            session.open()
            for n in range(1, 21):
                answer = session.call(n, "tools/call", {"name": "add", "arguments": {"a": n, "b": 1}})
                assert answer["result"]["content"][0]["text"] == str(n + 1), answer
            counted = session.call(99, "tools/call", {"name": "slow_count", "arguments": {"steps": 2, "interval": 0}})
            assert counted["result"]["content"][0]["text"] == "Counted to 2."
        finally:
            session.close()
        deadline = time.monotonic() + WAIT
        while len(workers_registered(redis_url)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers_registered(redis_url)) == 2  # two worker processes, each with its own router
        status, stderr = served.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert "Shutting down" in stderr and "Traceback" not in stderr
    assert workers_registered(redis_url) == []  # every child shut down gracefully (and deregistered)


def test_two_serve_processes_on_one_redis_serve_the_same_sessions(redis_url: str, tmp_path: Path) -> None:
    args = ["--port", "0", "--backend", redis_url]  # (--redis-url, its older spelling, in the other tests)
    with serving(args, tmp_path) as a, serving(args, tmp_path) as b:
        session = RawSession(a.url)
        try:
            session.open()
            for n in range(1, 7):
                session.url = (a.url, b.url)[n % 2]
                answer = session.call(n, "tools/call", {"name": "add", "arguments": {"a": n, "b": n}})
                assert answer["result"]["content"][0]["text"] == str(2 * n), answer
            deleted = session.http.delete(b.url, headers=session.headers())
            assert deleted.status_code == 204
            gone = session.http.post(
                a.url, json={"jsonrpc": "2.0", "id": 50, "method": "tools/list"}, headers=session.headers()
            )
            assert gone.status_code == 404
        finally:
            session.close()


def _progress_event(reply: httpx.Response) -> str:
    """The id of the first logged progress event of a resumable POST stream."""
    for event in sse_events(reply):
        if "notifications/progress" in event["data"] and event.get("id"):
            return str(event["id"])
    raise AssertionError("the stream ended without progress")


def test_a_killed_workers_request_ends_with_a_terminal_error_on_another(redis_url: str, tmp_path: Path) -> None:
    args = ["--port", "0", "--redis-url", redis_url, "--worker-ttl", "1s"]
    with serving(args, tmp_path) as a, serving(args, tmp_path) as b:
        session = RawSession(a.url)
        try:
            session.open()
            slow = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "slow_count",
                    "arguments": {"steps": 100, "interval": 0.5},
                    "_meta": {"progressToken": "p"},
                },
            }
            with session.http.stream("POST", a.url, json=slow, headers=session.headers()) as reply:
                assert reply.status_code == 200
                last_event_id = _progress_event(reply)
            a.process.send_signal(signal.SIGKILL)  # mid-request: no graceful anything
            a.process.wait(timeout=WAIT)
            headers = {**session.headers(), "accept": "text/event-stream", "last-event-id": last_event_id}
            answer: dict[str, Any] | None = None
            with session.http.stream("GET", b.url, headers=headers) as resumed:
                assert resumed.status_code == 200, resumed.read()
                for event in sse_events(resumed):
                    message = httpx.Response(200, content=event["data"]).json() if event["data"] else {}
                    if message.get("id") == 7:
                        answer = message
                        break
            assert answer is not None  # b's reaper wrote it once a's lease (1 s) lapsed: nothing else would
            assert answer["error"] == {
                "code": -32603,
                "message": "Request interrupted: the server instance running it stopped",
            }
            # The session itself survives on b, and the dead worker is forgotten.
            session.url = b.url
            after = session.call(8, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert after["result"]["content"][0]["text"] == "3"
            assert len(workers_registered(redis_url)) == 1
        finally:
            session.close()


def test_redis_stopped_is_a_503_with_a_json_rpc_body_and_served_again_once_back(
    own_redis_server: RedisServer, tmp_path: Path
) -> None:
    with serving(["--port", "0", "--redis-url", own_redis_server.url], tmp_path) as served:
        session = RawSession(served.url)
        try:
            session.open()
            own_redis_server.stop()
            try:
                refused = session.http.post(
                    served.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=session.headers()
                )
                fresh = session.http.post(
                    served.url,
                    json={
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "clientInfo": {"name": "x", "version": "1"},
                        },
                    },
                    headers={"mcp-protocol-version": "2025-11-25"},
                )
            finally:
                own_redis_server.start()  # empty: no persistence
            assert refused.status_code == 503 and refused.headers["retry-after"] == "2"
            assert refused.headers["content-type"].startswith("application/json")
            assert refused.json()["jsonrpc"] == "2.0" and refused.json()["error"]["code"] == -32000
            assert fresh.status_code == 503 and fresh.json()["error"]["code"] == -32000
            again = RawSession(served.url)
            try:
                # Served again once the client's pool reconnects (the 503 said to retry): a new
                # session, since the restarted Redis lost the old one.
                deadline = time.monotonic() + WAIT
                while True:
                    try:
                        again.open()
                        break
                    except AssertionError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.2)
                answer = again.call(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
                assert answer["result"]["content"][0]["text"] == "4"
            finally:
                again.close()
        finally:
            session.close()
        status, stderr = served.stop()
    assert status == 0, stderr


def _children(pid: int) -> set[int]:
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def _running(pid: int) -> bool:
    """The process exists and has not exited: an exited child that nobody has reaped yet
    (a zombie, state Z; an orphan waits for whichever process adopted it) has stopped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(predicate: Any, what: str, within: float = WAIT) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_a_killed_worker_is_replaced_and_workers_stop_when_the_parent_dies(redis_url: str, tmp_path: Path) -> None:
    args = ["--port", "0", "--workers", "2", "--redis-url", redis_url, "--worker-ttl", "1s"]
    with serving(args, tmp_path) as served:
        parent = served.process.pid
        _wait_for(lambda: len(_children(parent)) == 2, "two workers")
        first = _children(parent)
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        _wait_for(lambda: victim not in _children(parent) and len(_children(parent)) == 2, "a replacement")
        session = RawSession(served.url)
        try:
            session.open()
            answer = session.call(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            assert answer["result"]["content"][0]["text"] == "2"
        finally:
            session.close()
        _wait_for(lambda: len(workers_registered(redis_url)) == 2, "the dead worker reaped, the new one registered")
        workers = _children(parent)
        try:
            served.process.send_signal(signal.SIGKILL)  # the parent dies without telling anyone
            served.process.wait(timeout=WAIT)
            _wait_for(lambda: not any(_running(pid) for pid in workers), "orphaned workers stopping")
        finally:
            _kill_leftovers(workers)
    assert "A worker died (-9); starting another." in "".join(served.stderr)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_death_signal_alone_stops_the_workers_of_a_killed_parent(redis_url: str, tmp_path: Path) -> None:
    # With the getppid() watcher off, only the kernel's death signal (prctl) can tell the workers.
    args = ["--port", "0", "--workers", "2", "--redis-url", redis_url, "--worker-ttl", "1s"]
    with serving(args, tmp_path, env={"MCP_SSE_SERVER_PARENT_POLL": "0"}) as served:
        parent = served.process.pid
        _wait_for(lambda: len(workers_registered(redis_url)) == 2, "two workers registered")
        workers = _children(parent)
        assert len(workers) == 2
        try:
            served.process.send_signal(signal.SIGKILL)
            served.process.wait(timeout=WAIT)
            _wait_for(lambda: not any(_running(pid) for pid in workers), "orphaned workers stopping", within=2.0)
        finally:
            _kill_leftovers(workers)
    assert workers_registered(redis_url) == []  # each stopped gracefully: it deregistered


def _kill_leftovers(pids: set[int]) -> None:
    """A failed test leaves no worker serving a socket nobody manages."""
    for pid in pids:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
