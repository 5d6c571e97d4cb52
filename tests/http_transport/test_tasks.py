"""Tasks (the Tasks extension of 2026-07-28, SEP-2663) over Streamable HTTP: a call made a task,
read, answered and cancelled by later requests, with the rules of ``tasks.py``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fixtures.asgi import AsgiCall, open_session
from fixtures.messages import initialize_message, request
from fixtures.tasks import WAIT, Client, Clock, build
from mcp_sse_server import McpServer, Tool
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR
from mcp_sse_server.engine.tasks import TASKS_EXTENSION, TaskRuntime
from mcp_sse_server.stores import MemoryTaskStore
from mcp_sse_server.transport.http import McpHttpApp


@pytest.fixture
def server() -> McpServer:
    return build()


@pytest.fixture
def client(server: McpServer) -> Client:
    return Client(McpHttpApp(server))


async def test_a_declaring_call_becomes_a_task_and_its_result_is_read_later(client: Client, server: Any) -> None:
    created = await client.call("slow", {"n": 7, "wait": True})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["createdAt"].endswith("Z") and created["ttlMs"] > 0 and created["pollIntervalMs"] > 0
    assert not {"task", "result", "error", "inputRequests"} & set(created)
    task_id = created["taskId"]
    working = await client.get(task_id)
    assert (working["resultType"], working["taskId"], working["status"]) == ("complete", task_id, "working")
    server.release.set()
    done = await client.until(task_id, "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "slow 7"}]
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})


async def test_a_call_that_does_not_declare_runs_inline_and_a_required_tool_refuses_it(server: McpServer) -> None:
    plain = Client(McpHttpApp(server), {})
    inline = await plain.call("slow", {"n": 1})
    assert inline["resultType"] == "complete" and inline["content"][0]["text"] == "slow 1"
    refused = await plain.error("tools/call", {"name": "broken", "arguments": {}})
    assert refused["code"] == -32021
    assert refused["data"] == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
    for method in ("tasks/get", "tasks/cancel"):
        assert (await plain.error(method, {"taskId": "x"}))["code"] == -32021
    assert (await plain.error("tasks/update", {"taskId": "x", "inputResponses": {}}))["code"] == -32021


async def test_a_forbidden_tool_never_becomes_a_task(client: Client) -> None:
    result = await client.call("plain")
    assert result["resultType"] == "complete" and result["content"][0]["text"] == "plain"


async def test_a_tool_error_completes_and_a_protocol_error_fails(client: Client) -> None:
    tool_error = await client.until((await client.call("broken"))["taskId"], "completed")
    assert tool_error["result"]["isError"] is True
    failed = await client.until((await client.call("broken", {"protocol": True}))["taskId"], "failed")
    assert failed["error"] == {"code": INTERNAL_ERROR, "message": "upstream down"} and "result" not in failed
    assert failed["statusMessage"] == "upstream down"


async def test_questions_of_a_task_are_its_input_requests_answered_by_update(client: Client) -> None:
    task_id = (await client.call("ask", {"count": 2}))["taskId"]
    asked = await client.until(task_id, "input_required")
    async with asyncio.timeout(WAIT):  # both questions, asked concurrently
        while len(asked["inputRequests"]) < 2:
            asked = await client.get(task_id)
    first, second = sorted(asked["inputRequests"])
    assert asked["inputRequests"][first]["method"] == "elicitation/create"
    ignored = await client.result("tasks/update", {"taskId": task_id, "inputResponses": {"unknown-key": {}}})
    assert ignored == {"resultType": "complete", "_meta": ignored["_meta"]}
    await client.result("tasks/update", {"taskId": task_id, "inputResponses": {first: {"action": "accept"}}})
    partly = await client.get(task_id)  # at once: the answered key is gone, the other still asked
    assert partly["status"] == "input_required" and list(partly["inputRequests"]) == [second]
    await client.result("tasks/update", {"taskId": task_id, "inputResponses": {second: {"action": "decline"}}})
    done = await client.until(task_id, "completed")
    assert done["result"]["content"][0]["text"] == "accept,decline"


async def test_a_question_the_creating_request_could_not_answer_fails_the_task(server: McpServer) -> None:
    client = Client(McpHttpApp(server), {"extensions": {TASKS_EXTENSION: {}}})  # no elicitation
    failed = await client.until((await client.call("ask", {"count": 1}))["taskId"], "failed")
    assert failed["error"]["code"] == -32021


async def test_cancel_stops_the_handler_and_is_acknowledged_for_an_ended_task_too(client: Client) -> None:
    task_id = (await client.call("slow", {"wait": True}))["taskId"]
    ack = await client.result("tasks/cancel", {"taskId": task_id})
    assert set(ack) == {"resultType", "_meta"} and ack["resultType"] == "complete"
    cancelled = await client.until(task_id, "cancelled")
    assert "result" not in cancelled and "error" not in cancelled
    again = await client.result("tasks/cancel", {"taskId": task_id})
    assert again["resultType"] == "complete"
    assert (await client.get(task_id))["status"] == "cancelled"  # terminal stays terminal


async def test_a_waiting_question_is_cancelled_too(client: Client) -> None:
    task_id = (await client.call("ask", {"count": 1}))["taskId"]
    await client.until(task_id, "input_required")
    await client.result("tasks/cancel", {"taskId": task_id})
    assert "inputRequests" not in await client.until(task_id, "cancelled")


async def test_questions_before_the_task_are_input_required_rounds(client: Client) -> None:
    first = await client.call("ask_then_task")
    assert first["resultType"] == "input_required" and "taskId" not in first
    (key,) = first["inputRequests"]
    answer = {"action": "accept", "content": {"name": "Alice"}}
    retry = await client.call_with(
        "ask_then_task", {"inputResponses": {key: answer}, "requestState": first["requestState"]}
    )
    assert retry["resultType"] == "task" and "requestState" not in retry and "inputRequests" not in retry
    done = await client.until(retry["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "hello Alice"


async def test_unknown_and_expired_tasks_are_invalid_params() -> None:
    clock = Clock()
    server = build(TaskRuntime(MemoryTaskStore(), ttl_ms=60_000, clock=clock))
    client = Client(McpHttpApp(server))
    assert (await client.error("tasks/get", {"taskId": "nope"}))["code"] == -32602
    task_id = (await client.call("slow"))["taskId"]
    done = await client.until(task_id, "completed")
    assert done["ttlMs"] == 60_000
    clock.now += 59
    assert (await client.get(task_id))["status"] == "completed"  # readable for its ttl
    clock.now += 2
    assert (await client.error("tasks/get", {"taskId": task_id}))["code"] == -32602
    assert await server.tasks.store.sweep(clock.now) == 0  # (already dropped on the read)


async def test_tasks_methods_need_the_task_id_in_mcp_name(client: Client) -> None:
    task_id = (await client.call("slow"))["taskId"]
    wrong = await client.reply("tasks/get", {"taskId": task_id}, **{"mcp-name": "another"})
    assert wrong.status == 400 and wrong.json["error"]["code"] == -32020
    removed = await client.reply("tasks/result", {"taskId": task_id})
    assert removed.json["error"]["code"] == -32601
    listed = await client.reply("tasks/list", {})
    assert listed.json["error"]["code"] == -32601


async def test_discover_names_the_extension_and_a_session_sees_nothing_of_it(client: Client) -> None:
    discovered = await client.result("server/discover", {})
    assert discovered["capabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in discovered["capabilities"]
    opened = await AsgiCall(client.app, "POST", initialize_message(protocol_version="2025-06-18")).start().finish()
    assert "extensions" not in opened.messages[-1]["result"]["capabilities"]
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    body = request(2, "tools/call", {"name": "broken", "arguments": {}})
    refused = await AsgiCall(client.app, "POST", body, session).start().finish()
    assert refused.messages[-1]["error"]["code"] == -32601  # a required task tool on a session
    listed = await AsgiCall(client.app, "POST", request(3, "tools/list", {}), session).start().finish()
    assert all("execution" not in tool for tool in listed.messages[-1]["result"]["tools"])


async def test_a_typed_tool_runs_as_a_task_through_the_decorator() -> None:
    server = McpServer("typed-tasks")

    @server.tool(task_support="required")
    async def double(n: int) -> int:
        """Doubles n, slowly."""
        await asyncio.sleep(0.01)
        return 2 * n

    client = Client(McpHttpApp(server))
    created = await client.call("double", {"n": 21})
    done = await client.until(created["taskId"], "completed")
    assert done["result"]["structuredContent"] == {"result": 42}
    with pytest.raises(ValueError, match="task_support"):
        Tool("bad", handler=lambda a, c: "x", task_support="sometimes")  # type: ignore[arg-type]


async def test_servers_made_per_session_share_one_task_runtime() -> None:
    made: list[McpServer] = []

    def factory() -> McpServer:
        made.append(build())
        return made[-1]

    client = Client(McpHttpApp(factory))
    task_id = (await client.call("slow"))["taskId"]
    assert (await client.until(task_id, "completed"))["result"]["content"][0]["text"] == "slow 0"
    await open_session(client.app)  # a server of its own, beside the stateless requests' one
    assert len(made) == 2 and len({id(server.tasks) for server in made}) == 1


async def test_a_task_running_when_the_app_shuts_down_ends_failed(server: Any) -> None:
    app = McpHttpApp(server)
    client = Client(app)
    task_id = (await client.call("slow", {"wait": True}))["taskId"]
    await app.shutdown(deadline=0)
    record = await server.tasks.store.get(task_id, server.tasks.clock())
    assert record.status == "failed"
    assert record.outcome == {"error": {"code": INTERNAL_ERROR, "message": record.status_message}}
    assert "stopped" in record.status_message


async def test_listen_with_task_ids_sends_each_change_of_those_tasks_until_they_end(
    client: Client, server: Any
) -> None:
    task_id = (await client.call("slow", {"n": 5, "wait": True}))["taskId"]
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": client.capabilities,
    }
    params = {"notifications": {"taskIds": [task_id, "no-such-task"]}, "_meta": meta}
    listen = AsgiCall(
        client.app,
        "POST",
        request(77, "subscriptions/listen", params),
        {"mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"},
    ).start()
    ack, first = (event["data"] for event in await listen.events(2))
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}  # the unknown id is not honoured
    assert first["method"] == "notifications/tasks"
    assert (first["params"]["taskId"], first["params"]["status"]) == (task_id, "working")
    assert first["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 77}
    server.release.set()
    last = (await listen.events(3))[-1]["data"]
    assert last["params"]["status"] == "completed" and last["params"]["result"]["content"][0]["text"] == "slow 5"
    listen.disconnect()


async def test_listen_with_task_ids_needs_the_extension_declared(server: McpServer) -> None:
    plain = Client(McpHttpApp(server), {})
    refused = await plain.error("subscriptions/listen", {"notifications": {"taskIds": ["x"]}})
    assert refused["code"] == -32021
