"""A transport of one's own, made here and nowhere under src/: ``McpClient(transport)`` speaks
over it, and one ``register_transport`` call lets a config name it (``initialize_mcp_server``).

The transport is a pair of asyncio queues carrying each message as JSON bytes, with a task per
end that reads its queue and hands the messages to the engine attached to it: the server's
session on one end, the client's on the other. Nothing of it is the package's in-memory path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.peers import WAIT
from mcp_sse_server import McpServer, RequestContext
from mcp_sse_server.client import ClientTransport, ConfigError, McpClient, ServerConfig, ServerStartError
from mcp_sse_server.client.connect import ServerRegistry, initialize_mcp_server
from mcp_sse_server.engine.jsonrpc import JsonRpcMessage, RequestId, encode_message, parse_message
from mcp_sse_server.engine.transport import Transport
from mcp_sse_server.engine.transports import TransportEntry, register_transport, unregister_transport
from mcp_sse_server.servers import MemoryServerFactory


class QueueEnd(Transport):
    """One end of a connection over two queues of JSON bytes; None on a queue ends it."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]) -> None:
        self.inbox = inbox
        self.outbox = outbox
        self.sent: list[str] = []  # the methods (or "reply") this end sent, to show what went over it
        self._reader: asyncio.Task[None] | None = None
        self._ended = False

    def attach(self, dispatcher: Any) -> None:
        super().attach(dispatcher)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        while (data := await self.inbox.get()) is not None:
            assert self.dispatcher is not None
            self.dispatcher.on_message(parse_message(data))
        self._end()

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._ended:
            raise ConnectionError("the queue connection is closed")
        self.sent.append(getattr(message, "method", "reply"))
        self.outbox.put_nowait(encode_message(message))

    async def close(self) -> None:
        if not self._ended:
            self.outbox.put_nowait(None)  # the peer's reader ends, and with it the peer
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        self._end()

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            if self.dispatcher is not None:
                self.dispatcher.on_close()


class QueueTransport(ClientTransport):
    """The client's side: each connection is a new pair of queues to a session of ``server``."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.opened: list[QueueEnd] = []

    async def connect(self) -> Transport:
        to_server: asyncio.Queue[bytes | None] = asyncio.Queue()
        to_client: asyncio.Queue[bytes | None] = asyncio.Queue()
        await self.server.connect(QueueEnd(to_server, to_client))
        end = QueueEnd(to_client, to_server)
        self.opened.append(end)
        return end


def connect_queues(
    config: ServerConfig, *, server_registry: ServerRegistry | None = None, **client_options: Any
) -> McpClient:
    """The table's ``connect`` for a config of type "queues": its server by name, as inmemory's."""
    assert config.command is not None
    registry = server_registry if server_registry is not None else MemoryServerFactory
    return McpClient(QueueTransport(registry.create_memory_server(config.command)), **client_options)


@pytest.fixture
def queues() -> Iterator[None]:
    register_transport(
        TransportEntry(
            "queues",
            "server",
            aliases=("asyncio-queues",),
            connect=connect_queues,
            description="asyncio queues of JSON to a server in this process",
        )
    )
    try:
        yield
    finally:
        unregister_transport("queues")


def asking_server() -> McpServer:
    server = McpServer("asking", "1.0.0")

    @server.tool()
    async def ask(context: RequestContext) -> str:
        """Reports progress, asks the user, logs, answers."""
        await context.report_progress(1, 2, "asking")
        answer = await context.session.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        await context.log("info", "asked")
        return f"{answer.action}: {(answer.content or {}).get('name')}"

    return server


async def test_an_mcp_client_speaks_over_a_transport_of_ones_own() -> None:
    transport = QueueTransport(MemoryServerFactory.create_memory_server("math"))
    async with McpClient(transport) as client:
        assert (client.era, client.server_info) == ("stateless", {"name": "math", "version": "1.0.0"})
        assert len(await client.list_tools()) == 19
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
    (end,) = transport.opened
    assert end.sent == ["server/discover", "tools/list", "tools/call"]  # every request went over it


async def test_a_session_over_it_carries_what_the_server_asks_and_sends() -> None:
    asked: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    transport = QueueTransport(asking_server())
    client = McpClient(transport, mode="session", elicitation_handler=elicit, on_log=logs.append)
    async with client:
        result = await asyncio.wait_for(client.call_tool("ask", on_progress=lambda *step: progress.append(step)), WAIT)
        assert result.content[0].text == "accept: Ada"  # type: ignore[union-attr]
    assert (client.era, [params["message"] for params in asked]) == ("session", ["Your name?"])
    assert progress == [(1, 2, "asking")] and [entry["data"] for entry in logs] == ["asked"]
    (end,) = transport.opened
    assert end.sent[:2] == ["initialize", "notifications/initialized"] and "reply" in end.sent  # the answer
    assert end.inbox.empty()


async def test_closing_the_client_ends_the_servers_session() -> None:
    server = MemoryServerFactory.create_memory_server("math")
    async with McpClient(QueueTransport(server), mode="session") as client:
        await client.ping()
        assert len(server.sessions) == 1
    for _ in range(500):  # the server's reader takes the end from its queue, in a task of its own
        if not server.sessions:
            break
        await asyncio.sleep(0.01)
    assert server.sessions == ()


async def test_a_registered_transport_is_named_by_configs(queues: None) -> None:
    client = await initialize_mcp_server({"name": "Math", "type": "asyncio_queues", "command": "math"})
    try:
        assert isinstance(client.transport, QueueTransport)
        assert len(client.tools or []) == 19
        assert (await client.call_tool("subtract", {"a": 5, "b": 3})).structured_content == {"result": 2}
    finally:
        await client.close()
    config = ServerConfig.from_dict({"type": "queues", "command": "math"}, name="Math")
    assert (config.transport, config.describe()) == ("queues", "queues math")


async def test_its_failures_name_the_server(queues: None) -> None:
    class Registry:
        def create_memory_server(self, command: str) -> McpServer:
            raise RuntimeError(f"no server called {command!r} here")

        def commands(self) -> list[str]:
            return []

    with pytest.raises(ServerStartError, match=r"^could not start MCP 'Q' \(queues nowhere\): no server called"):
        await initialize_mcp_server({"name": "Q", "type": "queues", "command": "nowhere"}, server_registry=Registry())


async def test_unregistered_it_is_an_unknown_type() -> None:
    with pytest.raises(ConfigError, match=r"unknown type 'queues'"):
        await initialize_mcp_server({"name": "Q", "type": "queues", "command": "math"})
