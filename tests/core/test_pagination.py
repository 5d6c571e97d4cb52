"""Pagination: unpaged by default; with page_size, opaque cursors bound to their collection."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from fixtures.sessions import Connect, RawClient
from mcp_sse_server import McpServer, Prompt, Resource, ResourceInfo, ResourceTemplate, Tool
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS


def _populate(server: McpServer, count: int) -> None:
    for i in range(count):
        server.add_tool(Tool(f"tool{i:02}", {"type": "object"}, lambda args, ctx: "x"))
        server.add_prompt(Prompt(f"prompt{i:02}", lambda args, ctx: "x"))
        server.add_resource(Resource.text(f"res://{i:02}", f"res{i:02}", "x"))
        server.add_resource_template(ResourceTemplate(f"tpl{i:02}://{{id}}", f"tpl{i:02}", lambda u, v, c: "x"))


LISTS = [
    ("tools/list", "tools", "name", "tool"),
    ("prompts/list", "prompts", "name", "prompt"),
    ("resources/list", "resources", "name", "res"),
    ("resources/templates/list", "resourceTemplates", "name", "tpl"),
]


async def _page_through(client: RawClient, method: str, key: str, field: str) -> tuple[list[str], int]:
    names: list[str] = []
    pages = 0
    params: dict[str, Any] = {}
    while True:
        result = await client.result(method, params)
        pages += 1
        names.extend(item[field] for item in result[key])
        cursor = result.get("nextCursor")
        if cursor is None:
            return names, pages
        assert isinstance(cursor, str)
        params = {"cursor": cursor}


async def test_unpaginated_by_default(connect: Connect) -> None:
    server = McpServer("s", "1")
    _populate(server, 30)
    client = await connect(server)
    for method, key, _field, _prefix in LISTS:
        result = await client.result(method)
        assert len(result[key]) == 30
        assert "nextCursor" not in result


@pytest.mark.parametrize(("method", "key", "field", "prefix"), LISTS)
async def test_paging_through_every_list(connect: Connect, method: str, key: str, field: str, prefix: str) -> None:
    server = McpServer("s", "1", page_size=4)
    _populate(server, 10)
    client = await connect(server)
    names, pages = await _page_through(client, method, key, field)
    assert names == [f"{prefix}{i:02}" for i in range(10)]
    assert pages == 3


async def test_an_exact_multiple_has_no_trailing_empty_page(connect: Connect) -> None:
    server = McpServer("s", "1", page_size=5)
    _populate(server, 10)
    client = await connect(server)
    names, pages = await _page_through(client, "tools/list", "tools", "name")
    assert len(names) == 10
    assert pages == 2


async def test_lister_entries_are_paged_too(connect: Connect) -> None:
    server = McpServer("s", "1", page_size=3)
    server.add_resource(Resource.text("fixed://1", "fixed", "x"))
    server.add_resource_template(
        ResourceTemplate(
            "file:///{+path}",
            "files",
            lambda u, v, c: "x",
            lister=lambda: [ResourceInfo(f"file:///{i}", f"f{i}") for i in range(5)],
        )
    )
    client = await connect(server)
    names, pages = await _page_through(client, "resources/list", "resources", "name")
    assert names == ["fixed", "f0", "f1", "f2", "f3", "f4"]
    assert pages == 2


async def test_a_tools_cursor_replayed_on_prompts_is_refused(connect: Connect) -> None:
    server = McpServer("s", "1", page_size=2)
    _populate(server, 5)
    client = await connect(server)
    cursor = (await client.result("tools/list"))["nextCursor"]
    for method in ("prompts/list", "resources/list", "resources/templates/list"):
        error = await client.error(method, {"cursor": cursor})
        assert error.code == INVALID_PARAMS
    # It still works where it came from.
    assert "tools" in await client.result("tools/list", {"cursor": cursor})


def _forge(payload: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload)).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        "!!!not-base64!!!",
        "é",
        "a" * 1000,
        base64.urlsafe_b64encode(b"not json").decode(),
        _forge([1, 2]),
        _forge({"c": "tools"}),
        _forge({"c": "tools", "o": -1}),
        _forge({"c": "tools", "o": 10_000}),
        _forge({"c": "tools", "o": "2"}),
        _forge({"c": "tools", "o": 2.0}),
        _forge({"c": "tools", "o": True}),
        _forge({"o": 2}),
        5,
        ["a"],
        {"c": "tools", "o": 2},
    ],
)
async def test_bad_cursors_are_invalid_params(connect: Connect, cursor: Any) -> None:
    server = McpServer("s", "1", page_size=2)
    _populate(server, 5)
    client = await connect(server)
    error = await client.error("tools/list", {"cursor": cursor})
    assert error.code == INVALID_PARAMS


async def test_a_cursor_is_refused_by_an_unpaginated_server(server: McpServer, connect: Connect) -> None:
    _populate(server, 3)
    client = await connect(server)
    assert (await client.error("tools/list", {"cursor": _forge({"c": "tools", "o": 1})})).code == INVALID_PARAMS


async def test_a_cursor_past_a_shrunk_list_is_refused_not_crashing(connect: Connect) -> None:
    server = McpServer("s", "1", page_size=2)
    _populate(server, 6)
    client = await connect(server)
    first = await client.result("tools/list")
    second = await client.result("tools/list", {"cursor": first["nextCursor"]})
    for i in range(1, 6):
        server.remove_tool(f"tool{i:02}")
    error = await client.error("tools/list", {"cursor": second["nextCursor"]})
    assert error.code == INVALID_PARAMS


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        McpServer("s", "1", page_size=0)
    with pytest.raises(ValueError):
        McpServer("s", "1", page_size=-3)
