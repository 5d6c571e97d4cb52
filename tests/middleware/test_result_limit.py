"""ResultLimit: results within the limit pass as they are; over it, a tool error naming the
limit, or text cut with a marker until the serialized result fits."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fixtures.sessions import Connect
from mcp_sse_server import CallToolResult, ImageContent, RequestContext, TextContent, Tool
from mcp_sse_server.middleware import ResultLimit

from .conftest import build


async def test_within_the_limit_a_result_passes_untouched(connect: Connect) -> None:
    client = await connect(build(ResultLimit(1000)))
    result = await client.result("tools/call", {"name": "big", "arguments": {"n": 500}})
    assert result["content"][0]["text"] == "x" * 500


async def test_over_the_limit_an_error_names_the_limit_and_sends_nothing_of_the_result(connect: Connect) -> None:
    client = await connect(build(ResultLimit(1000)))
    result = await client.result("tools/call", {"name": "big", "arguments": {"n": 5000}})
    assert result["isError"] is True and "limit is 1000" in result["content"][0]["text"]
    assert "xxxx" not in orjson.dumps(result).decode()


@pytest.mark.parametrize("text", ["x" * 5000, 'é"\n' * 2000])
async def test_truncation_cuts_text_with_a_marker_until_it_fits(connect: Connect, text: str) -> None:
    def two(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult([TextContent("head"), TextContent(text)])

    server = build(ResultLimit(1000, on_oversize="truncate", marker="[cut]"))
    server.add_tool(Tool("two", {"type": "object"}, two))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "two", "arguments": {}})
    assert len(orjson.dumps(result)) <= 1000 and "isError" not in result
    first, second = result["content"]
    assert first["text"] == "head" and second["text"].endswith("[cut]") and text.startswith(second["text"][:-5])
    assert len(orjson.dumps(result)) > 900  # it keeps what fits, not just a little


async def test_what_cannot_be_truncated_is_refused(connect: Connect) -> None:
    def structured(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult.structured({"rows": ["x" * 3000]})

    def picture(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult([TextContent("a picture"), ImageContent("A" * 3000, "image/png")])

    server = build(ResultLimit(1000, on_oversize="truncate"))
    server.add_tool(Tool("structured", {"type": "object"}, structured))
    server.add_tool(Tool("picture", {"type": "object"}, picture))
    client = await connect(server)
    for name in ("structured", "picture"):
        result = await client.result("tools/call", {"name": name, "arguments": {}})
        assert result["isError"] is True and "too large" in result["content"][0]["text"], name


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        ResultLimit(0)
    with pytest.raises(ValueError):
        ResultLimit(10, on_oversize="drop")  # type: ignore[arg-type]
