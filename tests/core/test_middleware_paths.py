"""Every path a request takes passes through the server's middleware exactly once
(engine/middleware.py, issue 38): each revision over Streamable HTTP, the 2024-11-05 HTTP+SSE
transport, stdio, in-memory, a 2025-03-26 batch, a stateless call with an MRTR round, a core
task, an extension task, and a request posted to another worker sharing a redis-server.

One middleware (``Tag``) notes each request's method and round, adds 40 to a tool call's
argument ``a`` and stamps every result with what it has seen (``_meta.seen``): a result that
says ``42`` for ``a=2`` shows the params changed, ``_meta.seen`` that the result did, and the
notes that the hook ran once per JSON-RPC request. Real sockets (uvicorn on 127.0.0.1), a real
subprocess for stdio, a real redis-server for the two workers.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from fixtures.messages import parse_sse
from fixtures.redis_server import RedisServer, client_for, redis_deployment
from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool
from mcp_sse_server.client import SseClient, StdioClient
from mcp_sse_server.client.memory import InMemoryClient
from mcp_sse_server.engine.middleware import CallNext, Middleware
from mcp_sse_server.engine.tasks import TASKS_EXTENSION, TaskRuntime
from mcp_sse_server.stores import MemoryTaskStore
from mcp_sse_server.transport.http import HttpLimits, McpHttpServer

WAIT = 10.0  # bounded: only a hang waits this long
STATELESS = "2026-07-28"
SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Tag(Middleware):
    """Notes each request (method, round); a=2 becomes a=42 on tools/call; stamps each result."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.rounds: list[int] = []

    async def on_request(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        self.seen.append(context.method)
        self.rounds.append(context.rounds)
        if context.method == "tools/call":
            params = {**params, "arguments": {**params.get("arguments", {}), "a": 42}}
        result = await call_next(params)
        return {**result, "_meta": {**result.get("_meta", {}), "seen": list(self.seen)}}


def build(tag: Tag, **options: Any) -> McpServer:
    server = McpServer("paths", middleware=[tag], **options)

    def echo(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult.text(str(arguments.get("a")))

    async def greet(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        answer = await context.session.elicit("Name?", NAME)
        return CallToolResult.text(f"{answer.content['name']} {arguments.get('a')}")

    server.add_tool(Tool("echo", {"type": "object"}, echo))
    server.add_tool(Tool("greet", {"type": "object"}, greet))
    server.add_tool(Tool("job", {"type": "object"}, echo, task_support="optional"))
    return server


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def replies(reply: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC responses of an HTTP reply: a JSON body, or the SSE events that carry them."""
    if reply.headers["content-type"].startswith("text/event-stream"):
        events = [event.get("data") for event in parse_sse(reply.content)]
        return [message for message in events if isinstance(message, dict) and "id" in message]
    body = reply.json()
    return body if isinstance(body, list) else [body]


class Raw:
    """Raw Streamable HTTP to a real endpoint (httpx): one session, or stateless requests."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.session_id: str | None = None
        self.revision = STATELESS
        self.ids = 0

    async def post(self, body: Any, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
        head = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.session_id is not None:
            head["mcp-session-id"] = self.session_id
        if self.revision >= "2025-06-18":  # (2025-03-26 and before: the header did not exist)
            head["mcp-protocol-version"] = self.revision
        reply = await self.http.post(self.url, json=body, headers={**head, **(headers or {})}, timeout=WAIT)
        assert reply.status_code in (200, 202), reply.text
        if reply.status_code == 202:
            return []
        return replies(reply)

    def message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        if self.revision == STATELESS:
            meta = {
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {
                    "elicitation": {"form": {}},
                    "extensions": {TASKS_EXTENSION: {}},
                },
            }
            params = {**params, "_meta": meta}
        return {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        headers = {}
        if self.revision == STATELESS:
            headers["mcp-method"] = method
            named = params.get("name", params.get("taskId"))
            if named is not None:
                headers["mcp-name"] = str(named)
        replies = await self.post(self.message(method, params), headers)
        assert "result" in replies[-1], replies
        return replies[-1]["result"]  # type: ignore[no-any-return]

    async def open(self, revision: str) -> dict[str, Any]:
        self.revision = revision
        init = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        async with asyncio.timeout(WAIT):
            reply = await self.http.post(
                self.url,
                json=self.message("initialize", init),
                headers={"accept": "application/json, text/event-stream", "content-type": "application/json"},
            )
        self.session_id = reply.headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return replies(reply)[-1]["result"]  # type: ignore[no-any-return]


@pytest.fixture
async def served() -> AsyncIterator[tuple[Tag, McpHttpServer, Raw]]:
    tag = Tag()
    http = await McpHttpServer.bind(build(tag), port=0)
    try:
        async with httpx.AsyncClient() as client:
            yield tag, http, Raw(client, http.endpoint)
    finally:
        await http.close(deadline=0.5)


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_a_session_over_http_at_each_revision(served: tuple[Tag, McpHttpServer, Raw], revision: str) -> None:
    tag, _, raw = served
    opened = await raw.open(revision)
    assert opened["protocolVersion"] == revision and opened["_meta"]["seen"] == ["initialize"]
    result = await raw.result("tools/call", {"name": "echo", "arguments": {"a": 2}})
    assert text(result) == "42" and result["_meta"]["seen"] == ["initialize", "tools/call"]
    assert tag.seen == ["initialize", "tools/call"]


async def test_a_stateless_request_over_http(served: tuple[Tag, McpHttpServer, Raw]) -> None:
    tag, _, raw = served
    result = await raw.result("tools/call", {"name": "echo", "arguments": {"a": 2}})
    assert text(result) == "42" and result["_meta"]["seen"] == ["tools/call"] and result["resultType"] == "complete"
    assert tag.seen == ["tools/call"]


async def test_a_stateless_call_with_an_mrtr_round(served: tuple[Tag, McpHttpServer, Raw]) -> None:
    tag, _, raw = served
    call = {"name": "greet", "arguments": {"a": 2}}
    first = await raw.result("tools/call", call)
    # (the round ends in InputRequired, a BaseException through the hooks: the endpoint answers it)
    assert first["resultType"] == "input_required" and "seen" not in first["_meta"]
    (key,) = first["inputRequests"]
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await raw.result(
        "tools/call", {**call, "inputResponses": {key: answer}, "requestState": first["requestState"]}
    )
    assert text(done) == "Ada 42" and done["_meta"]["seen"] == ["tools/call", "tools/call"]
    assert tag.seen == ["tools/call", "tools/call"] and tag.rounds == [0, 1]


async def test_a_2025_03_26_batch_passes_each_entry_once(served: tuple[Tag, McpHttpServer, Raw]) -> None:
    tag, _, raw = served
    await raw.open("2025-03-26")
    batch = [raw.message("tools/call", {"name": "echo", "arguments": {"a": n}}) for n in (1, 2)]
    replies = await raw.post(batch)
    assert sorted(reply["id"] for reply in replies) == [entry["id"] for entry in batch]
    assert [text(reply["result"]) for reply in replies] == ["42", "42"]
    assert all(reply["result"]["_meta"]["seen"][-1] == "tools/call" for reply in replies)
    assert tag.seen == ["initialize", "tools/call", "tools/call"]


async def test_a_core_task(served: tuple[Tag, McpHttpServer, Raw]) -> None:
    tag, _, raw = served
    await raw.open("2025-11-25")
    created = await raw.result("tools/call", {"name": "job", "arguments": {"a": 2}, "task": {}})
    task_id = created["task"]["taskId"]
    assert created["_meta"]["seen"] == ["initialize", "tools/call"]
    done = await raw.result("tasks/result", {"taskId": task_id})
    assert text(done) == "42" and done["_meta"]["seen"][-1] == "tasks/result"
    assert tag.seen == ["initialize", "tools/call", "tasks/result"]


async def test_an_extension_task() -> None:
    tag = Tag()
    runtime = TaskRuntime(MemoryTaskStore(), ttl_ms=60_000, max_ttl_ms=120_000, poll_interval_ms=20)
    http = await McpHttpServer.bind(build(tag, tasks=runtime), port=0)
    try:
        async with httpx.AsyncClient() as client:
            raw = Raw(client, http.endpoint)
            created = await raw.result("tools/call", {"name": "job", "arguments": {"a": 2}})
            assert created["resultType"] == "task" and created["_meta"]["seen"] == ["tools/call"]
            async with asyncio.timeout(WAIT):
                while (task := await raw.result("tasks/get", {"taskId": created["taskId"]}))["status"] != "completed":  # noqa: ASYNC110 - polls another request
                    await asyncio.sleep(0.01)
            assert text(task["result"]) == "42" and task["_meta"]["seen"][-1] == "tasks/get"
            polls = len(tag.seen) - 1
            assert tag.seen == ["tools/call"] + ["tasks/get"] * polls and polls >= 1
    finally:
        await http.close(deadline=0.5)


async def test_the_2024_11_05_http_sse_transport(served: tuple[Tag, McpHttpServer, Raw]) -> None:
    tag, http, _ = served
    async with SseClient(urljoin(http.endpoint, "/sse")) as client:
        result = await client.request("tools/call", {"name": "echo", "arguments": {"a": 2}})
    assert text(result) == "42" and result["_meta"]["seen"][-1] == "tools/call"
    assert tag.seen.count("tools/call") == 1 and tag.seen.count("initialize") == 1
    assert result["_meta"]["seen"] == tag.seen


async def test_in_memory() -> None:
    tag = Tag()
    async with InMemoryClient(build(tag)) as client:
        result = await client.request("tools/call", {"name": "echo", "arguments": {"a": 2}})
    assert text(result) == "42" and result["_meta"]["seen"] == tag.seen
    assert tag.seen == ["server/discover", "tools/call"]  # (the client found the stateless era)


STDIO_SERVER = """
import sys
sys.path.insert(0, {tests!r})
from core.test_middleware_paths import Tag, build
build(Tag()).run("stdio")
"""


async def test_stdio() -> None:
    tests = str(TESTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), tests])}
    script = STDIO_SERVER.format(tests=tests)
    async with StdioClient(sys.executable, ["-c", script], env=env) as client:
        result = await client.request("tools/call", {"name": "echo", "arguments": {"a": 2}})
        again = await client.request("tools/call", {"name": "echo", "arguments": {"a": 5}})
    assert text(result) == "42" and text(again) == "42"
    assert result["_meta"]["seen"] == ["server/discover", "tools/call"]  # (the client found the stateless era)
    assert again["_meta"]["seen"] == ["server/discover", "tools/call", "tools/call"]


async def test_a_request_posted_to_another_worker(redis_server: RedisServer, redis_prefix: str) -> None:
    tags = {"A": Tag(), "B": Tag()}
    limits = HttpLimits()
    async with client_for(redis_server, redis_prefix) as redis:
        bound = [
            await McpHttpServer.bind(
                build(tags[name]), port=0, backend=redis_deployment(redis, redis_prefix, limits, name)
            )
            for name in tags
        ]
        try:
            async with httpx.AsyncClient() as client:
                on_a = Raw(client, bound[0].endpoint)
                await on_a.open("2025-11-25")
                on_b = Raw(client, bound[1].endpoint)
                on_b.session_id, on_b.revision, on_b.ids = on_a.session_id, on_a.revision, on_a.ids
                result = await on_b.result("tools/call", {"name": "echo", "arguments": {"a": 2}})
        finally:
            for http in bound:
                await http.close(deadline=0.5)
    assert text(result) == "42" and result["_meta"]["seen"][-1] == "tools/call"
    assert tags["A"].seen[0] == "initialize"
    assert tags["A"].seen.count("tools/call") + tags["B"].seen.count("tools/call") == 1
    assert tags["A"].seen.count("initialize") + tags["B"].seen.count("initialize") == 1
