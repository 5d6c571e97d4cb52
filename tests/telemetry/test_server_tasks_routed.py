"""Task polls across workers: two ``McpHttpServer`` workers in this process, each with its own
SDK pipeline (standing for two processes), sharing sessions and tasks through a real
redis-server. A task runs on worker A; its polls served by worker B (``tasks/get`` and
``tasks/result`` of a 2025-11-25 session's core task; ``tasks/get`` and ``tasks/update`` of a
2026-07-28 extension task) link to the trace of A's task span, though nothing about that span
is stored: both derive the same anchor from the task id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from server_otel import Otel

from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.tasks import TASKS_EXTENSION
from mcp_sse_server.transport.http import McpHttpServer

pytest.importorskip("redis")

from mcp_sse_server.stores.redis_setup import RedisBackend

WAIT = 10.0
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
STATELESS = "2026-07-28"
EXTENSION_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}},
}


def make_server(otel: Otel) -> McpServer:
    server = McpServer("tasks-routed", telemetry=otel.telemetry())

    async def job(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        if arguments.get("ask"):
            answer = await context.session.elicit("go on?", {"type": "object", "properties": {}})
            return CallToolResult.text(answer.action)
        return CallToolResult.text("42")

    server.add_tool(Tool("job", handler=job, task_support="optional"))
    return server


@pytest.fixture
async def workers(
    otel: Otel, other: Otel, redis_server: Any, redis_prefix: str
) -> AsyncIterator[tuple[McpHttpServer, McpHttpServer]]:
    served: list[McpHttpServer] = []
    try:
        for pipeline in (otel, other):
            backend = RedisBackend.from_url(redis_server.url, prefix=redis_prefix)
            served.append(await McpHttpServer.bind(make_server(pipeline), port=0, backend=backend))
        yield served[0], served[1]
    finally:
        for http in served:
            await http.close()


def message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC reply in a POST's response (a JSON body or the last event of its stream)."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        reply: dict[str, Any] = response.json()
        return reply
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    replies = [orjson.loads(each) for each in data if each]
    replies = [each for each in replies if "id" in each and ("result" in each or "error" in each)]
    assert replies, response.text
    last: dict[str, Any] = replies[-1]
    return last


class Caller:
    """JSON-RPC requests over HTTP to either worker (with a session's headers once it has one)."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.ids = 0
        self.headers = dict(HEADERS)

    async def result(self, worker: McpHttpServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        headers = dict(self.headers)
        if "mcp-session-id" not in headers:  # 2026-07-28: its routing headers
            headers.update({"mcp-protocol-version": STATELESS, "mcp-method": method})
            named = params.get("name", params.get("taskId"))
            if named is not None:
                headers["mcp-name"] = str(named)
            params = {**params, "_meta": EXTENSION_META}
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        reply = message(await self.http.post(worker.endpoint, json=body, headers=headers))
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    async def open_session(self, worker: McpHttpServer) -> None:
        opened = await self.http.post(
            worker.endpoint,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            headers=self.headers,
        )
        assert opened.status_code == 200, opened.text
        self.headers.update({"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"})
        done = await self.http.post(
            worker.endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
        )
        assert done.status_code == 202, done.text

    async def until(self, worker: McpHttpServer, task_id: str, status: str) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            while True:
                task = await self.result(worker, "tasks/get", {"taskId": task_id})
                task = task.get("task", task)  # (the extension's detailed task is the result itself)
                if task["status"] == status:
                    return task
                await asyncio.sleep(0.02)


async def task_span(otel: Otel) -> Any:
    async with asyncio.timeout(WAIT):
        while not [s for s in otel.spans() if s.name == "task job"]:  # noqa: ASYNC110 - it ends in its own task
            await asyncio.sleep(0.01)
    return otel.span("task job")


def anchor_of(task: Any) -> tuple[int, int]:
    assert task.parent is not None and task.parent.is_remote and task.parent.trace_id == task.context.trace_id
    return (task.parent.trace_id, task.parent.span_id)


def linked(span: Any) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


async def test_core_task_polled_on_the_other_worker_links_to_its_trace(
    workers: tuple[McpHttpServer, McpHttpServer], otel: Otel, other: Otel
) -> None:
    a, b = workers
    async with httpx.AsyncClient(timeout=30) as http:
        caller = Caller(http)
        await caller.open_session(a)
        created = await caller.result(a, "tools/call", {"name": "job", "arguments": {}, "task": {}})
        task_id = created["task"]["taskId"]
        await caller.until(b, task_id, "completed")
        result = await caller.result(b, "tasks/result", {"taskId": task_id})
        assert result["content"][0]["text"] == "42"
    task = await task_span(otel)
    assert not [s for s in other.spans() if s.name == "task job"]  # it ran on A only
    polls = [s for s in other.spans() if s.name in ("tasks/get", "tasks/result")]
    assert {s.name for s in polls} == {"tasks/get", "tasks/result"}
    for poll in polls:
        assert anchor_of(task) in linked(poll), poll.name
        assert dict(poll.attributes or {})["mcp_sse_server.task.id"] == task_id


async def test_extension_task_polled_and_answered_on_the_other_worker_links_to_its_trace(
    workers: tuple[McpHttpServer, McpHttpServer], otel: Otel, other: Otel
) -> None:
    a, b = workers
    async with httpx.AsyncClient(timeout=30) as http:
        caller = Caller(http)
        created = await caller.result(a, "tools/call", {"name": "job", "arguments": {"ask": True}})
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        asked = await caller.until(b, task_id, "input_required")
        (key,) = asked["inputRequests"]
        await caller.result(b, "tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept"}}})
        done = await caller.until(b, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "accept"
    task = await task_span(otel)
    assert [event.name for event in task.events][:2] == ["working", "input_required"]
    polls = [s for s in other.spans() if s.name in ("tasks/get", "tasks/update")]
    assert {s.name for s in polls} == {"tasks/get", "tasks/update"}
    for poll in polls:
        assert anchor_of(task) in linked(poll), poll.name
