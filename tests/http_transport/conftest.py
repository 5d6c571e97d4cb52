"""Shared fixtures for the HTTP transport tests.

Two ways to reach the endpoint:

* ``AsgiCall`` drives the ASGI app directly (no socket): it plays an ASGI
  server that streams the response as the app sends it, so status codes,
  headers and SSE streams are checked quickly and deterministically.
* ``bound`` starts a real ``McpHttpServer`` on a loopback port for tests
  that need uvicorn, TLS or a real client library.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcp_sse_server import CallToolResult, McpServer, ServerSession, Tool
from mcp_sse_server.context import RequestContext
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp, McpHttpServer
from mcp_sse_server.types import (
    CompleteResult,
    CreateMessageRequest,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    SamplingMessage,
)

# A safety net so a broken transport fails the test instead of hanging it; no
# test waits this long when the code under test works.
WAIT = 5.0

ROOT = Path(__file__).resolve().parents[2]
ACCEPT_BOTH = "application/json, text/event-stream"


def initialize_message(
    request_id: int | str = 1, *, protocol_version: str = "2025-06-18", **capabilities: Any
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol_version,
            "capabilities": capabilities,
            "clientInfo": {"name": "http-tests", "version": "1.0"},
        },
    }


def request(request_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def parse_sse(body: bytes) -> list[dict[str, Any]]:
    """SSE events as dicts: ``{"id": str | None, "data": parsed JSON}``; comments are kept as
    ``{"comment": ...}``, a ``retry`` field as ``{"retry": int}``, and an event whose data is
    empty (a priming event) as ``{"priming": True}`` without ``data``."""
    events: list[dict[str, Any]] = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        event: dict[str, Any] = {"id": None}
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                event["comment"] = line[1:].strip()
            elif line.startswith("id:"):
                event["id"] = line[3:].strip()
            elif line.startswith("retry:"):
                event["retry"] = int(line[6:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data and "".join(data):
            event["data"] = orjson.loads("\n".join(data))
        elif data:
            event["priming"] = True
        events.append(event)
    return events


async def until(predicate: Callable[[], bool]) -> None:
    """Yield to the loop until ``predicate()`` holds (bounded by WAIT)."""
    async with asyncio.timeout(WAIT):
        while not predicate():  # noqa: ASYNC110 - polls state that has no event
            await asyncio.sleep(0.001)


# --- the server every session gets -----------------------------------------------------


class Gate:
    """Lets a test hold a tool call in flight and release it."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.failed = asyncio.Event()  # a server-to-client request of a tool failed


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def build_server(gate: Gate | None = None) -> McpServer:
    """A small server with a tool for every behaviour the tests need."""
    gate = gate or Gate()
    server = McpServer("http-test", "1.0.0")

    async def add(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    async def wait(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        gate.entered.set()
        await context.log("info", "waiting")  # lets an out-of-process client see the call has started
        try:
            await gate.release.wait()
        except asyncio.CancelledError:
            gate.cancelled.set()
            raise
        return CallToolResult.text("released")

    async def chatty(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await context.report_progress(1, 2, "half")
        await context.log("info", "working")
        await context.report_progress(2, 2, "done")
        return CallToolResult.text("chatty done")

    async def sample(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        try:
            reply = await server.create_message(CreateMessageRequest([SamplingMessage.user(arguments["prompt"])], 50))
        except Exception:
            gate.failed.set()
            raise
        return CallToolResult.text(f"model said: {reply.text}")

    async def elicit(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        answer = await server.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        )
        return CallToolResult.text(f"{answer.action}: {(answer.content or {}).get('name')}")

    def boom(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        raise RuntimeError("secret detail /etc/passwd")

    async def hang_up(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        # Closes its own stream (resumable sessions), then finishes once released.
        await context.log("info", "before the close")
        closed = await context.close_sse_stream()
        await context.log("info", "after the close")
        await gate.release.wait()
        return CallToolResult.text(f"closed={closed}")

    for name, handler, schema in [
        ("add", add, ADD_SCHEMA),
        ("wait", wait, {"type": "object"}),
        ("chatty", chatty, {"type": "object"}),
        ("sample", sample, {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
        ("elicit", elicit, {"type": "object"}),
        ("boom", boom, {"type": "object"}),
        ("hang_up", hang_up, {"type": "object"}),
    ]:
        server.add_tool(Tool(name, schema, handler, description=f"The {name} tool."))
    server.add_resource(Resource.text("test://hello", "hello", "Hello, world.", description="A greeting."))
    server.add_resource_template(
        ResourceTemplate(
            "test://items/{id}",
            "item",
            lambda uri, variables, context: f"item {variables['id']}",
            description="One item.",
            mime_type="text/plain",
            completer=lambda request, context: CompleteResult(
                [v for v in ("apple", "apricot", "banana") if v.startswith(request.argument_value)]
            ),
        )
    )
    server.add_prompt(
        Prompt(
            "greet",
            lambda arguments, context: f"Say hello to {arguments['name']}.",
            description="Greets someone.",
            arguments=[PromptArgument("name", "Who to greet", required=True)],
            completer=lambda request, context: [
                v for v in ("alice", "albert", "bob") if v.startswith(request.argument_value)
            ],
        )
    )
    return server


# --- driving the ASGI app directly ------------------------------------------------------


class AsgiCall:
    """One HTTP request to an ASGI app, played by a minimal streaming ASGI server."""

    def __init__(
        self,
        app: Any,
        method: str = "POST",
        body: bytes | dict[str, Any] | list[Any] = b"",
        headers: dict[str, str] | None = None,
        path: str = "/mcp",
        chunks: Iterable[bytes] | None = None,
    ) -> None:
        if not isinstance(body, bytes):
            body = orjson.dumps(body)
        names = {k.lower(): v for k, v in (headers or {}).items()}
        names.setdefault("host", "127.0.0.1:8000")
        if method == "POST":
            names.setdefault("accept", ACCEPT_BOTH)
            names.setdefault("content-type", "application/json")
        elif method == "GET":
            names.setdefault("accept", "text/event-stream")
        # A None value means "leave this header out".
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in names.items() if v is not None],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self._chunks = list(chunks) if chunks is not None else [body]
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body = b""
        self.complete = False
        self._finished = asyncio.Event()  # response complete or client gone
        self._progress = asyncio.Event()
        self._app = app
        self.task: asyncio.Task[None] | None = None
        self.receive_calls = 0

    def start(self) -> AsgiCall:
        self.task = asyncio.get_running_loop().create_task(self._app(self.scope, self._receive, self._send))
        return self

    async def _receive(self) -> dict[str, Any]:
        self.receive_calls += 1
        if self._chunks:
            chunk = self._chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(self._chunks)}
        await self._finished.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if self.complete:
            raise RuntimeError(f"message after the response completed: {message['type']}")
        if self._finished.is_set():
            return  # the client is gone; like uvicorn, drop it
        if message["type"] == "http.response.start":
            assert self.status is None, "two response starts"
            self.status = message["status"]
            self.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
        else:
            assert message["type"] == "http.response.body"
            assert self.status is not None, "body before start"
            self.body += message.get("body", b"")
            if not message.get("more_body", False):
                self.complete = True
                self._finished.set()
        self._progress.set()

    def disconnect(self) -> None:
        """The client goes away."""
        self._finished.set()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self._progress.clear()
                if self.task is not None and self.task.done():
                    self.task.result()
                    if not predicate():
                        raise AssertionError("the app returned before the condition held")
                    return
                await self._progress.wait()

    async def started(self) -> int:
        await self.wait_until(lambda: self.status is not None)
        assert self.status is not None
        return self.status

    async def events(self, count: int) -> list[dict[str, Any]]:
        """Wait for at least ``count`` SSE data events and return all events so far."""
        await self.wait_until(lambda: len([e for e in parse_sse(self.body) if "data" in e]) >= count)
        return parse_sse(self.body)

    async def finish(self) -> AsgiCall:
        assert self.task is not None
        async with asyncio.timeout(WAIT):
            await self.task
        return self

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def messages(self) -> list[Any]:
        return [event["data"] for event in parse_sse(self.body) if "data" in event]


async def call(
    app: Any, method: str = "POST", body: Any = b"", headers: dict[str, str] | None = None, **kw: Any
) -> AsgiCall:
    """Run one request to completion."""
    return await AsgiCall(app, method, body, headers, **kw).start().finish()


class Session:
    """A session opened on an app through AsgiCall, with helpers for its requests."""

    def __init__(self, app: McpHttpApp, session_id: str, revision: str = "2025-06-18") -> None:
        self.app = app
        self.id = session_id
        self.revision = revision
        self._ids = iter(range(100, 1_000_000))

    @property
    def headers(self) -> dict[str, str]:
        return {"mcp-session-id": self.id, "mcp-protocol-version": self.revision}

    def post(self, body: Any, headers: dict[str, str] | None = None) -> AsgiCall:
        return AsgiCall(self.app, "POST", body, {**self.headers, **(headers or {})}).start()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> AsgiCall:
        return await self.post(request(next(self._ids), method, params)).finish()

    async def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = await self.request(method, params)
        assert reply.status == 200, reply.body
        return reply.messages[-1]["result"]

    def get(self, headers: dict[str, str] | None = None) -> AsgiCall:
        return AsgiCall(self.app, "GET", b"", {**self.headers, **(headers or {})}).start()

    @property
    def server(self) -> ServerSession:
        """The live session on the server side (what sends to this client)."""
        return self.app.live_sessions[self.id].session


async def open_session(
    app: McpHttpApp, *, initialized: bool = True, revision: str = "2025-06-18", **capabilities: Any
) -> Session:
    reply = await call(app, body=initialize_message(protocol_version=revision, **capabilities))
    assert reply.status == 200, reply.body
    assert reply.messages[-1]["result"]["protocolVersion"] == revision
    session = Session(app, reply.headers["mcp-session-id"], revision)
    if initialized:
        done = await session.post(notification("notifications/initialized")).finish()
        assert done.status == 202
    return session


class Clock:
    """A settable monotonic clock for session expiry."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def make_app(gate: Gate, clock: Clock) -> AsyncIterator[Callable[..., McpHttpApp]]:
    """Build apps with test limits; every app is shut down after the test."""
    apps: list[McpHttpApp] = []

    def make(factory: McpServer | Callable[[], Any] | None = None, **limits: Any) -> McpHttpApp:
        # One server for every session, as users build it; a factory makes one per session.
        if factory is None or isinstance(factory, McpServer):
            server, on_session = factory or build_server(gate), None
        else:
            server, on_session = None, factory
        app = McpHttpApp(
            server,
            on_session=on_session,
            path="/mcp",
            limits=HttpLimits(**limits),
            clock=clock,
        )
        apps.append(app)
        return app

    yield make
    for app in apps:
        await app.shutdown(deadline=0.5)


@pytest.fixture
async def app(make_app: Callable[..., McpHttpApp]) -> McpHttpApp:
    return make_app()


# --- a real server on a socket ---------------------------------------------------------


@pytest.fixture
async def bound(gate: Gate) -> AsyncIterator[McpHttpServer]:
    http = await McpHttpServer.bind(build_server(gate), port=0)
    try:
        yield http
    finally:
        await http.close(deadline=0.5)


def node_setup() -> tuple[str, str] | None:
    """(node binary, node_modules) from MCP_TEST_NODE/MCP_TEST_NODE_MODULES, or None when unset."""
    node = os.environ.get("MCP_TEST_NODE")
    modules = os.environ.get("MCP_TEST_NODE_MODULES")
    if not node:
        return None
    if not modules:
        modules = str(ROOT / ".tools/node/node_modules")
    return node, modules


def require_node() -> tuple[str, str]:
    found = node_setup()
    if found is None:
        pytest.skip("MCP_TEST_NODE is not set: run `source scripts/setup.sh && setup_node` (scripts/test.sh does)")
    return found
