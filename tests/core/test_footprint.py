"""One server definition, many sessions: what a session holds and what it shares.

A session is a small record plus its connection; the registries, compiled
validators and method tables belong to the server and are built once.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import McpServer, ServerSession, SessionRecord, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.schema import SchemaValidator


async def test_overridden_handlers_serve_every_session(connect: Connect) -> None:
    custom = McpServer("custom", "1")

    @custom.handlers.register("ping")
    async def ping(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {"served_by": context.server.name, "session": context.session.record.client_info["name"]}

    for name in ("a", "b"):
        client = await connect(custom, initialize=False)
        await client.initialize(client_info={"name": name, "version": "1"})
        assert await client.result("ping") == {"served_by": "custom", "session": name}
    assert await (await connect(McpServer("plain", "1"))).result("ping") == {}


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}


async def echo(arguments: dict[str, Any], context: RequestContext) -> str:
    return str(arguments["a"])


def test_a_schema_compiles_to_a_validator_with_one_line_messages() -> None:
    validator = SchemaValidator(_schema())
    assert validator.first_error({}) == 'missing required argument "a"'
    assert validator.first_error({"a": 1}) is None
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        SchemaValidator({"type": "object", "properties": {"a": {"type": 12}}})


async def test_sessions_share_the_servers_registry_and_hold_only_their_own_state(connect: Connect) -> None:
    server = McpServer("s", "1")
    server.add_tool(Tool("echo", _schema(), echo, description="Echoes a."))
    clients = [await connect(server) for _ in range(3)]
    for client in clients:
        listed = (await client.result("tools/list"))["tools"]
        assert listed == [{"name": "echo", "description": "Echoes a.", "inputSchema": _schema()}]
        assert (await client.result("tools/call", {"name": "echo", "arguments": {"a": 2}}))["content"][0]["text"] == "2"
    sessions = server.sessions
    assert len(sessions) == 3 and all(isinstance(s, ServerSession) for s in sessions)
    # What a session is, as plain data: no registry, no callables, nothing live.
    record = sessions[0].record
    assert isinstance(record, SessionRecord)
    assert set(vars(record) if hasattr(record, "__dict__") else record.__slots__) == {
        "id",
        "created_at",
        "last_seen",
        "revision",
        "client_info",
        "client_capabilities",
        "log_level",
        "subscriptions",
        "principal",  # who opened it, on a server that checks bearer tokens
        "visibility",  # the session's own visibility rules, as plain dicts
        "version",  # the writes a shared store took (it refuses a stale copy)
    }
    assert record.revision == "2025-11-25"  # what the raw client offers: the latest served


async def test_a_tool_registered_at_run_time_reaches_every_ready_session(connect: Connect) -> None:
    server = McpServer("s", "1")
    server.add_tool(Tool("echo", _schema(), echo))
    clients = [await connect(server) for _ in range(2)]
    server.add_tool(Tool("echo2", _schema(), echo))
    for client in clients:
        await client.notification("notifications/tools/list_changed")
        names = [tool["name"] for tool in (await client.result("tools/list"))["tools"]]
        assert names == ["echo", "echo2"]


def test_a_session_record_is_small() -> None:
    record = SessionRecord("x" * 43, 1.0, 1.0)
    assert sys.getsizeof(record) < 150
