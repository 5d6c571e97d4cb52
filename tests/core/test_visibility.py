"""Visibility (issue 38 item 4): tags, and rules that hide or show components for every client
(``server.disable``/``enable``) or for one session (``context.session.visibility``), per principal
on 2026-07-28. Hidden is unknown: left out of lists and refused on call, read and get."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.sessions import Connect, RawClient
from mcp_sse_server import McpServer, NotFound, RequestContext, SessionRecord
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND
from mcp_sse_server.engine.tokens import AccessToken, current_access_token
from mcp_sse_server.engine.visibility import Rule, shown

TOOLS_CHANGED = "notifications/tools/list_changed"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def build() -> McpServer:
    server = McpServer("visible")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(tags={"admin"})
    def reset() -> str:
        return "reset"

    @server.tool(tags={"admin", "audit"})
    def audit() -> str:
        return "audited"

    @server.tool
    async def lock_down(context: RequestContext) -> str:
        context.session.visibility.disable(tags={"admin"})
        return "locked"

    @server.tool
    async def open_up(context: RequestContext) -> str:
        context.session.visibility.reset()
        return "open"

    @server.resource("config://secret", tags={"admin"})
    def secret() -> str:
        return "s3cret"

    @server.resource("users://{id}", tags={"admin"})
    def user(id: str) -> dict[str, str]:
        return {"id": id}

    @server.prompt(tags={"admin"})
    def promote(user: str) -> str:
        return f"Promote {user}"

    return server


async def names(client: RawClient, params: dict[str, Any] | None = None) -> list[str]:
    return [tool["name"] for tool in (await client.result("tools/list", params))["tools"]]


def test_the_rules_last_match_wins_and_only_hides_the_rest() -> None:
    rules = [Rule.of(False, tags={"admin"}), Rule.of(True, names={"audit"})]
    assert not shown(rules, "tool", ("reset",), {"admin"})
    assert shown(rules, "tool", ("audit",), {"admin"})
    assert shown(rules, "prompt", ("other",), ())
    only = [Rule.of(True, names={"add"}, kinds={"tool"}, only=True)]
    assert shown(only, "tool", ("add",), ()) and not shown(only, "tool", ("reset",), ())
    assert shown(only, "prompt", ("promote",), ())  # only its kinds
    assert Rule.from_dict(rules[0].to_dict()) == rules[0]
    for bad in ({}, {"names": "add"}, {"kinds": {"tools"}}):
        with pytest.raises(ValueError):
            Rule.of(False, **bad)
    with pytest.raises(ValueError, match="only="):
        Rule.of(False, tags={"x"}, only=True)


async def test_tags_are_never_on_the_wire(connect: Connect) -> None:
    client = await connect(build())
    listed = (await client.result("tools/list"))["tools"]
    assert all("tags" not in tool and "_meta" not in tool for tool in listed)


async def test_server_rules_hide_from_lists_and_refuse_calls(connect: Connect) -> None:
    server = build()
    client = await connect(server)
    assert await names(client) == ["add", "reset", "audit", "lock_down", "open_up"]
    server.disable(tags={"admin"})
    await client.notification(TOOLS_CHANGED)
    assert await names(client) == ["add", "lock_down", "open_up"]
    error = await client.error("tools/call", {"name": "reset", "arguments": {}})
    assert (error.code, error.message) == (INVALID_PARAMS, "Unknown tool: reset")  # as an unknown tool
    assert (await client.error("resources/read", {"uri": "config://secret"})).code == RESOURCE_NOT_FOUND
    assert (await client.error("resources/read", {"uri": "users://1"})).code == RESOURCE_NOT_FOUND
    assert (await client.result("resources/list"))["resources"] == []
    assert (await client.result("resources/templates/list"))["resourceTemplates"] == []
    assert (await client.result("prompts/list"))["prompts"] == []
    error = await client.error("prompts/get", {"name": "promote", "arguments": {"user": "x"}})
    assert (error.code, error.message) == (INVALID_PARAMS, "Unknown prompt: promote")
    server.enable(names={"audit"})  # a later rule wins
    assert await names(client) == ["add", "audit", "lock_down", "open_up"]
    assert (await client.result("tools/call", {"name": "audit", "arguments": {}}))["content"][0]["text"] == "audited"
    server.enable(names={"add"}, kinds={"tool"}, only=True)
    assert await names(client) == ["add"]
    server.reset_visibility()
    assert await names(client) == ["add", "reset", "audit", "lock_down", "open_up"]
    assert (await client.result("prompts/get", {"name": "promote", "arguments": {"user": "x"}}))["messages"]


async def test_session_rules_are_that_sessions_only_and_tell_only_it(connect: Connect) -> None:
    server = build()
    first, second = await connect(server), await connect(server)
    assert (await first.result("tools/call", {"name": "lock_down", "arguments": {}}))["content"][0]["text"] == "locked"
    await first.notification(TOOLS_CHANGED)
    await first.notification("notifications/prompts/list_changed")
    assert await names(first) == ["add", "lock_down", "open_up"]
    assert await names(second) == ["add", "reset", "audit", "lock_down", "open_up"]  # two sessions, two lists
    assert (await first.error("tools/call", {"name": "reset", "arguments": {}})).code == INVALID_PARAMS
    assert (await second.result("tools/call", {"name": "reset", "arguments": {}}))["content"][0]["text"] == "reset"
    assert (await first.error("resources/read", {"uri": "users://1"})).code == RESOURCE_NOT_FOUND
    await second.sync()
    assert second.notifications(TOOLS_CHANGED) == []  # the other session heard nothing
    rules = [session.record.visibility for session in server.sessions]
    assert sorted(rules, key=bool) == [None, [Rule.of(False, tags={"admin"}).to_dict()]]
    await first.result("tools/call", {"name": "open_up", "arguments": {}})
    await first.notification(TOOLS_CHANGED)
    assert await names(first) == ["add", "reset", "audit", "lock_down", "open_up"]


async def test_a_session_record_carrying_rules_is_obeyed_on_a_fresh_server(connect: Connect) -> None:
    """What a shared store hands another worker: a record with rules, on a server that never made one."""
    server = build()
    client = await connect(server)
    (session,) = server.sessions
    # the record as a store would give it back on another worker (the server here has no rules yet)
    session.record = SessionRecord(
        **{**vars_of(session.record), "visibility": [Rule.of(False, names={"add"}).to_dict()]}
    )
    session.record_followed()
    assert await names(client) == ["reset", "audit", "lock_down", "open_up"]


def vars_of(record: SessionRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


async def test_stateless_rules_are_per_principal_and_need_a_token(connect: Connect) -> None:
    server = build()
    anonymous = await connect(server, initialize=False)
    failed = await anonymous.result("tools/call", {"_meta": MODERN_META, "name": "lock_down", "arguments": {}})
    assert failed["isError"] is True  # RuntimeError inside the tool: no principal to keep rules for

    async def as_principal(subject: str, method: str, params: dict[str, Any], *, error: bool = False) -> Any:
        # What the bearer check does around each HTTP request; an in-memory request carries the
        # context of the task that sends it.
        reset = current_access_token.set(AccessToken("https://issuer", subject))
        try:
            ask = anonymous.error if error else anonymous.result
            return await ask(method, {"_meta": MODERN_META, **params})
        finally:
            current_access_token.reset(reset)

    done = await as_principal("alice", "tools/call", {"name": "lock_down", "arguments": {}})
    assert done["content"][0]["text"] == "locked"
    alice = await as_principal("alice", "tools/list", {})
    assert [tool["name"] for tool in alice["tools"]] == ["add", "lock_down", "open_up"]
    refused = await as_principal("alice", "tools/call", {"name": "reset", "arguments": {}}, error=True)
    assert (refused.code, refused.message) == (INVALID_PARAMS, "Unknown tool: reset")
    bob = await as_principal("bob", "tools/list", {})
    assert [tool["name"] for tool in bob["tools"]] == ["add", "reset", "audit", "lock_down", "open_up"]
    assert await names(anonymous, {"_meta": MODERN_META}) == ["add", "reset", "audit", "lock_down", "open_up"]


async def test_not_found_from_a_hidden_component_and_a_visible_one_look_alike(connect: Connect) -> None:
    server = build()

    @server.resource("notes://{id}")
    def note(id: str) -> str:
        raise NotFound()

    server.disable(names={"users://{id}"})
    client = await connect(server)
    hidden = await client.error("resources/read", {"uri": "users://1"})
    missing = await client.error("resources/read", {"uri": "notes://1"})
    assert (hidden.code, hidden.message) == (RESOURCE_NOT_FOUND, "Resource not found: users://1")
    assert (missing.code, missing.message) == (RESOURCE_NOT_FOUND, "Resource not found: notes://1")


async def test_a_principals_change_reaches_only_that_principals_listeners(connect: Connect) -> None:
    server = build()

    async def as_principal(client: RawClient, subject: str, method: str, params: dict[str, Any]) -> Any:
        reset = current_access_token.set(AccessToken("https://issuer", subject))
        try:
            return await client.send_request(method, {"_meta": MODERN_META, **params})
        finally:
            current_access_token.reset(reset)

    listeners = {}
    for subject in ("alice", "bob"):
        listener = listeners[subject] = await connect(server, initialize=False)
        wanted = {"notifications": {"toolsListChanged": True, "promptsListChanged": True}}
        await as_principal(listener, subject, "subscriptions/listen", wanted)
        await listener.notification("notifications/subscriptions/acknowledged")
    caller = await connect(server, initialize=False)
    await caller.response(await as_principal(caller, "alice", "tools/call", {"name": "lock_down", "arguments": {}}))
    await listeners["alice"].notification(TOOLS_CHANGED)
    server.disable(names={"promote"}, kinds={"prompt"})  # for everyone: it comes after alice's on the bus
    for listener in listeners.values():
        await listener.notification("notifications/prompts/list_changed")
    assert listeners["bob"].notifications(TOOLS_CHANGED) == []  # bob's lists did not change
