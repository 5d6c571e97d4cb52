"""``serve --redis-url redis+sentinel://...``: a primary, a replica and three sentinels on
loopback; the primary killed, the sentinels promote the replica and the worker (not restarted)
serves again, the session opened before the failover included."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
import redis

from fixtures.redis_sentinel import sentinel_running
from mcp_sse_server.stores.redis_sentinel import sentinel_parts

from .serving import RawSession, serving

BACK_WITHIN = 25.0  # seconds from the kill (promotion after about 1 s down, and a vote)


def add(session: RawSession, request_id: int) -> str:
    answer = session.call(request_id, "tools/call", {"name": "add", "arguments": {"a": request_id, "b": 1}})
    text: str = answer["result"]["content"][0]["text"]
    return text


def test_the_url_names_the_sentinels_the_master_and_the_database() -> None:
    assert sentinel_parts("redis+sentinel://a:1,b/m") == ([("a", 1), ("b", 26379)], "m", 0)
    assert sentinel_parts("rediss+sentinel://u:p@a:1/m/3") == ([("a", 1)], "m", 3)
    for bad in ("redis://a:1/m", "redis+sentinel://a:1/", "redis+sentinel://a:1/m/x", "redis+sentinel://a:x/m"):
        with pytest.raises(ValueError):
            sentinel_parts(bad)


def test_a_killed_primary_is_replaced_and_the_worker_serves_again(tmp_path: Path) -> None:
    with (
        sentinel_running(tmp_path) as deployment,
        serving(["demo", "--port", "0", "--redis-url", deployment.url], tmp_path) as served,
    ):
        before = RawSession(served.url)
        before.open()
        assert add(before, 1) == "2"
        with redis.Redis(port=deployment.primary.port) as primary:
            assert primary.execute_command("WAIT", 1, 2000) == 1  # the session's record is on the replica
        process = deployment.primary.process
        assert process is not None
        process.kill()
        process.wait()
        killed = time.monotonic()
        statuses: list[int] = []
        with httpx.Client(timeout=10, headers={"accept": "application/json, text/event-stream"}) as client:
            while True:
                assert time.monotonic() - killed < BACK_WITHIN, f"not served again; statuses {statuses}"
                init = {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
                }
                reply = client.post(served.url, json=init)
                statuses.append(reply.status_code)
                if reply.status_code == 200:
                    break
                assert reply.status_code == 503 and reply.headers.get("retry-after"), (reply.status_code, reply.text)
                time.sleep(0.2)
        back = time.monotonic() - killed
        assert deployment.primary_port() == deployment.replica.port  # the replica was promoted
        assert add(before, 2) == "3"  # the session opened before the failover is served after it
        after = RawSession(served.url)
        after.open()
        assert add(after, 3) == "4"
        print(f"served again {back:.2f} s after the kill; statuses {statuses}")
        before.close()
        after.close()
        status, stderr = served.stop()
        assert status == 0 and "Traceback" not in stderr, stderr
