"""Tool transforms (engine/transform.py): the front schema, the argument map per call, the
refusals, the wrapper, one factory value per logical call (MRTR rounds, tasks), headers."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcp_sse_server import InMemoryClient, McpServer, RequestContext, Tool
from mcp_sse_server.engine.middleware import Middleware, RunNext
from mcp_sse_server.engine.transform import Arg, Forward, transform

SESSION, STATELESS = "session", "2026-07-28"

SCHEMA = {
    "type": "object",
    "properties": {
        "q": {"type": "string", "description": "what to find"},
        "limit": {"type": "integer"},
        "region": {"type": "string", "x-mcp-header": "Region"},
        "key": {"type": "string", "x-mcp-header": "Key"},
    },
    "required": ["q", "limit", "key"],
    "additionalProperties": False,
}


def search_tool(seen: list[dict[str, Any]]) -> Tool:
    def search(arguments: dict[str, Any], ctx: RequestContext) -> str:
        seen.append(dict(arguments))
        return f"{arguments['q']}:{arguments['limit']}"

    return Tool("search", SCHEMA, search, description="Search.", tags=frozenset({"base"}))


def derived(seen: list[dict[str, Any]], **options: Any) -> Tool:
    args = {
        "q": Arg(name="query", description="the words"),
        "limit": Arg(default=10),
        "key": Arg(hide=True, value="secret"),
        **options.pop("args", {}),
    }
    return transform(search_tool(seen), name="find", title="Find", description="Finds.", args=args, **options)


def test_the_front_schema_is_derived_once_and_the_base_is_unchanged() -> None:
    seen: list[dict[str, Any]] = []
    base = search_tool(seen)
    tool = transform(
        base, name="find", args={"q": Arg(name="query"), "limit": Arg(default=10), "key": Arg(hide=True, value="k")}
    )
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to find"},
            "limit": {"type": "integer", "default": 10},
            "region": {"type": "string", "x-mcp-header": "Region"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert base.input_schema == SCHEMA and base.name == "search"
    assert tool.description == "Search." and tool.tags == frozenset({"base"})  # inherited


@pytest.mark.parametrize("mode", [SESSION, STATELESS])
async def test_a_call_with_front_arguments_reaches_the_base_with_its_own(mode: str) -> None:
    seen: list[dict[str, Any]] = []
    server = McpServer("s")
    server.add_tool(derived(seen, tags={"front"}, scopes=()))
    async with InMemoryClient(server, mode=mode) as client:
        [listed] = await client.list_tools(raw=True)
        assert (listed["name"], listed["title"], listed["description"]) == ("find", "Find", "Finds.")
        assert listed["inputSchema"]["properties"]["query"]["description"] == "the words"
        result = await client.call_tool("find", {"query": "cats"})
        assert result.content[0].text == "cats:10"  # type: ignore[union-attr]
    assert seen == [{"q": "cats", "limit": 10, "key": "secret"}]
    assert server.tools[0].tags == frozenset({"front"})


async def test_validation_errors_name_the_front_arguments() -> None:
    server = McpServer("s")
    server.add_tool(derived([]))
    async with InMemoryClient(server) as client:
        wrong = await client.call_tool("find", {"query": 3}, raw=True)
        assert wrong["isError"] and "query" in wrong["content"][0]["text"]
        assert "'q'" not in wrong["content"][0]["text"]
        hidden = await client.call_tool("find", {"query": "x", "key": "mine"}, raw=True)
        assert hidden["isError"]  # a hidden argument is not the client's to send (additionalProperties)
        missing = await client.call_tool("find", {}, raw=True)
        assert missing["isError"] and "query" in missing["content"][0]["text"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"nope": Arg(name="x")}, "has no argument 'nope'"),
        ({"limit": Arg(name="q")}, "already an argument"),
        ({"key": Arg(hide=True)}, "hidden argument 'key' is required"),
        ({"key": Arg(hide=True, value=1, factory=lambda: 2)}, "both a value and a factory"),
        ({"region": Arg(value="eu")}, "only when hidden"),
        ({"q": Arg(required=False)}, "give it a default"),
    ],
)
def test_an_argument_map_that_cannot_work_is_refused(args: dict[str, Arg], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        transform(search_tool([]), args=args)


def test_a_base_without_a_handler_is_refused() -> None:
    with pytest.raises(ValueError, match="no handler"):
        transform(Tool("t", {"type": "object"}), name="u")


async def test_required_and_optional_can_be_changed() -> None:
    seen: list[dict[str, Any]] = []
    tool = transform(
        search_tool(seen),
        args={"region": Arg(required=True), "limit": Arg(default=1, required=False), "key": Arg(hide=True, value="k")},
    )
    assert tool.input_schema["required"] == ["q", "region"]


async def test_a_wrapper_gets_forward_and_the_front_arguments() -> None:
    seen: list[dict[str, Any]] = []

    async def shout(arguments: dict[str, Any], ctx: RequestContext, forward: Forward) -> str:
        value = await forward(**{**arguments, "query": arguments["query"].upper()})
        return f"<{value}>"

    server = McpServer("s")
    server.add_tool(derived(seen, wrap=shout))
    async with InMemoryClient(server) as client:
        result = await client.call_tool("find", {"query": "cats", "limit": 2})
        assert result.content[0].text == "<CATS:2>"  # type: ignore[union-attr]
    assert seen == [{"q": "CATS", "limit": 2, "key": "secret"}]


async def test_tier_two_middleware_sees_the_front_tool_once() -> None:
    runs: list[tuple[str, dict[str, Any]]] = []

    class Runs(Middleware):
        async def on_tool_run(self, context: RequestContext, tool: Tool, arguments: Any, call_next: RunNext) -> Any:
            runs.append((tool.name, dict(arguments)))
            return await call_next(arguments)

    server = McpServer("s", middleware=[Runs()])
    server.add_tool(derived([]))
    async with InMemoryClient(server) as client:
        await client.call_tool("find", {"query": "x"})
    assert runs == [("find", {"query": "x"})]


def asking_tool(made: list[int], values: list[Any]) -> Tool:
    async def ask(arguments: dict[str, Any], ctx: RequestContext) -> str:
        values.append(arguments["nonce"])
        answer = await ctx.session.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"{answer.action}:{arguments['nonce']}"

    counter = itertools.count(1)

    def nonce() -> int:
        value = next(counter)
        made.append(value)
        return value

    base = Tool("ask", {"type": "object", "properties": {"nonce": {"type": "integer"}}, "required": ["nonce"]}, ask)
    return transform(base, name="confirm", task_support="optional", args={"nonce": Arg(hide=True, factory=nonce)})


async def accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


def asking_server() -> tuple[McpServer, list[int], list[Any]]:
    """A server with the asking tool, the factory values made and the values its runs saw."""
    made: list[int] = []
    values: list[Any] = []
    server = McpServer("s")
    server.add_tool(asking_tool(made, values))
    return server, made, values


async def test_an_mrtr_rerun_sees_the_factory_value_of_its_first_round() -> None:
    server, made, values = asking_server()
    async with InMemoryClient(server, mode=STATELESS, elicitation_handler=accept) as client:
        result = await client.call_tool("confirm")
        assert result.content[0].text == "accept:1"  # type: ignore[union-attr]
    assert values == [1, 1]  # two rounds, one value
    assert made == [1]


async def test_a_session_call_and_a_task_make_one_factory_value_each() -> None:
    server, made, values = asking_server()
    async with InMemoryClient(server, mode=SESSION, elicitation_handler=accept) as client:
        assert (await client.call_tool("confirm")).content[0].text == "accept:1"  # type: ignore[union-attr]
        handle = await client.call_tool_task("confirm")
        assert (await handle.result()).content[0].text == "accept:2"  # type: ignore[union-attr]
    assert made == [1, 2] and values == [1, 2]


def test_headers_follow_a_renamed_argument_and_leave_with_a_hidden_one() -> None:
    server = McpServer("s")
    server.add_tool(transform(search_tool([]), args={"region": Arg(name="zone"), "key": Arg(hide=True, value="k")}))
    [header] = server.mirrored_headers("search")
    assert (header.name, header.path) == ("Region", ("zone",))


async def test_a_transformed_copy_of_a_mounted_tool() -> None:
    child = McpServer("c")
    seen: list[dict[str, Any]] = []
    child.add_tool(search_tool(seen))
    parent = McpServer("p")
    parent.mount(child, namespace="c")
    base = child.tool_registry.get("search")
    assert base is not None
    parent.add_tool(transform(base, name="lookup", args={"key": Arg(hide=True, value="k"), "limit": Arg(default=3)}))
    async with InMemoryClient(parent) as client:
        assert sorted(t.name for t in await client.list_tools()) == ["c_search", "lookup"]
        assert (await client.call_tool("lookup", {"q": "dogs"})).content[0].text == "dogs:3"  # type: ignore[union-attr]
