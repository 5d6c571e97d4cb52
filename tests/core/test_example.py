"""examples/example.py: build_server() works end to end in-process."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from fixtures.sessions import Connect, RawClient, text_of
from mcp_sse_server import McpServer
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "example.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcp_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
async def client(example: ModuleType, connect: Connect) -> RawClient:
    return await connect(example.build_server())


def test_each_session_gets_its_own_server(example: ModuleType) -> None:
    first, second = example.build_server(), example.build_server()
    assert isinstance(first, McpServer)
    assert first is not second


async def test_capabilities(example: ModuleType, connect: Connect) -> None:
    client = await connect(example.build_server(), initialize=False)
    result = await client.initialize()
    assert result["capabilities"] == {
        "logging": {},
        "completions": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True},
    }
    assert result["serverInfo"]["name"] == "example-notes"
    assert "instructions" in result


async def test_every_tool_declares_an_output_schema(client: RawClient) -> None:
    tools = (await client.result("tools/list"))["tools"]
    assert [t["name"] for t in tools] == ["add", "search_notes"]
    assert all("outputSchema" in t and "annotations" in t for t in tools)


async def test_add(client: RawClient) -> None:
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3.5}})
    assert result["structuredContent"] == {"sum": 5.5}
    assert json.loads(text_of(result)) == {"sum": 5.5}
    bad = await client.result("tools/call", {"name": "add", "arguments": {"a": 2}})
    assert bad["isError"] is True and '"b"' in text_of(bad)


async def test_search_notes_with_progress(client: RawClient) -> None:
    params: dict[str, Any] = {"name": "search_notes", "arguments": {"query": "the"}, "_meta": {"progressToken": "p"}}
    result = await client.result("tools/call", params)
    hits = result["structuredContent"]["hits"]
    assert {"uri": "notes://garden", "title": "Garden plan"} in hits
    progress = [n.params["progress"] for n in client.notifications("notifications/progress") if n.params]
    assert progress == sorted(progress) and len(progress) == 4
    assert client.notifications("notifications/message")


async def test_resources(client: RawClient) -> None:
    listing = await client.result("resources/list")
    uris = [r["uri"] for r in listing["resources"]]
    assert uris[0] == "config://app"
    assert "notes://groceries" in uris
    config = await client.result("resources/read", {"uri": "config://app"})
    assert json.loads(config["contents"][0]["text"]) == {"theme": "dark", "autosave": True}
    note = await client.result("resources/read", {"uri": "notes://groceries"})
    assert note["contents"][0]["text"].startswith("Milk")
    missing = await client.error("resources/read", {"uri": "notes://nope"})
    assert (missing.code, missing.data) == (RESOURCE_NOT_FOUND, {"uri": "notes://nope"})
    templates = await client.result("resources/templates/list")
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == ["notes://{id}"]


async def test_completion(client: RawClient) -> None:
    template = await client.result(
        "completion/complete",
        {"ref": {"type": "ref/resource", "uri": "notes://{id}"}, "argument": {"name": "id", "value": "g"}},
    )
    assert template["completion"]["values"] == ["groceries", "garden"]
    prompt = await client.result(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "summarize_note"}, "argument": {"name": "id", "value": "re"}},
    )
    assert prompt["completion"]["values"] == ["release", "reading"]


async def test_prompt(client: RawClient) -> None:
    prompts = (await client.result("prompts/list"))["prompts"]
    assert [p["name"] for p in prompts] == ["summarize_note"]
    result = await client.result("prompts/get", {"name": "summarize_note", "arguments": {"id": "garden"}})
    assert result["messages"][0]["content"]["type"] == "resource"
    assert "Garden plan" in result["messages"][1]["content"]["text"]
    missing = await client.error("prompts/get", {"name": "summarize_note"})
    assert missing.code == INVALID_PARAMS and "id" in missing.message


async def test_running_the_example_serves_it_over_http() -> None:
    http = pytest.importorskip("mcp_sse_server.transport.http")
    if not hasattr(http, "McpHttpServer"):
        pytest.skip("McpHttpServer is not there yet")
    process = await asyncio.create_subprocess_exec(  # port 0: the endpoint it prints names the port it got
        sys.executable, str(EXAMPLE), "--port", "0", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        assert line.startswith("listening on http://127.0.0.1:")
        endpoint = line.removeprefix("listening on ").strip()
        async with httpx.AsyncClient() as session:
            reply = await session.post(
                endpoint,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
                },
                headers={"Accept": "application/json, text/event-stream"},
            )
        assert reply.status_code == 200
        assert reply.headers.get("mcp-session-id")
        assert "example-notes" in reply.text
    finally:
        process.terminate()
        await process.wait()
