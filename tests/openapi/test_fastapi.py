"""``from_fastapi``: a real FastAPI app (tests/openapi/shop_app.py) served as MCP tools, called in
process through httpx's ASGI transport, by our client in memory and over HTTP, and by the official
SDK 2.3 client over HTTP."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_sse_server import McpServer
from mcp_sse_server.client import InMemoryClient, StreamableHttpClient
from mcp_sse_server.openapi import from_fastapi
from mcp_sse_server.transport.http import McpHttpServer

from .shop_app import API_KEY, Slow, build_app

# Each route: the call, and what a good answer holds (structured content, or None for 204).
CALLS: list[tuple[str, dict[str, Any], Any]] = [
    ("list_items", {"colour": "blue"}, {"result": [{"id": 1, "name": "kettle", "colour": "blue"}]}),
    ("read_item", {"item_id": 1}, {"id": 1, "name": "kettle", "price": 20.0}),
    (
        "create_item",
        {"name": "cup", "price": 2, "colour": "green", "size": {"width": 1, "height": 2}},
        {"id": 2, "name": "cup", "colour": "green", "size": {"width": 1.0, "height": 2.0}},
    ),
    ("category_tree", {}, {"name": "all", "children": [{"name": "kitchen"}]}),
    ("attach", {"body": {"url": "https://example.org"}}, {"kind": "link"}),
    ("count", {}, {"result": 2}),
    ("echo", {"name": "mug", "x-trace": "t-1"}, {"name": "mug", "trace": "t-1"}),
    ("private", {}, {"ok": True}),
    ("delete_item", {"item_id": 2}, None),
]


def shop_server() -> tuple[McpServer, list[dict[str, str]]]:
    app, seen = build_app()
    return from_fastapi(app, headers={"x-api-key": API_KEY}), seen


def contains(whole: Any, part: Any) -> bool:
    """``part``'s keys and items are in ``whole`` (lists item by item, as a prefix)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(key in whole and contains(whole[key], part[key]) for key in part)
    if isinstance(part, list):
        return isinstance(whole, list) and len(whole) >= len(part) and all(map(contains, whole, part))
    return bool(whole == part)


def test_the_routes_become_tools_with_readable_names_and_schemas() -> None:
    server, _ = shop_server()
    tools = {tool.name: tool for tool in server.tools}
    assert set(tools) == {name for name, _, _ in CALLS} | {"fail", "moved", "slow_route"}
    create = tools["create_item"].input_schema
    assert create["required"] == ["name", "price"]  # the body's model, flattened
    assert create["properties"]["colour"]["$ref"] == "#/$defs/Colour"
    assert create["$defs"]["Colour"]["enum"] == ["red", "green", "blue"]  # the enum is there (#2466)
    assert set(create["$defs"]) == {"Colour", "Dimensions"}  # nested models reachable (#2366)
    tree = tools["category_tree"].output_schema
    assert tree is not None and tree["type"] == "object" and "Category" in tree["$defs"]  # recursive, root inlined
    assert tools["count"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer", "title": "Response Count Count Get"}},
        "required": ["result"],
    }
    union = tools["attach"].input_schema["properties"]["body"]["anyOf"]
    assert union == [{"$ref": "#/$defs/Note"}, {"$ref": "#/$defs/Link"}]  # a union stays a union (#2153)
    assert tools["read_item"].annotations is not None and tools["read_item"].annotations.read_only_hint
    assert tools["delete_item"].annotations is not None and tools["delete_item"].annotations.destructive_hint


async def test_each_route_through_our_client_in_memory() -> None:
    server, seen = shop_server()
    async with InMemoryClient(server) as client:
        for name, arguments, expected in CALLS:
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result)
            if expected is None:
                assert result.content == [] and result.structured_content is None
            else:
                assert contains(result.structured_content, expected), (name, result.structured_content)
        missing = await client.call_tool("read_item", {"item_id": 99})
        bad_enum = await client.call_tool("list_items", {"colour": "purple"})
        failed = await client.call_tool("fail", {})
    assert missing.is_error and missing.content[0].text == 'HTTP 404 Not Found: {"detail":"no item 99"}'  # type: ignore[union-attr]
    assert bad_enum.is_error and "purple" in missing.content[0].text + bad_enum.content[0].text  # type: ignore[union-attr]
    text = failed.content[0].text  # type: ignore[union-attr]
    assert failed.is_error and text.startswith("HTTP 500 Internal Server Error: ")
    assert "<h1>" not in text and "Broken" in text and len(text) < 2100  # bounded, tags stripped
    assert all(request["x-api-key"] == API_KEY for request in seen)


async def test_a_path_value_stays_one_segment() -> None:
    server, _ = shop_server()
    async with InMemoryClient(server) as client:
        result = await client.call_tool("echo", {"name": "../private"})
        dotted = await client.call_tool("echo", {"name": ".."})
    # Starlette routes on the decoded path: an encoded "/" makes it a path no route has (404),
    # never /private; and ".." alone is sent encoded, so it is a name, not a step up.
    assert result.is_error and result.content[0].text.startswith("HTTP 404")  # type: ignore[union-attr]
    assert dotted.structured_content == {"name": "..", "trace": None}


async def test_each_route_over_http_through_our_client() -> None:
    server, _ = shop_server()
    http = await McpHttpServer.bind(server, host="127.0.0.1", port=0)
    async with http, StreamableHttpClient(http.endpoint) as ours:
        for name, arguments, expected in CALLS:
            result = await ours.call_tool(name, arguments)
            assert not result.is_error, (name, result)
            if expected is not None:
                assert contains(result.structured_content, expected), (name, result.structured_content)
        assert (await ours.call_tool("read_item", {"item_id": 42})).is_error


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 stateless, and 2025-11-25 sessions
async def test_each_route_over_http_through_the_official_sdk(mode: Any) -> None:
    server, _ = shop_server()
    async with await McpHttpServer.bind(server, host="127.0.0.1", port=0) as http:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(streamable_http_client(http.endpoint), mode=mode) as sdk:
                listed = {tool.name for tool in (await sdk.list_tools()).tools}
                assert listed == {name for name, _, _ in CALLS} | {"fail", "moved", "slow_route"}
                for name, arguments, expected in CALLS:
                    result = await sdk.call_tool(name, arguments)
                    assert not result.is_error, (name, result)
                    if expected is not None:
                        assert contains(result.structured_content, expected), (name, result.structured_content)
                failed = await sdk.call_tool("read_item", {"item_id": 42})
                assert failed.is_error and "HTTP 404" in failed.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("arguments", [{"item_id": "one"}, {}])
async def test_arguments_that_break_the_schema_never_reach_the_api(arguments: dict[str, Any]) -> None:
    server, seen = shop_server()
    async with InMemoryClient(server) as client:
        result = await client.call_tool("read_item", arguments)
    assert result.is_error and seen == []


async def test_cancelling_the_call_cancels_the_api_request() -> None:
    slow = Slow()
    app, _ = build_app(slow)
    async with InMemoryClient(from_fastapi(app)) as client:
        call = asyncio.create_task(client.call_tool("slow_route", {}))
        await asyncio.wait_for(slow.started.wait(), 30)
        call.cancel()
        await asyncio.wait_for(slow.cancelled.wait(), 30)  # bounded: only catches a hang
        assert call.cancelled() or call.done()
