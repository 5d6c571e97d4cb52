"""Core tasks (2025-11-25 sessions, SEP-1686) over Streamable HTTP, driven by our client's task
handle (``call_tool_task``) and by raw requests: the capability and ``execution.taskSupport``,
``params.task``, tasks/get|result|list|cancel bound to their session, questions relayed on the
tasks/result stream, and the rules of ``tasks.py`` that differ from the extension's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fixtures.asgi import call, open_session
from fixtures.messages import initialize_message
from fixtures.tasks import WAIT, build
from mcp_sse_server import McpServer
from mcp_sse_server.client import StreamableHttpClient, TaskCancelledError
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from mcp_sse_server.engine.tasks import RELATED_TASK, TaskRuntime
from mcp_sse_server.stores import MemoryTaskStore
from mcp_sse_server.transport.http import McpHttpApp, McpHttpServer

CORE = "2025-11-25"


@pytest.fixture
async def served() -> AsyncIterator[tuple[McpServer, McpHttpServer]]:
    server = build(TaskRuntime(MemoryTaskStore(), ttl_ms=60_000, max_ttl_ms=120_000, poll_interval_ms=20))
    http = await McpHttpServer.bind(server, port=0)
    try:
        yield server, http
    finally:
        await http.close()


def client_of(http: McpHttpServer, **handlers: Any) -> StreamableHttpClient:
    return StreamableHttpClient(http.endpoint, mode="session", **handlers)


async def test_the_session_learns_the_tasks_capability_and_each_tools_task_support(
    served: tuple[McpServer, McpHttpServer],
) -> None:
    _, http = served
    async with client_of(http) as client:
        assert client.protocol_version == CORE
        assert client.server_capabilities is not None
        assert client.server_capabilities["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        listed = {tool["name"]: tool for tool in await client.list_tools(raw=True)}
        assert listed["slow"]["execution"] == {"taskSupport": "optional"}
        assert listed["broken"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in listed["plain"]
        typed = {tool.name: tool.task_support for tool in await client.list_tools()}
        assert typed == {
            "slow": "optional",
            "broken": "required",
            "ask": "optional",
            "ask_then_task": "required",
            "plain": "forbidden",
        }


async def test_an_older_session_gets_no_tasks_and_a_required_tool_is_refused() -> None:
    app = McpHttpApp(build())
    older = await open_session(app, revision="2025-06-18")
    opened = await call(app, body=initialize_message(protocol_version="2025-06-18"))
    assert "tasks" not in opened.messages[-1]["result"]["capabilities"]
    assert all("execution" not in tool for tool in (await older.result("tools/list"))["tools"])
    refused = await older.request("tasks/get", {"taskId": "x"})
    assert refused.messages[-1]["error"]["code"] == METHOD_NOT_FOUND
    required = await older.request("tools/call", {"name": "broken", "arguments": {}})
    assert required.messages[-1]["error"]["code"] == METHOD_NOT_FOUND
    # params.task means nothing at 2025-06-18: the call runs inline
    inline = await older.result("tools/call", {"name": "slow", "arguments": {"n": 3}, "task": {}})
    assert inline["content"][0]["text"] == "slow 3"


async def test_a_server_without_task_tools_declares_no_tasks_and_serves_no_tasks_methods() -> None:
    app = McpHttpApp(McpServer("plain", "1.0.0"))
    session = await open_session(app, revision=CORE)
    opened = await call(app, body=initialize_message(protocol_version=CORE))
    assert "tasks" not in opened.messages[-1]["result"]["capabilities"]
    for method in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel"):
        refused = await session.request(method, {"taskId": "x"})
        assert refused.messages[-1]["error"]["code"] == METHOD_NOT_FOUND, method


async def test_a_task_is_created_read_and_its_result_waited_for(served: tuple[McpServer, McpHttpServer]) -> None:
    server, http = served
    async with client_of(http) as client:
        handle = await client.call_tool_task("slow", {"n": 7, "wait": True}, ttl_ms=90_000)
        task = handle.task
        assert task is not None and handle.task_id is not None
        assert task["status"] == "working" and task["ttl"] == 90_000 and task["pollInterval"] == 20
        assert task["createdAt"].endswith("Z") and "ttlMs" not in task
        read = await handle.refresh()
        assert read is not None and (read["taskId"], read["status"]) == (handle.task_id, "working")
        waiting = asyncio.create_task(handle.result(timeout=WAIT))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # tasks/result blocks until the task ends
        server.release.set()  # type: ignore[attr-defined]
        result = await waiting
        assert result.content[0].text == "slow 7"  # type: ignore[union-attr]
        raw = await client.request("tasks/result", {"taskId": handle.task_id})
        assert raw["_meta"][RELATED_TASK] == {"taskId": handle.task_id}
        assert (await handle.refresh() or {})["status"] == "completed"


async def test_a_requested_ttl_is_capped_and_a_bad_task_member_refused(served: tuple[McpServer, McpHttpServer]) -> None:
    _, http = served
    async with client_of(http) as client:
        capped = await client.call_tool_task("slow", {"n": 1}, ttl_ms=10**9)
        assert capped.task is not None and capped.task["ttl"] == 120_000
        with pytest.raises(McpError) as bad:
            await client.request("tools/call", {"name": "slow", "arguments": {}, "task": 5})
        assert bad.value.code == INVALID_PARAMS


async def test_task_support_is_enforced_both_ways(served: tuple[McpServer, McpHttpServer]) -> None:
    _, http = served
    async with client_of(http) as client:
        with pytest.raises(McpError) as required:
            await client.call_tool("broken")
        assert required.value.code == METHOD_NOT_FOUND and "task" in required.value.message
        with pytest.raises(McpError) as forbidden:
            await client.request("tools/call", {"name": "plain", "arguments": {}, "task": {}})
        assert forbidden.value.code == METHOD_NOT_FOUND
        # The handle knows from tools/list that plain never runs as a task: it runs inline.
        await client.list_tools()
        inline = await client.call_tool_task("plain")
        assert inline.task_id is None and inline.done
        assert (await inline.result()).content[0].text == "plain"  # type: ignore[union-attr]


async def test_a_tool_error_fails_the_task_and_a_protocol_error_is_the_results_error(
    served: tuple[McpServer, McpHttpServer],
) -> None:
    _, http = served
    async with client_of(http) as client:
        tool_error = await client.call_tool_task("broken")
        result = await tool_error.result(timeout=WAIT)
        assert result.is_error and result.content[0].text == "no luck"  # type: ignore[union-attr]
        task = await tool_error.refresh()
        assert task is not None and task["status"] == "failed" and task["statusMessage"] == "no luck"
        protocol = await client.call_tool_task("broken", {"protocol": True})
        with pytest.raises(McpError) as failed:
            await protocol.result(timeout=WAIT)
        assert (failed.value.code, failed.value.message) == (INTERNAL_ERROR, "upstream down")


async def test_questions_of_a_task_are_relayed_on_the_result_stream(served: tuple[McpServer, McpHttpServer]) -> None:
    _, http = served
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"ok": True}}

    async with client_of(http, elicitation_handler=elicit) as client:
        handle = await client.call_tool_task("ask", {"count": 2})
        async with asyncio.timeout(WAIT):
            async for task in handle:  # polls until a status change says it waits for the client
                if task["status"] == "input_required":
                    break
        result = await handle.result(timeout=WAIT)
        assert result.content[0].text == "accept,accept"  # type: ignore[union-attr]
    assert sorted(params["message"] for params in asked) == ["question 0", "question 1"]
    assert all(params["_meta"][RELATED_TASK] == {"taskId": handle.task_id} for params in asked)


async def test_a_question_before_the_task_starts_is_the_calls_own(served: tuple[McpServer, McpHttpServer]) -> None:
    _, http = served

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        assert RELATED_TASK not in params.get("_meta", {})  # asked on the tools/call stream
        return {"action": "accept", "content": {"name": "Ada"}}

    async with client_of(http, elicitation_handler=elicit) as client:
        handle = await client.call_tool_task("ask_then_task")
        assert handle.task_id is not None
        assert (await handle.result(timeout=WAIT)).content[0].text == "hello Ada"  # type: ignore[union-attr]


async def test_cancel_makes_the_task_cancelled_at_once_and_refuses_a_terminal_one(
    served: tuple[McpServer, McpHttpServer],
) -> None:
    _, http = served
    async with client_of(http) as client:
        handle = await client.call_tool_task("slow", {"wait": True})
        answered = await client.request("tasks/cancel", {"taskId": handle.task_id})
        assert answered["status"] == "cancelled" and answered["taskId"] == handle.task_id
        with pytest.raises(McpError) as again:
            await client.request("tasks/cancel", {"taskId": handle.task_id})
        assert again.value.code == INVALID_PARAMS
        with pytest.raises(TaskCancelledError):
            await handle.result(timeout=WAIT)
        done = await client.call_tool_task("slow", {"n": 2})
        await done.result(timeout=WAIT)
        with pytest.raises(McpError) as terminal:
            await done.cancel()
        assert terminal.value.code == INVALID_PARAMS


async def test_tasks_are_bound_to_their_session(served: tuple[McpServer, McpHttpServer]) -> None:
    _, http = served
    async with client_of(http) as mine, client_of(http) as theirs:
        made = [await mine.call_tool_task("slow", {"n": n}) for n in range(3)]
        listed = await mine.request("tasks/list", {})
        assert [task["taskId"] for task in listed["tasks"]] == [handle.task_id for handle in made]
        assert "nextCursor" not in listed
        assert (await theirs.request("tasks/list", {}))["tasks"] == []
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            with pytest.raises(McpError) as foreign:
                await theirs.request(method, {"taskId": made[0].task_id})
            assert foreign.value.code == INVALID_PARAMS and "Unknown task" in foreign.value.message
        with pytest.raises(McpError) as unknown:
            await mine.request("tasks/get", {"taskId": "no-such-task"})
        assert unknown.value.code == INVALID_PARAMS
        with pytest.raises(McpError) as cursor:
            await mine.request("tasks/list", {"cursor": "not a cursor"})
        assert cursor.value.code == INVALID_PARAMS
        with pytest.raises(McpError) as update:
            await mine.request("tasks/update", {"taskId": made[0].task_id, "inputResponses": {}})
        assert update.value.code == METHOD_NOT_FOUND  # the extension's method, not 2025-11-25's


async def test_tasks_list_pages(served: tuple[McpServer, McpHttpServer]) -> None:
    _, http = served
    async with client_of(http) as client:
        made = [(await client.call_tool_task("slow", {"n": n})).task_id for n in range(105)]
        first = await client.request("tasks/list", {})
        second = await client.request("tasks/list", {"cursor": first["nextCursor"]})
        assert [task["taskId"] for task in first["tasks"] + second["tasks"]] == made
        assert "nextCursor" not in second


async def test_the_limits_on_unfinished_tasks_refuse_more_with_a_clear_error() -> None:
    server = build(TaskRuntime(MemoryTaskStore(), max_tasks=3, max_tasks_per_client=2))
    http = await McpHttpServer.bind(server, port=0)
    try:
        async with client_of(http) as first, client_of(http) as second:
            for _ in range(2):
                await first.call_tool_task("slow", {"wait": True})
            with pytest.raises(McpError) as mine:
                await first.call_tool_task("slow", {"wait": True})
            assert mine.value.code == INVALID_REQUEST and mine.value.data == {"limit": 2}
            await second.call_tool_task("slow", {"wait": True})
            with pytest.raises(McpError) as everyone:
                await second.call_tool_task("slow", {"wait": True})
            assert everyone.value.code == INVALID_REQUEST and everyone.value.data == {"limit": 3}
            server.release.set()  # type: ignore[attr-defined]
            async with asyncio.timeout(WAIT):  # once they end, there is room again
                while True:
                    try:
                        await first.call_tool_task("slow", {"n": 1})
                        break
                    except McpError:
                        await asyncio.sleep(0.01)
    finally:
        await http.close()


async def test_the_same_handle_speaks_the_extension_at_2026_07_28(served: tuple[McpServer, McpHttpServer]) -> None:
    server, http = served

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    async with StreamableHttpClient(http.endpoint, elicitation_handler=elicit) as client:
        assert client.stateless
        handle = await client.call_tool_task("ask", {"count": 2})
        assert handle.task is not None and "ttlMs" in handle.task
        assert (await handle.result(timeout=WAIT)).content[0].text == "accept,accept"  # type: ignore[union-attr]
        slow = await client.call_tool_task("slow", {"wait": True})
        await slow.cancel()
        with pytest.raises(TaskCancelledError):
            await slow.result(timeout=WAIT)
        # A plain call_tool does not declare the extension: the optional tool runs inline.
        assert (await client.call_tool("slow", {"n": 4})).content[0].text == "slow 4"  # type: ignore[union-attr]
    server.release.set()  # type: ignore[attr-defined]


async def test_the_session_hears_each_status_change(served: tuple[McpServer, McpHttpServer]) -> None:
    server, http = served
    heard: list[dict[str, Any]] = []
    ended = asyncio.Event()

    def on_notification(notification: Any) -> None:
        if notification.method == "notifications/tasks/status":
            heard.append(notification.params)
            if notification.params["status"] in ("completed", "failed", "cancelled"):
                ended.set()

    async with client_of(http, on_notification=on_notification) as client:
        handle = await client.call_tool_task("slow", {"n": 1, "wait": True})
        server.release.set()  # type: ignore[attr-defined]
        await handle.result(timeout=WAIT)
        await asyncio.wait_for(ended.wait(), WAIT)  # (the last one travels on the standalone stream)
    assert [params["status"] for params in heard] == ["working", "completed"]
    assert {params["taskId"] for params in heard} == {handle.task_id}
    assert all(RELATED_TASK not in params.get("_meta", {}) for params in heard)


async def test_a_core_tasks_progress_and_logs_go_on_tied_to_it(served: tuple[McpServer, McpHttpServer]) -> None:
    server, http = served
    heard: dict[str, dict[str, Any]] = {}
    both = asyncio.Event()

    def on_notification(notification: Any) -> None:
        if notification.method in ("notifications/progress", "notifications/message"):
            heard[notification.method] = notification.params
            if len(heard) == 2:
                both.set()

    async with client_of(http, on_notification=on_notification) as client:
        params = {
            "name": "slow",
            "arguments": {"wait": True, "chatty": True},
            "task": {},
            "_meta": {"progressToken": "p"},
        }
        task_id = (await client.request("tools/call", params))["task"]["taskId"]
        server.release.set()  # type: ignore[attr-defined]
        await asyncio.wait_for(both.wait(), WAIT)  # after the call answered: on the standalone stream
    progress, log = heard["notifications/progress"], heard["notifications/message"]
    assert (progress["progressToken"], progress["message"]) == ("p", "almost")
    assert log["data"] == "slow says hi"
    assert progress["_meta"] == log["_meta"] == {RELATED_TASK: {"taskId": task_id}}
