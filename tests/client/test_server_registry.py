"""The client layer gets its in-memory servers and default entries injected, not hard-coded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sse_server import McpServer, Tool
from mcp_sse_server.client import ConfigError, InMemoryClient, McpServerProvider, create_client
from mcp_sse_server.client import provider as provider_module
from mcp_sse_server.servers.defaults import DEFAULT_SERVERS


class EchoRegistry:
    """A registry of one server, 'echo'."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def create_memory_server(self, command: str) -> McpServer:
        if command != "echo":
            raise LookupError(command)
        self.created.append(command)
        server = McpServer("echo", "1.0.0")
        server.add_tool(Tool("echo", handler=lambda arguments, context: "echoed"))
        return server

    def commands(self) -> list[str]:
        return ["echo"]


def test_the_default_entries_live_in_the_servers_package() -> None:
    assert dict(DEFAULT_SERVERS) == {
        "Math": {"type": "inmemory", "command": "math"},
        "Artifact Instructions": {"type": "inmemory", "command": "artifact_instructions"},
    }
    assert provider_module.DEFAULT_SERVERS is DEFAULT_SERVERS  # the old name still reads


def test_the_client_layer_does_not_load_the_built_in_servers(tmp_path: Path) -> None:
    code = f"""
import sys
import mcp_sse_server.client.http, mcp_sse_server.client.connect, mcp_sse_server.client.provider
from mcp_sse_server.client import McpServerProvider
names = McpServerProvider({str(tmp_path / "mcp_server.json")!r}).names()
assert names == ["Math", "Artifact Instructions"], names
print(sorted(m for m in sys.modules if m.startswith("mcp_sse_server.servers")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['mcp_sse_server.servers', 'mcp_sse_server.servers.defaults']"


async def test_create_client_uses_the_registry_it_is_given() -> None:
    registry = EchoRegistry()
    client = create_client({"type": "inmemory", "command": "echo"}, server_registry=registry)
    assert isinstance(client, InMemoryClient) and registry.created == ["echo"]
    async with client:
        result = await client.call_tool("echo", {})
    assert result.content[0].text == "echoed"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"unknown in-memory server 'math'; known: echo$"):
        create_client({"type": "inmemory", "command": "math"}, server_registry=registry)


async def test_the_provider_takes_its_defaults_and_registry(tmp_path: Path) -> None:
    path = tmp_path / "mcp_server.json"
    registry = EchoRegistry()
    async with McpServerProvider(
        path, default_servers={"Echo": {"type": "inmemory", "command": "echo"}}, server_registry=registry
    ) as provider:
        assert provider.names() == ["Echo"]
        client = await provider.start("Echo")
        assert [tool.name for tool in provider.tools("Echo")] == ["echo"]
        assert registry.created == ["echo"]
        assert client.connection is not None
        provider.remove_mcp_server("Echo")
    assert json.loads(path.read_text()) == {"mcpServers": {}, "removedDefaults": ["Echo"]}
    empty = McpServerProvider(tmp_path / "empty.json", default_servers={})
    assert empty.names() == []


def test_the_http_client_does_not_load_the_server_engine() -> None:
    code = """
import sys
import mcp_sse_server.client.http
loaded = ("mcp_sse_server.engine.server", "mcp_sse_server.engine.schema", "jsonschema_rs")
print(sorted(m for m in loaded if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
