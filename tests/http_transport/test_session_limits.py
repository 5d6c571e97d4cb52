"""Session expiry, lifetime and caps, with an injected clock (no sleeping)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from fixtures.asgi import call, open_session, until
from fixtures.http_app import Clock, Gate
from fixtures.messages import initialize_message, request
from mcp_sse_server.transport.http import McpHttpApp

pytestmark = pytest.mark.deployments("local", "redis")


async def test_idle_sessions_expire_and_only_inbound_traffic_counts(
    make_app: Callable[..., McpHttpApp], clock: Clock
) -> None:
    app = make_app(session_idle_timeout=60, session_max_lifetime=3600)
    session = await open_session(app)
    stream = session.get()  # an open stream is not liveness
    await stream.started()
    clock.advance(59)
    await session.server.log("info", "outbound traffic does not count either")
    assert (await session.result("ping")) == {}  # inbound: the idle clock restarts
    clock.advance(59)
    assert (await session.result("ping")) == {}
    # 60 s, plus a shared store's grace for the last_seen it writes lazily (1 s here).
    assert app.directory.idle_timeout == (61 if app.directory.shared else 60)
    clock.advance(app.directory.idle_timeout)
    reply = await session.request("ping")
    assert reply.status == 404
    await stream.finish()  # the expired session's stream is ended
    assert len(app.live_sessions) == 0


async def test_sessions_end_at_their_lifetime_even_when_busy(make_app: Callable[..., McpHttpApp], clock: Clock) -> None:
    app = make_app(session_idle_timeout=60, session_max_lifetime=100)
    session = await open_session(app)
    for _ in range(3):
        clock.advance(30)
        assert (await session.result("ping")) == {}
    clock.advance(10)
    assert (await session.request("ping")).status == 404


async def test_reap_expired_ends_silent_sessions(make_app: Callable[..., McpHttpApp], clock: Clock) -> None:
    app = make_app(session_idle_timeout=60)
    quiet = await open_session(app)
    clock.advance(50)
    busy = await open_session(app)
    server = quiet.server
    clock.advance(20)
    assert await app.reap_expired() == 1
    assert app.live_sessions.get(quiet.id) is None and app.live_sessions.get(busy.id) is not None
    assert server.connection is not None and server.connection.closed


async def test_the_reaper_runs_by_itself(make_app: Callable[..., McpHttpApp], clock: Clock) -> None:
    app = make_app(session_idle_timeout=60, reap_interval=0.01)
    await open_session(app)
    clock.advance(61)
    await until(lambda: len(app.live_sessions) == 0)


async def test_max_sessions_refuses_with_503_then_reclaims_expired_ones(
    make_app: Callable[..., McpHttpApp], clock: Clock
) -> None:
    app = make_app(max_sessions=2, session_idle_timeout=60)
    first = await open_session(app)
    await open_session(app)
    refused = await call(app, "POST", initialize_message())
    assert refused.status == 503
    assert "maximum of 2 sessions" in refused.json["error"]["message"]
    assert refused.headers["retry-after"]
    assert len(app.live_sessions) == 2
    clock.advance(30)
    assert (await first.result("ping")) == {}  # first stays active
    clock.advance(40)  # the second is now idle for 70 s
    third = await open_session(app)
    assert len(app.live_sessions) == 2
    assert app.live_sessions.get(first.id) is not None and app.live_sessions.get(third.id) is not None


async def test_shutdown_lets_in_flight_requests_finish(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    inflight = session.post(request(1, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    stream = session.get()
    await stream.started()
    closing = asyncio.create_task(app.shutdown(deadline=5))
    await asyncio.sleep(0.01)
    assert not closing.done()
    # New sessions and requests are refused while closing; replies to the server are not.
    assert (await call(app, "POST", initialize_message())).status == 503
    assert (await session.request("ping")).status == 503
    gate.release.set()
    await inflight.finish()
    assert inflight.messages[-1]["result"]["content"][0]["text"] == "released"
    await asyncio.wait_for(closing, 5)
    await stream.finish()
    assert len(app.live_sessions) == 0


async def test_shutdown_ends_what_misses_the_deadline(app: McpHttpApp, gate: Gate) -> None:
    session = await open_session(app)
    inflight = session.post(request(1, "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(gate.entered.wait(), 5)
    await app.shutdown(deadline=0.01)
    await inflight.finish()
    assert inflight.messages[-1]["error"]["code"] == -32000
    await asyncio.wait_for(gate.cancelled.wait(), 5)
