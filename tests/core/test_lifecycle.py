"""Initialize, version negotiation, capabilities, and what is refused before and after."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import (
    CallToolResult,
    CompleteResult,
    McpServer,
    Prompt,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_sse_server.engine.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    JsonRpcError,
    JsonRpcResponse,
)

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}


def _tool(name: str = "echo") -> Tool:
    return Tool(name, {"type": "object"}, lambda args, ctx: CallToolResult.text("ok"))


def _prompt(name: str = "p", completer: Any = None) -> Prompt:
    return Prompt(name, lambda args, ctx: "hi", completer=completer)


async def test_initialize_result_carries_server_info_and_instructions(connect: Connect) -> None:
    server = McpServer("srv", "2.0.0", title="Server Title", instructions="Use it well.")
    client = await connect(server, initialize=False)
    result = await client.initialize(protocol_version="2025-06-18")
    assert result == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"logging": {}},
        "serverInfo": {"name": "srv", "version": "2.0.0", "title": "Server Title"},
        "instructions": "Use it well.",
    }


async def test_initialize_result_omits_absent_title_and_instructions(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    result = await client.initialize()
    assert result["serverInfo"] == {"name": "test-server", "version": "1.2.3"}
    assert "instructions" not in result


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2024-10-07", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("garbage", "2025-11-25"),
    ],
)
async def test_a_served_revision_is_answered_as_requested_any_other_with_the_latest(
    server: McpServer, connect: Connect, requested: str, answered: str
) -> None:
    client = await connect(server, initialize=False)
    result = await client.initialize(protocol_version=requested)
    assert result["protocolVersion"] == answered
    assert server.protocol_version == answered and server.sessions[0].revision == answered


async def test_client_info_and_capabilities_are_recorded(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    assert server.client_info is None
    assert server.client_capabilities is None
    caps = {"sampling": {}, "roots": {"listChanged": True}}
    info = {"name": "inspector", "title": "Inspector", "version": "0.9.1"}
    await client.initialize(capabilities=caps, client_info=info)
    assert server.client_info == info
    assert server.client_capabilities == caps


async def test_missing_client_version_becomes_0_0_0(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    await client.initialize(client_info={"name": "sloppy"})
    assert server.client_info == {"name": "sloppy", "version": "0.0.0"}


async def test_non_string_client_version_becomes_0_0_0(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    await client.initialize(client_info={"name": "sloppy", "version": 3})
    assert server.client_info is not None
    assert server.client_info["version"] == "0.0.0"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (None, "protocolVersion"),
        ({}, "protocolVersion"),
        ({"protocolVersion": 20250618, "clientInfo": {"name": "c"}}, "protocolVersion"),
        ({"protocolVersion": "2025-06-18"}, "clientInfo"),
        ({"protocolVersion": "2025-06-18", "clientInfo": "c"}, "clientInfo"),
        ({"protocolVersion": "2025-06-18", "clientInfo": {"version": "1"}}, "clientInfo"),
        ({"protocolVersion": "2025-06-18", "clientInfo": {"name": "c"}, "capabilities": []}, "capabilities"),
    ],
)
async def test_malformed_initialize_is_invalid_params(
    server: McpServer, connect: Connect, params: dict[str, Any] | None, field: str
) -> None:
    client = await connect(server, initialize=False)
    error = await client.error("initialize", params)
    assert error.code == INVALID_PARAMS
    assert field in error.message
    assert not server.initialized
    # The session can still be initialized properly afterwards.
    await client.initialize()
    assert server.initialized


async def test_second_initialize_is_refused(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    error = await client.error("initialize", INIT)
    assert error.code == INVALID_REQUEST
    assert "already initialized" in error.message


@pytest.mark.parametrize(
    "method",
    ["tools/list", "tools/call", "resources/list", "resources/read", "prompts/list", "logging/setLevel", "nope"],
)
async def test_requests_before_initialize_are_refused(server: McpServer, connect: Connect, method: str) -> None:
    server.add_tool(_tool())
    client = await connect(server, initialize=False)
    error = await client.error(method, {"name": "echo"})
    assert error.code == INVALID_REQUEST
    assert "initialize" in error.message


async def test_ping_is_answered_before_initialize(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    assert await client.result("ping") == {}


async def test_ping_result_is_exactly_empty(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    assert await client.result("ping") == {}


async def test_requests_after_initialize_before_initialized_are_served(server: McpServer, connect: Connect) -> None:
    server.add_tool(_tool())
    client = await connect(server, initialize=False)
    await client.initialize(initialized=False)
    result = await client.result("tools/list")
    assert [t["name"] for t in result["tools"]] == ["echo"]


@pytest.mark.parametrize("method", ["nope", "tools/unknown", "sampling/createMessage", "roots/list", ""])
async def test_unknown_methods_are_method_not_found(server: McpServer, connect: Connect, method: str) -> None:
    client = await connect(server)
    error = await client.error(method)
    assert error.code == METHOD_NOT_FOUND
    assert error.id is not None


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/list", None),
        ("prompts/list", None),
        ("resources/list", None),
        ("resources/templates/list", None),
        ("resources/subscribe", {"uri": "a://b"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}),
    ],
)
async def test_methods_of_capabilities_not_offered_are_method_not_found(
    server: McpServer, connect: Connect, method: str, params: dict[str, Any] | None
) -> None:
    # An empty server advertises nothing but logging; its list methods must not pretend otherwise.
    client = await connect(server)
    error = await client.error(method, params)
    assert error.code == METHOD_NOT_FOUND


async def test_notifications_are_never_answered(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    await client.notify("notifications/unknown", {"x": 1})
    await client.notify("notifications/cancelled", {"requestId": 999})
    await client.notify("notifications/progress", {"progressToken": "t", "progress": 1})
    # Unhashable ids and tokens must not raise out of the transport.
    await client.notify("notifications/cancelled", {"requestId": [1]})
    await client.notify("notifications/progress", {"progressToken": {"a": 1}, "progress": 1})
    await client.notify("notifications/roots/list_changed")
    await client.sync()
    assert client.received == []


async def test_roots_list_changed_reaches_the_callback(server: McpServer, connect: Connect) -> None:
    calls: list[str] = []
    server.on_roots_list_changed = lambda: calls.append("changed")
    client = await connect(server)
    await client.notify("notifications/roots/list_changed")
    await client.sync()
    assert calls == ["changed"]


# --- capabilities ----------------------------------------------------------------


async def test_empty_server_advertises_only_logging(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    result = await client.initialize()
    assert result["capabilities"] == {"logging": {}}


async def test_capabilities_follow_registrations(server: McpServer, connect: Connect) -> None:
    server.add_tool(_tool())
    server.add_resource(Resource.text("config://app", "app", "{}"))
    server.add_prompt(_prompt())
    client = await connect(server, initialize=False)
    result = await client.initialize()
    assert result["capabilities"] == {
        "logging": {},
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
    }
    assert "completions" not in result["capabilities"]


def test_a_template_alone_advertises_resources() -> None:
    server = McpServer("s", "1")
    server.add_resource_template(ResourceTemplate("x://{id}", "x", lambda uri, v, ctx: "x"))
    assert set(server.capabilities) == {"logging", "resources"}


def test_completions_are_advertised_only_with_a_completer() -> None:
    server = McpServer("s", "1")
    server.add_prompt(_prompt("plain"))
    server.add_resource_template(ResourceTemplate("x://{id}", "x", lambda uri, v, ctx: "x"))
    assert "completions" not in server.capabilities
    server.add_prompt(_prompt("completing", completer=lambda req, ctx: CompleteResult([])))
    assert "completions" in server.capabilities
    server.remove_prompt("completing")
    assert "completions" not in server.capabilities
    server.add_resource_template(
        ResourceTemplate("y://{id}", "y", lambda uri, v, ctx: "y", completer=lambda req, ctx: ["a"])
    )
    assert "completions" in server.capabilities


def test_removing_the_last_tool_withdraws_the_capability() -> None:
    server = McpServer("s", "1")
    server.add_tool(_tool())
    assert "tools" in server.capabilities
    assert server.remove_tool("echo") is True
    assert server.remove_tool("echo") is False
    assert "tools" not in server.capabilities


# --- list_changed --------------------------------------------------------------


async def test_list_changed_is_sent_for_each_registration_after_initialized(
    server: McpServer, connect: Connect
) -> None:
    server.add_tool(_tool("first"))
    server.add_resource(Resource.text("a://1", "one", "1"))
    server.add_prompt(_prompt("first"))
    client = await connect(server)
    assert client.received == []  # nothing was announced for registrations before the session

    server.add_tool(_tool("second"))
    await client.notification("notifications/tools/list_changed")
    server.remove_tool("second")
    await client.notification("notifications/tools/list_changed")
    server.add_prompt(_prompt("second"))
    await client.notification("notifications/prompts/list_changed")
    server.remove_prompt("second")
    await client.notification("notifications/prompts/list_changed")
    server.add_resource(Resource.text("a://2", "two", "2"))
    await client.notification("notifications/resources/list_changed")
    server.remove_resource("a://2")
    await client.notification("notifications/resources/list_changed")
    server.add_resource_template(ResourceTemplate("t://{x}", "t", lambda uri, v, ctx: "t"))
    await client.notification("notifications/resources/list_changed")
    server.remove_resource_template("t://{x}")
    await client.notification("notifications/resources/list_changed")
    await server.notify_resource_list_changed()
    await client.notification("notifications/resources/list_changed")
    await client.sync()
    assert client.received == []


async def test_removing_something_unknown_sends_nothing(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    assert server.remove_tool("ghost") is False
    assert server.remove_prompt("ghost") is False
    assert server.remove_resource("ghost://") is False
    assert server.remove_resource_template("ghost://{x}") is False
    await client.sync()
    assert client.received == []


async def test_no_list_changed_before_notifications_initialized(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    server.add_tool(_tool("before-initialize"))
    await client.initialize(initialized=False)
    server.add_tool(_tool("before-initialized"))
    await server.notify_resource_list_changed()
    await client.sync()
    assert client.received == []
    await client.notify("notifications/initialized")
    server.add_tool(_tool("after"))
    await client.notification("notifications/tools/list_changed")


async def test_the_tool_list_reflects_changes(server: McpServer, connect: Connect) -> None:
    server.add_tool(_tool("a"))
    client = await connect(server)
    assert [t["name"] for t in (await client.result("tools/list"))["tools"]] == ["a"]
    server.add_tool(_tool("b"))
    assert [t["name"] for t in (await client.result("tools/list"))["tools"]] == ["a", "b"]
    server.remove_tool("a")
    assert [t["name"] for t in (await client.result("tools/list"))["tools"]] == ["b"]


async def test_one_server_serves_each_connection_as_its_own_session(server: McpServer, connect: Connect) -> None:
    alice, bob = await connect(server, initialize=False), await connect(server, initialize=False)
    await alice.initialize(client_info={"name": "alice", "version": "1"})
    await bob.initialize(client_info={"name": "bob", "version": "2"}, capabilities={"roots": {}})
    first, second = server.sessions
    assert {first.client_info["name"], second.client_info["name"]} == {"alice", "bob"}  # type: ignore[index]
    assert first.connection is not second.connection
    # A request served on one session never sees the other's state.
    await alice.result("logging/setLevel", {"level": "error"})
    assert sorted(str(s.log_level) for s in server.sessions) == ["None", "error"]
    with pytest.raises(RuntimeError, match="2 sessions"):
        _ = server.client_capabilities  # outside a request it is ambiguous


async def test_closing_the_server_closes_every_session(server: McpServer, connect: Connect) -> None:
    clients = [await connect(server) for _ in range(3)]
    sessions = server.sessions
    await server.close()
    assert all(client.side.closed for client in clients)
    assert all(session.closed for session in sessions) and server.sessions == ()


async def test_request_ids_may_be_strings_or_integers(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    for request_id in ("abc", 0, -5, 2**53):
        reply = await client.call("ping", id=request_id)
        assert reply == JsonRpcResponse(request_id, {})


async def test_errors_keep_the_request_id(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    reply = await client.call("nope", id="my-id")
    assert isinstance(reply, JsonRpcError)
    assert reply.id == "my-id"
