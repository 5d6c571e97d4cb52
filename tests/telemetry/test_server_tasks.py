"""Task spans, both generations (a 2025-11-25 session's core task, the 2026-07-28 Tasks extension):
the task's work is a ``task {tool}`` span linked to the call that created it (or its child), its
status changes are events, its terminal status classified; ``tasks/*`` spans name the task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from server_otel import Otel, raw

from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR, McpError
from mcp_sse_server.engine.memory_stores import MemoryTaskStore
from mcp_sse_server.engine.tasks import TASKS_EXTENSION, TaskRuntime

WAIT = 10.0
EXTENSION_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
}


def make_server(otel: Otel, **options: Any) -> McpServer:
    runtime = TaskRuntime(MemoryTaskStore(), poll_interval_ms=20)
    server = McpServer("tasks", tasks=runtime, telemetry=otel.telemetry(**options))

    async def job(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        if arguments.get("fail"):
            raise McpError(INTERNAL_ERROR, "upstream down")
        if arguments.get("soft"):
            return CallToolResult.error("no luck")
        return CallToolResult.text("42")

    server.add_tool(Tool("job", handler=job, task_support="optional"))
    return server


async def ended(otel: Otel, name: str) -> Any:
    async with asyncio.timeout(WAIT):
        while not [s for s in otel.spans() if s.name == name]:  # noqa: ASYNC110 - the task ends in its own asyncio task
            await asyncio.sleep(0.01)
    return otel.span(name)


async def test_a_core_task_is_a_linked_span_of_its_own(otel: Otel) -> None:
    client = await raw(make_server(otel), "2025-11-25")
    try:
        created = await client.result("tools/call", {"name": "job", "arguments": {}, "task": {}})
        task_id = created["task"]["taskId"]
        task = await ended(otel, "task job")
        await client.result("tasks/result", {"taskId": task_id})
    finally:
        await client.close()
    call = otel.span("tools/call job")
    assert task.kind is SpanKind.INTERNAL and task.parent is None  # a trace of its own...
    assert [link.context.span_id for link in task.links] == [call.context.span_id]  # ...linked to the call
    attributes = dict(task.attributes or {})
    assert attributes == {
        "gen_ai.tool.name": "job",
        "mcp_sse_server.task.id": task_id,
        "mcp_sse_server.task.generation": "core",
    }
    assert [event.name for event in task.events] == ["working", "completed"]
    assert task.status.status_code is StatusCode.UNSET
    (active,) = otel.points("mcp_sse_server.tasks.active")  # counted up when it started, down when it ended
    assert dict(active.attributes) == {"mcp_sse_server.task.generation": "core"} and active.value == 0
    assert dict(otel.span("tasks/result").attributes or {})["mcp_sse_server.task.id"] == task_id


@pytest.mark.parametrize(("arguments", "error_type"), [({"fail": True}, "-32603"), ({"soft": True}, "tool_error")])
async def test_an_extension_task_that_fails_is_an_error(otel: Otel, arguments: dict[str, Any], error_type: str) -> None:
    client = await raw(make_server(otel, task_trace="child"), None)
    try:
        created = await client.result("tools/call", {"name": "job", "arguments": arguments, "_meta": EXTENSION_META})
        assert created["resultType"] == "task"
        task = await ended(otel, "task job")
        await client.result("tasks/get", {"taskId": created["taskId"], "_meta": EXTENSION_META})
    finally:
        await client.close()
    call = otel.span("tools/call job")
    assert task.parent is not None and task.parent.span_id == call.context.span_id  # task_trace="child"
    assert dict(task.attributes or {})["mcp_sse_server.task.generation"] == "extension"
    assert dict(task.attributes or {})["error.type"] == error_type
    assert task.status.status_code is StatusCode.ERROR
    assert task.events[-1].name in ("failed", "completed")
    assert dict(otel.span("tasks/get").attributes or {})["mcp_sse_server.task.id"] == created["taskId"]
