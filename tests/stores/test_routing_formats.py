"""The formats ``RedisCoordinator`` writes (``stores/redis_routing.py``): each one round-trips,
and what another version or a stray write left in Redis decodes to nothing, without raising.

The routing of answers and cancellations between two workers is in test_routed_answers.py;
here, only that a worker's inbox reader goes on routing past entries it cannot read, and
that the app takes the coordinator of the ``RedisBackend`` it is given.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from fixtures.asgi import Session, call
from fixtures.http_app import build_server
from fixtures.messages import initialize_message, notification, request
from fixtures.redis_server import NEW, Workers, mesh
from mcp_sse_server.engine.observe import HttpOrigin
from mcp_sse_server.stores.redis_routing import (
    RedisCoordinator,
    ReleaseHolder,
    RoutedAnswer,
    RoutedCancel,
    RoutedMessage,
    RoutedPost,
    StandaloneHolder,
    WakeHolder,
    decode_routed,
    encode_routed,
)
from mcp_sse_server.stores.redis_setup import RedisBackend
from mcp_sse_server.transport.http import McpHttpApp

WAIT = 5.0

# --- StandaloneHolder: "<worker id>:<n>", the standalone lease's value -----------------------------


@pytest.mark.parametrize(
    "holder",
    [StandaloneHolder("host-1-ab", 3), StandaloneHolder("w", 0), StandaloneHolder("ip6:host:9", 12)],
)
def test_a_standalone_holder_round_trips(holder: StandaloneHolder) -> None:
    assert StandaloneHolder.decode(holder.encode()) == holder


@pytest.mark.parametrize(
    ("value", "worker_id"),
    [("", ""), ("garbage", ""), (":", ""), ("w:", "w"), ("w:x", "w"), ("w:-1", "w"), ("w:1.0", "w")],
)
def test_an_unreadable_holder_decodes_without_raising(value: str, worker_id: str) -> None:
    # (its contract has no None: a holder it cannot read is a worker it cannot name, number 0)
    assert StandaloneHolder.decode(value) == StandaloneHolder(worker_id, 0)


def test_a_holder_numbered_with_a_non_decimal_digit_decodes_without_raising() -> None:
    assert StandaloneHolder.decode("w:²") == StandaloneHolder("w", 0)


# --- the routed messages: what one worker's inbox carries from another -----------------------------


ROUTED: list[RoutedMessage] = [
    RoutedAnswer("s1", '{"jsonrpc":"2.0","id":"A.1","result":{}}'),
    RoutedAnswer("s1", ""),
    RoutedCancel("s1", {"requestId": 3, "reason": "user"}),
    RoutedCancel("s1", {"requestId": "x y"}),
    RoutedCancel("s1", {}),
    WakeHolder("s1"),
    ReleaseHolder("s1", "host-1-ab:3"),
    RoutedPost("s1", '{"jsonrpc":"2.0","id":1,"method":"ping"}'),
    RoutedPost(
        "s1", "{}", HttpOrigin("127.0.0.1", 50123, "1.1", {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})
    ),
]


@pytest.mark.parametrize("message", ROUTED, ids=lambda message: type(message).__name__)
def test_a_routed_message_round_trips_through_the_inbox_encoding(message: RoutedMessage) -> None:
    encoded = encode_routed(message)
    assert encoded["session"] == "s1" and isinstance(encoded["type"], str)
    assert decode_routed(encoded) == message
    assert decode_routed(orjson.loads(orjson.dumps(encoded))) == message  # as WorkerInbox carries it


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"session": "s1"},
        {"type": "wake"},  # no session
        {"type": "wake", "session": 7},
        {"type": "wake", "session": None},
        {"type": "answer", "session": "s1"},
        {"type": "answer", "session": "s1", "message": {"id": 1}},  # not the message's text
        {"type": "cancel", "session": "s1"},
        {"type": "cancel", "session": "s1", "params": [3]},
        {"type": "cancel", "session": "s1", "params": None},
        {"type": "release", "session": "s1"},
        {"type": "release", "session": "s1", "holder": 3},
        {"type": "post", "session": "s1"},
        {"type": "post", "session": "s1", "message": {"id": 1}},  # not the message's text
        {"type": "later-version", "session": "s1"},
        {"type": ["wake"], "session": "s1"},
        {"type": None, "session": "s1", "message": "{}"},
    ],
)
def test_an_unreadable_routed_message_decodes_to_none(data: dict[str, Any]) -> None:
    assert decode_routed(data) is None


# --- a worker's inbox reader goes on past what it cannot read --------------------------------------


async def test_entries_a_worker_cannot_read_do_not_stop_its_routing(
    workers: Workers, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = workers("A"), workers("B")
    opened = await call(a, body=initialize_message(protocol_version=NEW, sampling={}))
    session_id = opened.headers["mcp-session-id"]
    on_a, on_b = Session(a, session_id, NEW), Session(b, session_id, NEW)
    assert (await on_a.post(notification("notifications/initialized")).finish()).status == 202
    running = on_a.post(request(5, "tools/call", {"name": "sample", "arguments": {"prompt": "still there?"}}))
    await running.wait_until(lambda: any(m.get("method") == "sampling/createMessage" for m in running.messages))
    asked = next(m for m in running.messages if m.get("method") == "sampling/createMessage")
    # Ahead of the real answer, A's inbox gets what it cannot use: raw entries that are no
    # message, messages of no known format, and readable ones for no session A serves or
    # carrying no JSON-RPC message.
    inbox, redis = mesh(a).inbox, mesh(a).registry.redis
    await redis.xadd(inbox.key("A"), {"x": b"no d field"})
    await redis.xadd(inbox.key("A"), {"d": b"{not json"})
    await redis.xadd(inbox.key("A"), {"d": b"[1, 2]"})
    sender = mesh(b)
    for garbage in (
        {"type": "later-version", "session": session_id},
        encode_routed(RoutedAnswer("no-such-session", "{}")),
        encode_routed(WakeHolder("no-such-session")),
        encode_routed(RoutedAnswer(session_id, "{not json-rpc")),
        encode_routed(ReleaseHolder(session_id, "A:999")),  # a holder A does not have
        encode_routed(RoutedPost(session_id, '{"jsonrpc":"2.0","id":9,"method":"ping"}')),  # no 2024-11-05 stream
        encode_routed(RoutedPost("no-such-session", "{}")),
    ):
        await sender.send("A", garbage)
    answer = {
        "jsonrpc": "2.0",
        "id": asked["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"},
    }
    assert (await on_b.post(answer).finish()).status == 202  # routed to A, behind the garbage
    await asyncio.wait_for(running.finish(), WAIT)
    assert running.messages[-1]["result"]["content"][0]["text"] == "model said: yes"
    assert "could not handle a routed 'answer'" in caplog.text  # the unparseable one, read before
    assert (await on_a.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))["content"][0][
        "text"
    ] == "3"


# --- how the app gets its coordinator ---------------------------------------------------------------


async def test_the_app_takes_the_coordinator_of_its_redis_backend() -> None:
    backend = RedisBackend.from_url("redis://127.0.0.1:1/0")  # (no connection is made)
    try:
        app = McpHttpApp(build_server(), backend=backend)
        assert isinstance(app.coordinator, RedisCoordinator) and app.coordinator.mesh is backend.mesh
    finally:
        await backend.redis.aclose()
