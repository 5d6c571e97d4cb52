"""Task spans, both generations (a 2025-11-25 session's core task, the 2026-07-28 Tasks extension):
the task's work is a ``task {tool}`` span linked to the call that created it (or its child), its
status changes are events, its terminal status classified; ``tasks/*`` spans name the task and
link to its trace through the anchor derived from the task id, also when another server sharing
the task store serves the poll."""

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
from mcp_sse_server.telemetry.server import task_anchor

WAIT = 10.0
EXTENSION_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
}


def make_server(otel: Otel, store: MemoryTaskStore | None = None, **options: Any) -> McpServer:
    runtime = TaskRuntime(store or MemoryTaskStore(), poll_interval_ms=20)
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
    assert task.kind is SpanKind.INTERNAL and task.parent == task_anchor(task_id)  # a trace of its own...
    assert call.context.trace_id != task.context.trace_id
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


def linked(span: Any) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


def anchor_of(task: Any) -> tuple[int, int]:
    """The (trace id, span id) a poll links to: the task span's remote parent, in its trace."""
    assert task.parent is not None and task.parent.is_remote
    assert task.parent.trace_id == task.context.trace_id
    return (task.parent.trace_id, task.parent.span_id)


async def test_core_polls_link_to_the_task_trace(otel: Otel) -> None:
    client = await raw(make_server(otel), "2025-11-25")
    try:
        created = await client.result("tools/call", {"name": "job", "arguments": {}, "task": {}})
        task_id = created["task"]["taskId"]
        task = await ended(otel, "task job")
        await client.result("tasks/get", {"taskId": task_id})
        await client.result("tasks/result", {"taskId": task_id})
        await client.error("tasks/cancel", {"taskId": task_id})  # (a finished task: refused, still linked)
        await client.result("tasks/list")
    finally:
        await client.close()
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        assert anchor_of(task) in linked(otel.span(method)), method
    assert linked(otel.span("tasks/list")) == [anchor_of(task)]  # (the page's one task)


async def test_extension_polls_link_to_the_task_trace(otel: Otel) -> None:
    client = await raw(make_server(otel), None)
    try:
        created = await client.result("tools/call", {"name": "job", "arguments": {}, "_meta": EXTENSION_META})
        task_id = created["taskId"]
        task = await ended(otel, "task job")
        await client.result("tasks/get", {"taskId": task_id, "_meta": EXTENSION_META})
        await client.result("tasks/update", {"taskId": task_id, "inputResponses": {}, "_meta": EXTENSION_META})
    finally:
        await client.close()
    assert dict(task.attributes or {})["mcp_sse_server.task.generation"] == "extension"
    for method in ("tasks/get", "tasks/update"):
        assert anchor_of(task) in linked(otel.span(method)), method


async def test_a_child_task_and_its_polls_link_to_one_anchor(otel: Otel) -> None:
    client = await raw(make_server(otel, task_trace="child"), "2025-11-25")
    try:
        created = await client.result("tools/call", {"name": "job", "arguments": {}, "task": {}})
        task_id = created["task"]["taskId"]
        task = await ended(otel, "task job")
        await client.result("tasks/get", {"taskId": task_id})
    finally:
        await client.close()
    anchor = task_anchor(task_id)
    assert task.context.trace_id == otel.span("tools/call job").context.trace_id  # in the caller's trace
    assert linked(task) == [(anchor.trace_id, anchor.span_id)] == linked(otel.span("tasks/get"))


async def test_a_poll_served_by_another_server_links_to_the_task_trace(otel: Otel, other: Otel) -> None:
    """Two servers, each with its own SDK pipeline (two workers), sharing one task store: the task
    runs on the first, the second serves its polls and links to the first's task trace."""
    store = MemoryTaskStore()
    making = await raw(make_server(otel, store), None)
    polling = await raw(make_server(other, store), None)
    try:
        created = await making.result("tools/call", {"name": "job", "arguments": {}, "_meta": EXTENSION_META})
        task = await ended(otel, "task job")
        polled = await polling.result("tasks/get", {"taskId": created["taskId"], "_meta": EXTENSION_META})
        assert polled["status"] == "completed"
    finally:
        await making.close()
        await polling.close()
    assert [span.name for span in other.spans() if span.name.startswith("task ")] == []  # (it ran on the first)
    assert anchor_of(task) in linked(other.span("tasks/get"))
