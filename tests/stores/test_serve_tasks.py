"""Tasks under ``serve --redis-url`` for real: two processes of the conformance server on one
Redis; a task outlives the process that ran it (SIGKILL: the other's reaper fails it with the
definite error), and a 2025-11-25 session's task is served by either process."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx

from mcp_sse_server.engine.records import TASK_INTERRUPTED
from mcp_sse_server.engine.tasks import RELATED_TASK, TASKS_EXTENSION

from .serving import SRC, TESTS, WAIT, RawSession, answer_of, serving

TASKS_SERVER = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from fixtures.conformance_server import build_server

def build():
    return build_server()
"""
STATELESS = "2026-07-28"
NAMED_BY = {"tools/call": "name", "tasks/get": "taskId", "tasks/cancel": "taskId"}


def stateless(url: str, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One 2026-07-28 request declaring the Tasks extension; its final JSON-RPC answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": STATELESS,
        "mcp-method": method,
        "mcp-name": str(params[NAMED_BY[method]]),
        "connection": "close",
    }
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
    with httpx.Client(timeout=WAIT) as http, http.stream("POST", url, json=body, headers=headers) as reply:
        return answer_of(reply, request_id)


def two_processes(tmp_path: Path, redis_url: str) -> tuple[list[str], dict[str, str]]:
    (tmp_path / "tasks_target.py").write_text(TASKS_SERVER)
    args = [f"{tmp_path / 'tasks_target.py'}:build", "--port", "0", "--redis-url", redis_url, "--worker-ttl", "1s"]
    return args, {"PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)])}


def test_a_killed_processs_task_ends_failed_with_the_definite_error_on_the_other(
    redis_url: str, tmp_path: Path
) -> None:
    args, env = two_processes(tmp_path, redis_url)
    with serving(args, tmp_path, env) as a, serving(args, tmp_path, env) as b:
        created = stateless(a.url, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
        task_id = created["result"]["taskId"]
        assert stateless(b.url, 2, "tasks/get", {"taskId": task_id})["result"]["status"] == "working"
        a.process.send_signal(signal.SIGKILL)  # mid-task: no graceful anything
        a.process.wait(timeout=WAIT)
        killed = time.monotonic()
        while (task := stateless(b.url, 3, "tasks/get", {"taskId": task_id})["result"])["status"] == "working":
            assert time.monotonic() < killed + WAIT, "the dead process's task stayed working"
            time.sleep(0.1)
        print(f"failed {time.monotonic() - killed:.2f} s after the kill")  # (shown with -s)
        assert task["status"] == "failed", task
        assert task["error"] == {"code": -32603, "message": TASK_INTERRUPTED}


def test_a_cancel_through_one_process_stops_the_task_running_on_the_other(redis_url: str, tmp_path: Path) -> None:
    args, env = two_processes(tmp_path, redis_url)
    with serving(args, tmp_path, env) as a, serving(args, tmp_path, env) as b:
        created = stateless(a.url, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
        task_id = created["result"]["taskId"]
        assert stateless(b.url, 2, "tasks/cancel", {"taskId": task_id})["result"]["resultType"] == "complete"
        deadline = time.monotonic() + WAIT
        while (task := stateless(a.url, 3, "tasks/get", {"taskId": task_id})["result"])["status"] == "working":
            assert time.monotonic() < deadline, "the cancel never reached the handler"
            time.sleep(0.05)
        assert task["status"] == "cancelled"


def test_a_sessions_core_task_is_served_by_either_process(redis_url: str, tmp_path: Path) -> None:
    args, env = two_processes(tmp_path, redis_url)
    with serving(args, tmp_path, env) as a, serving(args, tmp_path, env) as b:
        session = RawSession(a.url)
        try:
            session.open()
            created = session.call(
                1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3}, "task": {"ttl": 60_000}}
            )
            task_id = created["result"]["task"]["taskId"]
            session.url = b.url  # the same session, through the other process
            assert session.call(2, "tasks/get", {"taskId": task_id})["result"]["status"] in ("working", "completed")
            result = session.call(3, "tasks/result", {"taskId": task_id})["result"]
            assert result["content"] == [{"type": "text", "text": "computed: done after 0.3 s"}]
            assert result["_meta"][RELATED_TASK] == {"taskId": task_id}
            listed = session.call(4, "tasks/list", {})["result"]["tasks"]
            assert [task["taskId"] for task in listed] == [task_id]
        finally:
            session.close()
