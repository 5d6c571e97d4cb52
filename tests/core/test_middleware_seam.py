"""The rest of the middleware seam (engine/middleware.py rules 6-8): notification hooks, list
hooks over the full list with paging after them, ``context.state``, the MRTR round number, and
the refusal of an ``initialize`` result naming another revision."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool
from mcp_sse_server.engine.handlers import NotifyNext
from mcp_sse_server.engine.jsonrpc import JsonRpcRequest
from mcp_sse_server.engine.middleware import CallNext, Middleware

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def envelope(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        }
    }


def echo(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    return CallToolResult.text("ok")


class Notes(Middleware):
    """Notes each notification's method and params; drops those named in ``drop``."""

    def __init__(self, drop: frozenset[str] = frozenset()) -> None:
        self.seen: list[tuple[str, dict[str, Any], object]] = []
        self.drop = drop

    async def on_notification(self, context: RequestContext, params: dict[str, Any], call_next: NotifyNext) -> None:
        self.seen.append((context.method, params, context.request_id))
        if context.method not in self.drop:
            await call_next(params)


async def test_notification_hooks_see_what_the_client_sends(connect: Connect) -> None:
    notes = Notes()
    server = McpServer("s", middleware=[notes])
    changed: list[str] = []
    server.on_roots_list_changed = lambda: changed.append("roots")
    client = await connect(server)  # (initialize, then notifications/initialized)
    await client.notify("notifications/roots/list_changed", {"why": "test"})
    await client.notify("notifications/cancelled", {"requestId": 999, "reason": "none such"})
    await client.sync()
    assert [(method, params) for method, params, _ in notes.seen] == [
        ("notifications/initialized", {}),
        ("notifications/roots/list_changed", {"why": "test"}),
        ("notifications/cancelled", {"requestId": 999, "reason": "none such"}),
    ]
    assert all(request_id is None for _, _, request_id in notes.seen)
    assert changed == ["roots"] and server.sessions[0].ready  # the session's own handling ran


async def test_a_notification_hook_that_does_not_call_next_drops_it(connect: Connect) -> None:
    server = McpServer("s", middleware=[Notes(drop=frozenset({"notifications/initialized"}))])
    await connect(server)
    assert server.sessions[0].initialized and not server.sessions[0].ready


async def test_cancellation_is_applied_before_the_hooks_which_cannot_stop_it(connect: Connect) -> None:
    started = asyncio.Event()

    async def slow(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        started.set()
        await asyncio.sleep(60)
        return CallToolResult.text("late")

    notes = Notes(drop=frozenset({"notifications/cancelled"}))
    server = McpServer("s", middleware=[notes])
    server.add_tool(Tool("slow", {"type": "object"}, slow))
    client = await connect(server)
    request_id = client.next_id()
    await client.send(JsonRpcRequest(request_id, "tools/call", {"name": "slow"}))
    await asyncio.wait_for(started.wait(), 30)
    await client.notify("notifications/cancelled", {"requestId": request_id})
    await client.sync()
    assert "notifications/cancelled" in [method for method, _, _ in notes.seen]
    assert not [m for m in client.received if getattr(m, "id", None) == request_id]  # no response: cancelled


async def test_a_failing_notification_hook_is_logged_and_the_session_goes_on(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(Middleware):
        async def on_notification(self, context: RequestContext, params: dict[str, Any], call_next: NotifyNext) -> None:
            raise RuntimeError("hook bug")

    client = await connect(McpServer("s", middleware=[Broken()]))
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        await client.notify("notifications/roots/list_changed")
        await client.sync()
    assert "middleware failed on notifications/roots/list_changed" in caplog.text


class Hide(Middleware):
    """Hides the tool ``b`` from every list; notes the params and the list each hook saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], list[str]]] = []

    async def on_list(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        result = await call_next(params)
        names = [tool["name"] for tool in result["tools"]]
        self.seen.append((params, names))
        return {**result, "tools": [tool for tool in result["tools"] if tool["name"] != "b"]}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-11-25"])
async def test_a_list_hook_sees_the_full_list_and_the_pages_are_cut_after_it(connect: Connect, revision: str) -> None:
    hide = Hide()
    server = McpServer("s", page_size=1, middleware=[hide])
    for name in ("a", "b", "c"):
        server.add_tool(Tool(name, {"type": "object"}, echo))
    client = await connect(server, initialize=False)
    await client.initialize(protocol_version=revision)
    first = await client.result("tools/list")
    assert [tool["name"] for tool in first["tools"]] == ["a"] and "nextCursor" in first
    second = await client.result("tools/list", {"cursor": first["nextCursor"]})
    assert [tool["name"] for tool in second["tools"]] == ["c"] and "nextCursor" not in second
    assert hide.seen == [({}, ["a", "b", "c"]), ({"cursor": first["nextCursor"]}, ["a", "b", "c"])]
    assert server.page_size == 1
    assert (await client.error("tools/list", {"cursor": "bogus"})).code == -32602


async def test_lists_of_a_server_with_middleware_are_paged_as_without(connect: Connect) -> None:
    class Calls(Middleware):  # hooks no list method
        async def on_call_tool(
            self, context: RequestContext, params: dict[str, Any], call_next: CallNext
        ) -> dict[str, Any]:
            return await call_next(params)

    pages: list[list[list[str]]] = []
    for middleware in ([], [Calls()]):
        server = McpServer("s", page_size=2, middleware=middleware)
        for name in ("a", "b", "c"):
            server.add_tool(Tool(name, {"type": "object"}, echo))
        client = await connect(server)
        seen, cursor = [], None
        for _ in range(5):
            page = await client.result("tools/list", {} if cursor is None else {"cursor": cursor})
            seen.append([tool["name"] for tool in page["tools"]])
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        pages.append(seen)
    assert pages[0] == pages[1] == [["a", "b"], ["c"]]


async def test_context_state_is_shared_by_the_hooks_and_the_handler(connect: Connect) -> None:
    class Stamp(Middleware):
        async def on_request(
            self, context: RequestContext, params: dict[str, Any], call_next: CallNext
        ) -> dict[str, Any]:
            context.state["by"] = "middleware"
            result = await call_next(params)
            return {**result, "handlerSaid": context.state.get("handler")}

    def tool(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        context.state["handler"] = "here"
        return CallToolResult.text(context.state["by"])

    server = McpServer("s", middleware=[Stamp()])
    server.add_tool(Tool("t", {"type": "object"}, tool))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "t"})
    assert result["content"][0]["text"] == "middleware" and result["handlerSaid"] == "here"
    again = await client.result("tools/call", {"name": "t"})
    assert again["handlerSaid"] == "here"  # (a new dict per request: set again, not kept)


async def test_each_mrtr_round_carries_its_number(connect: Connect) -> None:
    rounds: list[int] = []

    class Rounds(Middleware):
        async def on_call_tool(
            self, context: RequestContext, params: dict[str, Any], call_next: CallNext
        ) -> dict[str, Any]:
            rounds.append(context.rounds)
            return await call_next(params)

    async def greet(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        first = await context.session.elicit("Name?", NAME_SCHEMA)
        second = await context.session.elicit("Surname?", NAME_SCHEMA)
        return CallToolResult.text(f"{first.content['name']} {second.content['name']}")

    server = McpServer("s", middleware=[Rounds()])
    server.add_tool(Tool("greet", {"type": "object"}, greet))
    client = await connect(server, initialize=False)
    call = {**envelope({"elicitation": {"form": {}}}), "name": "greet", "arguments": {}}
    first = await client.result("tools/call", call)
    second = await client.result(
        "tools/call",
        {
            **call,
            "inputResponses": {"q1": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": first["requestState"],
        },
    )
    done = await client.result(
        "tools/call",
        {
            **call,
            "inputResponses": {"q2": {"action": "accept", "content": {"name": "Lovelace"}}},
            "requestState": second["requestState"],
        },
    )
    assert done["content"][0]["text"] == "Ada Lovelace"
    assert rounds == [0, 1, 2]


class Version(Middleware):
    def __init__(self, *, ask: str | None = None, answer: str | None = None) -> None:
        self.ask, self.answer = ask, answer

    async def on_initialize(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        result = await call_next(params if self.ask is None else {**params, "protocolVersion": self.ask})
        return result if self.answer is None else {**result, "protocolVersion": self.answer}


async def test_an_initialize_hook_may_change_the_requested_version(connect: Connect) -> None:
    server = McpServer("s", middleware=[Version(ask="2025-06-18")])
    client = await connect(server, initialize=False)
    result = await client.initialize(protocol_version="2025-11-25")
    assert result["protocolVersion"] == "2025-06-18" == server.sessions[0].revision


async def test_an_initialize_result_naming_another_revision_is_refused(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    client = await connect(McpServer("s", middleware=[Version(answer="2024-11-05")]), initialize=False)
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        error = await client.error("initialize", params)
    assert error.code == -32603 and error.message == "Internal error"
    assert "changed initialize's protocolVersion to '2024-11-05'" in caplog.text
