"""Dependency injection (engine/typed.py, the rules on ``Depends``): planned once at registration,
left out of schemas, request-scoped and server-scoped providers of every kind, cleanups in
reverse order (also on error), on tools, prompts and resources, in an MRTR re-run and in a task
job.

No ``from __future__ import annotations`` here: the ``Annotated[T, Depends(provider)]`` forms
name providers local to the tests, which a string annotation could not resolve."""

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import Depends, McpServer, RequestContext
from mcp_sse_server.engine.tasks import TaskRuntime
from mcp_sse_server.engine.tokens import AccessToken
from mcp_sse_server.engine.typed import SignatureError, ToolSignature
from mcp_sse_server.stores import MemoryTaskStore

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Log:
    """What the providers did, in order."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.made = 0


def providers(log: Log) -> tuple[Any, Any, Any, Any]:
    def settings() -> dict[str, str]:  # sync
        log.events.append("settings")
        return {"dsn": "memory://"}

    async def pool(config: dict[str, str] = Depends(settings)) -> str:  # async, depends on another
        log.events.append("pool")
        return f"pool({config['dsn']})"

    async def connection(
        context: RequestContext, source: Annotated[str, Depends(pool)], config: dict[str, str] = Depends(settings)
    ) -> AsyncIterator[str]:  # async generator: its cleanup follows the call
        log.made += 1
        log.events.append(f"open {context.method}")
        try:
            yield f"conn{log.made} on {source}"
        except ValueError as error:
            log.events.append(f"saw {error}")
            raise
        finally:
            log.events.append("close conn")

    def cursor(conn: str = Depends(connection)) -> Iterator[str]:  # sync generator
        log.events.append("open cursor")
        yield f"cursor of {conn}"
        log.events.append("close cursor")

    return settings, pool, connection, cursor


def build(log: Log, **options: Any) -> McpServer:
    server = McpServer("di", **options)
    _, _, connection, cursor = providers(log)

    @server.tool()
    async def query(
        sql: str,
        context: RequestContext,
        token: AccessToken | None,
        conn: str = Depends(connection),
        cur: Annotated[str, Depends(cursor)] = "",
    ) -> str:
        """Runs sql."""
        log.events.append(f"query {sql}")
        if sql == "bad":
            raise ValueError("bad sql")
        return f"{sql} via {cur}; {conn}; token={token}"

    @server.tool()
    def sync_query(sql: str, conn: str = Depends(connection)) -> str:
        log.events.append(f"sync {sql}")
        return f"{sql} on {conn}"

    @server.prompt()
    def brief(topic: str, conn: str = Depends(connection)) -> str:
        return f"{topic} with {conn}"

    @server.resource("db://tables/{table}")
    async def table(table: str, cur: str = Depends(cursor)) -> str:
        return f"{table} by {cur}"

    return server


async def test_injected_parameters_are_left_out_of_the_schema() -> None:
    def provide() -> int:
        return 1

    def tool(a: int, context: RequestContext, token: AccessToken | None, b: Annotated[int, Depends(provide)]) -> int:
        return a + b

    signature = ToolSignature.of(tool)
    assert signature.input_schema["properties"].keys() == {"a"} and signature.input_schema["required"] == ["a"]
    assert [name for name, _ in signature.injected] == ["token", "b"]


async def test_each_provider_runs_once_per_request_and_cleans_up_in_reverse(connect: Connect) -> None:
    log = Log()
    client = await connect(build(log))
    result = await client.result("tools/call", {"name": "query", "arguments": {"sql": "select"}})
    assert result["content"][0]["text"] == (
        "select via cursor of conn1 on pool(memory://); conn1 on pool(memory://); token=None"
    )
    # settings asked for by pool and by connection: made once; the cleanups after the call, last first
    assert log.events == [
        "settings",
        "pool",
        "open tools/call",
        "open cursor",
        "query select",
        "close cursor",
        "close conn",
    ]
    log.events.clear()
    again = await client.result("tools/call", {"name": "query", "arguments": {"sql": "again"}})
    assert "conn2" in again["content"][0]["text"] and log.events.count("settings") == 1  # a new request, anew


async def test_a_client_cannot_pass_an_injected_argument(connect: Connect) -> None:
    log = Log()
    client = await connect(build(log))
    result = await client.result("tools/call", {"name": "query", "arguments": {"sql": "x", "conn": "mine"}})
    assert result["isError"] is True and log.events == []


async def test_cleanups_run_on_error_and_see_it(connect: Connect) -> None:
    log = Log()
    client = await connect(build(log))
    result = await client.result("tools/call", {"name": "query", "arguments": {"sql": "bad"}})
    assert result["isError"] is True and "bad sql" not in str(result)
    assert log.events[-3:] == ["query bad", "saw bad sql", "close conn"]  # the cursor's rest never runs
    assert "close cursor" not in log.events


async def test_a_failing_provider_fails_the_call_and_a_failing_cleanup_is_logged(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> str:
        raise RuntimeError("no database")

    async def leaky() -> AsyncIterator[str]:
        yield "value"
        raise RuntimeError("cleanup failed")

    server = McpServer("di")

    @server.tool()
    def needs_broken(value: str = Depends(broken)) -> str:
        return value

    @server.tool()
    async def needs_leaky(value: str = Depends(leaky)) -> str:
        return value

    client = await connect(server)
    failed = await client.result("tools/call", {"name": "needs_broken", "arguments": {}})
    assert failed["isError"] is True and "no database" not in str(failed)
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        served = await client.result("tools/call", {"name": "needs_leaky", "arguments": {}})
    assert served["content"][0]["text"] == "value"
    assert "cleanup of provider" in caplog.text and "cleanup failed" not in str(served)


async def test_a_sync_tool_prompts_and_resources_take_providers_too(connect: Connect) -> None:
    log = Log()
    client = await connect(build(log))
    synced = await client.result("tools/call", {"name": "sync_query", "arguments": {"sql": "s"}})
    assert synced["content"][0]["text"] == "s on conn1 on pool(memory://)"
    prompt = await client.result("prompts/get", {"name": "brief", "arguments": {"topic": "t"}})
    assert prompt["messages"][0]["content"]["text"] == "t with conn2 on pool(memory://)"
    read = await client.result("resources/read", {"uri": "db://tables/users"})
    assert read["contents"][0]["text"] == "users by cursor of conn3 on pool(memory://)"
    assert log.events.count("close conn") == 3 and log.events.count("close cursor") == 1
    listed = await client.result("prompts/list")
    assert [argument["name"] for argument in listed["prompts"][0]["arguments"]] == ["topic"]


async def test_a_server_scoped_provider_runs_once_and_is_cleaned_up_on_close(connect: Connect) -> None:
    events: list[str] = []

    async def client_pool() -> AsyncIterator[str]:
        events.append("made")
        await asyncio.sleep(0)  # (two requests meet here: the lock makes one)
        yield "shared"
        events.append("closed")

    server = McpServer("di")

    @server.tool()
    async def use(pool: str = Depends(client_pool, scope="server")) -> str:
        return pool

    first, second = await connect(server), await connect(server)
    calls = [client.result("tools/call", {"name": "use", "arguments": {}}) for client in (first, second, first)]
    results = await asyncio.gather(*calls)
    assert [result["content"][0]["text"] for result in results] == ["shared"] * 3
    assert events == ["made"]
    await server.close()
    assert events == ["made", "closed"]


def test_bad_plans_are_refused_at_registration() -> None:
    server = McpServer("di")

    def a(value: Any = None) -> int:
        return 1

    def b(value: int = Depends(a)) -> int:
        return value

    a.__defaults__ = (Depends(b),)  # a -> b -> a

    with pytest.raises(SignatureError, match="cycle"):
        server.tool()(lambda x=Depends(a): x)

    def needs_argument(name: str) -> str:
        return name

    with pytest.raises(SignatureError, match="a provider is passed only"):
        server.tool()(lambda x=Depends(needs_argument): x)

    def per_request(context: RequestContext) -> str:
        return context.method

    with pytest.raises(SignatureError, match="server-scoped provider cannot depend on the request"):
        server.tool()(lambda x=Depends(lambda y=Depends(per_request): y, scope="server"): x)
    with pytest.raises(TypeError, match="callable provider"):
        Depends("nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scope"):
        Depends(a, scope="session")  # type: ignore[arg-type]


async def test_providers_run_again_in_each_mrtr_round(connect: Connect) -> None:
    log = Log()
    server = McpServer("di")
    _, _, connection, _ = providers(log)

    @server.tool()
    async def greet(context: RequestContext, conn: str = Depends(connection)) -> str:
        answer = await context.session.elicit("Name?", NAME)
        return f"{answer.content['name']} via {conn}"

    client = await connect(server, initialize=False)
    envelope = {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }
    }
    call = {**envelope, "name": "greet", "arguments": {}}
    first = await client.result("tools/call", call)
    assert first["resultType"] == "input_required" and log.events[-1] == "close conn"  # cleaned up with the round
    (key,) = first["inputRequests"]
    answered = {key: {"action": "accept", "content": {"name": "Ada"}}}
    done = await client.result(
        "tools/call", {**call, "inputResponses": answered, "requestState": first["requestState"]}
    )
    assert done["content"][0]["text"] == "Ada via conn2 on pool(memory://)"
    assert log.events.count("open tools/call") == 2 and log.events.count("close conn") == 2


async def test_providers_run_inside_a_task_job(connect: Connect) -> None:
    log = Log()
    runtime = TaskRuntime(MemoryTaskStore(), ttl_ms=60_000, max_ttl_ms=120_000, poll_interval_ms=20)
    server = McpServer("di", tasks=runtime)
    _, _, connection, _ = providers(log)

    @server.tool(task_support="optional")
    async def job(n: int, conn: str = Depends(connection)) -> str:
        log.events.append("job ran")
        return f"{n} via {conn}"

    client = await connect(server, initialize=False)
    await client.initialize(protocol_version="2025-11-25")
    created = await client.result("tools/call", {"name": "job", "arguments": {"n": 3}, "task": {}})
    done = await client.result("tasks/result", {"taskId": created["task"]["taskId"]})
    assert done["content"][0]["text"] == "3 via conn1 on pool(memory://)"
    assert log.events[-3:] == ["open tools/call", "job ran", "close conn"]
