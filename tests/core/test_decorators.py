"""``@server.tool``, ``@server.resource`` and ``@server.prompt`` through the engine (a real
session over MemoryTransport): what a client sees of each typed function."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from fixtures.sessions import Connect, text_of
from mcp_sse_server import McpServer, RequestContext
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS


class Role(enum.Enum):
    ADMIN = "admin"
    MEMBER = "member"


class User(BaseModel):
    name: str
    role: Role = Role.MEMBER


async def test_a_bare_decorated_function_is_a_tool_with_its_schema_and_a_wrapped_result(
    server: McpServer, connect: Connect
) -> None:
    @server.tool
    async def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        Args:
            a: the first
            b: the second
        """
        return a + b

    assert await add(1, 1) == 2  # still the function it was
    client = await connect(server)
    [tool] = (await client.result("tools/list"))["tools"]
    assert tool["name"] == "add" and tool["description"] == "Add two numbers."
    assert tool["inputSchema"]["required"] == ["a"]
    assert tool["inputSchema"]["properties"]["a"] == {"type": "integer", "description": "the first"}
    assert tool["outputSchema"]["properties"]["result"]["type"] == "integer"
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 3}})
    assert result["structuredContent"] == {"result": 5} and text_of(result) == "5"
    misspelt = await client.result("tools/call", {"name": "add", "arguments": {"a": 3, "bb": 4}})
    assert misspelt["isError"] is True and "bb" in text_of(misspelt)  # refused, not silently dropped


async def test_overrides_a_model_parameter_and_a_model_result(server: McpServer, connect: Connect) -> None:
    @server.tool(name="promote", title="Promote", description="Make someone an admin.")
    def promote(user: User, note: Annotated[str, Field(description="why")] = "") -> User:
        assert isinstance(user, User)  # converted from the JSON arguments
        return User(name=user.name, role=Role.ADMIN)

    client = await connect(server)
    [tool] = (await client.result("tools/list"))["tools"]
    assert (tool["name"], tool["title"], tool["description"]) == ("promote", "Promote", "Make someone an admin.")
    assert "$defs" in tool["inputSchema"] and tool["inputSchema"]["properties"]["note"]["description"] == "why"
    result = await client.result("tools/call", {"name": "promote", "arguments": {"user": {"name": "ann"}}})
    assert result["structuredContent"] == {"name": "ann", "role": "admin"}
    bad = await client.result("tools/call", {"name": "promote", "arguments": {"user": {"name": "ann", "role": "king"}}})
    assert bad["isError"] is True and "user.role" in text_of(bad) and "king" in text_of(bad)


async def test_the_context_is_injected_by_annotation_and_left_out_of_the_schema(
    server: McpServer, connect: Connect
) -> None:
    @server.tool
    async def whoami(ctx: RequestContext, shout: bool = False) -> str:
        await ctx.log("info", "asked")
        name = (ctx.session.client_info or {}).get("name", "?")
        return name.upper() if shout else name

    client = await connect(server)
    [tool] = (await client.result("tools/list"))["tools"]
    assert list(tool["inputSchema"]["properties"]) == ["shout"] and "outputSchema" not in tool
    result = await client.result("tools/call", {"name": "whoami", "arguments": {"shout": True}})
    assert result["content"] == [{"type": "text", "text": text_of(result)}] and "structuredContent" not in result


async def test_a_return_value_its_annotation_does_not_describe_is_an_internal_error(
    server: McpServer, connect: Connect
) -> None:
    @server.tool
    def count() -> int:
        return "many"  # type: ignore[return-value]

    client = await connect(server)
    error = await client.error("tools/call", {"name": "count"})
    assert error.code == INTERNAL_ERROR and "many" not in error.message


def test_a_signature_the_rules_cannot_describe_is_refused_at_registration(server: McpServer) -> None:
    with pytest.raises(ValueError, match="args"):

        @server.tool
        def spread(*args: int) -> int:
            return sum(args)

    with pytest.raises(ValueError, match="user_id"):

        @server.resource("users://{user_id}")
        def user(id: str) -> str:
            return id

    assert server.tools == []


async def test_resources_fixed_and_templated(server: McpServer, connect: Connect) -> None:
    @server.resource("config://app", mime_type="application/toml")
    def config() -> str:
        return 'debug = "no"'

    @server.resource("users://{user_id}/profile")
    async def profile(user_id: int) -> dict[str, Any]:
        return {"id": user_id, "even": user_id % 2 == 0}

    client = await connect(server)
    [fixed] = (await client.result("resources/list"))["resources"]
    assert (fixed["uri"], fixed["name"], fixed["mimeType"]) == ("config://app", "config", "application/toml")
    [template] = (await client.result("resources/templates/list"))["resourceTemplates"]
    assert template["uriTemplate"] == "users://{user_id}/profile"
    read = await client.result("resources/read", {"uri": "config://app"})
    assert read["contents"][0]["text"] == 'debug = "no"'
    read = await client.result("resources/read", {"uri": "users://42/profile"})
    assert read["contents"][0]["mimeType"] == "application/json"
    assert read["contents"][0]["text"].replace(" ", "") == '{"id":42,"even":true}'
    error = await client.error("resources/read", {"uri": "users://x/profile"})
    assert error.code == INVALID_PARAMS and "user_id" in error.message


@pytest.mark.parametrize("shape", ["str", "list", "result"])
async def test_prompts_in_every_return_shape(server: McpServer, connect: Connect, shape: str) -> None:
    from mcp_sse_server import GetPromptResult, PromptMessage

    @server.prompt
    def review(code: str, depth: int = 1) -> Any:
        """Review some code.

        :param code: what to review
        """
        text = f"review {code} at depth {depth}"
        if shape == "str":
            return text
        if shape == "list":
            return [PromptMessage.user(text)]
        return GetPromptResult([PromptMessage.user(text)], description="custom")

    client = await connect(server)
    [prompt] = (await client.result("prompts/list"))["prompts"]
    assert prompt["arguments"] == [
        {"name": "code", "description": "what to review", "required": True},
        {"name": "depth"},  # not required: omitted
    ]
    result = await client.result("prompts/get", {"name": "review", "arguments": {"code": "x", "depth": "3"}})
    assert result["messages"][0]["content"]["text"] == "review x at depth 3"
    assert result["description"] == ("custom" if shape == "result" else "Review some code.")
    error = await client.error("prompts/get", {"name": "review", "arguments": {"code": "x", "depth": "deep"}})
    assert error.code == INVALID_PARAMS and "depth" in error.message


async def test_a_template_takes_a_lister_and_a_completer_and_a_prompt_a_completer(
    server: McpServer, connect: Connect
) -> None:
    from mcp_sse_server import CompleteRequest, ResourceInfo

    def colours(request: CompleteRequest, context: RequestContext) -> list[str]:
        return [c for c in ("red", "green") if c.startswith(request.argument_value)]

    @server.resource(
        "paint://{colour}",
        lister=lambda: [ResourceInfo("paint://red", "red")],
        completer=colours,
    )
    def paint(colour: str) -> str:
        return f"a tin of {colour}"

    @server.prompt(completer=colours)
    def mix(colour: str) -> str:
        return f"mix {colour}"

    @server.resource("notes://size", size=5)
    def sized() -> str:
        return "12345"

    client = await connect(server)
    listed = (await client.result("resources/list"))["resources"]
    assert {"uri": "paint://red", "name": "red"} in listed
    assert {"uri": "notes://size", "name": "sized", "size": 5} in [
        {k: v for k, v in entry.items() if k in ("uri", "name", "size")} for entry in listed
    ]
    for ref in ({"type": "ref/resource", "uri": "paint://{colour}"}, {"type": "ref/prompt", "name": "mix"}):
        done = await client.result("completion/complete", {"ref": ref, "argument": {"name": "colour", "value": "g"}})
        assert done["completion"]["values"] == ["green"]


def test_options_a_kind_of_resource_has_not_are_refused(server: McpServer) -> None:
    with pytest.raises(ValueError, match="lister and completer are a template's"):

        @server.resource("notes://fixed", lister=lambda: [])
        def fixed() -> str:
            return ""

    with pytest.raises(ValueError, match="size is a fixed resource's"):

        @server.resource("notes://{day}", size=3)
        def daily(day: str) -> str:
            return day


async def test_an_integer_given_as_5_0_arrives_as_an_int_and_a_bool_for_an_int_is_the_servers_bug(
    server: McpServer, connect: Connect
) -> None:
    seen: list[Any] = []

    @server.tool
    def double(n: int) -> int:
        seen.append(n)
        return n * 2

    @server.tool
    def is_int() -> int:
        return True  # a bool, which -> int does not describe

    client = await connect(server)
    result = await client.result("tools/call", {"name": "double", "arguments": {"n": 5.0}})
    assert result["structuredContent"] == {"result": 10} and type(seen[0]) is int
    error = await client.error("tools/call", {"name": "is_int"})
    assert error.code == INTERNAL_ERROR
