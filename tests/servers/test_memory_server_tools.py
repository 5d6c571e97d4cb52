"""MemoryServer's ``tools``: declared as a list or as a property (the seed's "tools getter"), and live."""

from __future__ import annotations

from typing import Any

from mcp_sse_server import CallToolResult, RequestContext, Tool
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.servers import MemoryServer
from mcp_sse_server.servers.artifact_instructions import ArtifactInstructionsServer
from mcp_sse_server.servers.math import MathServer

ECHO = Tool("echo", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})


class GetterServer(MemoryServer):
    server_name = "getter"

    def __init__(self, prefix: str = "> ") -> None:
        self.prefix = prefix
        super().__init__()

    @property
    def tools(self) -> list[Tool]:  # type: ignore[override]
        return [ECHO]

    async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult.text(self.prefix + arguments["text"])


async def test_tools_declared_by_a_getter_are_served() -> None:
    server = GetterServer()
    async with InMemoryClient(server) as client:
        names = [tool.name for tool in await client.list_tools()]
        result = await client.call_tool("echo", {"text": "hi"})
    assert names == ["echo"]
    assert result.content[0].text == "> hi"  # type: ignore[union-attr]


def test_server_tools_reflects_tools_added_and_removed_at_run_time() -> None:
    server = MathServer()
    assert len(server.tools) == 19
    server.add_tool(Tool("extra"))
    assert [tool.name for tool in server.tools][-1] == "extra"
    assert server.remove_tool("add")
    assert "add" not in [tool.name for tool in server.tools]
    assert len(server.tools) == 19
    assert len(MathServer().tools) == 19  # the declaration itself is untouched


async def test_a_getter_server_lists_what_was_added_later() -> None:
    server = GetterServer()
    server.add_tool(Tool("later", handler=lambda arguments, context: "later"))
    assert [tool.name for tool in server.tools] == ["echo", "later"]
    async with InMemoryClient(server) as client:
        assert [tool.name for tool in await client.list_tools()] == ["echo", "later"]


def test_list_declarations_keep_working() -> None:
    assert [tool.name for tool in ArtifactInstructionsServer().tools] == ["get_artifact_instructions"]
