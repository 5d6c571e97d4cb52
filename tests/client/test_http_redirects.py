"""HTTP redirects of the endpoint: the clients follow 307 and 308 to the same origin
(Starlette's ``Mount("/mcp", ...)`` answers ``/mcp`` with a 307 to ``/mcp/``) and
then use the new URL; a redirect to another origin, a loop, and 301/302/303 are
errors that say what happened, and nothing reaches the other origin."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route

from fixtures.peers import WAIT
from mcp_sse_server.client import McpConnectionError, SseClient, StreamableHttpClient
from mcp_sse_server.client._http_common import MAX_REDIRECTS
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.engine.types import Tool
from mcp_sse_server.transport.http import McpHttpApp
from mcp_sse_server.transport.http.asgi import Receive, Scope, Send

from .asgi_server import serve

ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}


def math_server() -> McpServer:
    server = McpServer("redirected", "1.0.0")
    server.add_tool(Tool("add", ADD, lambda arguments, context: str(arguments["a"] + arguments["b"])))
    return server


class Recorder:
    """ASGI middleware that remembers (method, path, status) of every HTTP exchange, and the headers."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str, int]] = []
        self.headers: list[dict[str, str]] = []
        self._answered: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.headers.append({key.decode().lower(): value.decode() for key, value in scope["headers"]})

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.seen.append((scope["method"], scope["path"], message["status"]))
                self._answered[scope["method"]].set()
            await send(message)

        await self.app(scope, receive, recording_send)

    async def request(self, method: str) -> None:
        """Return once a ``method`` request has been answered (its status sent)."""
        await self._answered[method].wait()


def redirecting(status: int, location: str) -> Recorder:
    """An app answering every request with ``status`` and ``location``, recording what it got."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        await send({"type": "http.response.start", "status": status, "headers": [(b"location", location.encode())]})
        await send({"type": "http.response.body", "body": b""})

    return Recorder(app)


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_a_mounted_app_is_reached_through_its_307(mode: str) -> None:
    recorder = Recorder(Starlette(routes=[Mount("/mcp", app=McpHttpApp(math_server()))]))
    async with serve(recorder) as base:
        client = StreamableHttpClient(f"{base}/mcp", mode=mode)
        async with client:
            assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"  # type: ignore[union-attr]
            assert [tool.name for tool in await client.list_tools()] == ["add"]
            assert client.transport.connection is not None and client.transport.connection.url == f"{base}/mcp/"
            if mode == "session":  # a session: its standalone GET stream goes to the new URL too
                await asyncio.wait_for(recorder.request("GET"), WAIT)
        if mode == "session":
            assert recorder.seen[-1][:2] == ("DELETE", "/mcp/")
    # Only the very first request met the redirect; every later one went straight to /mcp/.
    assert recorder.seen[0] == ("POST", "/mcp", 307)
    assert all(path == "/mcp/" and status < 300 for _, path, status in recorder.seen[1:]), recorder.seen


async def test_auto_mode_probes_through_the_redirect_and_speaks_2026_07_28() -> None:
    app = Starlette(routes=[Mount("/mcp", app=McpHttpApp(math_server()))])
    async with serve(app) as base, StreamableHttpClient(f"{base}/mcp") as client:
        assert client.era == "stateless"
        assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"  # type: ignore[union-attr]


async def test_a_relative_308_location_is_resolved_against_the_request_url() -> None:
    endpoint = McpHttpApp(math_server())

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/old/mcp":
            # Relative to /old/mcp: ../v2/mcp is /v2/mcp.
            await send({"type": "http.response.start", "status": 308, "headers": [(b"location", b"../v2/mcp")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await endpoint(scope, receive, send)

    recorder = Recorder(app)
    async with serve(recorder) as base:
        client = StreamableHttpClient(f"{base}/old/mcp", mode="session")
        async with client:
            assert (await client.call_tool("add", {"a": 4, "b": 5})).content[0].text == "9"  # type: ignore[union-attr]
            assert client.transport.connection is not None and client.transport.connection.url == f"{base}/v2/mcp"
    assert recorder.seen[0] == ("POST", "/old/mcp", 308)
    assert {path for _, path, _ in recorder.seen[1:]} == {"/v2/mcp"}


@pytest.mark.parametrize("mode", ["session", "auto"])
async def test_a_redirect_to_another_origin_is_refused_and_nothing_reaches_it(mode: str) -> None:
    elsewhere = Recorder(McpHttpApp(math_server()))
    async with serve(elsewhere) as other:
        target = f"{other}/mcp"
        sender = redirecting(307, target)
        async with serve(sender) as base:
            client = StreamableHttpClient(f"{base}/mcp", headers={"Authorization": "Bearer secret"}, mode=mode)
            with pytest.raises(McpConnectionError) as refused:
                await client.initialize()
            await client.close()
    message = str(refused.value)
    assert f"{base}/mcp" in message and target in message and "another origin" in message
    assert elsewhere.seen == []  # neither the credentials nor a session id went there
    assert len(sender.seen) == 1


async def test_a_redirect_loop_is_an_error_naming_it() -> None:
    sender = redirecting(307, "/mcp")
    async with serve(sender) as base:
        client = StreamableHttpClient(f"{base}/mcp", mode="session")
        with pytest.raises(McpConnectionError) as looped:
            await client.initialize()
        await client.close()
    assert f"more than {MAX_REDIRECTS} times" in str(looped.value) and "redirect loop" in str(looped.value)
    assert len(sender.seen) == MAX_REDIRECTS + 1  # the request and the redirects followed


@pytest.mark.parametrize("status", [301, 302, 303])
async def test_a_redirect_that_may_change_the_method_stays_an_error(status: int) -> None:
    endpoint = McpHttpApp(math_server())

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp":
            await send({"type": "http.response.start", "status": status, "headers": [(b"location", b"/mcp/")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await endpoint(scope, receive, send)

    recorder = Recorder(app)
    async with serve(recorder) as base:
        client = StreamableHttpClient(f"{base}/mcp", mode="session")
        with pytest.raises(McpConnectionError) as failed:
            await client.initialize()
        await client.close()
    assert f"HTTP {status} (a redirect to /mcp/)" in str(failed.value)
    assert "only 307 and 308" in str(failed.value)
    assert recorder.seen == [("POST", "/mcp", status)]  # not followed


async def test_the_legacy_sse_client_follows_same_origin_redirects() -> None:
    """GET /sse answers 307 to /sse/; the endpoint event is relative, so it resolves against
    /sse/; the POSTs there answer 308 to /inbox, where the session's POSTs then go."""
    replies: asyncio.Queue[bytes] = asyncio.Queue()

    async def stream(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            yield b"event: endpoint\ndata: messages?session_id=abc\n\n"
            while True:
                yield b"event: message\ndata: " + await replies.get() + b"\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    async def inbox(request: Request) -> Response:
        message = orjson.loads(await request.body())
        if message.get("method") == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "serverInfo": {"name": "legacy", "version": "1"},
            }
            await replies.put(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        elif "id" in message:
            await replies.put(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}))
        return Response(status_code=202)

    async def moved(request: Request) -> Response:
        return Response(status_code=307 if request.method == "GET" else 308, headers={"location": "/inbox"})

    app = Starlette(
        routes=[
            Route("/sse", lambda request: Response(status_code=307, headers={"location": "/sse/"})),
            Route("/sse/", stream),
            Route("/sse/messages", moved, methods=["POST"]),
            Route("/inbox", inbox, methods=["POST"]),
        ]
    )
    recorder = Recorder(app)
    async with serve(recorder) as base:
        client = SseClient(f"{base}/sse", request_timeout=5)
        async with client:
            await client.ping()
            assert client.transport.connection is not None
            assert str(client.transport.connection.url) == f"{base}/sse/"
            assert str(client.transport.connection.endpoint) == f"{base}/inbox"
    posts = [(path, status) for method, path, status in recorder.seen if method == "POST"]
    assert posts[0] == ("/sse/messages", 308)
    assert {path for path, _ in posts[1:]} == {"/inbox"}  # initialized and ping went straight there
