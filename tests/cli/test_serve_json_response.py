"""``serve --json-response``: quick replies as ``application/json``, streaming calls still SSE,
JSON-only clients accepted; in one process, and in workers sharing sessions through Redis."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from fixtures.commands import Cli, Main
from fixtures.served import WAIT, Served

ACCEPT_BOTH = "application/json, text/event-stream"
REVISION = "2025-11-25"
COUNTED = {"content": [{"type": "text", "text": "Counted to 2."}], "structuredContent": {"counted": 2}}


class Raw:
    """A session over plain httpx, each request on a new connection (so workers take turns)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(headers={"connection": "close"}, timeout=httpx.Timeout(WAIT))
        self.session_id = ""

    def post(self, body: dict[str, Any], accept: str = ACCEPT_BOTH) -> httpx.Response:
        headers = {"accept": accept, "mcp-protocol-version": REVISION}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        return self.http.post(self.url, json=body, headers=headers)

    def initialize(self, accept: str = ACCEPT_BOTH) -> httpx.Response:
        params = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        return self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, accept)

    def open(self, accept: str = ACCEPT_BOTH) -> None:
        """Initialize, answered as JSON with its session id, then ``notifications/initialized``."""
        reply = self.initialize(accept)
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == "application/json"
        assert reply.headers["content-length"] == str(len(reply.content))
        assert reply.json()["result"]["protocolVersion"] == REVISION
        self.session_id = reply.headers["mcp-session-id"]
        done = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, accept)
        assert done.status_code == 202, done.text

    def call(self, request_id: int, tool: str, arguments: dict[str, Any], accept: str = ACCEPT_BOTH) -> httpx.Response:
        params = {"name": tool, "arguments": arguments}
        reply = self.post({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}, accept)
        assert reply.status_code == 200, reply.text
        return reply

    def close(self) -> None:
        self.http.close()


def check_replies(url: str, calls: int = 1) -> None:
    """Quick calls are JSON; a call that logs is SSE, and JSON (its logs dropped) for a client
    whose Accept takes JSON only; a JSON-only client may open a session."""
    session = Raw(url)
    try:
        session.open()
        for n in range(1, calls + 1):
            added = session.call(n, "add", {"a": n, "b": 1})
            assert added.headers["content-type"] == "application/json"
            assert added.json() == {
                "jsonrpc": "2.0",
                "id": n,
                "result": {"content": [{"type": "text", "text": str(n + 1)}], "structuredContent": {"result": n + 1}},
            }
        counted = session.call(90, "slow_count", {"steps": 2, "interval": 0})
        assert counted.headers["content-type"] == "text/event-stream"
        assert "content-length" not in counted.headers
        streamed = [json.loads(line[6:]) for line in counted.text.splitlines() if line.startswith("data: {")]
        assert streamed[-1] == {"jsonrpc": "2.0", "id": 90, "result": COUNTED}
        assert {message["method"] for message in streamed[:-1]} == {"notifications/message"}  # the logs first
        only = session.call(91, "slow_count", {"steps": 2, "interval": 0}, accept="application/json")
        assert only.headers["content-type"] == "application/json"
        assert only.json() == {"jsonrpc": "2.0", "id": 91, "result": COUNTED}  # the logs were dropped
    finally:
        session.close()
    json_only = Raw(url)
    try:
        json_only.open(accept="application/json")  # initialize, JSON only: accepted, with its session id
    finally:
        json_only.close()


def test_json_response_reaches_the_server(cli: Cli, serve: Callable[[list[str]], Served]) -> None:
    server = serve(["--port", "0", "--json-response"])
    check_replies(server.url)
    # Our client reads both kinds of reply.
    done = cli("call", server.url, "add", "a=2", "b=3")
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr
    done = cli("call", server.url, "slow_count", "steps=2", "interval=0")
    assert (done.returncode, done.stdout) == (0, "Counted to 2.\n"), done.stderr
    assert "progress: 2/2 (100%) step 2 of 2" in done.stderr


def test_without_json_response_replies_are_sse_and_json_only_is_refused(serve: Callable[[list[str]], Served]) -> None:
    server = serve(["math", "--port", "0"])
    session = Raw(server.url)
    try:
        assert session.initialize("application/json").status_code == 406
        reply = session.initialize()
        assert reply.status_code == 200 and reply.headers["content-type"] == "text/event-stream"
    finally:
        session.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_json_response_with_redis_and_workers(
    serve: Callable[[list[str]], Served], tmp_path: Path, workers: int
) -> None:
    from fixtures.redis_server import redis_running

    (tmp_path / "redis").mkdir()
    with redis_running(tmp_path / "redis") as redis:
        args = ["--port", "0", "--redis-url", redis.url, "--workers", str(workers), "--json-response"]
        server = serve(args)
        check_replies(server.url, calls=10)  # a new connection each: any worker may take it
        status, stderr = server.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert "Traceback" not in stderr


def test_the_option_is_in_the_help_and_is_an_http_option(main: Main) -> None:
    status, out, _ = main("serve", "--help")
    assert status == 0
    shown = " ".join(out.split())
    assert "--json-response Answer a request that sends nothing before its result with one application/json" in shown
    assert "--json-response" in main("dev", "--help")[1]
    status, _, err = main("serve", "math", "--stdio", "--json-response")
    assert status == 2
    assert "--json-response is an HTTP option: it does not go with --stdio" in err
