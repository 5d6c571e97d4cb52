"""ErrorPolicy: a tool's exceptions mapped by type to a JSON-RPC error or a tool error, with the
policy's fixed message and never the exception's text; the rest pass untouched."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fixtures.sessions import Connect
from mcp_sse_server import McpError, RequestContext, Tool
from mcp_sse_server.middleware import ErrorAs, ErrorPolicy, ToolErrorAs

from .conftest import build

SECRET = "password=hunter2 at /srv/db"


class Throttled(ConnectionError):
    pass


def raiser(arguments: dict[str, Any], context: RequestContext) -> str:
    kind = arguments["kind"]
    if kind == "mcp":
        raise McpError(-32042, "the tool's own error")
    errors: dict[str, Exception] = {
        "timeout": TimeoutError(SECRET),
        "denied": PermissionError(SECRET),
        "throttled": Throttled(SECRET),
        "refused": ConnectionRefusedError(SECRET),
        "other": KeyError(SECRET),
    }
    raise errors[kind]


POLICY = ErrorPolicy(
    {
        TimeoutError: ToolErrorAs("The service timed out."),
        PermissionError: ErrorAs(-32001, "Not allowed", {"reason": "permission"}),
        ConnectionError: ToolErrorAs("The service is unreachable."),
        Throttled: ErrorAs(-32029, "Slow down"),
    }
)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("timeout", {"isError": True, "text": "The service timed out."}),
        ("denied", {"code": -32001, "message": "Not allowed", "data": {"reason": "permission"}}),
        ("throttled", {"code": -32029, "message": "Slow down", "data": None}),  # the most specific class wins
        ("refused", {"isError": True, "text": "The service is unreachable."}),  # through its base class
        ("mcp", {"code": -32042, "message": "the tool's own error", "data": None}),  # passes
    ],
)
async def test_exceptions_become_what_the_policy_says(connect: Connect, kind: str, expected: dict[str, Any]) -> None:
    server = build(POLICY)
    server.add_tool(Tool("raiser", {"type": "object"}, raiser))
    client = await connect(server)
    call = {"name": "raiser", "arguments": {"kind": kind}}
    if "code" in expected:
        error = await client.error("tools/call", call)
        assert {"code": error.code, "message": error.message, "data": error.data} == expected
        assert SECRET not in orjson.dumps([error.message, error.data]).decode()
    else:
        result = await client.result("tools/call", call)
        assert result == {"content": [{"type": "text", "text": expected["text"]}], "isError": True}


async def test_an_unmapped_exception_is_the_engines_internal_error_without_text(connect: Connect) -> None:
    server = build(POLICY)
    server.add_tool(Tool("raiser", {"type": "object"}, raiser))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "raiser", "arguments": {"kind": "other"}})
    assert result["isError"] is True and SECRET not in orjson.dumps(result).decode()


def test_a_policy_maps_exception_classes_to_errors_only() -> None:
    with pytest.raises(TypeError):
        ErrorPolicy({McpError: ErrorAs(-1, "x")})
    with pytest.raises(TypeError):
        ErrorPolicy({KeyboardInterrupt: ErrorAs(-1, "x")})
    with pytest.raises(TypeError):
        ErrorPolicy({KeyError: "x"})  # type: ignore[dict-item]


async def test_the_policy_maps_in_every_mrtr_round(connect: Connect) -> None:
    from .conftest import NAME_SCHEMA, envelope

    async def ask_then_fail(arguments: dict[str, Any], context: RequestContext) -> str:
        await context.session.elicit("Your name?", NAME_SCHEMA)
        raise TimeoutError(SECRET)

    server = build(POLICY)
    server.add_tool(Tool("ask_then_fail", {"type": "object"}, ask_then_fail))
    client = await connect(server, initialize=False)
    call = {**envelope({"elicitation": {"form": {}}}), "name": "ask_then_fail", "arguments": {}}
    first = await client.result("tools/call", call)
    assert first["resultType"] == "input_required"  # the question passed the policy untouched
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await client.result(
        "tools/call", {**call, "inputResponses": {"q1": answer}, "requestState": first["requestState"]}
    )
    assert done["isError"] is True and done["content"][0]["text"] == "The service timed out."


async def test_the_policy_maps_inside_a_task_job() -> None:
    from fixtures.tasks import Client
    from mcp_sse_server.transport.http import McpHttpApp

    async def failing(arguments: dict[str, Any], context: RequestContext) -> str:
        raise TimeoutError(SECRET)

    server = build(POLICY)
    server.add_tool(Tool("failing", {"type": "object"}, failing, task_support="required"))
    client = Client(McpHttpApp(server))
    created = await client.call("failing")
    task = await client.until(created["taskId"], "completed")
    assert task["result"] == {"content": [{"type": "text", "text": "The service timed out."}], "isError": True}
