"""ResponseCache with the in-process store: what is cached and what never is, the key's parts
(principal, scopes, revision, params), and the drops that follow the server's event bus."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from fixtures.keys import ISSUER, RESOURCE, SigningKey
from fixtures.sessions import Connect, RawClient
from mcp_sse_server import CallToolResult, McpServer, RequestContext, Resource, Tool
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.middleware import MemoryCache, ResponseCache
from mcp_sse_server.transport.http import HttpSettings

from .conftest import build, envelope, post, serving

BOUND = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def runs(server: McpServer) -> int:
    return len(server.runs)  # type: ignore[attr-defined]


async def until_changed(client: RawClient, method: str, params: dict[str, Any], before: Any) -> dict[str, Any]:
    """The result once it differs from ``before`` (the drop lands a few loop turns after the change)."""
    for _ in range(100):
        result = await client.result(method, params)
        if result != before:
            return result
        await asyncio.sleep(0.01)
    raise AssertionError(f"{method} still answered from the cache")


async def test_an_allow_listed_tool_is_answered_from_the_cache_until_its_ttl(connect: Connect) -> None:
    clock = Clock()
    server = build(ResponseCache(10.0, tools={"echo"}, store=MemoryCache(clock=clock)))
    client = await connect(server)
    call = {"name": "echo", "arguments": {"text": "a"}}
    first = await client.result("tools/call", call)
    assert await client.result("tools/call", call) == first and runs(server) == 1
    await client.result("tools/call", {"name": "echo", "arguments": {"text": "b"}})  # other arguments: another key
    await client.result("tools/call", {**call, "_meta": {"progressToken": 7}})  # _meta is not part of the key
    assert runs(server) == 2
    clock.now = 10.0
    assert (await client.result("tools/call", call))["content"][0]["text"] == "echo a #3"


async def test_tools_not_allow_listed_and_tool_errors_are_never_cached(connect: Connect) -> None:
    def broken(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        server.runs.append("broken")  # type: ignore[attr-defined]
        return CallToolResult.error("try later")

    server = build(ResponseCache(60.0, tools={"broken"}))
    server.add_tool(Tool("broken", {"type": "object"}, broken))
    client = await connect(server)
    for _ in range(2):
        await client.result("tools/call", {"name": "echo", "arguments": {}})
        assert (await client.result("tools/call", {"name": "broken", "arguments": {}}))["isError"] is True
    assert runs(server) == 4


async def test_mrtr_rounds_are_never_cached(connect: Connect) -> None:
    server = build(ResponseCache(60.0, tools={"greet"}))
    client = await connect(server, initialize=False)
    call = {**envelope({"elicitation": {"form": {}}}), "name": "greet", "arguments": {}}
    answer = {"action": "accept", "content": {"name": "Ada"}}
    for name in ("Ada", "Bo"):
        first = await client.result("tools/call", call)
        assert first["resultType"] == "input_required"
        answer = {"action": "accept", "content": {"name": name}}
        done = await client.result(
            "tools/call", {**call, "inputResponses": {"q1": answer}, "requestState": first["requestState"]}
        )
        assert done["content"][0]["text"] == f"hello {name}"
    assert runs(server) == 4


async def test_lists_are_cached_per_revision_and_dropped_when_they_change(connect: Connect) -> None:
    server = build(ResponseCache(60.0))
    old, new = await connect(server, initialize=False), await connect(server, initialize=False)
    await old.initialize(protocol_version="2024-11-05")
    await new.initialize(protocol_version="2025-11-25")
    listed = await new.result("tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["echo", "greet", "big"]
    server.add_tool(Tool("late", {"type": "object"}, lambda arguments, context: "late", title="Late"))
    changed = await until_changed(new, "tools/list", {}, listed)
    assert [tool["name"] for tool in changed["tools"]][-1] == "late" and changed["tools"][-1]["title"] == "Late"
    older = await old.result("tools/list")
    assert "title" not in older["tools"][-1]  # 2024-11-05's shape: its own entry, never 2025-11-25's
    assert "title" in (await new.result("tools/list"))["tools"][-1]


async def test_a_resource_update_drops_its_reads_and_a_list_change_all_reads(connect: Connect) -> None:
    text = {"value": "one"}
    server = build(ResponseCache(60.0, resources={"test://live", "test://a"}))
    server.add_resource(Resource("test://live", "live", reader=lambda uri, context: text["value"]))
    client = await connect(server)
    before = await client.result("resources/read", {"uri": "test://live"})
    text["value"] = "two"
    assert await client.result("resources/read", {"uri": "test://live"}) == before
    await server.notify_resource_updated("test://live")
    after = await until_changed(client, "resources/read", {"uri": "test://live"}, before)
    assert after["contents"][0]["text"] == "two"
    text["value"] = "three"
    server.add_resource(Resource.text("test://b", "b", "B"))  # the resource list changed
    assert (await until_changed(client, "resources/read", {"uri": "test://live"}, after))["contents"][0][
        "text"
    ] == "three"


async def test_prompts_only_when_allow_listed(connect: Connect) -> None:
    calls: list[str] = []

    def counted(arguments: dict[str, str], context: RequestContext) -> str:
        calls.append("x")
        return f"call {len(calls)}"

    from mcp_sse_server import Prompt

    server = build(ResponseCache(60.0, prompts={"counted"}))
    server.add_prompt(Prompt("counted", counted))
    server.add_prompt(Prompt("fresh", counted))
    client = await connect(server)
    for _ in range(2):
        await client.result("prompts/get", {"name": "counted"})
        await client.result("prompts/get", {"name": "fresh"})
    assert len(calls) == 3


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1", "ES256")


async def test_no_entry_is_ever_served_to_another_principal_or_scope_set(key: SigningKey) -> None:
    def whoami(arguments: dict[str, Any], context: RequestContext) -> str:
        assert context.auth is not None
        server.runs.append("whoami")  # type: ignore[attr-defined]
        return f"{context.auth.subject} {sorted(context.auth.scopes)}"

    server = build(ResponseCache(60.0, tools={"whoami"}))
    server.add_tool(Tool("whoami", {"type": "object"}, whoami))
    server.add_tool(Tool("admin", {"type": "object"}, whoami, scopes=["mcp:admin"]))
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    settings = HttpSettings(json_response=True, auth=ResourceServer(RESOURCE, [ISSUER], verifier=verifier))
    alice, bob = key.sign(sub="alice"), key.sign(sub="bob")
    admin = key.sign(sub="alice", scope="mcp:tools mcp:admin")  # alice again, with more scopes
    async with serving(server, settings) as http, httpx.AsyncClient(timeout=BOUND) as client:
        url = http.endpoint
        call = {"name": "whoami", "arguments": {}}
        for _ in range(2):  # the second round is all hits
            assert (await post(client, url, "tools/call", call, alice))["result"]["content"][0][
                "text"
            ] == "alice ['mcp:tools']"
            assert (await post(client, url, "tools/call", call, bob))["result"]["content"][0][
                "text"
            ] == "bob ['mcp:tools']"
            named = await post(client, url, "tools/call", call, admin)
            assert named["result"]["content"][0]["text"] == "alice ['mcp:admin', 'mcp:tools']"
            listed = {
                token: [tool["name"] for tool in (await post(client, url, "tools/list", {}, token))["result"]["tools"]]
                for token in (alice, admin)
            }
            assert "admin" not in listed[alice] and "admin" in listed[admin]
        assert runs(server) == 3  # one run per principal and scope set; the second round was all hits


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        ResponseCache(0)
    with pytest.raises(ValueError):
        MemoryCache(max_entries=0)


async def test_the_in_process_store_keeps_at_most_max_entries() -> None:
    store = MemoryCache(max_entries=2, clock=Clock())
    for key in ("a", "b", "c"):
        await store.put("tools", key, key.encode(), 1.0)
    assert [await store.get("tools", key) for key in ("a", "b", "c")] == [None, b"b", b"c"] and len(store) == 2
    await store.put("resource:x", "k", b"x", 1.0)
    await store.drop("resource:")
    assert await store.get("resource:x", "k") is None and await store.get("tools", "c") == b"c"


async def test_one_list_entry_serves_every_page(connect: Connect) -> None:
    store = MemoryCache()
    server = McpServer("paged", page_size=2, middleware=[ResponseCache(60.0, store=store)])
    for name in ("a", "b", "c"):
        server.add_tool(Tool(name, {"type": "object"}, lambda arguments, context: "x"))
    client = await connect(server)
    first = await client.result("tools/list")
    second = await client.result("tools/list", {"cursor": first["nextCursor"]})
    assert [tool["name"] for tool in first["tools"] + second["tools"]] == ["a", "b", "c"]
    assert "nextCursor" not in second and len(store) == 1


async def test_vary_splits_entries_by_what_it_returns(connect: Connect) -> None:
    sessions: dict[int, str] = {}

    def per_session(context: RequestContext) -> str:
        return sessions.setdefault(id(context.session), str(len(sessions)))

    server = build(ResponseCache(60.0, tools={"echo"}, vary=per_session))
    first, second = await connect(server), await connect(server)
    call = {"name": "echo", "arguments": {}}
    for _ in range(2):
        assert (await first.result("tools/call", call))["content"][0]["text"] == "echo  #1"
        assert (await second.result("tools/call", call))["content"][0]["text"] == "echo  #2"
