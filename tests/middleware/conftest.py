"""Fixtures and helpers of the built-in middleware tests: ``connect`` (tests/core's raw client
over MemoryTransport), ``serving`` (a server on a real socket, spoken to with httpx), a test
server with the tools the built-ins act on, and 2026-07-28 request envelopes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from core.conftest import connect  # noqa: F401 (the fixture, shared with tests/core)
from fixtures.messages import ACCEPT_BOTH, request
from mcp_sse_server import CallToolResult, McpServer, Prompt, RequestContext, Resource, Tool
from mcp_sse_server.engine.middleware import Middleware
from mcp_sse_server.transport.http import HttpSettings, McpHttpServer

STATELESS = "2026-07-28"
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def envelope(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` of a 2026-07-28 request."""
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        }
    }


def build(*middleware: Middleware) -> McpServer:
    """A server with ``echo`` (counts its runs), ``greet`` (asks the client once), ``big`` (n
    characters of text), a prompt and a resource."""
    server = McpServer("mw", middleware=list(middleware))
    runs: list[str] = []
    server.runs = runs  # type: ignore[attr-defined]

    def echo(arguments: dict[str, Any], context: RequestContext) -> str:
        runs.append("echo")
        return f"echo {arguments.get('text', '')} #{len(runs)}"

    async def greet(arguments: dict[str, Any], context: RequestContext) -> str:
        runs.append("greet")
        answer = await context.session.elicit("Your name?", NAME_SCHEMA)
        return f"hello {answer.content['name']}"

    def big(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult.text("x" * int(arguments["n"]))

    server.add_tool(Tool("echo", {"type": "object"}, echo))
    server.add_tool(Tool("greet", {"type": "object"}, greet))
    server.add_tool(Tool("big", {"type": "object"}, big))
    server.add_prompt(Prompt("hello", lambda arguments, context: "Say hello.", description="A greeting."))
    server.add_resource(Resource.text("test://a", "a", "A"))
    return server


@contextlib.asynccontextmanager
async def serving(server: McpServer, settings: HttpSettings | None = None) -> AsyncIterator[McpHttpServer]:
    """``server`` on a free port of 127.0.0.1 (JSON replies unless ``settings`` say otherwise)."""
    http = await McpHttpServer.bind(server, settings=settings or HttpSettings(json_response=True))
    try:
        yield http
    finally:
        await http.close()


async def post(
    client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], token: str | None = None
) -> dict[str, Any]:
    """One 2026-07-28 request over HTTP; its JSON-RPC reply."""
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-protocol-version": STATELESS}
    headers["mcp-method"] = method
    if method in ("tools/call", "prompts/get"):
        headers["mcp-name"] = params["name"]
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    body = orjson.dumps(request(1, method, {**envelope(), **params}))
    reply = await client.post(url, content=body, headers=headers)
    message: dict[str, Any] = reply.json()
    return message
