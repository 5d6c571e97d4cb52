"""What reaches the API besides the arguments: the client's fixed headers, ``credentials=`` per
request, and allowlisted inbound headers; the MCP client's ``Authorization`` never, unless named.
The API is the FastAPI shop served by uvicorn on loopback; the MCP front is our HTTP app (wrapped
in ``ForwardHeaders`` where forwarding is tested) served the same way."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from client.asgi_server import serve
from mcp_sse_server import CallToolResult, McpServer
from mcp_sse_server.client import InMemoryClient, StreamableHttpClient
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.openapi import ForwardHeaders, from_openapi
from mcp_sse_server.transport.http import McpHttpApp

from .shop_app import API_KEY, build_app


@contextlib.asynccontextmanager
async def shop_api() -> AsyncIterator[tuple[str, dict[str, Any], list[dict[str, str]]]]:
    """The shop on a real socket: its base URL, its spec, and the headers of each request it got."""
    app, seen = build_app()
    async with serve(app) as base:
        yield base, app.openapi(), seen


async def call_via_front(
    server: McpServer, forward: tuple[str, ...], headers: dict[str, str], name: str, arguments: dict[str, Any]
) -> CallToolResult:
    """One call to ``server`` over HTTP behind ``ForwardHeaders(forward)``, sending ``headers``."""
    app = McpHttpApp(server)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(app)
        base = await stack.enter_async_context(serve(ForwardHeaders(app, forward)))
        client = await stack.enter_async_context(StreamableHttpClient(f"{base}/mcp", headers=headers))
        return await client.call_tool(name, arguments)
    raise AssertionError("unreachable")


async def test_the_clients_api_key_is_used_over_a_real_socket() -> None:
    async with shop_api() as (base, spec, seen):
        server = from_openapi(spec, base_url=base, headers={"X-Api-Key": API_KEY})
        async with InMemoryClient(server) as client:
            ok = await client.call_tool("private", {})
            item = await client.call_tool("read_item", {"item_id": 1})
        without = from_openapi(spec, base_url=base)
        async with InMemoryClient(without) as client:
            refused = await client.call_tool("private", {})
    assert ok.structured_content == {"ok": True} and item.structured_content is not None
    assert refused.is_error and refused.content[0].text == 'HTTP 401 Unauthorized: {"detail":"bad api key"}'  # type: ignore[union-attr]
    assert [request.get("x-api-key") for request in seen] == [API_KEY, API_KEY, None]


async def test_the_mcp_bearer_is_never_forwarded_and_only_allowlisted_headers_are() -> None:
    bearer = {"Authorization": "Bearer mcp-token-for-this-server", "X-Trace": "trace-7", "X-Other": "no"}
    async with shop_api() as (base, spec, seen):
        server = from_openapi(spec, base_url=base, forward_headers=["X-Trace"])
        echoed = await call_via_front(server, ("x-trace", "authorization"), bearer, "echo", {"name": "a"})
    assert echoed.structured_content == {"name": "a", "trace": "trace-7"}
    (request,) = seen
    assert request["x-trace"] == "trace-7"
    assert "authorization" not in request and "x-other" not in request


async def test_authorization_is_forwarded_only_when_named() -> None:
    async with shop_api() as (base, spec, seen):
        server = from_openapi(spec, base_url=base, forward_headers=["authorization"])
        await call_via_front(server, ("authorization",), {"Authorization": "Bearer passed-on"}, "count", {})
    assert seen[0]["authorization"] == "Bearer passed-on"


async def test_a_forwarded_header_never_overrides_the_configured_key() -> None:
    # fastmcp #3260: the inbound header overwrote the API key the client was configured with.
    async with shop_api() as (base, spec, seen):
        server = from_openapi(spec, base_url=base, headers={"x-api-key": API_KEY}, forward_headers=["x-api-key"])
        ok = await call_via_front(server, ("x-api-key",), {"X-Api-Key": "attacker"}, "private", {})
    assert ok.structured_content == {"ok": True} and seen[0]["x-api-key"] == API_KEY


async def test_per_request_credentials_come_from_the_callers_context() -> None:
    contexts: list[RequestContext] = []

    async def credentials(context: RequestContext) -> dict[str, str]:
        contexts.append(context)
        user = "anonymous" if context.auth is None else context.auth.subject
        return {"x-api-key": API_KEY, "x-on-behalf-of": str(user)}

    async with shop_api() as (base, spec, seen):
        server = from_openapi(spec, base_url=base, credentials=credentials)
        async with InMemoryClient(server) as client:
            first = await client.call_tool("private", {})
            second = await client.call_tool("count", {})
    assert first.structured_content == {"ok": True} and second.structured_content is not None
    assert len(contexts) == 2 and all(isinstance(context, RequestContext) for context in contexts)
    assert [(request["x-api-key"], request["x-on-behalf-of"]) for request in seen] == [(API_KEY, "anonymous")] * 2


async def test_a_redirect_is_not_followed_with_the_key() -> None:
    async with shop_api() as (base, spec, seen):
        server = from_openapi(spec, base_url=base, headers={"x-api-key": API_KEY})
        async with InMemoryClient(server) as client:
            moved = await client.call_tool("moved", {})
    assert moved.is_error and moved.content[0].text.startswith("HTTP 307 Temporary Redirect")  # type: ignore[union-attr]
    assert len(seen) == 1  # and nothing was sent to the other origin (127.0.0.2:9 is closed)


async def test_a_credential_header_parameter_is_never_an_argument() -> None:
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "Keys", "version": "1"},
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "paths": {
            "/private": {
                "get": {
                    "operationId": "private",
                    "parameters": [
                        {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}},
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    ],
                }
            }
        },
    }
    (tool,) = from_openapi(spec, base_url="http://127.0.0.1:9").tools
    assert list(tool.input_schema["properties"]) == ["X-Trace"]
