"""initialize_mcp_server: routing to the right client, the handshake and tool list, cleanup on failure."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

from mcp_sse_server import McpServer, MemoryTransport
from mcp_sse_server.client import InMemoryClient, McpClient
from mcp_sse_server.client.config import ConfigError, ServerConfig
from mcp_sse_server.client.connect import ServerStartError, create_client, initialize_mcp_server
from mcp_sse_server.client.transport import ClientTransport
from mcp_sse_server.engine import transports
from mcp_sse_server.engine.transport import Transport
from mcp_sse_server.servers import MemoryServerFactory

MATH = {"name": "Math", "type": "inmemory", "command": "math", "env": {}, "args": []}


class FakeTransport(ClientTransport):
    """Stands in for a network transport: reaches a math server in memory, or fails or hangs as
    its client's class says."""

    def __init__(self, client: FakeRemote) -> None:
        self.client = client
        self.server = MemoryServerFactory.create_memory_server("math")

    async def connect(self) -> Transport:
        if self.client.fail_on == "open":
            raise ConnectionRefusedError("connection refused by 127.0.0.1:9")
        if self.client.hang is not None:
            self.client.hang.set()
            await asyncio.Event().wait()
        server_side, client_side = MemoryTransport.pair()
        await self.server.connect(server_side)
        return client_side


class FakeRemote(McpClient):
    """Stands in for a network client: records how it was built, talks to a math server in memory."""

    made: list[FakeRemote] = []
    fail_on: str | None = None
    hang: asyncio.Event | None = None

    def __init__(self, target: str, **options: Any) -> None:
        self.transport_args = {key: options.pop(key) for key in ("args", "env", "headers") if key in options}
        super().__init__(FakeTransport(self), **options)
        self.target = target
        self.closed = False
        FakeRemote.made.append(self)

    async def list_tools(self) -> Any:
        if self.fail_on == "list_tools":
            raise RuntimeError("tools/list exploded")
        return await super().list_tools()

    async def close(self) -> None:
        self.closed = True
        await super().close()


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[FakeRemote]]:
    """Replace client/http.py, client/sse.py and client/stdio.py with FakeRemote subclasses."""
    FakeRemote.made = []
    made: dict[str, type[FakeRemote]] = {}
    for module, name in (("http", "StreamableHttpClient"), ("sse", "SseClient"), ("stdio", "StdioClient")):
        fake_module = types.ModuleType(f"mcp_sse_server.client.{module}")
        cls = type(name, (FakeRemote,), {"fail_on": None, "hang": None})
        setattr(fake_module, name, cls)
        monkeypatch.setitem(sys.modules, fake_module.__name__, fake_module)
        made[module] = cls
    return made


async def test_inmemory_math_is_initialized_with_its_19_tools() -> None:
    client = await initialize_mcp_server(MATH)
    try:
        assert isinstance(client, InMemoryClient)
        assert client.server_info is not None and client.protocol_version is not None
        assert client.tools is not None and len(client.tools) == 19
        assert "factorial" in {tool.name for tool in client.tools}
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content is not None and result.structured_content["result"] == 5
    finally:
        await client.close()


async def test_a_server_config_object_works_too() -> None:
    client = await initialize_mcp_server(ServerConfig("Artifacts", type="inmemory", command="artifact_instructions"))
    try:
        assert [tool.name for tool in client.tools or []] == ["get_artifact_instructions"]
    finally:
        await client.close()


async def test_client_options_reach_the_client() -> None:
    client = await initialize_mcp_server(
        MATH, client_name="my-app", client_version="9.9.9", request_timeout=12.0, mode="session"
    )
    try:
        assert isinstance(client, InMemoryClient)
        assert client.request_timeout == 12.0
        assert client.transport.server.client_info is not None  # recorded by the handshake
        assert client.transport.server.client_info["name"] == "my-app"
    finally:
        await client.close()


async def test_unknown_inmemory_command_names_the_field_and_the_known_servers() -> None:
    with pytest.raises(ConfigError) as caught:
        await initialize_mcp_server({"name": "calc", "type": "inmemory", "command": "calculator"})
    message = str(caught.value)
    assert message.startswith("mcpServers.calc.command: unknown in-memory server 'calculator'")
    assert "math" in message and "artifact_instructions" in message


async def test_a_bad_config_is_rejected_before_anything_opens(fakes: dict[str, type[FakeRemote]]) -> None:
    with pytest.raises(ConfigError, match=r"^mcpServers\.foo\.args: expected a list of strings"):
        await initialize_mcp_server({"name": "foo", "command": "npx", "args": "-y server"})
    assert FakeRemote.made == []


@pytest.mark.parametrize(
    ("config", "module", "target", "transport_args"),
    [
        (
            {"type": "streamable", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}},
            "http",
            "http://127.0.0.1:9/mcp",
            {"headers": {"Authorization": "Bearer t"}},
        ),
        ({"type": "http", "url": "http://127.0.0.1:9/mcp"}, "http", "http://127.0.0.1:9/mcp", {"headers": {}}),
        ({"type": "streamable-http", "url": "https://h/mcp"}, "http", "https://h/mcp", {"headers": {}}),
        ({"url": "http://127.0.0.1:9/mcp"}, "http", "http://127.0.0.1:9/mcp", {"headers": {}}),
        ({"command": "http://127.0.0.1:9/mcp"}, "http", "http://127.0.0.1:9/mcp", {"headers": {}}),
        ({"type": "sse", "command": "http://127.0.0.1:9/sse"}, "sse", "http://127.0.0.1:9/sse", {"headers": {}}),
        (
            {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Key": "k"}},
            "sse",
            "http://127.0.0.1:9/sse",
            {"headers": {"X-Key": "k"}},
        ),
        (
            {"type": "stdio", "command": "npx", "args": ["-y", "pkg"], "env": {"DEBUG": "1"}},
            "stdio",
            "npx",
            {"args": ["-y", "pkg"], "env": {"DEBUG": "1"}},
        ),
        ({"command": "python3", "args": ["server.py"]}, "stdio", "python3", {"args": ["server.py"], "env": {}}),
    ],
)
async def test_each_type_builds_its_client(
    fakes: dict[str, type[FakeRemote]],
    config: dict[str, Any],
    module: str,
    target: str,
    transport_args: dict[str, Any],
) -> None:
    client = create_client({"name": "x", **config}, request_timeout=7.0)
    assert type(client) is fakes[module]
    assert isinstance(client, FakeRemote)
    assert client.target == target
    assert client.transport_args == transport_args
    assert client.request_timeout == 7.0
    assert client.connection is None  # create_client does not connect


async def test_initialize_mcp_server_handshakes_and_lists_tools_through_the_routed_client(
    fakes: dict[str, type[FakeRemote]],
) -> None:
    client = await initialize_mcp_server({"name": "remote", "url": "http://127.0.0.1:9/mcp"})
    try:
        assert type(client) is fakes["http"]
        assert client.server_info is not None
        assert len(client.tools or []) == 19
    finally:
        await client.close()


@pytest.mark.parametrize("fail_on", ["open", "list_tools"])
async def test_a_failed_start_closes_the_client_and_says_which_server(
    fakes: dict[str, type[FakeRemote]], fail_on: str
) -> None:
    fakes["http"].fail_on = fail_on
    with pytest.raises(ServerStartError) as caught:
        await initialize_mcp_server({"name": "remote", "url": "http://127.0.0.1:9/mcp"})
    message = str(caught.value)
    assert message.startswith("could not start MCP 'remote' (streamable http://127.0.0.1:9/mcp): ")
    assert ("connection refused" if fail_on == "open" else "tools/list exploded") in message
    assert caught.value.server_name == "remote"
    assert caught.value.__cause__ is not None
    (client,) = FakeRemote.made
    assert client.closed


async def test_a_server_without_tools_fails_the_start_and_is_closed() -> None:
    servers: list[McpServer] = []

    def build() -> McpServer:
        servers.append(McpServer("toolless", "1.0.0"))
        return servers[-1]

    MemoryServerFactory.register("toolless-test", build)
    try:
        with pytest.raises(ServerStartError, match=r"^could not start MCP 'bare' \(inmemory toolless-test\): "):
            await initialize_mcp_server({"name": "bare", "type": "inmemory", "command": "toolless-test"})
    finally:
        MemoryServerFactory.unregister("toolless-test")
    (server,) = servers
    assert server.sessions == ()  # the client's session was closed, and the server forgot it


async def test_startup_timeout_closes_the_client(fakes: dict[str, type[FakeRemote]]) -> None:
    fakes["stdio"].hang = asyncio.Event()
    with pytest.raises(ServerStartError, match=r"no answer within 0 s"):
        await initialize_mcp_server({"name": "slow", "command": "slow-server"}, startup_timeout=0)
    (client,) = FakeRemote.made
    assert client.closed


async def test_cancelling_a_start_closes_the_client_and_propagates(fakes: dict[str, type[FakeRemote]]) -> None:
    started = asyncio.Event()
    fakes["stdio"].hang = started
    task = asyncio.create_task(initialize_mcp_server({"name": "slow", "command": "slow-server"}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (client,) = FakeRemote.made
    assert client.closed


async def test_a_missing_client_module_is_a_clear_start_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import: Callable[..., Any] = __import__("importlib").import_module

    def import_module(name: str, package: str | None = None) -> Any:
        if name == transports.entry("sse").connect.partition(":")[0]:  # type: ignore[union-attr]
            raise ModuleNotFoundError("No module named 'httpx_sse'")
        return real_import(name, package)

    # The transport table loads the sse transport's connector when a client is made for it.
    monkeypatch.setattr("mcp_sse_server.engine.transports.importlib.import_module", import_module)
    with pytest.raises(ServerStartError, match=r"the sse client is not available: No module named"):
        await initialize_mcp_server({"name": "legacy", "type": "sse", "url": "http://127.0.0.1:9/sse"})


@pytest.mark.parametrize(
    ("module", "name", "config"),
    [
        ("http", "StreamableHttpClient", {"url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "1"}}),
        ("sse", "SseClient", {"type": "sse", "url": "http://127.0.0.1:9/sse"}),
        ("stdio", "StdioClient", {"command": sys.executable, "args": ["-c", "pass"], "env": {"A": "1"}}),
    ],
)
def test_the_real_client_classes_accept_what_is_passed(module: str, name: str, config: dict[str, Any]) -> None:
    """Construction only: no network, no process (skipped until the client module exists)."""
    real = pytest.importorskip(f"mcp_sse_server.client.{module}")
    client = create_client({"name": "x", **config}, request_timeout=5.0)
    assert type(client) is getattr(real, name)
    assert client.request_timeout == 5.0


# --- real round trips (skipped until the transport modules exist) ---------------------------


async def test_streamable_http_round_trip_against_our_http_server() -> None:
    transport = pytest.importorskip("mcp_sse_server.transport.http")
    client_module = pytest.importorskip("mcp_sse_server.client.http")
    http = await transport.McpHttpServer.bind(lambda: MemoryServerFactory.create_memory_server("math"), port=0)
    try:
        endpoint = http.endpoint
        assert endpoint.startswith("http://127.0.0.1:")
        for config in ({"url": endpoint}, {"command": endpoint}, {"type": "streamable-http", "url": endpoint}):
            client = await initialize_mcp_server({"name": "remote", **config})
            try:
                assert type(client) is client_module.StreamableHttpClient
                assert len(client.tools or []) == 19
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert result.structured_content == {"result": 5}
            finally:
                await client.close()
    finally:
        await http.close()


async def test_an_unreachable_http_server_is_a_start_error() -> None:
    import socket

    pytest.importorskip("mcp_sse_server.client.http")
    # Bound, never listening, held for the whole test: a refused port no other process can take.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        with pytest.raises(ServerStartError, match=rf"^could not start MCP 'gone' \(streamable {url}\): "):
            await initialize_mcp_server({"name": "gone", "url": url}, startup_timeout=30)
