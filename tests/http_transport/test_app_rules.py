"""The HTTP rules of the endpoint, status code by status code, through the ASGI app."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.asgi import AsgiCall, call, open_session
from fixtures.http_app import Gate, build_server
from fixtures.messages import initialize_message, notification, request
from mcp_sse_server.engine.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from mcp_sse_server.stores import MemoryBackend, MemorySessionStore
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")


def assert_error(reply: Any, status: int, *words: str, code: int | None = None) -> dict[str, Any]:
    """The reply has this status and a JSON-RPC error body whose message names ``words``."""
    assert reply.status == status, (reply.status, reply.body)
    assert reply.headers["content-type"] == "application/json"
    body = reply.json
    assert body["jsonrpc"] == "2.0" and "id" in body
    error: dict[str, Any] = body["error"]
    assert isinstance(error["code"], int)
    if code is not None:
        assert error["code"] == code
    for word in words:
        assert word.lower() in error["message"].lower(), error["message"]
    return error


class CountingFactory:
    """on_session that counts how many servers it built."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        return build_server(self.gate)


# --- methods and path -------------------------------------------------------------------


@pytest.mark.parametrize("method", ["PUT", "PATCH", "HEAD", "OPTIONS"])
async def test_other_methods_get_405_with_allow(app: McpHttpApp, method: str) -> None:
    reply = await call(app, method)
    assert_error(reply, 405, "method not allowed", method)
    assert reply.headers["allow"] == "GET, POST, DELETE"


async def test_another_path_is_404(app: McpHttpApp) -> None:
    reply = await call(app, "POST", initialize_message(), path="/other")
    assert_error(reply, 404, "/mcp")
    assert len(app.live_sessions) == 0


async def test_without_a_path_the_app_serves_where_it_is_mounted(gate: Gate) -> None:
    app = McpHttpApp(lambda: build_server(gate))
    reply = await call(app, "POST", initialize_message(), path="/anything/mcp")
    assert reply.status == 200
    await app.shutdown(deadline=0)


# --- POST ---------------------------------------------------------------------------------


async def test_initialize_opens_a_session_with_a_visible_ascii_id(app: McpHttpApp) -> None:
    reply = await call(app, "POST", initialize_message())
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/event-stream"
    session_id = reply.headers["mcp-session-id"]
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    [message] = reply.messages
    assert message["id"] == 1 and message["result"]["protocolVersion"] == "2025-06-18"
    assert app.live_sessions.get(session_id) is not None


async def test_session_ids_differ(app: McpHttpApp) -> None:
    ids = {(await open_session(app, initialized=False)).id for _ in range(5)}
    assert len(ids) == 5


async def test_a_notification_or_response_gets_202_without_body(app: McpHttpApp) -> None:
    session = await open_session(app, initialized=False)
    reply = await session.post(notification("notifications/initialized")).finish()
    assert reply.status == 202 and reply.body == b""
    reply = await session.post({"jsonrpc": "2.0", "id": 99, "result": {}}).finish()
    assert reply.status == 202 and reply.body == b""


async def test_a_request_gets_an_sse_stream_with_related_messages_then_the_response(app: McpHttpApp) -> None:
    session = await open_session(app)
    await session.result("logging/setLevel", {"level": "debug"})
    reply = await session.post(
        request(7, "tools/call", {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "tok"}})
    ).finish()
    assert reply.status == 200 and reply.headers["content-type"] == "text/event-stream"
    methods = [m.get("method", "response") for m in reply.messages]
    assert methods == ["notifications/progress", "notifications/message", "notifications/progress", "response"]
    assert reply.messages[-1] == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "chatty done"}]},
    }
    assert "mcp-session-id" not in reply.headers  # only on the initialize response


async def test_a_quick_reply_has_a_content_length(app: McpHttpApp) -> None:
    session = await open_session(app)
    reply = await session.request("ping")
    assert int(reply.headers["content-length"]) == len(reply.body)
    assert reply.messages == [{"jsonrpc": "2.0", "id": 100, "result": {}}]


async def test_a_request_without_session_id_is_400(app: McpHttpApp) -> None:
    await open_session(app)
    reply = await call(app, "POST", request(2, "tools/list"))
    assert_error(reply, 400, "Mcp-Session-Id", code=INVALID_REQUEST)
    assert len(app.live_sessions) == 1


async def test_an_unknown_session_id_is_404(app: McpHttpApp) -> None:
    reply = await call(app, "POST", request(2, "tools/list"), {"mcp-session-id": "no-such-session"})
    assert_error(reply, 404, "session not found")


async def test_a_second_initialize_on_a_session_is_a_json_rpc_error(app: McpHttpApp) -> None:
    session = await open_session(app)
    reply = await session.post(initialize_message(5)).finish()
    assert reply.status == 200
    assert reply.messages[-1]["error"]["code"] == INVALID_REQUEST
    assert len(app.live_sessions) == 1


@pytest.mark.parametrize(
    ("accept", "ok"),
    [
        ("application/json, text/event-stream", True),
        ("*/*", True),
        ("application/*, text/*", True),
        (None, True),  # no Accept means anything (RFC 9110)
        ("application/json", False),
        ("text/event-stream", False),
        ("text/*;q=0, */*", False),
        ("application/json, text/event-stream;q=0", False),
        ("text/html", False),
    ],
)
async def test_post_accept_must_allow_json_and_sse(app: McpHttpApp, accept: str | None, ok: bool) -> None:
    reply = await call(app, "POST", initialize_message(), {"accept": accept})  # type: ignore[dict-item]
    if ok:
        assert reply.status == 200
    else:
        assert_error(reply, 406, "application/json", "text/event-stream")
        assert len(app.live_sessions) == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_a_body_that_is_not_json_is_415(app: McpHttpApp, content_type: str | None) -> None:
    reply = await call(app, "POST", initialize_message(), {"content-type": content_type})  # type: ignore[dict-item]
    assert_error(reply, 415, "application/json")


async def test_json_with_a_charset_is_fine(app: McpHttpApp) -> None:
    reply = await call(app, "POST", initialize_message(), {"content-type": "Application/JSON; charset=utf-8"})
    assert reply.status == 200


async def test_a_batch_is_400_with_invalid_request(app: McpHttpApp) -> None:
    reply = await call(app, "POST", [initialize_message()])
    error = assert_error(reply, 400, "batch", code=INVALID_REQUEST)
    assert error["code"] == -32600
    session = await open_session(app)
    reply = await session.post([request(1, "ping"), request(2, "ping")]).finish()
    assert_error(reply, 400, "batch", code=INVALID_REQUEST)


async def test_a_batch_on_a_later_revision_names_the_sessions_revision(app: McpHttpApp) -> None:
    session = await open_session(app, revision="2025-11-25")
    reply = await session.post([request(1, "ping")]).finish()
    error = assert_error(reply, 400, "batch", code=INVALID_REQUEST)
    assert "revision 2025-11-25 has none" in error["message"]  # (2025-03-26 sessions: test_batches.py)


async def test_a_body_that_is_not_json_is_a_parse_error(app: McpHttpApp) -> None:
    reply = await call(app, "POST", b"{not json")
    assert_error(reply, 400, "parse error", code=PARSE_ERROR)
    reply = await call(app, "POST", b"")
    assert_error(reply, 400, code=PARSE_ERROR)


async def test_a_message_of_the_wrong_shape_is_400(app: McpHttpApp) -> None:
    reply = await call(app, "POST", {"jsonrpc": "1.0", "id": 1, "method": "initialize"})
    assert_error(reply, 400, "jsonrpc", code=INVALID_REQUEST)


async def test_a_declared_oversized_body_is_413_before_reading_it(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(max_request_bytes=100)
    body = initialize_message()
    body["params"]["padding"] = "x" * 200
    pending = AsgiCall(app, "POST", body, {"content-length": "400"})
    reply = await pending.start().finish()
    assert_error(reply, 413, "100 bytes")
    assert pending.receive_calls == 0
    assert len(app.live_sessions) == 0


async def test_in_a_session_too_a_declared_oversized_body_is_refused_unread(
    make_app: Callable[..., McpHttpApp],
) -> None:
    app = make_app(max_request_bytes=300)
    session = await open_session(app)
    pending = AsgiCall(app, "POST", request(1, "ping"), {**session.headers, "content-length": "301"})
    reply = await pending.start().finish()
    assert_error(reply, 413, "300 bytes")
    assert pending.receive_calls == 0
    big = await session.post({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "x" * 300}}).finish()
    assert_error(big, 413)
    chunked = AsgiCall(
        app, "POST", headers=session.headers, chunks=[b'{"jsonrpc":"2.0",', b'"pad":"' + b"x" * 290 + b'"}']
    )
    assert_error(await chunked.start().finish(), 413)
    assert (await session.result("ping")) == {}


async def test_a_streamed_oversized_body_is_413(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(max_request_bytes=100)
    reply = await call(app, "POST", chunks=[b'{"jsonrpc":"2.0",', b'"padding":"' + b"x" * 80, b'"}'])
    assert_error(reply, 413, "payload too large")
    # The same body in small chunks under the limit is read whole.
    reply = await call(app, "POST", chunks=[b'{"jsonrpc":"2.0",', b'"id":1,"method":"ping"}'])
    assert_error(reply, 400, "Mcp-Session-Id")


async def test_a_garbage_content_length_is_400(app: McpHttpApp) -> None:
    reply = await call(app, "POST", initialize_message(), {"content-length": "lots"})
    assert_error(reply, 400, "content-length")


# --- protocol version ----------------------------------------------------------------------


async def test_protocol_version_header_rules(app: McpHttpApp) -> None:
    session = await open_session(app)
    absent = await session.post(request(1, "ping"), {"mcp-protocol-version": None}).finish()  # type: ignore[dict-item]
    assert absent.status == 200  # read as 2025-06-18 (a known deviation)
    current = await session.post(request(2, "ping"), {"mcp-protocol-version": "2025-06-18"}).finish()
    assert current.status == 200
    # The revision that introduced this transport: the conformance suite sends it.
    older = await session.post(request(3, "ping"), {"mcp-protocol-version": "2025-03-26"}).finish()
    assert older.status == 200
    newer = await session.post(request(5, "ping"), {"mcp-protocol-version": "2025-11-25"}).finish()
    assert newer.status == 200
    oldest = await session.post(request(6, "ping"), {"mcp-protocol-version": "2024-11-05"}).finish()
    assert oldest.status == 200
    # A version that is no handshake revision is the stateless revision's business: not served here.
    for bad in ("2024-10-07", "garbage"):
        reply = await session.post(request(4, "ping"), {"mcp-protocol-version": bad}).finish()
        error = assert_error(reply, 400, bad, "2026-07-28")
        assert error["code"] == -32022 and error["data"] == {"supported": ["2026-07-28"], "requested": bad}
    reply = await session.get({"mcp-protocol-version": "1999-01-01"}).finish()
    assert reply.status == 405 and reply.headers["allow"] == "POST"


async def test_initialize_is_not_refused_for_its_protocol_version_header(app: McpHttpApp) -> None:
    reply = await call(app, "POST", initialize_message(), {"mcp-protocol-version": "2025-11-25"})
    assert reply.status == 200
    assert reply.messages[0]["result"]["protocolVersion"] == "2025-06-18"


# --- nothing allocated for rejected requests -------------------------------------------------


async def test_rejected_requests_allocate_nothing(make_app: Callable[..., McpHttpApp], gate: Gate) -> None:
    factory = CountingFactory(gate)
    app = make_app(factory)
    rejections = [
        await call(app, "POST", request(1, "tools/list")),
        await call(app, "POST", notification("notifications/initialized")),
        await call(app, "POST", [initialize_message()]),
        await call(app, "POST", b"nope"),
        await call(app, "POST", initialize_message(), {"accept": "application/json"}),
        await call(app, "POST", initialize_message(), {"content-type": "text/plain"}),
        await call(app, "POST", initialize_message(), {"origin": "https://evil.example"}),
        await call(app, "GET", headers={"mcp-protocol-version": "2025-06-18"}),  # (without: a 2024-11-05 stream)
        await call(app, "DELETE"),
    ]
    assert all(400 <= reply.status < 500 for reply in rejections)
    assert factory.calls == 0
    assert len(app.live_sessions) == 0
    assert len(app.keepalive) == 0


async def test_a_failed_initialize_leaves_no_session(make_app: Callable[..., McpHttpApp], gate: Gate) -> None:
    factory = CountingFactory(gate)
    app = make_app(factory)
    bad = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    reply = await call(app, "POST", bad)
    assert reply.status == 200
    assert reply.messages[0]["error"]["code"] in (-32600, -32602)
    assert "mcp-session-id" not in reply.headers
    assert factory.calls == 1
    assert len(app.live_sessions) == 0


async def test_a_failing_session_factory_is_a_500_without_its_text(
    make_app: Callable[..., McpHttpApp], caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> Any:
        raise RuntimeError("database password is hunter2")

    app = make_app(broken)
    reply = await call(app, "POST", initialize_message())
    error = assert_error(reply, 500, "could not start a session")
    assert "hunter2" not in reply.body.decode() and "RuntimeError" not in reply.body.decode()
    assert "hunter2" in caplog.text  # the detail goes to the server log
    assert error["code"] == -32603
    assert len(app.live_sessions) == 0


async def test_an_async_session_factory_works(make_app: Callable[..., McpHttpApp], gate: Gate) -> None:
    async def factory() -> Any:
        await asyncio.sleep(0)
        return build_server(gate)

    app = make_app(factory)
    session = await open_session(app)
    assert (await session.result("ping")) == {}


async def test_a_failing_tool_reaches_the_client_without_its_text(app: McpHttpApp) -> None:
    session = await open_session(app)
    reply = await session.request("tools/call", {"name": "boom", "arguments": {}})
    assert reply.status == 200
    text = reply.body.decode()
    assert "secret detail" not in text and "/etc/passwd" not in text
    assert reply.messages[-1]["result"]["isError"] is True


# --- DELETE ------------------------------------------------------------------------------------


async def test_delete_ends_the_session_and_everything_it_holds(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    server = session.server
    stream = session.get()
    await stream.started()
    inflight = session.post(request(50, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    reply = await call(app, "DELETE", headers=session.headers)
    assert reply.status == 204 and reply.body == b""
    # The standalone stream ends, the in-flight call is cancelled and its stream closed with an error.
    await stream.finish()
    await inflight.finish()
    assert inflight.messages[-1]["error"]["code"] == -32000
    await asyncio.wait_for(gate.cancelled.wait(), 5)
    assert server.connection is not None and server.connection.closed
    assert len(app.live_sessions) == 0 and len(app.keepalive) == 0
    again = await session.request("ping")
    assert_error(again, 404, "session not found")
    again = await call(app, "DELETE", headers=session.headers)
    assert_error(again, 404)


async def test_delete_without_session_is_400(app: McpHttpApp) -> None:
    assert_error(await call(app, "DELETE"), 400, "Mcp-Session-Id")


async def test_closing_the_server_side_forgets_the_session(app: McpHttpApp) -> None:
    session = await open_session(app)
    await session.server.close()
    assert len(app.live_sessions) == 0
    assert_error(await session.request("ping"), 404)


# --- GET ------------------------------------------------------------------------------------------


async def test_get_rules(app: McpHttpApp) -> None:
    # A session-less GET naming no revision opens a 2024-11-05 stream (test_legacy_sse.py).
    assert_error(await call(app, "GET", headers={"mcp-protocol-version": "2025-06-18"}), 400, "Mcp-Session-Id")
    assert_error(await call(app, "GET", headers={"mcp-session-id": "nope"}), 404)
    session = await open_session(app)
    reply = await session.get({"accept": "application/json"}).finish()
    assert_error(reply, 406, "text/event-stream")
    reply = await session.get({"accept": "text/*;q=0, */*"}).finish()
    assert_error(reply, 406)
    stream = session.get()
    assert await stream.started() == 200
    assert stream.headers["content-type"] == "text/event-stream"
    stream.disconnect()
    await stream.finish()


async def test_an_unexpected_failure_is_a_json_rpc_500_without_details(
    gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    class BrokenStore(MemorySessionStore):
        async def get(self, session_id: str) -> Any:
            raise RuntimeError("redis at 10.0.0.7 refused")

    backend = MemoryBackend()
    backend.sessions = BrokenStore()
    app = McpHttpApp(lambda: build_server(gate), backend=backend)
    reply = await call(app, "POST", request(1, "ping"), {"mcp-session-id": "abc"})
    error = assert_error(reply, 500, "internal error")
    assert error["code"] == -32603
    assert "10.0.0.7" not in reply.body.decode()
    assert "10.0.0.7" in caplog.text
