"""JSON replies (``json_response=True``): a request that sends nothing before its result is
answered ``application/json``; one that streams is still answered with SSE when the client's
Accept takes it; a client whose Accept takes JSON only gets JSON always, its related
notifications dropped and the server's requests sent on the standalone GET stream."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import httpx2
import mcp.types as t
import orjson
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fixtures.asgi import AsgiCall, Session, call, open_session, until
from fixtures.http_app import Clock, Gate, build_server, http_app
from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, parse_sse, request
from mcp_sse_server import McpServer, Tool
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.stores.memory import MemoryEventLog
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpApp, McpHttpServer

JSON_ONLY = "application/json"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "http-test", "version": "1.0.0"}}
NOT_ACCEPTABLE_POST = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {
        "code": -32600,
        "message": "Not acceptable: the Accept header must allow both application/json and text/event-stream",
    },
}
CHATTY = [
    {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "p", "progress": 1, "total": 2, "message": "half"},
    },
    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}},
    {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "p", "progress": 2, "total": 2, "message": "done"},
    },
]


def text(value: str, **more: Any) -> dict[str, Any]:
    """A tool result of one text."""
    return {"content": [{"type": "text", "text": value}], **more}


def assert_json(reply: AsgiCall, body: dict[str, Any], status: int = 200) -> None:
    """``reply`` is one whole JSON body, with exactly these headers."""
    assert reply.status == status, reply.body
    assert reply.headers == {"content-type": "application/json", "content-length": str(len(reply.body))}
    assert reply.complete and reply.json == body


@pytest.fixture
async def make_app(gate: Gate, clock: Clock) -> AsyncIterator[Callable[..., McpHttpApp]]:
    """Apps with JSON replies (unless ``json_response=False``), shut down after the test."""
    apps: list[McpHttpApp] = []

    def make(server: McpServer | None = None, *, json_response: bool = True, **limits: Any) -> McpHttpApp:
        app = http_app(server, gate, clock, HttpLimits(**limits), json_response=json_response)
        apps.append(app)
        return app

    yield make
    for app in apps:
        await app.shutdown(deadline=0.5)


@pytest.fixture
async def app(make_app: Callable[..., McpHttpApp]) -> McpHttpApp:
    return make_app()


async def open_json_session(
    app: McpHttpApp, revision: str = "2025-11-25", accept: str = ACCEPT_BOTH, **capabilities: Any
) -> Session:
    """A session whose initialize was answered as JSON (``open_session`` reads SSE)."""
    reply = await call(
        app, body=initialize_message(protocol_version=revision, **capabilities), headers={"accept": accept}
    )
    assert reply.status == 200 and reply.headers["content-type"] == "application/json", reply.body
    assert reply.json["result"]["protocolVersion"] == revision
    session = Session(app, reply.headers["mcp-session-id"], revision)
    done = await session.post(notification("notifications/initialized"), {"accept": accept}).finish()
    assert done.status == 202
    return session


def data_events(stream: AsgiCall) -> list[Any]:
    return [event["data"] for event in parse_sse(stream.body) if "data" in event]


# --- sessions (2025-06-18, 2025-11-25) ----------------------------------------------------------


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_a_quick_call_is_one_json_body(app: McpHttpApp, revision: str) -> None:
    session = await open_json_session(app, revision)
    reply = await session.post(request(5, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})).finish()
    assert_json(reply, {"jsonrpc": "2.0", "id": 5, "result": text("5")})
    read = await session.post(request(6, "resources/read", {"uri": "test://hello"})).finish()
    assert read.headers["content-type"] == "application/json" and read.headers["content-length"] == str(len(read.body))
    assert read.json["id"] == 6 and read.json["result"]["contents"][0]["text"] == "Hello, world."
    live = app.live_sessions[session.id]
    assert live.transport.inflight == 0 and live.transport.live_streams() == ()


async def test_without_json_response_the_same_call_is_one_sse_event(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(json_response=False)
    session = await open_session(app)
    reply = await session.post(request(5, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})).finish()
    assert reply.headers == {"content-type": "text/event-stream", "content-length": str(len(reply.body))}
    assert reply.body == b'data: {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"5"}]}}\n\n'


@pytest.mark.parametrize("accept", [ACCEPT_BOTH, JSON_ONLY])
async def test_initialize_is_json_with_the_session_id(app: McpHttpApp, accept: str) -> None:
    reply = await call(app, body=initialize_message(3, protocol_version="2025-11-25"), headers={"accept": accept})
    session_id = reply.headers.get("mcp-session-id", "")
    assert reply.status == 200
    assert reply.headers == {
        "content-type": "application/json",
        "mcp-session-id": session_id,
        "content-length": str(len(reply.body)),
    }
    assert len(session_id) == 43 and session_id in app.live_sessions
    assert reply.json["id"] == 3 and reply.json["result"]["protocolVersion"] == "2025-11-25"
    assert reply.json["result"]["serverInfo"] == {"name": "http-test", "version": "1.0.0"}
    assert app.live_sessions[session_id].transport.initialized
    session = Session(app, session_id, "2025-11-25")
    assert (await session.post(notification("notifications/initialized"), {"accept": accept}).finish()).status == 202
    added = await session.post(request(4, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})).finish()
    assert_json(added, {"jsonrpc": "2.0", "id": 4, "result": text("2")})


async def test_a_failed_initialize_is_json_without_a_session_id(app: McpHttpApp) -> None:
    reply = await call(app, body={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert_json(
        reply,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32602, "message": 'Missing or invalid "protocolVersion": expected a string'},
        },
    )


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_a_call_that_reports_progress_is_still_streamed(app: McpHttpApp, revision: str) -> None:
    session = await open_json_session(app, revision)
    reply = await session.post(
        request(7, "tools/call", {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}})
    ).finish()
    assert reply.status == 200 and reply.headers == {"content-type": "text/event-stream"}  # no Content-Length
    assert reply.messages == [*CHATTY, {"jsonrpc": "2.0", "id": 7, "result": text("chatty done")}]
    events = parse_sse(reply.body)
    if revision == "2025-11-25":  # a resumable stream: the priming event first, then ids
        assert events[0].get("priming") is True and all(event["id"] for event in events)


async def test_a_call_that_only_logs_is_streamed(app: McpHttpApp) -> None:
    session = await open_json_session(app, "2025-06-18")
    reply = await session.post(request(8, "tools/call", {"name": "chatty", "arguments": {}})).finish()
    assert reply.headers == {"content-type": "text/event-stream"}
    assert reply.messages == [CHATTY[1], {"jsonrpc": "2.0", "id": 8, "result": text("chatty done")}]


async def test_a_json_only_client_is_refused_without_json_response(make_app: Callable[..., McpHttpApp]) -> None:
    plain = make_app(json_response=False)
    refused = await call(plain, body=initialize_message(), headers={"accept": JSON_ONLY})
    assert_json(refused, NOT_ACCEPTABLE_POST, 406)
    session = await open_session(plain)
    call_refused = await session.post(request(2, "tools/list"), {"accept": JSON_ONLY}).finish()
    assert_json(call_refused, NOT_ACCEPTABLE_POST, 406)
    # With JSON replies JSON is enough, but JSON it must be.
    app = make_app()
    accepted = await call(app, body=initialize_message(), headers={"accept": JSON_ONLY})
    assert accepted.status == 200 and accepted.headers["content-type"] == "application/json"
    sse_only = await call(app, body=initialize_message(), headers={"accept": "text/event-stream"})
    message = "Not acceptable: the Accept header must allow application/json"
    assert_json(sse_only, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}, 406)
    # An SSE refused by its q-value is a JSON-only client too.
    refusing = await call(app, body=initialize_message(), headers={"accept": "application/json, text/event-stream;q=0"})
    assert refusing.status == 200 and refusing.headers["content-type"] == "application/json"


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_a_json_only_client_gets_the_result_and_no_notifications(app: McpHttpApp, revision: str) -> None:
    session = await open_json_session(app, revision, JSON_ONLY)
    stream = session.get()
    await stream.started()
    reply = await session.post(
        request(7, "tools/call", {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}),
        {"accept": JSON_ONLY},
    ).finish()
    assert_json(reply, {"jsonrpc": "2.0", "id": 7, "result": text("chatty done")})
    # The call's progress and log were dropped, not sent on the standalone stream instead.
    await session.server.log("info", "marker")
    await stream.events(1)
    assert data_events(stream) == [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "marker"}}
    ]
    assert app.live_sessions[session.id].transport.inflight == 0
    stream.disconnect()
    await stream.finish()


SERVER_REQUESTS = [
    pytest.param(
        "sample",
        {"prompt": "meaning of life?"},
        "sampling/createMessage",
        {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"},
        "model said: forty-two",
        id="sampling",
    ),
    pytest.param(
        "elicit", {}, "elicitation/create", {"action": "accept", "content": {"name": "Ada"}}, "accept: Ada", id="elicit"
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "method", "answer", "said"), SERVER_REQUESTS)
@pytest.mark.parametrize("get_first", [True, False], ids=["live", "backlog"])
async def test_a_server_request_of_a_json_only_call_goes_to_the_get_stream(
    app: McpHttpApp, tool: str, arguments: dict[str, Any], method: str, answer: Any, said: str, get_first: bool
) -> None:
    session = await open_json_session(app, "2025-11-25", JSON_ONLY, sampling={}, elicitation={})
    events = app.events
    assert isinstance(events, MemoryEventLog)
    stream = session.get() if get_first else None
    if stream is not None:
        await stream.started()
    inflight = session.post(request(9, "tools/call", {"name": tool, "arguments": arguments}), {"accept": JSON_ONLY})
    if stream is None:
        await until(lambda: events.backlog_size(session.id) == 1)  # waiting for a GET
        stream = session.get()
    await stream.events(1)
    [outbound] = data_events(stream)
    if tool == "sample":
        assert outbound["params"] == {
            "messages": [{"role": "user", "content": {"type": "text", "text": "meaning of life?"}}],
            "maxTokens": 50,
        }
    else:
        assert outbound["params"]["message"] == "Your name?"
    assert outbound["method"] == method
    assert inflight.status is None  # nothing went to the POST meanwhile
    answered = session.post({"jsonrpc": "2.0", "id": outbound["id"], "result": answer}, {"accept": JSON_ONLY})
    assert (await answered.finish()).status == 202
    await inflight.finish()
    assert_json(inflight, {"jsonrpc": "2.0", "id": 9, "result": text(said)})
    stream.disconnect()
    await stream.finish()


async def test_a_server_request_of_an_sse_client_still_streams_on_its_post(app: McpHttpApp) -> None:
    session = await open_json_session(app, "2025-06-18", sampling={})
    stream = session.get()
    await stream.started()
    inflight = session.post(request(9, "tools/call", {"name": "sample", "arguments": {"prompt": "hi"}}))
    [outbound] = await inflight.events(1)
    assert outbound["data"]["method"] == "sampling/createMessage"
    assert inflight.headers == {"content-type": "text/event-stream"}
    answer = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
    assert (
        await session.post({"jsonrpc": "2.0", "id": outbound["data"]["id"], "result": answer}).finish()
    ).status == 202
    await inflight.finish()
    assert inflight.messages[-1] == {"jsonrpc": "2.0", "id": 9, "result": text("model said: hello")}
    assert stream.body == b""  # nothing went to the standalone stream
    stream.disconnect()
    await stream.finish()


@pytest.mark.parametrize("accept", [ACCEPT_BOTH, JSON_ONLY])
async def test_notifications_and_responses_posted_get_202(app: McpHttpApp, accept: str) -> None:
    session = await open_json_session(app, "2025-11-25", accept)
    for message in (
        notification("notifications/roots/list_changed"),
        notification("notifications/cancelled", {"requestId": 12345}),
        {"jsonrpc": "2.0", "id": 12345, "result": {}},
    ):
        reply = await session.post(message, {"accept": accept}).finish()
        assert (reply.status, reply.headers, reply.body) == (202, {"content-length": "0"}, b"")


@pytest.mark.parametrize("accept", [ACCEPT_BOTH, JSON_ONLY])
async def test_tool_errors_and_protocol_errors_are_json(app: McpHttpApp, accept: str) -> None:
    session = await open_json_session(app, "2025-11-25", accept)
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (
            request(1, "tools/call", {"name": "boom", "arguments": {}}),
            {"result": text("Tool boom failed with an internal error", isError=True)},
        ),
        (
            request(2, "tools/call", {"name": "add", "arguments": {"a": 1}}),
            {"result": text('Invalid arguments for tool add: missing required argument "b"', isError=True)},
        ),
        (
            request(3, "tools/call", {"name": "nope", "arguments": {}}),
            {"error": {"code": -32602, "message": "Unknown tool: nope"}},
        ),
        (request(4, "nope/nope"), {"error": {"code": -32601, "message": "Method not found: nope/nope"}}),
    ]
    for body, answer in cases:
        reply = await session.post(body, {"accept": accept}).finish()
        assert_json(reply, {"jsonrpc": "2.0", "id": body["id"], **answer})  # a session's errors are 200


def quiet_server(entered: list[str], release: asyncio.Event) -> McpServer:
    """The test server with a tool that sends nothing until released."""
    server = build_server()

    async def quiet(arguments: dict[str, Any], context: RequestContext) -> str:
        entered.append("quiet")
        await release.wait()
        return "quiet done"

    server.add_tool(Tool("quiet", {"type": "object"}, quiet))
    return server


async def test_a_call_silent_past_the_keepalive_interval_is_streamed_to_an_sse_client(
    make_app: Callable[..., McpHttpApp],
) -> None:
    entered: list[str] = []
    release = asyncio.Event()
    app = make_app(quiet_server(entered, release))
    session = await open_json_session(app, "2025-06-18")
    sse = session.post(request(20, "tools/call", {"name": "quiet", "arguments": {}}))
    only = session.post(request(21, "tools/call", {"name": "quiet", "arguments": {}}), {"accept": JSON_ONLY})
    await until(lambda: len(entered) == 2)
    app.keepalive.tick()  # a new stream counts as active once
    app.keepalive.tick()
    await sse.wait_until(lambda: b": keepalive" in sse.body)
    assert sse.headers == {"content-type": "text/event-stream"}
    assert only.status is None  # a JSON-only client gets no keep-alives
    release.set()
    await sse.finish()
    await only.finish()
    assert sse.messages == [{"jsonrpc": "2.0", "id": 20, "result": text("quiet done")}]
    assert_json(only, {"jsonrpc": "2.0", "id": 21, "result": text("quiet done")})


async def test_a_json_only_call_cancelled_by_its_client_is_answered(app: McpHttpApp, gate: Gate) -> None:
    # end_cancelled takes the request out of the table and ends only a stream: the empty reply
    # must still go out when the request has none.
    session = await open_json_session(app, "2025-06-18", JSON_ONLY)
    inflight = session.post(request(7, "tools/call", {"name": "wait", "arguments": {}}), {"accept": JSON_ONLY})
    await asyncio.wait_for(gate.entered.wait(), 5)
    cancel = session.post(notification("notifications/cancelled", {"requestId": 7}), {"accept": JSON_ONLY})
    assert (await cancel.finish()).status == 202
    await asyncio.wait_for(gate.cancelled.wait(), 5)
    await inflight.finish()
    # As for a request cancelled before it sent anything (test_inline_replies): an empty 200.
    assert (inflight.status, inflight.body, inflight.complete) == (200, b"", True)


# A JSON-only client's request has no stream: when its session ends under it, the POST still
# gets the error an SSE client gets as its last event, as a JSON body.
@pytest.mark.parametrize("how", ["delete", "shutdown"])
async def test_a_json_only_call_in_flight_when_its_session_ends_gets_the_error(
    app: McpHttpApp, gate: Gate, how: str
) -> None:
    session = await open_json_session(app, "2025-06-18", JSON_ONLY)
    inflight = session.post(request(7, "tools/call", {"name": "wait", "arguments": {}}), {"accept": JSON_ONLY})
    await asyncio.wait_for(gate.entered.wait(), 5)
    if how == "delete":
        assert (await AsgiCall(app, "DELETE", b"", session.headers).start().finish()).status == 204
    else:
        await app.shutdown(deadline=0.2)
    await inflight.finish()
    # What an SSE client gets as its stream's last event, as the JSON body.
    error = {"code": -32000, "message": "The session was closed before the request completed"}
    assert_json(inflight, {"jsonrpc": "2.0", "id": 7, "error": error})


# --- stateless (2026-07-28) ---------------------------------------------------------------------


def modern(method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return request(1, method, {"_meta": {**META, **meta}, **(params or {})})


def modern_headers(method: str, name: str | None = None, accept: str = ACCEPT_BOTH) -> dict[str, str]:
    values = {"mcp-protocol-version": MODERN, "mcp-method": method, "accept": accept}
    if name is not None:
        values["mcp-name"] = name
    return values


async def post(app: McpHttpApp, body: Any, head: dict[str, str]) -> AsgiCall:
    return await AsgiCall(app, "POST", body, head).start().finish()


@pytest.mark.parametrize("accept", [ACCEPT_BOTH, JSON_ONLY])
async def test_a_2026_call_is_one_json_body(app: McpHttpApp, accept: str) -> None:
    body = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    reply = await post(app, body, modern_headers("tools/call", "add", accept))
    assert_json(
        reply, {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", **text("5"), "_meta": SERVER_INFO}}
    )
    boom = await post(
        app, modern("tools/call", {"name": "boom", "arguments": {}}), modern_headers("tools/call", "boom", accept)
    )
    failed = text("Tool boom failed with an internal error", isError=True)
    assert_json(boom, {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", **failed, "_meta": SERVER_INFO}})
    assert len(app.live_sessions) == 0


async def test_a_2026_json_only_client_needs_json_response(make_app: Callable[..., McpHttpApp]) -> None:
    plain = make_app(json_response=False)
    body = modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert_json(await post(plain, body, modern_headers("tools/call", "add", JSON_ONLY)), NOT_ACCEPTABLE_POST, 406)


@pytest.mark.parametrize("accept", [ACCEPT_BOTH, JSON_ONLY])
async def test_a_2026_error_answered_before_streaming_keeps_its_status(app: McpHttpApp, accept: str) -> None:
    unknown = await post(
        app, modern("tools/call", {"name": "nope", "arguments": {}}), modern_headers("tools/call", "nope", accept)
    )
    assert_json(unknown, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown tool: nope"}}, 400)
    removed = await post(app, modern("ping"), modern_headers("ping", accept=accept))
    error = {"code": -32601, "message": "Method not found: ping", "data": "ping"}
    assert_json(removed, {"jsonrpc": "2.0", "id": 1, "error": error}, 404)


async def test_a_2026_call_that_streams_is_sse_unless_the_client_reads_json_only(app: McpHttpApp) -> None:
    body = modern(
        "tools/call",
        {"name": "chatty", "arguments": {}},
        progressToken="p",
        **{"io.modelcontextprotocol/logLevel": "debug"},
    )
    done = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"resultType": "complete", **text("chatty done"), "_meta": SERVER_INFO},
    }
    streamed = await post(app, body, modern_headers("tools/call", "chatty"))
    assert streamed.headers == {"content-type": "text/event-stream", "x-accel-buffering": "no"}
    assert streamed.messages[-1] == done
    assert [message.get("method") for message in streamed.messages[:-1]] == [message["method"] for message in CHATTY]
    only = await post(app, body, modern_headers("tools/call", "chatty", JSON_ONLY))
    assert_json(only, done)  # the progress and the log were dropped


async def test_a_2026_question_is_an_input_required_json_result(app: McpHttpApp) -> None:
    body = request(
        1,
        "tools/call",
        {
            "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}},
            "name": "sample",
            "arguments": {"prompt": "hi"},
        },
    )
    reply = await post(app, body, modern_headers("tools/call", "sample", JSON_ONLY))
    assert reply.headers == {"content-type": "application/json", "content-length": str(len(reply.body))}
    result = reply.json["result"]
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "q1": {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 50},
        }
    }
    assert result["requestState"].startswith("v1.")


# --- real clients over a socket ----------------------------------------------------------------


class ContentTypes:
    """The content type of each POST's reply, by the JSON-RPC method it carried."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def record(self, method: str, content: bytes, status: int, content_type: str) -> None:
        if method == "POST" and status == 200:
            message = orjson.loads(content)
            name = message["method"] if message["method"] != "tools/call" else f"tools/call {message['params']['name']}"
            self.seen.append((name, content_type.split(";")[0]))

    async def httpx_hook(self, response: httpx.Response) -> None:
        request = response.request
        self.record(request.method, request.content, response.status_code, response.headers.get("content-type", ""))

    async def httpx2_hook(self, response: httpx2.Response) -> None:
        request = response.request
        self.record(request.method, request.content, response.status_code, response.headers.get("content-type", ""))


@pytest.fixture
async def bound_json(gate: Gate) -> AsyncIterator[McpHttpServer]:
    http = await McpHttpServer.bind(build_server(gate), settings=HttpSettings(json_response=True))
    try:
        yield http
    finally:
        await http.close(deadline=0.5)


@pytest.mark.parametrize("mode", ["session", "auto"])
async def test_our_client_reads_json_and_streamed_replies(bound_json: McpHttpServer, mode: str) -> None:
    types = ContentTypes()
    progress: list[tuple[float, float | None, str | None]] = []
    async with (
        httpx.AsyncClient(event_hooks={"response": [types.httpx_hook]}) as http_client,
        StreamableHttpClient(bound_json.endpoint, http_client=http_client, mode=mode) as client,
    ):
        added = await client.call_tool("add", {"a": 20, "b": 22})
        assert added.content[0].text == "42" and not added.is_error  # type: ignore[union-attr]
        chatty = await client.call_tool("chatty", {}, on_progress=lambda *value: progress.append(value))
        assert chatty.content[0].text == "chatty done"  # type: ignore[union-attr]
    assert progress == [(1, 2, "half"), (2, 2, "done")]
    calls = [seen for seen in types.seen if seen[0].startswith("tools/call")]
    assert calls == [("tools/call add", "application/json"), ("tools/call chatty", "text/event-stream")]
    if mode == "session":
        assert types.seen[0] == ("initialize", "application/json")


async def test_the_sdk_client_reads_json_and_streamed_replies(bound_json: McpHttpServer) -> None:
    types = ContentTypes()
    reported: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async def sampling(context: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="forty-two"), model="m")

    async with httpx2.AsyncClient(event_hooks={"response": [types.httpx2_hook]}) as http_client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(
                streamable_http_client(bound_json.endpoint, http_client=http_client),
                mode="legacy",
                sampling_callback=sampling,
            ) as sdk:
                assert sdk.protocol_version == "2025-11-25"
                added = await sdk.call_tool("add", {"a": 20, "b": 22})
                assert added.content[0].text == "42" and not added.is_error  # type: ignore[union-attr]
                bad = await sdk.call_tool("add", {"a": "x", "b": 1})
                assert bad.is_error
                chatty = await sdk.call_tool("chatty", {}, progress_callback=on_progress)
                assert chatty.content[0].text == "chatty done"  # type: ignore[union-attr]
                sampled = await sdk.call_tool("sample", {"prompt": "meaning of life?"})
                assert sampled.content[0].text == "model said: forty-two"  # type: ignore[union-attr]
    assert reported == [(1, 2, "half"), (2, 2, "done")]
    assert types.seen[0] == ("initialize", "application/json")
    assert [seen for seen in types.seen if seen[0].startswith("tools/call")] == [
        ("tools/call add", "application/json"),
        ("tools/call add", "application/json"),
        ("tools/call chatty", "text/event-stream"),
        ("tools/call sample", "text/event-stream"),
    ]
