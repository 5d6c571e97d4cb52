"""The handler registry (engine/handlers.py): a server's methods by name, each revision's table
built from it, and what an application adds or replaces there, served over real sessions and
stateless requests."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.handlers import HandlerRegistry

SESSION_REVISIONS = [revision.name for revision in versions.SESSION]
ENVELOPE = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
}

# What McpServer registers of its own: every method a served revision lists, and the skills
# extension's (which no revision lists: served at every revision).
SERVER_METHODS = {method for revision in versions.SERVED for method in revision.methods} | {
    "skills/list",
    "skills/get",
    "resources/directory/read",
}


async def echo(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return {"echo": params.get("text"), "revision": context.session.record.revision}


def test_the_server_registers_every_method_it_serves_and_no_other() -> None:
    server = McpServer("s")
    assert set(server.handlers) == SERVER_METHODS and len(server.handlers) == 23
    assert not any("skills/list" in revision.methods for revision in versions.SERVED)


def test_a_registry_is_a_read_only_mapping_with_register_and_remove() -> None:
    handlers = HandlerRegistry()
    assert handlers.register("example/echo", echo) is echo
    assert handlers["example/echo"] is echo and handlers.get("example/nope") is None
    assert list(handlers) == ["example/echo"] and "example/echo" in handlers

    @handlers.register("example/other")
    async def other(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {}

    assert list(handlers) == ["example/echo", "example/other"] and handlers["example/other"] is other
    assert handlers.remove("example/echo") and not handlers.remove("example/echo")
    assert list(handlers) == ["example/other"]


def test_bad_registrations_are_refused_with_a_clear_error() -> None:
    handlers = HandlerRegistry()
    with pytest.raises(ValueError, match="non-empty string"):
        handlers.register("", echo)
    with pytest.raises(TypeError, match="must be callable"):
        handlers.register("example/echo", "not a function")  # type: ignore[call-overload]
    assert len(handlers) == 0


def test_tables_keep_each_revision_to_its_methods_and_serve_extensions_everywhere() -> None:
    handlers = HandlerRegistry()
    for method in ("initialize", "tasks/result", "server/discover", "example/echo"):
        handlers.register(method, echo)
    assert set(handlers.table(versions.REVISION_2025_06_18)) == {"initialize", "example/echo"}
    assert set(handlers.table(versions.REVISION_2025_11_25)) == {"initialize", "tasks/result", "example/echo"}
    assert set(handlers.table(versions.REVISION_2026_07_28)) == {"server/discover", "example/echo"}
    assert set(handlers.table(None)) == set(handlers)  # before initialize: every method (the session decides)
    assert handlers.table(versions.REVISION_2025_06_18) is handlers.table(versions.REVISION_2025_06_18)  # built once


async def test_an_extension_method_is_served_at_every_session_revision(connect: Connect) -> None:
    server = McpServer("s")
    server.handlers.register("example/echo", echo)
    for revision in SESSION_REVISIONS:
        client = await connect(server, initialize=False)
        await client.initialize(protocol_version=revision)
        assert await client.result("example/echo", {"text": "hi"}) == {"echo": "hi", "revision": revision}


async def test_an_extension_method_is_served_to_a_stateless_request(connect: Connect) -> None:
    server = McpServer("s")
    server.handlers.register("example/echo", echo)
    client = await connect(server, initialize=False)
    result = await client.result("example/echo", {"text": "hi", **ENVELOPE})
    assert (result["echo"], result["revision"], result["resultType"]) == ("hi", "2026-07-28", "complete")


async def test_a_method_registered_on_a_live_session_is_served_from_its_next_request(connect: Connect) -> None:
    server = McpServer("s")
    client = await connect(server)
    assert (await client.error("example/echo")).code == -32601
    server.handlers.register("example/echo", echo)
    assert (await client.result("example/echo", {"text": "now"}))["echo"] == "now"
    assert server.handlers.remove("example/echo")
    assert (await client.error("example/echo")).code == -32601


async def test_an_unknown_method_is_method_not_found_on_a_session_and_a_stateless_request(connect: Connect) -> None:
    server = McpServer("s")
    session = await connect(server)
    refused = await session.error("example/unknown")
    assert (refused.code, refused.message) == (-32601, "Method not found: example/unknown")
    stateless = await connect(server, initialize=False)
    refused = await stateless.error("example/unknown", ENVELOPE)
    assert (refused.code, refused.message) == (-32601, "Method not found: example/unknown")


async def test_a_replaced_protocol_handler_serves_only_the_revisions_that_list_the_method(connect: Connect) -> None:
    server = McpServer("s", instructions="mine")

    async def discover(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {"supportedVersions": ["2026-07-28"], "capabilities": {}, "replaced": True}

    server.handlers.register("server/discover", discover)
    stateless = await connect(server, initialize=False)
    assert (await stateless.result("server/discover", ENVELOPE))["replaced"] is True
    session = await connect(server)  # 2025-11-25: server/discover is not one of its methods
    assert (await session.error("server/discover")).code == -32601


async def test_a_replaced_handler_serves_sessions_already_open(connect: Connect) -> None:
    server = McpServer("s")
    client = await connect(server)
    assert await client.result("ping") == {}

    async def ping(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {"pong": True}

    server.handlers.register("ping", ping)
    assert await client.result("ping") == {"pong": True}
    assert await (await connect(server)).result("ping") == {"pong": True}


async def test_a_replaced_tools_call_is_cut_down_for_an_older_revision_like_the_built_in_one(
    connect: Connect,
) -> None:
    server = McpServer("s")
    server.add_tool(Tool("t", {"type": "object"}, lambda arguments, context: "unused"))

    async def call(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return CallToolResult.structured({"n": 1}).to_dict()

    server.handlers.register("tools/call", call)
    old = await connect(server, initialize=False)
    await old.initialize(protocol_version="2025-03-26")  # no structuredContent before 2025-06-18
    assert await old.result("tools/call", {"name": "t"}) == {"content": [{"type": "text", "text": '{"n":1}'}]}
    new = await connect(server)
    assert (await new.result("tools/call", {"name": "t"}))["structuredContent"] == {"n": 1}
