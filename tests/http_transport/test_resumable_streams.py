"""Resumable streams (2025-11-25 sessions, SEP-1699): priming events, ids on every event,
resumption of a request's stream with GET + Last-Event-ID, and 2025-06-18 sessions unchanged."""

from __future__ import annotations

import asyncio

import pytest

from fixtures.asgi import Session, open_session
from fixtures.http_app import Clock, Gate
from fixtures.messages import notification, parse_sse, request
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")

NEW = "2025-11-25"


async def resumable(app: McpHttpApp) -> Session:
    return await open_session(app, revision=NEW)


async def test_a_quick_reply_is_one_response_without_priming(app: McpHttpApp) -> None:
    session = await resumable(app)
    reply = await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert reply.body.startswith(b"data: {") and reply.headers["content-length"] == str(len(reply.body))


async def test_a_streamed_request_starts_with_priming_and_every_event_has_an_id(app: McpHttpApp) -> None:
    session = await resumable(app)
    reply = await session.request("tools/call", {"name": "chatty", "arguments": {}})
    events = parse_sse(reply.body)
    first = events[0]["id"]
    # The session's first request stream (on a shared log, its name carries this copy's tag).
    assert first in ("0/r1", "0/r1." + first.partition(".")[2]) and events[0]["retry"] == 1000 and events[0]["priming"]
    stream = first.partition("/")[2]
    ids = [event["id"] for event in events[1:]]
    assert all(i is not None and i.endswith(f"/{stream}") for i in ids) and len(set(ids)) == len(ids)
    assert [e["data"].get("method") for e in events[1:]] == ["notifications/message", None]


async def test_a_2025_06_18_session_sees_no_ids_and_no_priming(app: McpHttpApp) -> None:
    session = await open_session(app)
    reply = await session.request("tools/call", {"name": "chatty", "arguments": {}})
    assert all(event["id"] is None and "priming" not in event for event in parse_sse(reply.body))
    stream = session.get()
    assert await stream.started() == 200
    await session.server.log("info", "standalone")
    events = await stream.events(1)
    assert events[0]["id"] == "1" and events[0]["data"]["params"]["data"] == "standalone"
    stream.disconnect()
    await stream.finish()


async def test_the_standalone_stream_starts_with_priming(app: McpHttpApp) -> None:
    session = await resumable(app)
    stream = session.get()
    await stream.wait_until(lambda: b"data: \n" in stream.body)
    await session.server.log("info", "hello")
    events = await stream.events(1)
    assert events[0].get("priming") and events[0]["retry"] == 1000
    assert events[1]["data"]["params"]["data"] == "hello" and int(events[1]["id"]) > int(events[0]["id"])
    stream.disconnect()
    await stream.finish()


async def test_a_standalone_stream_with_a_backlog_starts_with_it(app: McpHttpApp) -> None:
    session = await resumable(app)
    await session.server.log("info", "early")
    stream = session.get()
    events = await stream.events(1)
    assert events[0] == {"id": None, "retry": 1000}  # the reconnection delay, no priming: the event has an id
    assert events[1]["id"] == "1" and events[1]["data"]["params"]["data"] == "early"
    stream.disconnect()
    await stream.finish()


async def _cut_after_first_event(session: Session, request_id: int, tool: str) -> list[dict[str, object]]:
    """The events a client saw before its connection dropped (the request goes on in the server)."""
    call = session.post(request(request_id, "tools/call", {"name": tool, "arguments": {}}))
    events = await call.events(1)
    call.disconnect()
    await asyncio.sleep(0.01)  # the server notices
    return events


async def test_a_cut_stream_resumes_with_the_rest_and_the_response(app: McpHttpApp, gate: Gate) -> None:
    session = await resumable(app)
    events = await _cut_after_first_event(session, 7, "wait")
    assert events[0].get("priming") and events[1]["data"]["params"]["data"] == "waiting"
    last = events[1]["id"]
    assert isinstance(last, str)
    resumed = session.get({"last-event-id": last})
    assert await resumed.started() == 200
    gate.release.set()
    await resumed.finish()  # the stream ends after the response
    assert resumed.messages == [
        {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "released"}]}}
    ]
    assert not gate.cancelled.is_set()  # a disconnect is not a cancellation


async def test_a_response_written_while_away_is_replayed(app: McpHttpApp, gate: Gate) -> None:
    session = await resumable(app)
    events = await _cut_after_first_event(session, 8, "wait")
    gate.release.set()
    await asyncio.sleep(0.01)  # the response goes to the log only
    resumed = await session.get({"last-event-id": str(events[0]["id"])}).finish()
    assert [m.get("method", "response") for m in resumed.messages] == ["notifications/message", "response"]
    assert resumed.messages[-1]["result"]["content"][0]["text"] == "released"


async def test_the_server_may_close_a_stream_and_the_client_resumes(app: McpHttpApp, gate: Gate) -> None:
    session = await resumable(app)
    call = session.post(request(9, "tools/call", {"name": "hang_up", "arguments": {}}))
    await call.wait_until(lambda: call.complete)  # the response ends; the request goes on
    events = parse_sse(call.body)
    assert events[0].get("priming") and any("retry" in event for event in events)
    assert [e["data"]["params"]["data"] for e in events if "data" in e] == ["before the close"]
    last = [e["id"] for e in events if e["id"] is not None][-1]
    resumed = session.get({"last-event-id": last})
    await resumed.started()
    gate.release.set()
    await resumed.finish()
    assert [m.get("params", {}).get("data") for m in resumed.messages[:-1]] == ["after the close"]
    assert resumed.messages[-1]["result"]["content"][0]["text"] == "closed=True"


async def test_closing_the_stream_does_nothing_on_a_2025_06_18_session(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    gate.release.set()
    reply = await session.request("tools/call", {"name": "hang_up", "arguments": {}})
    assert reply.messages[-1]["result"]["content"][0]["text"] == "closed=False"


async def test_a_resumption_never_shows_another_streams_or_sessions_events(app: McpHttpApp, gate: Gate) -> None:
    alice, bob = await resumable(app), await resumable(app)
    first = await _cut_after_first_event(alice, 10, "wait")
    other = await alice.request("tools/call", {"name": "chatty", "arguments": {}})
    assert parse_sse(other.body)[0]["id"] != first[0]["id"]
    intruder = await bob.get({"last-event-id": str(first[0]["id"])}).finish()
    assert intruder.status == 400  # bob has no such stream
    gate.release.set()
    await asyncio.sleep(0.01)
    resumed = await alice.get({"last-event-id": str(first[0]["id"])}).finish()
    assert all(m.get("method") != "notifications/progress" for m in resumed.messages)  # chatty's events stay out
    assert resumed.messages[-1]["id"] == 10


async def test_a_resumption_does_not_supersede_the_standalone_stream(app: McpHttpApp, gate: Gate) -> None:
    session = await resumable(app)
    standalone = session.get()
    await standalone.started()
    events = await _cut_after_first_event(session, 11, "wait")
    resumed = session.get({"last-event-id": str(events[1]["id"])})
    await resumed.started()
    await session.server.log("info", "still the standalone stream")
    gate.release.set()
    await resumed.finish()
    got = await standalone.events(1)
    assert got[-1]["data"]["params"]["data"] == "still the standalone stream"
    standalone.disconnect()
    await standalone.finish()


@pytest.mark.deployments(
    "local",
    reason="the grace runs on the app's clock in process, on Redis's own (PEXPIRE) with Redis: "
    "tests/stores/test_redis.py checks the Redis grace in real time",
)
async def test_a_finished_streams_log_is_dropped_after_the_grace_period(
    make_app: object, gate: Gate, clock: Clock
) -> None:
    app = make_app(stream_log_grace=5.0)  # type: ignore[operator]
    session = await resumable(app)
    events = await _cut_after_first_event(session, 12, "wait")
    gate.release.set()
    await asyncio.sleep(0.01)
    clock.advance(6.0)
    await session.request("tools/call", {"name": "chatty", "arguments": {}})  # another stream ends: prunes
    late = await session.get({"last-event-id": str(events[0]["id"])}).finish()
    assert late.status == 400 and "no stream" in late.json["error"]["message"]


async def test_cancelling_a_detached_request_ends_its_stream(app: McpHttpApp, gate: Gate) -> None:
    session = await resumable(app)
    await _cut_after_first_event(session, 13, "wait")
    await session.post(notification("notifications/cancelled", {"requestId": 13})).finish()
    await asyncio.wait_for(gate.cancelled.wait(), 5)
    assert app.live_sessions[session.id].transport.inflight == 0


async def test_a_stream_open_too_long_is_closed_for_the_client_to_resume(make_app: object, gate: Gate) -> None:
    app = make_app(stream_reconnect_after=0.05)  # type: ignore[operator]
    session = await resumable(app)
    call = session.post(request(14, "tools/call", {"name": "wait", "arguments": {}}))
    await call.wait_until(lambda: call.complete)  # closed by the server while the request goes on
    events = parse_sse(call.body)
    assert events[0].get("priming") and any("retry" in event and "priming" not in event for event in events)
    assert not gate.cancelled.is_set()
    resumed = session.get({"last-event-id": str(events[0]["id"])})
    await resumed.wait_until(lambda: b"waiting" in resumed.body)  # the log event replayed
    gate.release.set()
    await resumed.wait_until(lambda: b"released" in resumed.body)
    resumed.disconnect()
    await resumed.finish()
