"""An in-process backend with one tool per thing a proxy must forward, and what it saw."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_sse_server import McpError, McpServer, RequestContext
from mcp_sse_server.engine.types import CallToolResult, Prompt, Resource, ResourceTemplate, Tool

OBJECT: dict[str, Any] = {"type": "object"}
TEXT_ARG: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}


class Seen:
    """What the backend was sent: cancellations, progress tokens, ``_meta``."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.started = asyncio.Event()
        self.metas: list[Any] = []


def backend(page_size: int | None = 2) -> tuple[McpServer, Seen]:
    """A server with tools ``t0``..``t4``, ``add``, ``fail``, ``slow``, ``progress``, ``ask``,
    ``visit`` (a URL elicitation), ``connection`` (which backend session), ``chatty``, ``grow``,
    ``touch``; resources, a template and a prompt with completion."""
    server = McpServer("back", "1.0.0", page_size=page_size, instructions="the backend's")
    seen = Seen()

    def tool(name: str, handler: Any, schema: dict[str, Any] = OBJECT) -> None:
        server.add_tool(Tool(name, schema, handler, run_in_thread=False))

    for index in range(5):
        tool(f"t{index}", lambda args, ctx, i=index: CallToolResult.text(str(i)))

    async def add(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        seen.metas.append(ctx.progress_token)
        return CallToolResult.structured({"sum": args["a"] + args["b"]})

    tool("add", add, {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})

    async def fail(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        raise McpError(-32099, "the backend refuses", {"why": "testing"})

    tool("fail", fail)

    async def slow(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        ctx.on_cancelled(seen.cancelled.set)
        for step in range(1, 4):
            await ctx.report_progress(step, 10)
        seen.started.set()
        await asyncio.sleep(60)  # until cancelled (the test's bound ends it otherwise)
        return CallToolResult.text("not cancelled")

    tool("slow", slow)

    async def progress(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return CallToolResult.text("done")

    tool("progress", progress)

    async def ask(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        session = ctx.session
        sampled = await session.request(
            "sampling/createMessage",
            {"messages": [{"role": "user", "content": {"type": "text", "text": "capital?"}}], "maxTokens": 5},
            "sampling",
            30,
        )
        elicited = await session.request(
            "elicitation/create",
            {
                "mode": "form",
                "message": "colour?",
                "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}}},
            },
            "elicitation",
            30,
        )
        roots = await session.request("roots/list", None, "roots", 30)
        text = f"{sampled['content']['text']}|{elicited['content']['colour']}|{roots['roots'][0]['uri']}"
        return CallToolResult.text(text)

    tool("ask", ask)

    async def visit(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        params = {"mode": "url", "message": "sign in", "url": "https://example.test/login", "elicitationId": "e1"}
        answered = await ctx.session.request("elicitation/create", params, "elicitation", 30)
        return CallToolResult.text(answered["action"])

    tool("visit", visit)
    # Which backend connection served the call (each is its own session of this server).
    tool("connection", lambda args, ctx: CallToolResult.text(str(id(ctx.session))))

    async def chatty(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        await ctx.log("debug", "a debug line")
        await ctx.log("warning", "a warning line")
        return CallToolResult.text("logged")

    tool("chatty", chatty)

    async def grow(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        tool("grown", lambda args, ctx: CallToolResult.text("new"))
        return CallToolResult.text("grew")

    tool("grow", grow)

    async def touch(args: dict[str, Any], ctx: RequestContext) -> CallToolResult:
        await server.notify_resource_updated("note://a")
        return CallToolResult.text("touched")

    tool("touch", touch)
    server.add_resource(Resource("note://a", "a", reader=lambda uri, ctx: "note a"))
    server.add_resource(Resource("note://b", "b", reader=lambda uri, ctx: "note b"))
    server.add_resource_template(
        ResourceTemplate(
            "colour://{name}",
            "colour",
            lambda uri, values, ctx: f"the colour {values['name']}",
            completer=lambda request, ctx: [c for c in ("red", "green") if c.startswith(request.argument_value)],
        )
    )
    server.add_prompt(Prompt("greet", lambda args, ctx: f"hello {args.get('who')}"))
    return server, seen
