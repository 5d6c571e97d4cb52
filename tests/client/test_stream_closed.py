"""``stream_closed`` (client/transport.py rule 4): a request sent with it set hears the server close
its stream mid-call, in process and over Streamable HTTP; nothing else does."""

from __future__ import annotations

from typing import Any

from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool
from mcp_sse_server.client import InMemoryClient, StreamableHttpClient
from mcp_sse_server.client.transport import stream_closed
from mcp_sse_server.transport.http import McpHttpServer


def closer(nested: McpServer | None = None) -> McpServer:
    """``hang_up`` closes its stream and answers what the close returned (after a call of its own
    to ``nested``'s ``hang_up`` through an in-process client, when given)."""
    server = McpServer("closer", "1.0.0")

    async def hang_up(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        inner = ""
        if nested is not None:
            async with InMemoryClient(nested) as client:
                inner = (await client.call_tool("hang_up", {})).content[0].text + " "
        closed = await context.close_sse_stream()
        return CallToolResult.text(f"{inner}closed={closed}")

    server.add_tool(Tool("hang_up", {"type": "object"}, hang_up))
    return server


class Heard:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.count = 0

    async def __call__(self) -> bool:
        self.count += 1
        return self.answer


async def test_in_process_the_close_is_heard_and_answered_by_the_caller() -> None:
    heard = Heard(True)
    async with InMemoryClient(closer()) as client:
        assert (await client.call_tool("hang_up", {})).content[0].text == "closed=False"  # nobody listens
        token = stream_closed.set(heard)
        try:
            assert (await client.call_tool("hang_up", {})).content[0].text == "closed=True"
        finally:
            stream_closed.reset(token)
    assert heard.count == 1


async def test_a_nested_clients_request_never_hears_its_callers_signal() -> None:
    heard = Heard(True)
    async with InMemoryClient(closer(nested=closer())) as client:
        token = stream_closed.set(heard)
        try:
            text = (await client.call_tool("hang_up", {})).content[0].text
        finally:
            stream_closed.reset(token)
    assert text == "closed=False closed=True" and heard.count == 1


async def test_over_http_the_ended_post_stream_is_heard_then_resumed() -> None:
    heard = Heard(False)
    http = await McpHttpServer.bind(closer(), port=0)
    try:
        async with StreamableHttpClient(http.endpoint, mode="session") as client:
            assert client.protocol_version == "2025-11-25"
            token = stream_closed.set(heard)
            try:
                result = await client.call_tool("hang_up", {})
            finally:
                stream_closed.reset(token)
    finally:
        await http.close(deadline=1)
    assert result.content[0].text == "closed=True" and heard.count == 1
