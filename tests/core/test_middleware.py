"""Middleware (engine/middleware.py): tier-1 hooks around the method handlers on every path
(session, stateless, older revisions, HTTP), tier-2 hooks around the tool functions, and the
registration rules."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.asgi import open_session
from fixtures.sessions import Connect
from mcp_sse_server import CallToolResult, McpError, McpServer, RequestContext, Tool
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.middleware import CallNext, Middleware, RunNext
from mcp_sse_server.transport.http import McpHttpApp

ENVELOPE = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
}


class Recording(Middleware):
    """Notes each request's method and the result its handler returned."""

    def __init__(self, name: str = "r", order: list[str] | None = None) -> None:
        self.name = name
        self.seen: list[str] = []
        self.results: list[dict[str, Any]] = []
        self.order = order if order is not None else []

    async def on_request(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        self.seen.append(context.method)
        self.order.append(f"{self.name} in")
        result = await call_next(params)
        self.order.append(f"{self.name} out")
        self.results.append(result)
        return result


def structured(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    return CallToolResult.structured({"sum": arguments.get("a", 0) + 1})


def build(*middleware: Middleware) -> McpServer:
    server = McpServer("s", middleware=list(middleware))
    server.add_tool(Tool("add", {"type": "object"}, structured))
    return server


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_the_hook_runs_once_per_request_of_a_session(connect: Connect, revision: str) -> None:
    recording = Recording()
    client = await connect(build(recording), initialize=False)
    await client.initialize(protocol_version=revision)
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert result["structuredContent"] == {"sum": 2}
    assert recording.seen == ["initialize", "ping", "tools/call"]  # (ping: the client's sync after initialize)


async def test_the_hook_runs_once_on_a_stateless_request(connect: Connect) -> None:
    recording = Recording()
    client = await connect(build(recording), initialize=False)
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1}, **ENVELOPE})
    assert result["structuredContent"] == {"sum": 2}
    assert recording.seen == ["tools/call"]


async def test_an_older_revision_hook_sees_the_newest_shape_and_the_client_the_cut_down_one(connect: Connect) -> None:
    recording = Recording()
    client = await connect(build(recording), initialize=False)
    await client.initialize(protocol_version="2024-11-05")
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert "structuredContent" not in result and result["content"][0]["type"] == "text"
    assert recording.seen == ["initialize", "ping", "tools/call"]  # (ping: the client's sync after initialize)
    assert recording.results[-1]["structuredContent"] == {"sum": 2}


async def test_tasks_get_goes_through_on_request_and_on_task(connect: Connect) -> None:
    tasks_seen: list[str] = []

    class Tasks(Middleware):
        async def on_task(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
            tasks_seen.append(context.method)
            return await call_next(params)

    recording = Recording()
    client = await connect(build(recording, Tasks()), initialize=False)
    await client.initialize(protocol_version="2025-11-25")
    await client.error("tasks/get", {"taskId": "nope"})
    assert recording.seen == ["initialize", "ping", "tasks/get"] and tasks_seen == ["tasks/get"]


async def test_a_hook_may_change_params_replace_the_result_or_answer_alone(connect: Connect) -> None:
    class Rewrite(Middleware):
        async def on_call_tool(
            self, context: RequestContext, params: dict[str, Any], call_next: CallNext
        ) -> dict[str, Any]:
            if params["name"] == "cached":
                return {"content": [], "short": True}  # answered without the handler
            result = await call_next({**params, "arguments": {"a": 41}})
            return {**result, "seenBy": "rewrite"}

    client = await connect(build(Rewrite()))
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert result["structuredContent"] == {"sum": 42} and result["seenBy"] == "rewrite"
    assert await client.result("tools/call", {"name": "cached"}) == {"content": [], "short": True}
    assert (await client.error("tools/call", {"name": "unknown"})).code == -32602  # the handler's own error


async def test_two_middlewares_nest_first_registered_outermost(connect: Connect) -> None:
    order: list[str] = []
    server = build(Recording("a", order))
    server.add_middleware(Recording("b", order))
    client = await connect(server)
    order.clear()
    await client.result("ping")
    assert order == ["a in", "b in", "b out", "a out"]


async def test_mcp_error_passes_and_other_exceptions_are_internal_errors_without_text(connect: Connect) -> None:
    class Refuse(Middleware):
        async def on_list(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
            raise McpError(-32000, "Rate limit exceeded", {"retryAfterMs": 5})

        async def on_request(
            self, context: RequestContext, params: dict[str, Any], call_next: CallNext
        ) -> dict[str, Any]:
            if context.method == "prompts/get":
                raise ValueError("secret detail")
            return await call_next(params)

    client = await connect(build(Refuse()))
    refused = await client.error("tools/list")
    assert (refused.code, refused.message, refused.data) == (-32000, "Rate limit exceeded", {"retryAfterMs": 5})
    failed = await client.error("prompts/get", {"name": "any"})
    assert (failed.code, failed.message, failed.data) == (-32603, "Internal error", None)


async def test_tier_two_sees_the_raw_exception_and_value_and_may_map_them(connect: Connect) -> None:
    seen: list[Any] = []

    class Map(Middleware):
        async def on_tool_run(
            self, context: RequestContext, tool: Tool, arguments: dict[str, Any], call_next: RunNext
        ) -> Any:
            try:
                value = await call_next(arguments)
            except KeyError as error:
                seen.append(error)
                raise McpError(-32001, f"{tool.name}: missing {error.args[0]}") from None
            seen.append(value)
            return value

    def lookup(arguments: dict[str, Any], context: RequestContext) -> str:
        return {"k": "v"}[arguments["key"]]

    server = build(Map())
    server.add_tool(Tool("lookup", {"type": "object"}, lookup))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "lookup", "arguments": {"key": "k"}})
    assert result["content"][0]["text"] == "v" and seen == ["v"]
    refused = await client.error("tools/call", {"name": "lookup", "arguments": {"key": "x"}})
    assert (refused.code, refused.message) == (-32001, "lookup: missing x") and isinstance(seen[-1], KeyError)


async def test_over_http_the_hook_sees_each_request_once() -> None:
    recording = Recording()
    app = McpHttpApp(build(recording))
    session = await open_session(app, revision="2025-06-18")
    assert (await session.result("tools/call", {"name": "add", "arguments": {"a": 2}}))["structuredContent"] == {
        "sum": 3
    }
    assert recording.seen == ["initialize", "tools/call"]


def test_without_middleware_the_tables_hold_the_handlers_themselves() -> None:
    server = McpServer("s")
    latest = server.handlers.table(versions.REVISION_2025_11_25)
    assert all(latest[method] is server.handlers[method] for method in latest)
    assert server.handlers.table(None) is server.handlers.table(None)
    assert server.tool_registry.runner is None


def test_with_middleware_only_the_hooked_methods_are_wrapped() -> None:
    class Tools(Middleware):
        async def on_call_tool(
            self, context: RequestContext, params: dict[str, Any], call_next: CallNext
        ) -> dict[str, Any]:
            return await call_next(params)

    server = McpServer("s", middleware=[Tools()])
    latest = server.handlers.table(versions.REVISION_2025_11_25)
    assert latest["tools/call"] is not server.handlers["tools/call"]
    lists = {"tools/list", "prompts/list", "resources/list", "resources/templates/list"}  # paged by the table
    assert all(latest[method] is not server.handlers[method] for method in lists)
    assert all(latest[method] is server.handlers[method] for method in latest.keys() - lists - {"tools/call"})


def test_bad_registrations_are_type_errors() -> None:
    class Nothing(Middleware):
        pass

    server = McpServer("s")
    with pytest.raises(TypeError, match="instance"):
        server.add_middleware(Recording)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Middleware instance"):
        server.add_middleware(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="overrides no Middleware hook"):
        McpServer("s", middleware=[Nothing()])


async def test_adding_after_the_server_served_is_a_runtime_error(connect: Connect) -> None:
    server = build()
    await connect(server)
    with pytest.raises(RuntimeError, match="before the server serves"):
        server.add_middleware(Recording())
    built = McpServer("s")
    built.handlers.table(versions.REVISION_2025_06_18)
    with pytest.raises(RuntimeError, match="before the server serves"):
        built.add_middleware(Recording())
