"""RequestContext: progress, cancellation and logging as a handler sees them."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from fixtures.sessions import Connect, RawClient, RecordingTransport, text_of
from mcp_sse_server import CallToolResult, McpServer, RequestContext, Tool
from mcp_sse_server.engine.jsonrpc import (
    INVALID_PARAMS,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
)


def _call(name: str, token: str | int | None = None, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return params


# --- progress --------------------------------------------------------------------


async def test_progress_without_a_token_is_a_no_op(server: McpServer, connect: Connect) -> None:
    async def work(arguments: dict[str, Any], context: RequestContext) -> str:
        assert context.progress_token is None
        await context.report_progress(1, total=2, message="half")
        await context.report_progress(2, total=2)
        return "done"

    server.add_tool(Tool("work", {"type": "object"}, work))
    client = await connect(server)
    assert text_of(await client.result("tools/call", _call("work"))) == "done"
    await client.sync()
    assert client.notifications("notifications/progress") == []


@pytest.mark.parametrize("token", ["tok-1", 7])
async def test_progress_with_a_token_is_sent_in_order(server: McpServer, connect: Connect, token: str | int) -> None:
    async def work(arguments: dict[str, Any], context: RequestContext) -> str:
        await context.report_progress(1, total=3, message="one")
        await context.report_progress(2.5, total=3)
        await context.report_progress(3)
        return "done"

    server.add_tool(Tool("work", {"type": "object"}, work))
    client = await connect(server)
    await client.result("tools/call", _call("work", token))
    progress = client.notifications("notifications/progress")
    assert [n.params for n in progress] == [
        {"progressToken": token, "progress": 1, "total": 3, "message": "one"},
        {"progressToken": token, "progress": 2.5, "total": 3},
        {"progressToken": token, "progress": 3},
    ]


async def test_progress_must_increase(server: McpServer, connect: Connect) -> None:
    problems: list[str] = []

    async def work(arguments: dict[str, Any], context: RequestContext) -> str:
        await context.report_progress(5)
        for value in (5, 4):
            try:
                await context.report_progress(value)
            except ValueError as error:
                problems.append(str(error))
        await context.report_progress(6)
        return "done"

    server.add_tool(Tool("work", {"type": "object"}, work))
    client = await connect(server)
    await client.result("tools/call", _call("work", "t"))
    assert len(problems) == 2
    assert [n.params["progress"] for n in client.notifications("notifications/progress") if n.params] == [5, 6]


async def test_no_progress_after_the_request_completed(server: McpServer, connect: Connect) -> None:
    contexts: list[RequestContext] = []

    async def work(arguments: dict[str, Any], context: RequestContext) -> str:
        contexts.append(context)
        await context.report_progress(1)
        return "done"

    server.add_tool(Tool("work", {"type": "object"}, work))
    client = await connect(server)
    await client.result("tools/call", _call("work", "t"))
    assert len(client.notifications("notifications/progress")) == 1
    await contexts[0].report_progress(2)  # too late: silently dropped
    await client.sync()
    assert len(client.notifications("notifications/progress")) == 1


async def test_progress_belongs_to_its_request(server: McpServer, connect: Connect) -> None:
    async def work(arguments: dict[str, Any], context: RequestContext) -> str:
        await context.report_progress(1)
        await context.log("info", "working")
        return "done"

    server.add_tool(Tool("work", {"type": "object"}, work))
    client = await connect(server, transport=RecordingTransport)
    await client.call("tools/call", _call("work", "t"), id="call-1")
    assert server.sessions[0].connection is not None
    sent = server.sessions[0].connection.transport
    assert isinstance(sent, RecordingTransport)
    assert sent.related(lambda m: isinstance(m, JsonRpcNotification)) == ["call-1", "call-1"]
    assert sent.related(lambda m: isinstance(m, JsonRpcResponse) and m.id == "call-1") == ["call-1"]


# --- cancellation ----------------------------------------------------------------


class Blocker:
    """An async tool that runs until it is cancelled, recording what it observed."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.callbacks: list[bool] = []
        self.finally_cancelled: list[bool] = []
        self.context: RequestContext | None = None

    async def __call__(self, arguments: dict[str, Any], context: RequestContext) -> str:
        self.context = context
        context.on_cancelled(lambda: self.callbacks.append(context.is_cancelled))
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.finally_cancelled.append(context.is_cancelled)
        return "never"


async def _assert_no_response(client: RawClient, request_id: Any) -> None:
    assert client.server.sessions[0].connection is not None
    await client.sync()
    assert client.server.sessions[0].connection.inflight_count == 0
    assert not [m for m in client.received if getattr(m, "id", None) == request_id]


async def test_cancelling_a_running_handler(server: McpServer, connect: Connect) -> None:
    blocker = Blocker()
    server.add_tool(Tool("block", {"type": "object"}, blocker))
    client = await connect(server)
    call_id = await client.send_request("tools/call", _call("block"))
    await blocker.started.wait()
    assert blocker.context is not None and not blocker.context.is_cancelled
    await client.notify("notifications/cancelled", {"requestId": call_id, "reason": "user pressed stop"})
    await _assert_no_response(client, call_id)
    assert blocker.callbacks == [True]
    assert blocker.finally_cancelled == [True]
    assert blocker.context.is_cancelled
    assert blocker.context.cancel_reason == "user pressed stop"


async def test_on_cancelled_after_cancellation_runs_at_once() -> None:
    server = McpServer("s", "1")
    calls: list[str] = []

    class _Conn:
        owner = server
        logger = None

    context = RequestContext(_Conn(), JsonRpcRequest(1, "tools/call"))  # type: ignore[arg-type]
    context.cancel("stop")
    context.on_cancelled(lambda: calls.append("late"))
    assert calls == ["late"]
    with pytest.raises(asyncio.CancelledError):
        context.throw_if_cancelled()


async def test_throw_if_cancelled_stops_a_cooperative_handler(server: McpServer, connect: Connect) -> None:
    reached: list[str] = []
    cancelled = asyncio.Event()

    async def cooperative(arguments: dict[str, Any], context: RequestContext) -> str:
        context.throw_if_cancelled()  # not cancelled yet: no-op
        context.on_cancelled(cancelled.set)
        # Shield the wait so only throw_if_cancelled can stop this handler.
        await asyncio.shield(cancelled.wait())
        reached.append("after wait")
        context.throw_if_cancelled()
        reached.append("after throw")
        return "never"

    server.add_tool(Tool("coop", {"type": "object"}, cooperative))
    client = await connect(server)
    call_id = await client.send_request("tools/call", _call("coop"))
    await client.sync()
    await client.notify("notifications/cancelled", {"requestId": call_id})
    await _assert_no_response(client, call_id)
    assert "after throw" not in reached


async def test_a_handler_that_swallows_cancellation_still_gets_no_response(server: McpServer, connect: Connect) -> None:
    started = asyncio.Event()

    async def stubborn(arguments: dict[str, Any], context: RequestContext) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "I refuse to stop"
        return "never"

    server.add_tool(Tool("stubborn", {"type": "object"}, stubborn))
    client = await connect(server)
    call_id = await client.send_request("tools/call", _call("stubborn"))
    await started.wait()
    await client.notify("notifications/cancelled", {"requestId": call_id})
    await _assert_no_response(client, call_id)


async def test_a_sync_handler_observes_cancellation(server: McpServer, connect: Connect) -> None:
    started = threading.Event()
    stop = threading.Event()
    finished = threading.Event()
    observed: list[bool] = []

    def worker(arguments: dict[str, Any], context: RequestContext) -> str:
        context.on_cancelled(stop.set)
        started.set()
        stop.wait(timeout=5)
        observed.append(context.is_cancelled)
        finished.set()
        return "ignored"

    server.add_tool(Tool("worker", {"type": "object"}, worker))
    client = await connect(server)
    call_id = await client.send_request("tools/call", _call("worker"))
    assert await asyncio.to_thread(started.wait, 5)
    await client.notify("notifications/cancelled", {"requestId": call_id})
    await _assert_no_response(client, call_id)
    assert await asyncio.to_thread(finished.wait, 5)
    assert observed == [True]
    await _assert_no_response(client, call_id)


async def test_cancelled_before_the_handler_started(server: McpServer, connect: Connect) -> None:
    ran: list[str] = []
    server.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: ran.append("ran") or "x"))
    client = await connect(server)
    # Both messages arrive before the request's task gets to run.
    call_id = await client.send_request("tools/call", _call("t"))
    await client.notify("notifications/cancelled", {"requestId": call_id})
    await _assert_no_response(client, call_id)
    assert ran == []


async def test_initialize_cannot_be_cancelled(server: McpServer, connect: Connect) -> None:
    client = await connect(server, initialize=False)
    init_id = await client.send_request(
        "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}}
    )
    await client.notify("notifications/cancelled", {"requestId": init_id, "reason": "changed my mind"})
    reply = await client.response(init_id)
    assert isinstance(reply, JsonRpcResponse)
    assert reply.result["protocolVersion"] == "2025-06-18"
    assert server.initialized


@pytest.mark.parametrize("params", [None, {}, {"requestId": 12345}, {"requestId": None}, {"requestId": [1]}])
async def test_cancelling_an_unknown_request_is_ignored(
    server: McpServer, connect: Connect, params: dict[str, Any] | None
) -> None:
    client = await connect(server)
    await client.notify("notifications/cancelled", params)
    await client.sync()
    assert client.received == []


async def test_cancelling_a_finished_request_is_ignored(server: McpServer, connect: Connect) -> None:
    contexts: list[RequestContext] = []
    server.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: contexts.append(ctx) or "x"))
    client = await connect(server)
    reply = await client.call("tools/call", _call("t"))
    assert isinstance(reply, JsonRpcResponse)
    await client.notify("notifications/cancelled", {"requestId": reply.id})
    await client.sync()
    assert not contexts[0].is_cancelled
    assert client.received == []


async def test_other_requests_continue_after_a_cancellation(server: McpServer, connect: Connect) -> None:
    blocker = Blocker()
    server.add_tool(Tool("block", {"type": "object"}, blocker))
    server.add_tool(Tool("echo", {"type": "object"}, lambda args, ctx: CallToolResult.text("still here")))
    client = await connect(server)
    call_id = await client.send_request("tools/call", _call("block"))
    await blocker.started.wait()
    await client.notify("notifications/cancelled", {"requestId": call_id})
    assert text_of(await client.result("tools/call", _call("echo"))) == "still here"


async def test_closing_the_connection_cancels_running_handlers(server: McpServer, connect: Connect) -> None:
    blocker = Blocker()
    server.add_tool(Tool("block", {"type": "object"}, blocker))
    client = await connect(server)
    await client.send_request("tools/call", _call("block"))
    await blocker.started.wait()
    await client.side.close()
    for _ in range(5):
        await asyncio.sleep(0)
    assert blocker.callbacks == [True]
    assert blocker.finally_cancelled == [True]
    assert blocker.context is not None and blocker.context.cancel_reason == "connection closed"


# --- logging ---------------------------------------------------------------------


def _logger_tool(server: McpServer) -> None:
    async def emit(arguments: dict[str, Any], context: RequestContext) -> str:
        for level in arguments["levels"]:
            await context.log(level, {"level": level}, logger="test")
        return "logged"

    server.add_tool(Tool("emit", {"type": "object"}, emit))


async def test_everything_is_logged_before_set_level(server: McpServer, connect: Connect) -> None:
    _logger_tool(server)
    client = await connect(server)
    await client.result("tools/call", _call("emit", levels=["debug", "emergency"]))
    assert [n.params for n in client.notifications("notifications/message")] == [
        {"level": "debug", "data": {"level": "debug"}, "logger": "test"},
        {"level": "emergency", "data": {"level": "emergency"}, "logger": "test"},
    ]


async def test_set_level_filters_log_notifications(server: McpServer, connect: Connect) -> None:
    _logger_tool(server)
    client = await connect(server)
    assert await client.result("logging/setLevel", {"level": "warning"}) == {}
    levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
    await client.result("tools/call", _call("emit", levels=levels))
    sent = [n.params["level"] for n in client.notifications("notifications/message") if n.params]
    assert sent == ["warning", "error", "critical", "alert", "emergency"]


async def test_set_level_can_lower_the_threshold_again(server: McpServer, connect: Connect) -> None:
    _logger_tool(server)
    client = await connect(server)
    await client.result("logging/setLevel", {"level": "emergency"})
    await client.result("tools/call", _call("emit", levels=["error"]))
    assert client.notifications("notifications/message") == []
    await client.result("logging/setLevel", {"level": "debug"})
    await client.result("tools/call", _call("emit", levels=["debug"]))
    assert len(client.notifications("notifications/message")) == 1


@pytest.mark.parametrize("params", [None, {}, {"level": "verbose"}, {"level": "WARNING"}, {"level": 3}])
async def test_invalid_level_is_invalid_params(
    server: McpServer, connect: Connect, params: dict[str, Any] | None
) -> None:
    client = await connect(server)
    error = await client.error("logging/setLevel", params)
    assert error.code == INVALID_PARAMS


async def test_an_invalid_level_from_a_handler_raises(server: McpServer, connect: Connect) -> None:
    errors: list[McpError] = []

    async def emit(arguments: dict[str, Any], context: RequestContext) -> str:
        try:
            await context.log("loud", "x")
        except McpError as error:
            errors.append(error)
        return "ok"

    server.add_tool(Tool("emit", {"type": "object"}, emit))
    client = await connect(server)
    await client.result("tools/call", _call("emit"))
    assert [e.code for e in errors] == [INVALID_PARAMS]


def _logged(client: RawClient) -> list[Any]:
    return [
        message.params["data"]  # type: ignore[index]
        for message in client.received
        if isinstance(message, JsonRpcNotification) and message.method == "notifications/message"
    ]


async def test_a_server_that_served_several_sessions_logs_outside_a_request_only_when_told_whom(
    server: McpServer, connect: Connect
) -> None:
    async def report(arguments: dict[str, Any], context: RequestContext) -> str:
        await server.log("info", f"inside {arguments['who']}")  # the request's own session
        return "ok"

    server.add_tool(Tool("report", {"type": "object"}, report))
    alice, bob = await connect(server), await connect(server)
    await alice.result("tools/call", _call("report", who="alice"))
    with pytest.raises(RuntimeError, match="has served 2 sessions: outside a request, name the session"):
        await server.log("info", "a background job")
    with pytest.raises(RuntimeError, match="has served 2 sessions"):
        _ = server.client_capabilities  # under the same rule
    await server.broadcast_log("info", "to everyone, on purpose")
    await alice.sync()
    await bob.sync()
    assert _logged(alice) == ["inside alice", "to everyone, on purpose"]
    assert _logged(bob) == ["to everyone, on purpose"]


async def test_a_server_whose_only_session_ended_drops_a_log_and_never_gives_it_to_a_later_one(
    server: McpServer, connect: Connect
) -> None:
    first = await connect(server)
    await server.log("info", "to the only session")
    await first.sync()
    assert _logged(first) == ["to the only session"]
    await server.sessions[0].close()
    await server.log("info", "nobody hears this")  # dropped, not an error
    later = await connect(server)
    with pytest.raises(RuntimeError, match="has served 2 sessions"):
        await server.log("info", "meant for the first client")
    await later.sync()
    assert _logged(later) == []


async def test_server_log_outside_a_request(server: McpServer, connect: Connect) -> None:
    client = await connect(server, transport=RecordingTransport)
    await server.log("notice", "background job finished")
    notification = await client.notification("notifications/message")
    assert notification.params == {"level": "notice", "data": "background job finished"}
    assert server.sessions[0].connection is not None
    transport = server.sessions[0].connection.transport
    assert isinstance(transport, RecordingTransport)
    assert transport.related(lambda m: isinstance(m, JsonRpcNotification)) == [None]
    await client.result("logging/setLevel", {"level": "error"})
    await server.log("notice", "filtered")
    await client.sync()
    assert client.notifications("notifications/message") == []


async def test_context_exposes_the_request_and_server(server: McpServer, connect: Connect) -> None:
    seen: list[tuple[Any, Any, Any]] = []
    server.add_tool(
        Tool("who", {"type": "object"}, lambda args, ctx: seen.append((ctx.request_id, ctx.method, ctx.server)) or "")
    )
    client = await connect(server)
    await client.call("tools/call", _call("who"), id="r-9")
    assert seen == [("r-9", "tools/call", server)]
