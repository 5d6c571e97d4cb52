"""The HTTP+SSE transport of revision 2024-11-05 (``legacy_sse.py``), over a real socket.

Real peers: the official Python SDK's ``sse_client`` and our ``SseClient`` on the demo server,
at ``/sse`` and on a session-less GET of the endpoint; then the rules over raw HTTP (httpx).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from starlette.applications import Starlette
from starlette.routing import Mount

from fixtures.asgi import AsgiCall, until
from fixtures.http_app import Clock, Gate, build_server
from mcp_sse_server.client import SseClient
from mcp_sse_server.servers.demo import build_demo_server
from mcp_sse_server.stores import MemoryBackend
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, LegacyPaths, McpHttpApp, McpHttpServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def stream_url(http: McpHttpServer, path: str = "/sse") -> str:
    return urljoin(http.endpoint, path)


@pytest.fixture
async def demo() -> AsyncIterator[McpHttpServer]:
    http = await McpHttpServer.bind(build_demo_server(), port=0)
    try:
        yield http
    finally:
        await http.close(deadline=0.5)


class Events:
    """A raw 2024-11-05 stream, read event by event (``comments`` counts the comments seen)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()
        self.comments = 0
        self.fields: set[str] = set()

    async def next(self) -> tuple[str, str]:
        event, data = "message", list[str]()
        async for line in self.lines:
            if not line:
                if data:
                    return event, "\n".join(data)
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            self.fields.add(name)
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        raise EOFError("the stream ended")

    async def message(self) -> Any:
        kind, data = await self.next()
        assert kind == "message"
        return httpx.Response(200, content=data).json()


@asynccontextmanager
async def opened(client: httpx.AsyncClient, url: str, **headers: str) -> AsyncIterator[tuple[Events, str]]:
    """A raw stream and the messages URL its endpoint event names."""
    async with client.stream("GET", url, headers={"accept": "text/event-stream", **headers}) as response:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        events = Events(response)
        kind, data = await events.next()
        assert kind == "endpoint"
        assert data.startswith("/messages/?session_id=")
        yield events, urljoin(url, data)


async def initialize(client: httpx.AsyncClient, events: Events, messages: str) -> None:
    assert (await client.post(messages, json=INIT)).status_code == 202
    assert (await events.message())["result"]["serverInfo"]
    assert (await client.post(messages, json=INITIALIZED)).status_code == 202


# --- real clients ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["/sse", "/mcp"], ids=["sse-path", "session-less-get"])
async def test_the_sdk_client_lists_and_calls_tools(demo: McpHttpServer, where: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with sse_client(stream_url(demo, where)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert {"add", "divide"} <= set(names)
            result = await session.call_tool("add", {"a": 20, "b": 22})
            assert result.content[0].text == "42"  # type: ignore[union-attr]
            assert (await session.call_tool("divide", {"a": 1, "b": 0})).is_error
            assert len(demo.app.live_sessions) == 1
    await until(lambda: not demo.app.live_sessions)


@pytest.mark.parametrize("where", ["/sse", "/mcp"], ids=["sse-path", "session-less-get"])
async def test_our_client_lists_and_calls_tools(demo: McpHttpServer, where: str) -> None:
    async with SseClient(stream_url(demo, where)) as client:
        assert {"add", "divide"} <= {tool.name for tool in await client.list_tools()}
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        assert len(demo.app.live_sessions) == 1
    await until(lambda: not demo.app.live_sessions)


# --- the rules, over raw HTTP ------------------------------------------------------------------------


async def test_every_message_goes_down_the_stream(bound: McpHttpServer) -> None:
    async with httpx.AsyncClient(timeout=5) as client, opened(client, stream_url(bound)) as (events, messages):
        reply = await client.post(messages, json=INIT)
        assert (reply.status_code, reply.content) == (202, b"")
        assert "mcp-session-id" not in reply.headers
        init = await events.message()
        assert init["id"] == 1 and init["result"]["protocolVersion"] == "2025-06-18"
        assert (await client.post(messages, json=INITIALIZED)).status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chatty", "arguments": {}}}
        call["params"]["_meta"] = {"progressToken": "p"}  # type: ignore[index]
        assert (await client.post(messages, json=call)).status_code == 202
        got = [await events.message() for _ in range(4)]
        assert [m.get("method") for m in got[:3]] == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
        ]
        assert got[3]["id"] == 2 and got[3]["result"]["content"][0]["text"] == "chatty done"
        assert (await client.post(messages, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})).status_code == 202
        assert (await events.message()) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        assert events.fields <= {"event", "data"}  # no ids, no retry: nothing resumes


async def test_post_rules(bound: McpHttpServer) -> None:
    base = urljoin(bound.endpoint, "/messages/")
    async with httpx.AsyncClient(timeout=5) as client:
        missing = await client.post(base, json=INIT)
        assert missing.status_code == 400 and "session_id" in missing.json()["error"]["message"]
        assert missing.json()["jsonrpc"] == "2.0"
        repeated = await client.post(base + "?session_id=a&session_id=b", json=INIT)
        assert repeated.status_code == 400
        unknown = await client.post(base + "?session_id=nope", json=INIT)
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32600
        assert (await client.get(base)).status_code == 405
        assert (await client.get(base)).headers["allow"] == "POST"
        assert (await client.post(stream_url(bound), json=INIT)).headers["allow"] == "GET"
        async with opened(client, stream_url(bound)) as (events, messages):
            malformed = await client.post(messages, content=b"{nope", headers={"content-type": "application/json"})
            assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32700
            wrong_type = await client.post(messages, content=b"{}", headers={"content-type": "text/plain"})
            assert wrong_type.status_code == 415
            too_big = await client.post(messages, json={"jsonrpc": "2.0", "id": 1, "method": "x" * (5 << 20)})
            assert too_big.status_code == 413
            await initialize(client, events, messages)
        await until(lambda: not bound.app.live_sessions)
        after = await client.post(messages, json={"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert after.status_code == 404 and after.json()["error"]["message"].startswith("Session not found")


async def test_a_client_leaving_ends_its_session(bound: McpHttpServer) -> None:
    app = bound.app
    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(3):
            async with opened(client, stream_url(bound)) as (events, messages):
                await initialize(client, events, messages)
                call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
                assert (await client.post(messages, json=call)).status_code == 202  # left in flight
                await until(lambda: app.inflight == 1)
            await until(lambda: not app.live_sessions)
        await until(lambda: app.inflight == 0)
    assert app.legacy_sse is not None and not app.legacy_sse.streams
    assert len(app.keepalive) == 0


async def test_an_id_already_in_flight_is_refused_on_the_stream_with_its_id(bound: McpHttpServer) -> None:
    app = bound.app
    async with httpx.AsyncClient(timeout=5) as client, opened(client, stream_url(bound)) as (events, messages):
        await initialize(client, events, messages)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
        assert (await client.post(messages, json=call)).status_code == 202
        await until(lambda: app.inflight == 1)
        assert (await client.post(messages, json=call)).status_code == 202
        while (conflict := await events.message()).get("method") == "notifications/message":
            continue  # (the first call's log)
        assert conflict["id"] == 7 and "request id 7 is already in flight" in conflict["error"]["message"]


async def test_the_session_less_get_of_the_endpoint(bound: McpHttpServer) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        async with opened(client, bound.endpoint) as (events, messages):
            await initialize(client, events, messages)
        # A Streamable HTTP client's GET names its revision or its session: the old rules hold.
        versioned = await client.get(bound.endpoint, headers={"mcp-protocol-version": "2025-11-25"})
        assert versioned.status_code == 400 and "Mcp-Session-Id" in versioned.json()["error"]["message"]
        json_only = await client.get(bound.endpoint, headers={"accept": "application/json"})
        assert json_only.status_code == 406
        assert (await client.get(bound.endpoint, headers={"mcp-session-id": "nope"})).status_code == 404


async def test_origin_and_host_are_checked(bound: McpHttpServer) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        evil = {"origin": "https://evil.example", "accept": "text/event-stream"}
        assert (await client.get(stream_url(bound), headers=evil)).status_code == 403
        assert (await client.get(bound.endpoint, headers=evil)).status_code == 403
        rebinding = await client.get(stream_url(bound), headers={"host": "evil.example", "accept": "text/event-stream"})
        assert rebinding.status_code in (400, 403, 421)
        async with opened(client, stream_url(bound)) as (_, messages):
            refused = await client.post(messages, json=INIT, headers={"origin": "https://evil.example"})
            assert refused.status_code == 403


async def test_session_limits_hold(gate: Gate, clock: Clock) -> None:
    limits = HttpLimits(max_sessions=1, keepalive_interval=0.05)
    http = await McpHttpServer.bind(
        build_server(gate), settings=HttpSettings(limits=limits), backend=MemoryBackend(limits, clock=clock)
    )
    try:
        async with httpx.AsyncClient(timeout=5) as client, opened(client, stream_url(http)) as (events, messages):
            full = await client.get(stream_url(http), headers={"accept": "text/event-stream"})
            assert full.status_code == 503
            await initialize(client, events, messages)
            await asyncio.sleep(0.3)  # silent: keep-alive comments come
            assert (await client.post(messages, json={"jsonrpc": "2.0", "id": 7, "method": "ping"})).status_code == 202
            assert (await events.message())["id"] == 7
            assert events.comments >= 1
            clock.advance(http.app.limits.session_idle_timeout + 60)
            assert await http.app.reap_expired() == 1
            with pytest.raises(EOFError):
                await events.next()  # the session expired: its stream ended
    finally:
        await http.close(deadline=0.5)


async def test_it_can_be_turned_off(gate: Gate) -> None:
    http = await McpHttpServer.bind(build_server(gate), settings=HttpSettings(legacy_sse=False))
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            sse = {"accept": "text/event-stream"}
            assert (await client.get(stream_url(http), headers=sse)).status_code == 404
            assert (await client.post(urljoin(http.endpoint, "/messages/?session_id=x"), json=INIT)).status_code == 404
            session_less = await client.get(http.endpoint, headers=sse)
            assert session_less.status_code == 400 and "Mcp-Session-Id" in session_less.json()["error"]["message"]
        assert http.app.legacy_sse is None
    finally:
        await http.close(deadline=0.5)


async def test_paths_can_move(gate: Gate) -> None:
    moved = HttpSettings(legacy_sse=LegacyPaths("/old/sse", "/old/messages"))
    http = await McpHttpServer.bind(build_server(gate), settings=moved)
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            async with client.stream("GET", stream_url(http, "/old/sse"), headers={"accept": "text/event-stream"}) as r:
                events = Events(r)
                kind, data = await events.next()
                assert kind == "endpoint" and data.startswith("/old/messages?session_id=")
                await initialize(client, events, urljoin(http.endpoint, data))
            assert (await client.get(stream_url(http), headers={"accept": "text/event-stream"})).status_code == 404
    finally:
        await http.close(deadline=0.5)
    with pytest.raises(ValueError, match="2024-11-05"):
        await McpHttpServer.bind(build_server(gate), settings=HttpSettings(path="/sse"))


async def test_mounted_its_paths_are_below_the_mount_point(gate: Gate) -> None:
    inner = McpHttpApp(build_server(gate))  # (no path: it serves whatever it is mounted at)
    app = Starlette(routes=[Mount("/api", app=inner)])
    for where in ("/api/sse", "/api/"):  # the stream path, and a session-less GET of the endpoint
        stream = AsgiCall(app, "GET", path=where).start()
        await stream.wait_until(lambda: b"\n\n" in stream.body)  # noqa: B023 - awaited in the loop
        path, query = stream.body.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode().split("?")
        assert path == "/api/messages/"
        posted = AsgiCall(app, "POST", INIT, path=path)
        posted.scope["query_string"] = query.encode()
        assert (await posted.start().finish()).status == 202
        await stream.wait_until(lambda: b'"serverInfo"' in stream.body)  # noqa: B023
        stream.disconnect()
        await stream.finish()
    assert not inner.live_sessions
    await inner.shutdown(0.1)
