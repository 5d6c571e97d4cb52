"""The standalone GET stream: backlog before it attaches, replay, superseding, keep-alive."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from fixtures.asgi import open_session, until
from fixtures.http_app import Gate
from fixtures.messages import notification, parse_sse, request
from mcp_sse_server.engine.jsonrpc import CONNECTION_CLOSED, McpError
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")


def data_events(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [event for event in events if "data" in event]


async def test_messages_before_the_get_are_flushed_in_order(app: McpHttpApp) -> None:
    session = await open_session(app)
    for n in range(3):
        await session.server.log("info", f"early {n}")
    stream = session.get()
    events = await stream.events(3)
    assert [e["data"]["params"]["data"] for e in data_events(events)] == ["early 0", "early 1", "early 2"]  # type: ignore[index]
    await session.server.log("info", "live")
    events = await stream.events(4)
    assert data_events(events)[-1]["data"]["params"]["data"] == "live"  # type: ignore[index]
    ids = [int(str(e["id"])) for e in data_events(events)]
    assert ids == sorted(ids) and len(set(ids)) == 4
    stream.disconnect()
    await stream.finish()


async def test_a_full_backlog_drops_the_oldest(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(backlog_limit=2)
    session = await open_session(app)
    for n in range(5):
        await session.server.log("info", n)
    stream = session.get()
    events = await stream.events(2)
    assert [e["data"]["params"]["data"] for e in data_events(events)] == [3, 4]  # type: ignore[index]
    stream.disconnect()
    await stream.finish()


async def test_a_dropped_server_request_fails_its_caller(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(backlog_limit=1)
    session = await open_session(app)
    ping = asyncio.create_task(session.server.ping(timeout=None))
    await asyncio.sleep(0)  # the ping is queued in the backlog
    await session.server.log("info", "pushes the ping out")
    with pytest.raises(McpError) as caught:
        await asyncio.wait_for(ping, 5)
    assert caught.value.code == CONNECTION_CLOSED
    assert "backlog" in caught.value.message


async def test_a_server_request_on_the_stream_is_answered_by_post(app: McpHttpApp) -> None:
    session = await open_session(app)
    stream = session.get()
    await stream.started()
    ping = asyncio.create_task(session.server.ping())
    [event] = data_events(await stream.events(1))
    outbound = event["data"]
    assert outbound["method"] == "ping"  # type: ignore[index]
    reply = await session.post({"jsonrpc": "2.0", "id": outbound["id"], "result": {}}).finish()  # type: ignore[index]
    assert reply.status == 202
    await asyncio.wait_for(ping, 5)
    stream.disconnect()
    await stream.finish()


async def test_replay_after_last_event_id(app: McpHttpApp) -> None:
    session = await open_session(app)
    first = session.get()
    await first.started()
    for n in range(4):
        await session.server.log("info", n)
    events = data_events(await first.events(4))
    first.disconnect()  # the connection drops; the server cannot tell
    await first.finish()
    await session.server.log("info", "while away")
    second = session.get({"last-event-id": str(events[1]["id"])})
    replayed = data_events(await second.events(3))
    assert [e["data"]["params"]["data"] for e in replayed] == [2, 3, "while away"]  # type: ignore[index]
    second.disconnect()
    await second.finish()


async def test_replay_keeps_only_the_last_events(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(replay_buffer_size=2)
    session = await open_session(app)
    stream = session.get()
    await stream.started()
    for n in range(5):
        await session.server.log("info", n)
    await stream.events(5)
    stream.disconnect()
    await stream.finish()
    again = session.get({"last-event-id": "0"})
    await again.started()
    await session.server.log("info", "marker")
    replayed = data_events(await again.events(3))
    assert [e["data"]["params"]["data"] for e in replayed] == [3, 4, "marker"]  # type: ignore[index]
    again.disconnect()
    await again.finish()


async def test_replay_never_shows_another_sessions_events(app: McpHttpApp) -> None:
    alice = await open_session(app)
    bob = await open_session(app)
    stream = alice.get()
    await stream.started()
    await alice.server.log("info", "alice secret")
    [event] = data_events(await stream.events(1))
    stream.disconnect()
    await stream.finish()
    intruder = bob.get({"last-event-id": "0"})
    await intruder.started()
    await bob.server.log("info", "bob's own")
    events = data_events(await intruder.events(1))
    assert [e["data"]["params"]["data"] for e in events] == ["bob's own"]  # type: ignore[index]
    assert b"alice" not in intruder.body
    intruder.disconnect()
    await intruder.finish()
    # An event id of alice's is just an unknown id to bob.
    assert event["id"] is not None


async def test_replies_on_a_post_stream_are_not_replayable(app: McpHttpApp) -> None:
    session = await open_session(app)
    await session.result("logging/setLevel", {"level": "debug"})
    reply = await session.request("tools/call", {"name": "chatty", "arguments": {}, "_meta": {"progressToken": 1}})
    assert all(event["id"] is None for event in parse_sse(reply.body))
    stream = session.get({"last-event-id": "0"})
    await stream.started()
    await session.server.log("info", "standalone")
    events = data_events(await stream.events(1))
    assert [e["data"]["params"]["data"] for e in events] == ["standalone"]  # type: ignore[index]
    stream.disconnect()
    await stream.finish()


async def test_a_new_get_supersedes_the_previous_stream(app: McpHttpApp) -> None:
    session = await open_session(app)
    old = session.get()
    await old.started()
    new = session.get()
    await new.started()
    await old.finish()  # the server ended the old stream
    assert old.complete
    await session.server.log("info", "to the new stream")
    events = data_events(await new.events(1))
    assert events[0]["data"]["params"]["data"] == "to the new stream"  # type: ignore[index]
    assert b"to the new stream" not in old.body
    new.disconnect()
    await new.finish()


async def test_unrelated_messages_after_the_stream_drops_wait_for_the_next(app: McpHttpApp) -> None:
    session = await open_session(app)
    stream = session.get()
    await stream.started()
    stream.disconnect()
    await stream.finish()
    await session.server.log("info", "queued")
    again = session.get()
    events = data_events(await again.events(1))
    assert events[0]["data"]["params"]["data"] == "queued"  # type: ignore[index]
    again.disconnect()
    await again.finish()


async def test_idle_streams_get_keepalive_comments(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    stream = session.get()
    await stream.started()
    inflight = session.post(request(9, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    app.keepalive.tick()  # new streams count as active once
    app.keepalive.tick()
    await stream.wait_until(lambda: b": keepalive" in stream.body)
    # The long call's stream gets its headers and a comment too, so proxies keep it.
    await inflight.wait_until(lambda: inflight.status == 200 and b": keepalive" in inflight.body)
    gate.release.set()
    await inflight.finish()
    assert inflight.messages[-1]["result"]["content"][0]["text"] == "released"
    stream.disconnect()
    await stream.finish()


async def test_the_keepalive_ticker_runs_on_its_own(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(keepalive_interval=0.01)
    session = await open_session(app)
    stream = session.get()
    await stream.wait_until(lambda: b": keepalive" in stream.body)
    stream.disconnect()
    await stream.finish()


async def test_a_cancelled_request_gets_no_response_and_its_stream_ends(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    inflight = session.post(request(11, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    reply = await session.post(notification("notifications/cancelled", {"requestId": 11, "reason": "user"})).finish()
    assert reply.status == 202
    await inflight.finish()
    assert [m.get("method") for m in inflight.messages] == ["notifications/message"]  # and no response
    await asyncio.wait_for(gate.cancelled.wait(), 5)
    assert app.inflight == 0


async def test_a_client_disconnect_does_not_cancel_the_request(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    inflight = session.post(request(12, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    inflight.disconnect()
    await asyncio.sleep(0.01)
    assert not gate.cancelled.is_set()
    gate.release.set()  # the handler finishes; its reply has no client and is dropped
    await inflight.finish()
    assert b"released" not in inflight.body
    assert not gate.cancelled.is_set()
    assert app.inflight == 0
    assert (await session.result("ping")) == {}


async def test_a_server_request_to_a_departed_client_fails_at_once(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app, sampling={})
    call = session.post(request(20, "tools/call", {"name": "sample", "arguments": {"prompt": "hi"}}))
    [event] = data_events(await call.events(1))
    assert event["data"]["method"] == "sampling/createMessage"  # type: ignore[index]
    call.disconnect()
    # No hang until the five-minute timeout: the handler hears of it now.
    await asyncio.wait_for(gate.failed.wait(), 5)
    await call.finish()
    # A later unrelated message still reaches the client, on the standalone stream.
    stream = session.get()
    await session.server.log("info", "still here")
    assert data_events(await stream.events(1))[0]["data"]["params"]["data"] == "still here"  # type: ignore[index]
    stream.disconnect()
    await stream.finish()


async def test_max_request_streams_caps_in_flight_requests(make_app: Callable[..., McpHttpApp], gate: Gate) -> None:
    app = make_app(max_request_streams=2)
    session = await open_session(app)
    held = [session.post(request(n, "tools/call", {"name": "wait", "arguments": {}})) for n in (1, 2)]
    await until(lambda: app.inflight == 2)
    refused = await session.request("ping")
    assert refused.status == 429
    assert refused.json["error"]["code"] == -32000
    assert "2 requests in flight" in refused.json["error"]["message"]
    assert refused.json["id"] is not None
    # Notifications and responses are not requests: still accepted.
    assert (await session.post(notification("notifications/initialized")).finish()).status == 202
    gate.release.set()
    for call in held:
        await call.finish()
    assert (await session.result("ping")) == {}


async def test_a_duplicate_in_flight_id_is_refused(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    first = session.post(request(5, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    duplicate = await session.post(request(5, "ping")).finish()
    assert duplicate.status == 409
    assert duplicate.json["id"] == 5  # (the refused request's id, known: not null)
    assert "already in flight" in duplicate.json["error"]["message"]
    gate.release.set()
    await first.finish()
    assert first.messages[-1]["result"]["content"][0]["text"] == "released"
