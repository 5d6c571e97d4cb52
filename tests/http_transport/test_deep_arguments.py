"""Deeply nested tool arguments over real HTTP: an 'Invalid arguments' result, no internal error."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_sse_server import McpServer, Tool
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.transport.http import McpHttpServer


def build() -> McpServer:
    server = McpServer("deep", "1.0.0")
    schema = {"type": "object", "additionalProperties": {"type": "number"}}
    server.add_tool(Tool("numbers", schema, lambda arguments, context: "ran"))
    return server


async def test_256_levels_of_nesting_over_http(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sse_server")
    value: Any = 0
    for _ in range(256):
        value = {"a": value}
    http = await McpHttpServer.bind(build)
    try:
        async with StreamableHttpClient(http.endpoint) as client:
            for _ in range(2):  # every request, not only the first
                result = await client.call_tool("numbers", {"x": value})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert text.startswith("Invalid arguments for tool numbers: arguments nested too deeply")
    finally:
        await http.close()
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]
