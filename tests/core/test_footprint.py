"""What every session shares instead of holding its own copy, and that sharing
changes no behaviour: method tables per class, compiled schemas and tool
wire dicts per distinct schema/tool."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sse_server import McpServer, Tool
from mcp_sse_server.context import RequestContext
from mcp_sse_server.schema import SchemaValidator

from .conftest import Connect


async def test_the_method_table_is_per_class_and_honours_overrides(connect: Connect) -> None:
    class Custom(McpServer):
        async def _ping(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            return {"served_by": self.name}

    plain, custom = McpServer("plain", "1"), Custom("custom", "1")
    assert "_handlers" not in vars(plain) and "_handlers" not in vars(custom)
    assert await (await connect(custom)).result("ping") == {"served_by": "custom"}
    assert await (await connect(plain)).result("ping") == {}


def _schema() -> dict[str, Any]:
    # A new dict each time, as a session factory building its tools would make.
    return {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}


async def echo(arguments: dict[str, Any], context: RequestContext) -> str:
    return str(arguments["a"])


def test_equal_schemas_share_one_compiled_validator() -> None:
    first = SchemaValidator(_schema())
    reordered = SchemaValidator({"required": ["a"], "properties": {"a": {"type": "number"}}, "type": "object"})
    other = SchemaValidator({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    assert first is reordered and first is not other
    assert first.first_error({}) == 'missing required argument "a"' and other.first_error({"a": 1}) is not None
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        SchemaValidator({"type": "object", "properties": {"a": {"type": 12}}})


async def test_sessions_registering_the_same_tool_share_its_validator_and_list_entry(connect: Connect) -> None:
    servers = [McpServer(f"s{i}", "1") for i in range(2)]
    for server in servers:
        server.add_tool(Tool("echo", _schema(), echo, description="Echoes a."))
    first, second = (server._tools["echo"] for server in servers)
    assert first.input is second.input and first.wire is second.wire
    # Each session still has its own Tool, and behaves as before.
    assert servers[0].tools[0] is not servers[1].tools[0]
    for server in servers:
        client = await connect(server)
        listed = (await client.result("tools/list"))["tools"]
        assert listed == [{"name": "echo", "description": "Echoes a.", "inputSchema": _schema()}]
        error = await client.result("tools/call", {"name": "echo", "arguments": {}})
        assert error["isError"] is True


def test_a_tool_that_differs_gets_its_own_list_entry() -> None:
    server = McpServer("s", "1")
    server.add_tool(Tool("echo", _schema(), echo, description="Echoes a."))
    server.add_tool(Tool("echo2", _schema(), echo, description="Echoes a."))
    entries = list(server._tools.values())
    assert entries[0].wire is not entries[1].wire and entries[0].input is entries[1].input
    assert entries[1].wire["name"] == "echo2"
