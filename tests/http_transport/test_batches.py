"""JSON-RPC batches (transport/http/batch.py): served on 2025-03-26 sessions, refused with a
message naming the revision on every other, and bounded like single POSTs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fixtures.asgi import call, open_session
from fixtures.http_app import Gate
from fixtures.messages import initialize_message, notification, request
from mcp_sse_server.engine.jsonrpc import INVALID_REQUEST
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")

MARCH_2025 = "2025-03-26"


def error_of(reply: Any, status: int, *words: str) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body)
    body = reply.json
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == INVALID_REQUEST
    for word in words:
        assert word in body["error"]["message"], body["error"]["message"]
    return body


async def test_a_batch_of_requests_is_answered_with_an_array_in_its_order(app: McpHttpApp) -> None:
    session = await open_session(app, revision=MARCH_2025)
    batch = [
        request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
        notification("notifications/roots/list_changed"),
        request(2, "ping"),
        request(3, "tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}}),
        request(4, "no/such/method"),
    ]
    reply = await session.post(batch).finish()
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    answers = reply.json
    assert [answer["id"] for answer in answers] == [1, 2, 3, 4]
    assert answers[0]["result"]["content"][0]["text"] == "3"
    assert answers[1]["result"] == {}
    assert answers[2]["result"]["content"][0]["text"] == "42"
    assert answers[3]["error"]["code"] == -32601


async def test_a_batch_without_requests_is_accepted(app: McpHttpApp) -> None:
    session = await open_session(app, revision=MARCH_2025)
    reply = await session.post([notification("notifications/roots/list_changed")]).finish()
    assert reply.status == 202 and reply.body == b""


async def test_an_entry_that_is_no_message_gets_its_own_error(app: McpHttpApp) -> None:
    session = await open_session(app, revision=MARCH_2025)
    reply = await session.post([{"jsonrpc": "2.0"}, 7, request(9, "ping")]).finish()
    assert reply.status == 200
    invalid_one, invalid_two, ping = reply.json
    assert invalid_one["id"] is None and invalid_one["error"]["code"] == INVALID_REQUEST
    assert invalid_two["id"] is None and invalid_two["error"]["code"] == INVALID_REQUEST
    assert ping == {"jsonrpc": "2.0", "id": 9, "result": {}}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18", "2025-11-25"])
async def test_other_revisions_refuse_a_batch_naming_their_revision(app: McpHttpApp, revision: str) -> None:
    session = await open_session(app, revision=revision)
    reply = await session.post([request(1, "ping")]).finish()
    error_of(reply, 400, f"revision {revision} has none", MARCH_2025)


async def test_an_empty_batch_and_one_with_initialize_are_refused_whole(app: McpHttpApp) -> None:
    session = await open_session(app, revision=MARCH_2025)
    error_of(await session.post([]).finish(), 400, "an empty batch")
    mixed = [request(1, "ping"), initialize_message(protocol_version=MARCH_2025)]
    error_of(await session.post(mixed).finish(), 400, "initialize must not be part of a batch")
    # and a batch cannot open a session
    opened = await call(app, body=[initialize_message(protocol_version=MARCH_2025)])
    assert opened.status == 400 and "mcp-session-id" not in opened.headers


async def test_a_batch_of_10000_requests_is_refused_by_the_limit(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app()
    session = await open_session(app, revision=MARCH_2025)
    reply = await session.post([request(n, "ping") for n in range(10_000)]).finish()
    error_of(reply, 400, "a batch of 10000 messages (limit 64)")
    small = make_app(max_batch_messages=2)
    other = await open_session(small, revision=MARCH_2025)
    error_of(await other.post([request(n, "ping") for n in range(3)]).finish(), 400, "(limit 2)")
    assert (await other.post([request(n, "ping") for n in range(2)]).finish()).status == 200


async def test_requests_in_flight_still_count_one_by_one(make_app: Callable[..., McpHttpApp], gate: Gate) -> None:
    app = make_app(max_request_streams=1)
    session = await open_session(app, revision=MARCH_2025)
    waiting = session.post(request(1, "tools/call", {"name": "wait", "arguments": {}}))
    await gate.entered.wait()
    reply = await session.post([request(2, "ping"), request(1, "ping")]).finish()
    assert reply.status == 200
    busy, duplicate = reply.json
    assert busy["id"] == 2 and "Too many requests" in busy["error"]["message"]
    assert duplicate["id"] == 1 and "error" in duplicate
    gate.release.set()
    assert (await waiting.finish()).status == 200
