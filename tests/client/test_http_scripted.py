"""StreamableHttpClient against a scripted Streamable HTTP server, for the
wire details a well-behaved server rarely shows: headers, SSE framing,
resumption of dropped streams, bounded reconnects, error bodies, expiry."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from fixtures.peers import WAIT, python_env
from mcp_sse_server.client import McpConnectionError, StreamableHttpClient
from mcp_sse_server.client.elicitation import UrlElicitationRequiredError
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification, McpError

from .asgi_server import serve

Handler = Callable[[dict[str, Any], Request], Awaitable[Response]]


def event(message: dict[str, Any] | None = None, id: str | None = None, raw: str = "") -> bytes:
    """One SSE event; ``message`` is split over two data lines to exercise joining."""
    lines = [raw] if raw else []
    if id is not None:
        lines.append(f"id: {id}")
    if message is not None:
        text = orjson.dumps(message).decode()
        middle = text.index(",") + 1  # a newline is fine between JSON tokens
        lines += ["event: message", f"data: {text[:middle]}", f"data: {text[middle:]}"]
    return ("\n".join(lines) + "\n\n").encode()


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def sse_response(*chunks: bytes, then: Callable[[], Awaitable[None]] | None = None, drop: bool = False) -> Response:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        if then is not None:
            await then()
        if drop:
            raise ConnectionResetError("scripted drop")  # uvicorn aborts the connection

    return StreamingResponse(body(), media_type="text/event-stream")


class Scripted:
    """Answers initialize and one-way messages itself; the test scripts the rest."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, str], Any]] = []
        self.client_answered = asyncio.Event()  # the client POSTed a response to a server request
        self.sessions = (f"s{n}" for n in itertools.count(1))
        self.live: set[str] = set()
        self.handle: Handler = self._default
        self.revision = "2025-06-18"  # what initialize answers
        self.capabilities: dict[str, Any] = {}  # and the capabilities it declares
        self.get: Callable[[Request], Awaitable[Response]] = self._no_stream
        self.app = Starlette(routes=[Route("/mcp", self._endpoint, methods=["POST", "GET", "DELETE"])])

    async def _default(self, message: dict[str, Any], request: Request) -> Response:
        return JSONResponse(result(message["id"], {"content": []} if message["method"] == "tools/call" else {}))

    async def _no_stream(self, request: Request) -> Response:
        return Response(status_code=405)

    def posted(self, method: str) -> list[tuple[dict[str, str], Any]]:
        return [(headers, body) for verb, headers, body in self.log if verb == "POST" and body.get("method") == method]

    async def _endpoint(self, request: Request) -> Response:
        headers = {key.lower(): value for key, value in request.headers.items()}
        body = orjson.loads(await request.body()) if request.method == "POST" else None
        self.log.append((request.method, headers, body))
        session = headers.get("mcp-session-id")
        if request.method == "DELETE":
            self.live.discard(session or "")
            return Response(status_code=200)
        if request.method == "GET":
            return await self.get(request)
        if body.get("method") == "initialize":
            issued = next(self.sessions)
            self.live.add(issued)
            reply = result(
                body["id"],
                {
                    "protocolVersion": self.revision,
                    "capabilities": self.capabilities,
                    "serverInfo": {"name": "s", "version": "1"},
                },
            )
            return JSONResponse(reply, headers={"mcp-session-id": issued})
        if session not in self.live:
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "no session"}}, 404)
        if "id" not in body or "method" not in body:
            if "method" not in body:
                self.client_answered.set()
            return Response(status_code=202)
        return await self.handle(body, request)


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[Scripted, str]]:
    server = Scripted()
    async with serve(server.app) as base:
        yield server, f"{base}/mcp"


def fast_client(url: str, **options: Any) -> StreamableHttpClient:
    return StreamableHttpClient(url, reconnect_delay=0.01, max_reconnect_attempts=2, **options)


async def test_headers_session_and_delete(scripted: tuple[Scripted, str]) -> None:
    """A server that only speaks 2025-06-18 answers our 2025-11-25 offer with it: the
    client goes on and sends the negotiated revision in MCP-Protocol-Version."""
    server, url = scripted
    async with fast_client(url, headers={"Authorization": "Bearer t"}) as client:
        await client.ping()
        assert client.protocol_version == "2025-06-18"
    ((init_headers, init),) = server.posted("initialize")
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert init_headers["accept"] == "application/json, text/event-stream"
    assert init_headers["content-type"] == "application/json"
    assert "mcp-session-id" not in init_headers and "mcp-protocol-version" not in init_headers
    ((ping_headers, _),) = server.posted("ping")
    assert ping_headers["mcp-session-id"] == "s1"
    assert ping_headers["mcp-protocol-version"] == "2025-06-18"
    assert ping_headers["authorization"] == "Bearer t"
    ((initialized_headers, _),) = server.posted("notifications/initialized")
    assert initialized_headers["mcp-session-id"] == "s1"
    verbs = [verb for verb, _, _ in server.log]
    assert verbs[-1] == "DELETE" and server.log[-1][1]["mcp-session-id"] == "s1"
    assert "GET" in verbs  # the standalone stream was tried (405 here: fine)


async def test_sse_reply_delivers_notifications_and_answers_server_requests(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted

    async def handle(message: dict[str, Any], request: Request) -> Response:
        return sse_response(
            b": a comment\nretry: 10\n\n",
            event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}),
            event({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}),
            event({"jsonrpc": "2.0", "method": "notifications/custom", "params": {"x": 1}}),
            event(result(message["id"], {"tools": []})),
        )

    server.handle = handle
    logs: list[dict[str, Any]] = []
    other: list[JsonRpcNotification] = []
    async with fast_client(url, on_log=logs.append, on_notification=other.append) as client:
        assert await client.list_tools() == []
        assert logs == [{"level": "info", "data": "hi"}]
        assert other == [JsonRpcNotification("notifications/custom", {"x": 1})]
        await asyncio.wait_for(server.client_answered.wait(), WAIT)  # POSTed in the background
    answer = next(body for _, _, body in server.log if body and body.get("id") == "srv-1")
    assert answer == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}


@pytest.mark.parametrize("drop", [False, True], ids=["stream-ends", "connection-drops"])
async def test_a_dropped_reply_stream_resumes_with_last_event_id(scripted: tuple[Scripted, str], drop: bool) -> None:
    server, url = scripted
    calls: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any], request: Request) -> Response:
        calls.append(message)
        token = message["params"]["_meta"]["progressToken"]
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token}}
        return sse_response(
            event(id="e0", raw="retry: 5"),  # a priming event: an id, no data
            event({**progress, "params": {**progress["params"], "progress": 1}}, id="e1"),
            drop=drop,
        )

    async def resume(request: Request) -> Response:
        if request.headers.get("last-event-id") != "e1":
            return Response(status_code=405)
        token = calls[0]["params"]["_meta"]["progressToken"]
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token}}
        return sse_response(
            event({**progress, "params": {**progress["params"], "progress": 2}}, id="e2"),
            event(result(calls[0]["id"], {"content": [{"type": "text", "text": "resumed"}]}), id="e3"),
        )

    server.handle = handle
    server.get = resume
    seen: list[float] = []
    async with fast_client(url) as client:
        answer = await client.call_tool("t", on_progress=lambda p, total, text: seen.append(p), timeout=WAIT)
    assert answer.content[0].text == "resumed"  # type: ignore[union-attr]
    assert seen == [1, 2]
    resumes = [headers for verb, headers, _ in server.log if verb == "GET" and "last-event-id" in headers]
    assert [headers["last-event-id"] for headers in resumes] == ["e1"]
    assert resumes[0]["mcp-session-id"] == "s1"


async def test_resumption_gives_up_after_bounded_attempts(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted

    async def handle(message: dict[str, Any], request: Request) -> Response:
        return sse_response(event(id="only"))

    async def unavailable(request: Request) -> Response:
        if "last-event-id" in request.headers:
            return PlainTextResponse("restarting", status_code=503)
        return Response(status_code=405)

    server.handle = handle
    server.get = unavailable
    async with fast_client(url) as client:
        with pytest.raises(McpConnectionError, match="could not resume it after 2 attempts: HTTP 503"):
            await client.call_tool("t", timeout=WAIT)
    assert sum(1 for verb, headers, _ in server.log if verb == "GET" and "last-event-id" in headers) == 2


async def test_a_stream_that_ends_without_the_answer_fails_the_call(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted

    async def handle(message: dict[str, Any], request: Request) -> Response:
        return sse_response(event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}))

    server.handle = handle
    async with fast_client(url) as client:
        with pytest.raises(McpConnectionError, match=f"{url} ended the stream for tools/call without answering"):
            await client.call_tool("t", timeout=WAIT)


async def test_error_statuses_carry_the_json_rpc_error_or_the_status(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted

    async def handle(message: dict[str, Any], request: Request) -> Response:
        if message["method"] == "tools/list":
            error = {"code": -32602, "message": "Bad cursor", "data": {"field": "cursor"}}
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error}, 400)
        if message["method"] == "ping":
            return PlainTextResponse("boom\nsecond line", status_code=500)
        return Response(status_code=202)

    server.handle = handle
    async with fast_client(url) as client:
        with pytest.raises(McpError) as raised:
            await client.list_tools()
        assert (raised.value.code, raised.value.message, raised.value.data) == (
            -32602,
            "Bad cursor",
            {"field": "cursor"},
        )
        with pytest.raises(McpError, match=r"answered ping with HTTP 500: boom$"):
            await client.ping()
        with pytest.raises(McpError, match="instead of JSON or an event stream"):
            await client.call_tool("accepted-but-never-answered", timeout=WAIT)


async def test_an_expired_session_is_reinitialized_once_for_concurrent_calls(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted
    async with fast_client(url) as client:
        assert client.transport.session_id == "s1"
        server.live.clear()  # the server forgets every session (a restart, say)
        results = await asyncio.gather(*(client.call_tool("t", timeout=WAIT) for _ in range(3)))
        assert len(results) == 3
        assert client.transport.session_id == "s2"
    assert len(server.posted("initialize")) == 2
    assert [headers.get("mcp-session-id") for headers, _ in server.posted("notifications/initialized")] == ["s1", "s2"]


async def test_a_log_handler_sets_the_level_on_every_session_of_a_server_with_logging(
    scripted: tuple[Scripted, str],
) -> None:
    server, url = scripted
    server.capabilities = {"logging": {}}
    async with fast_client(url, on_log=lambda params: None) as client:
        server.live.clear()  # a new session must be asked again
        await client.ping()
        assert client.transport.session_id == "s2"
    levels = [(headers["mcp-session-id"], body["params"]) for headers, body in server.posted("logging/setLevel")]
    assert levels == [("s1", {"level": "info"}), ("s2", {"level": "info"})]
    # Right after the handshake (the probe for 2026-07-28 came first), before any request of the caller's.
    methods = [body.get("method") for verb, _, body in server.log if verb == "POST"]
    start = methods.index("initialize")
    assert methods[start : start + 3] == ["initialize", "notifications/initialized", "logging/setLevel"]


async def test_no_level_is_asked_without_a_handler_or_without_the_logging_capability(
    scripted: tuple[Scripted, str],
) -> None:
    server, url = scripted
    async with fast_client(url, on_log=lambda params: None) as client:  # capabilities: {}
        await client.ping()
    server.capabilities = {"logging": {}}
    async with fast_client(url) as client:  # no handler, no log_level
        await client.ping()
    assert server.posted("logging/setLevel") == []
    async with fast_client(url, log_level="error") as client:  # an explicit level is asked for by itself
        await client.ping()
    assert [body["params"] for _, body in server.posted("logging/setLevel")] == [{"level": "error"}]


async def test_a_refused_log_level_does_not_fail_the_connection(
    scripted: tuple[Scripted, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, url = scripted
    server.capabilities = {"logging": {}}

    async def handle(message: dict[str, Any], request: Request) -> Response:
        if message["method"] == "logging/setLevel":
            error = {"code": -32601, "message": "no levels here"}
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error})
        return JSONResponse(result(message["id"], {}))

    server.handle = handle
    async with fast_client(url, on_log=lambda params: None) as client:
        await client.ping()
    assert "refused logging/setLevel 'info': no levels here" in caplog.text


async def test_the_standalone_stream_delivers_and_reconnects_with_last_event_id(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted
    connections = 0
    got = asyncio.Event()
    notes: list[JsonRpcNotification] = []

    async def stream(request: Request) -> Response:
        nonlocal connections
        connections += 1
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        if connections == 1:
            return sse_response(event(note, id="g1"), drop=True)
        assert request.headers.get("last-event-id") == "g1"
        return sse_response(event({**note, "params": {"again": True}}, id="g2"), then=asyncio.Event().wait)

    def on_notification(note: JsonRpcNotification) -> None:
        notes.append(note)
        if len(notes) == 2:
            got.set()

    server.get = stream
    async with fast_client(url, on_notification=on_notification):
        await asyncio.wait_for(got.wait(), WAIT)
    assert [note.params for note in notes] == [None, {"again": True}]


async def test_the_standalone_stream_retries_a_bounded_number_of_times(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted

    async def unavailable(request: Request) -> Response:
        return PlainTextResponse("busy", status_code=503)

    server.get = unavailable
    async with fast_client(url) as client:
        listener = client.transport.connection._listener  # type: ignore[union-attr]
        assert listener is not None
        await asyncio.wait_for(listener, WAIT)  # it gives up rather than looping forever
    assert sum(1 for verb, _, _ in server.log if verb == "GET") == 3  # the first try and 2 reconnects


async def test_a_404_on_the_standalone_stream_leads_to_a_new_session(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted
    refused = asyncio.Event()

    async def gone(request: Request) -> Response:
        refused.set()
        return Response(status_code=404)

    server.get = gone
    async with fast_client(url) as client:
        await asyncio.wait_for(refused.wait(), WAIT)
        server.get = server._no_stream
        await client.ping()
        assert client.transport.session_id == "s2"


@pytest.mark.parametrize("revision", ["2025-11-25", "2025-03-26"])
async def test_the_negotiated_revision_goes_in_the_header(scripted: tuple[Scripted, str], revision: str) -> None:
    server, url = scripted
    server.revision = revision
    async with fast_client(url) as client:
        await client.ping()
        assert client.protocol_version == revision
    ((ping_headers, _),) = server.posted("ping")
    assert ping_headers["mcp-protocol-version"] == revision


async def test_a_revision_the_client_does_not_speak_is_refused(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted
    server.revision = "2026-07-28"
    with pytest.raises(McpError, match="answered protocol revision '2026-07-28'"):
        async with fast_client(url):
            pass


async def test_priming_events_are_cursors_and_a_graceful_close_is_resumed_after_retry(
    scripted: tuple[Scripted, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The SEP-1699 exchange: a priming event (id, retry, empty data), one progress
    event, then the server ends the POST stream without answering. The client must
    not parse the priming event, must wait the server's retry (not its own 30 s
    default) and GET with the last event id; the answer comes on that GET."""
    server, url = scripted
    calls: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any], request: Request) -> Response:
        calls.append(message)
        token = message["params"]["_meta"]["progressToken"]
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token}}
        return sse_response(
            b"id: p1.0\nretry: 20\ndata: \n\n",  # literally what the spec's priming frame is
            event({**progress, "params": {**progress["params"], "progress": 1}}, id="p1.1"),
        )

    async def resume(request: Request) -> Response:
        if "last-event-id" not in request.headers:
            return Response(status_code=405)
        return sse_response(
            b"id: p1.2\ndata:\n\n",
            event(result(calls[0]["id"], {"content": [{"type": "text", "text": "after the cut"}]}), id="p1.3"),
        )

    server.handle = handle
    server.get = resume
    seen: list[float] = []
    client = StreamableHttpClient(url, reconnect_delay=30.0, max_reconnect_attempts=2)
    with caplog.at_level("WARNING", logger="mcp_sse_server.client"):
        async with client:
            answer = await client.call_tool("t", on_progress=lambda p, total, text: seen.append(p), timeout=WAIT)
            assert client.transport.connection is not None and client.transport.connection.retry == 20
    assert answer.content[0].text == "after the cut"  # type: ignore[union-attr]
    assert seen == [1]
    resumes = [
        headers["last-event-id"] for verb, headers, _ in server.log if verb == "GET" and "last-event-id" in headers
    ]
    assert resumes == ["p1.1"]
    assert not [record for record in caplog.records if "malformed" in record.getMessage()]
    assert not server.posted("notifications/cancelled")  # a disconnect is not a cancellation


async def test_reconnects_that_bring_something_new_do_not_count_against_the_limit(
    scripted: tuple[Scripted, str],
) -> None:
    """A polling server: each GET carries one new cursor and closes; the answer comes
    on the fifth. Bounded attempts only count reconnects that bring nothing."""
    server, url = scripted
    calls: list[dict[str, Any]] = []
    gets = 0

    async def handle(message: dict[str, Any], request: Request) -> Response:
        calls.append(message)
        return sse_response(b"id: c0\nretry: 1\ndata:\n\n")

    async def poll(request: Request) -> Response:
        nonlocal gets
        if "last-event-id" not in request.headers:
            return Response(status_code=405)
        gets += 1
        assert request.headers["last-event-id"] == f"c{gets - 1}"
        if gets < 5:
            return sse_response(f"id: c{gets}\ndata:\n\n".encode())
        return sse_response(event(result(calls[0]["id"], {"content": []}), id=f"c{gets}"))

    server.handle = handle
    server.get = poll
    async with fast_client(url) as client:  # max_reconnect_attempts=2
        assert (await client.call_tool("t", timeout=WAIT)).content == []
    assert gets == 5


async def test_url_elicitation_required_is_a_distinct_error(scripted: tuple[Scripted, str]) -> None:
    server, url = scripted
    needed = [{"mode": "url", "elicitationId": "e1", "url": "https://auth.example/connect?e=e1", "message": "Log in"}]

    async def handle(message: dict[str, Any], request: Request) -> Response:
        error = {"code": -32042, "message": "This request requires more information.", "data": {"elicitations": needed}}
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error})

    server.handle = handle
    async with fast_client(url) as client:
        with pytest.raises(UrlElicitationRequiredError) as raised:
            await client.call_tool("t", timeout=WAIT)
    assert raised.value.code == -32042 and raised.value.elicitations == needed


async def test_the_cli_shows_the_urls_a_request_waits_for(scripted: tuple[Scripted, str], tmp_path: Path) -> None:
    server, url = scripted
    needed = [{"mode": "url", "elicitationId": "e1", "url": "https://auth.example/connect?e=e1", "message": "Log in"}]

    async def handle(message: dict[str, Any], request: Request) -> Response:
        if message["method"] == "tools/list":
            tool = {"name": "t", "inputSchema": {"type": "object", "properties": {}}}
            return JSONResponse(result(message["id"], {"tools": [tool]}))
        error = {"code": -32042, "message": "Authorization required.", "data": {"elicitations": needed}}
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error})

    server.handle = handle
    env = {**os.environ, **python_env(), "MCP_SSE_SERVER_CONFIG": str(tmp_path / "registry.json")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "mcp_sse_server", "call", url, "t"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode != 0
    assert "Authorization required." in done.stderr and "https://auth.example/connect?e=e1" in done.stderr
    assert "-32042" in done.stderr
