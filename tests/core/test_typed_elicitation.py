"""Typed elicitation: ``session.elicit(message, schema=Model)`` generates the form from a model or
dataclass, refuses what a form cannot express before sending, and converts an accepted answer.

On a 2025-11-25 session the question is a server-to-client request; on a 2026-07-28 request it is an
``input_required`` round and the re-run handler receives the typed value.
"""

from __future__ import annotations

import asyncio
import enum
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from fixtures.sessions import Connect, RawClient
from mcp_sse_server import McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, JsonRpcError, JsonRpcResponse
from mcp_sse_server.engine.session import ElicitationContentError, ServerSession, TypedElicitResult
from mcp_sse_server.engine.typed import elicitation_form
from mcp_sse_server.engine.types import ElicitResult

NEW = "2025-11-25"
OLD = "2025-06-18"
MODERN = "2026-07-28"


class Plan(enum.Enum):
    FREE = "free"
    PRO = "pro"


class Signup(BaseModel):
    name: str = Field(description="Your full name", title="Name")
    age: int
    plan: Plan = Plan.FREE
    newsletter: bool = False
    nickname: str | None = None
    size: Literal["s", "m", "l"] = "m"


SIGNUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Your full name", "title": "Name"},
        "age": {"type": "integer"},
        "plan": {"type": "string", "enum": ["free", "pro"], "default": "free"},
        "newsletter": {"type": "boolean", "default": False},
        "nickname": {"type": "string"},
        "size": {"type": "string", "enum": ["s", "m", "l"], "default": "m"},
    },
    "required": ["name", "age"],
}


@dataclass
class Rating:
    score: float
    comment: str | None  # nullable without a default: not required, None when left out
    tags: list[Literal["fast", "kind"]] | None = None


class Address(BaseModel):
    city: str


class WithAddress(BaseModel):
    name: str
    address: Address


async def legacy(
    server: McpServer, connect: Connect, revision: str = NEW, capabilities: dict[str, Any] | None = None
) -> tuple[RawClient, ServerSession]:
    client = await connect(server, initialize=False)
    await client.initialize(protocol_version=revision, capabilities=capabilities or {"elicitation": {}})
    return client, server.sessions[0]


async def answered(client: RawClient, result: dict[str, Any]) -> dict[str, Any]:
    """Answer the next elicitation/create with ``result``; its params."""
    request = await client.server_request("elicitation/create")
    await client.send(JsonRpcResponse(request.id, result))
    assert request.params is not None
    return request.params


# --- the generated schema ---------------------------------------------------------------------


def test_the_schema_is_flat_with_inline_enums_defaults_and_descriptions() -> None:
    form = elicitation_form(Signup)
    assert form.schema == SIGNUP_SCHEMA  # no $defs, $ref, anyOf or generated titles
    assert elicitation_form(Signup) is form  # generated once per type
    rating = elicitation_form(Rating).schema
    assert rating == {
        "type": "object",
        "properties": {
            "score": {"type": "number"},
            "comment": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["fast", "kind"]}},
        },
        "required": ["score"],
    }


@pytest.mark.parametrize(
    ("model", "words"),
    [
        (WithAddress, r"WithAddress\.address cannot be asked in an elicitation form"),
        (int, "needs a pydantic model or dataclass"),
    ],
)
def test_what_a_form_cannot_express_is_a_type_error_naming_it(model: Any, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        elicitation_form(model)


def test_free_lists_unions_and_numeric_enums_are_refused_naming_the_field() -> None:
    class FreeList(BaseModel):
        labels: list[str]

    class Union(BaseModel):
        value: int | str

    class Numbers(BaseModel):
        level: Literal[1, 2]

    with pytest.raises(TypeError, match=r"property 'labels'.*multi-select"):
        elicitation_form(FreeList)
    with pytest.raises(TypeError, match=r"Union\.value cannot be asked"):
        elicitation_form(Union)
    with pytest.raises(TypeError, match=r"property 'level'.*only allowed on strings"):
        elicitation_form(Numbers)


# --- a 2025-11-25 session -----------------------------------------------------------------------


async def test_accept_gives_a_model_instance(server: McpServer, connect: Connect) -> None:
    client, session = await legacy(server, connect)
    task = asyncio.create_task(session.elicit("Sign up", schema=Signup))
    content = {"name": "Ada", "age": 36, "plan": "pro"}
    params = await answered(client, {"action": "accept", "content": content})
    assert params == {"mode": "form", "message": "Sign up", "requestedSchema": SIGNUP_SCHEMA}
    result = await task
    assert isinstance(result, TypedElicitResult) and isinstance(result, ElicitResult)
    assert result.accepted and result.content == content
    assert result.value == Signup(name="Ada", age=36, plan=Plan.PRO)


async def test_a_dataclass_is_filled_and_its_nullable_fields_default_to_none(
    server: McpServer, connect: Connect
) -> None:
    client, session = await legacy(server, connect)
    task = asyncio.create_task(session.elicit("Rate us", schema=Rating, key="ignored-on-a-session"))
    await answered(client, {"action": "accept", "content": {"score": 4.5, "tags": ["kind"]}})
    assert (await task).value == Rating(4.5, None, ["kind"])


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_have_no_value(server: McpServer, connect: Connect, action: str) -> None:
    client, session = await legacy(server, connect)
    task = asyncio.create_task(session.elicit("Sign up", schema=Signup))
    await answered(client, {"action": action})
    result = await task
    assert (result.action, result.content, result.value) == (action, None, None)


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"name": "Ada", "age": "old"}, "age"),
        ({"name": "Ada"}, "age"),
        ({"name": "Ada", "age": 36, "plan": "gold"}, "plan"),
        (None, "name"),
    ],
)
async def test_content_that_does_not_fit_is_an_invalid_params_error_naming_the_field(
    server: McpServer, connect: Connect, content: dict[str, Any] | None, field: str
) -> None:
    client, session = await legacy(server, connect)
    task = asyncio.create_task(session.elicit("Sign up", schema=Signup))
    await answered(client, {"action": "accept", "content": content})
    with pytest.raises(ElicitationContentError, match=f'field "{field}"') as raised:
        await task
    error = raised.value
    assert (error.code, error.data, error.field, error.content) == (INVALID_PARAMS, {"field": field}, field, content)


async def test_a_handler_that_lets_bad_content_through_fails_its_request_with_32602(
    server: McpServer, connect: Connect
) -> None:
    async def sign_up(arguments: dict[str, Any], context: RequestContext) -> str:
        answer = await context.session.elicit("Sign up", schema=Signup)
        return f"welcome {answer.value.name}"

    server.add_tool(Tool("sign_up", {"type": "object"}, sign_up))
    client, _ = await legacy(server, connect)
    call = await client.send_request("tools/call", {"name": "sign_up", "arguments": {}})
    await answered(client, {"action": "accept", "content": {"name": "Ada", "age": 1.5}})
    reply = await client.response(call)
    assert isinstance(reply, JsonRpcError) and reply.code == INVALID_PARAMS
    assert reply.message.startswith('Invalid elicitation content: field "age": ')


async def test_an_inexpressible_model_is_refused_before_anything_is_sent(server: McpServer, connect: Connect) -> None:
    client, session = await legacy(server, connect)
    with pytest.raises(TypeError, match=r"WithAddress\.address"):
        await session.elicit("Where?", schema=WithAddress)
    with pytest.raises(TypeError, match="not both"):
        await session.elicit("Both?", SIGNUP_SCHEMA, schema=Signup)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="needs a requested_schema"):
        await session.elicit("Neither?")  # type: ignore[call-overload]
    await client.sync()
    assert client.received == []


async def test_multi_select_fields_need_2025_11_25_and_raw_schemas_still_work(
    server: McpServer, connect: Connect
) -> None:
    client, session = await legacy(server, connect, OLD)
    with pytest.raises(ValueError, match="multi-select arrays need protocol revision 2025-11-25"):
        await session.elicit("Rate us", schema=Rating)
    await client.sync()
    assert client.received == []
    raw = {"type": "object", "properties": {"name": {"type": "string"}}}
    task = asyncio.create_task(session.elicit("Name?", raw))
    params = await answered(client, {"action": "accept", "content": {"name": "Ada"}})
    assert params == {"message": "Name?", "requestedSchema": raw}
    result = await task
    assert type(result) is ElicitResult and result.content == {"name": "Ada"}


# --- a 2026-07-28 request: the input_required round trip ------------------------------------------


def envelope(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
    }


async def test_the_rerun_handler_receives_the_typed_value(connect: Connect) -> None:
    server = McpServer("typed", "1")
    seen: list[Any] = []

    async def sign_up(arguments: dict[str, Any], context: RequestContext) -> str:
        answer = await context.session.elicit("Sign up", schema=Signup, key="signup")
        seen.append(answer.value)
        return f"{answer.action} {answer.value.name if answer.value else '-'}"

    server.add_tool(Tool("sign_up", {"type": "object"}, sign_up))
    client = await connect(server, initialize=False)
    call = {**envelope({"elicitation": {"form": {}}}), "name": "sign_up", "arguments": {}}
    first = await client.result("tools/call", call)
    assert first["resultType"] == "input_required" and seen == []  # the first run stopped at the question
    assert first["inputRequests"] == {
        "signup": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Sign up", "requestedSchema": SIGNUP_SCHEMA},
        }
    }
    retry = {**call, "requestState": first["requestState"]}
    accept = {"action": "accept", "content": {"name": "Ada", "age": 36, "size": "l"}}
    done = await client.result("tools/call", {**retry, "inputResponses": {"signup": accept}})
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "accept Ada"
    assert seen == [Signup(name="Ada", age=36, size="l")]
    declined = await client.result("tools/call", {**retry, "inputResponses": {"signup": {"action": "decline"}}})
    assert declined["content"][0]["text"] == "decline -" and seen[-1] is None
    bad = {"action": "accept", "content": {"name": "Ada", "age": "x"}}
    error = await client.error("tools/call", {**retry, "inputResponses": {"signup": bad}})
    assert error.code == INVALID_PARAMS and error.data == {"field": "age"}


# --- footprint ------------------------------------------------------------------------------------


def test_the_session_does_not_import_pydantic() -> None:
    code = "import sys, mcp_sse_server, mcp_sse_server.engine.session; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
