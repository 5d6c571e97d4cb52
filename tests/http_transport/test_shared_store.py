"""Two workers (two apps in one process) sharing one session store and one event log: a
session opened on one is served by the other, ends everywhere, and outlives a worker."""

from __future__ import annotations

from typing import Any

from fixtures.asgi import AsgiCall, Session, call
from fixtures.http_app import Clock, Gate, build_server
from fixtures.messages import initialize_message, notification
from mcp_sse_server.stores import MemoryBackend, MemoryEventLog, MemorySessionStore
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp


class SharedMemoryStore(MemorySessionStore):
    """The in-process store, declared shared: what a Redis store is to several processes."""

    shared = True


def workers(gate: Gate, clock: Clock) -> tuple[McpHttpApp, McpHttpApp]:
    store, log = SharedMemoryStore(), MemoryEventLog(256, 256, clock=clock)
    server = build_server(gate)

    def worker() -> McpHttpApp:
        backend = MemoryBackend(clock=clock)  # (one per worker, each over the shared store and log)
        backend.sessions, backend.events = store, log
        return McpHttpApp(server, settings=HttpSettings(path="/mcp"), backend=backend)

    return worker(), worker()


async def test_a_session_opened_on_one_worker_is_served_by_the_other(gate: Gate, clock: Clock) -> None:
    a, b = workers(gate, clock)
    opened = await call(a, body=initialize_message(protocol_version="2025-11-25"))
    session_id = opened.headers["mcp-session-id"]
    on_a, on_b = Session(a, session_id, "2025-11-25"), Session(b, session_id, "2025-11-25")
    assert (await on_a.post(notification("notifications/initialized")).finish()).status == 202
    result: Any = await on_b.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result["content"][0]["text"] == "5"
    assert session_id in b.live_sessions and b.live_sessions[session_id].session.revision == "2025-11-25"
    await on_b.result("logging/setLevel", {"level": "error"})
    assert a.live_sessions[session_id].record.log_level == "error"  # the shared record
    # DELETE on one worker ends the session on both.
    delete = await AsgiCall(b, "DELETE", b"", on_b.headers).start().finish()
    assert delete.status == 204
    after = await on_a.request("tools/list")
    assert after.status == 404
    await a.shutdown(0.1)
    await b.shutdown(0.1)


async def test_a_worker_shutting_down_leaves_its_sessions_to_the_others(gate: Gate, clock: Clock) -> None:
    a, b = workers(gate, clock)
    opened = await call(a, body=initialize_message())
    session_id = opened.headers["mcp-session-id"]
    await a.shutdown(0.1)
    served: Any = await Session(b, session_id).result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert served["content"][0]["text"] == "2"
    await b.shutdown(0.1)


async def test_a_2024_11_05_post_reaching_another_worker_is_404(gate: Gate, clock: Clock) -> None:
    a, b = workers(gate, clock)
    stream = AsgiCall(a, "GET", path="/sse").start()
    await stream.wait_until(lambda: b"\n\n" in stream.body)
    path, query = stream.body.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode().split("?")
    session_id = query.removeprefix("session_id=")

    async def post(app: McpHttpApp, body: Any) -> AsgiCall:
        posted = AsgiCall(app, "POST", body, path=path)
        posted.scope["query_string"] = query.encode()
        return await posted.start().finish()

    # The stream is held by one worker: another, though the store has the session, never serves it.
    assert (await post(b, initialize_message())).status == 404
    assert session_id not in b.live_sessions
    assert (await post(a, initialize_message())).status == 202
    await stream.wait_until(lambda: b'"serverInfo"' in stream.body)
    assert (await post(b, notification("notifications/initialized"))).status == 404
    stream.disconnect()
    await stream.finish()
    assert not a.live_sessions and await a.sessions.count() == 0
    await a.shutdown(0.1)
    await b.shutdown(0.1)
