"""The official TypeScript SDK client's tasks (1.x: the 2025-11-25 core tasks, experimental there)
against our task tools over a real socket (needs Node 22)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fixtures.node import run_node_json
from fixtures.tasks import build
from mcp_sse_server.engine.tasks import RELATED_TASK, TaskRuntime
from mcp_sse_server.stores import MemoryTaskStore
from mcp_sse_server.transport.http import McpHttpServer

SCRIPT = Path(__file__).with_name("ts_core_tasks.mjs")


@pytest.fixture
async def bound() -> AsyncIterator[McpHttpServer]:
    http = await McpHttpServer.bind(build(TaskRuntime(MemoryTaskStore(), poll_interval_ms=20)), port=0)
    try:
        yield http
    finally:
        await http.close()


async def test_the_typescript_client_runs_our_tools_as_core_tasks(bound: McpHttpServer) -> None:
    out = await run_node_json(SCRIPT, bound.endpoint)
    assert out["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert out["tools"]["slow"] == {"taskSupport": "optional"} and out["tools"]["plain"] is None

    slow = out["streams"]["slow"]
    assert slow[0] == ["taskCreated", "working", "string"]
    assert slow[-1][0] == "result" and slow[-1][1]["content"] == [{"type": "text", "text": "slow 5"}]
    assert ["taskStatus", "completed"] in slow
    broken = out["streams"]["broken"]  # a tool error fails a core task; the SDK reports the failure
    assert ["taskStatus", "failed"] in broken and broken[-1][0] == "error"
    ask = out["streams"]["ask"]  # the question went out on tasks/result, tagged with the task
    assert ask[-1] == ["result", {"content": [{"type": "text", "text": "accept"}], "_meta": ask[-1][1]["_meta"]}]
    assert [entry["message"] for entry in out["elicited"]] == ["question 0"]
    assert set(out["elicited"][0]["meta"]) == {RELATED_TASK}

    assert out["created"]["ttl"] == 30_000 and out["created"]["pollInterval"] == 20
    assert out["got"]["taskId"] == out["created"]["taskId"]
    assert out["result"]["content"] == [{"type": "text", "text": "slow 6"}]
    assert out["created"]["taskId"] in out["listed"]
    assert out["cancelTerminal"] == -32602  # a terminal task cannot be cancelled
