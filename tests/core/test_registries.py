"""The registries of a server (tools.py, resources.py, prompts.py, skills.py, registry.py): their
public API on their own, and the same objects as a server serves them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import (
    CallToolResult,
    McpServer,
    Prompt,
    RequestContext,
    Resource,
    ResourceTemplate,
    TextResourceContents,
    Tool,
)
from mcp_sse_server.engine.jsonrpc import McpError
from mcp_sse_server.engine.prompts import PromptRegistry
from mcp_sse_server.engine.registry import Pager
from mcp_sse_server.engine.resources import ResourceRegistry
from mcp_sse_server.engine.skills import SkillRegistry, load_skills
from mcp_sse_server.engine.tools import ToolRegistry

SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}


async def double(arguments: dict[str, Any], context: RequestContext) -> str:
    return str(arguments["a"] * 2)


def complete(request: Any, context: RequestContext) -> list[str]:
    return []


class Changes(list[str]):
    """A registry's change hook that keeps what it was told."""

    def __call__(self, notification: str) -> None:
        self.append(notification)


# --- tools ------------------------------------------------------------------------------------


def test_tools_are_added_replaced_found_and_removed_with_a_change_each() -> None:
    changes = Changes()
    tools = ToolRegistry(on_change=changes)
    first = Tool("double", SCHEMA, double)
    tools.add(first)
    tools.add(Tool("other", SCHEMA, double, scopes=["ops:write"]))
    assert [tool.name for tool in tools] == ["double", "other"] and len(tools) == 2 and "double" in tools
    assert tools.get("double") is first and tools.get("nope") is None
    replacement = Tool("double", SCHEMA, double, description="Doubles a.")
    tools.add(replacement)
    assert tools.get("double") is replacement and [tool.name for tool in tools] == ["double", "other"]
    assert tools.scopes_of("other") == ["ops:write"] and tools.scopes_of("double") == () and tools.scoped
    assert tools.remove("other") and not tools.remove("other")
    assert not tools.scoped  # (its scopes went with it)
    assert changes == ["notifications/tools/list_changed"] * 4


def test_an_invalid_tool_is_refused_whole_and_announces_nothing() -> None:
    changes = Changes()
    tools = ToolRegistry(on_change=changes)
    with pytest.raises(ValueError, match='\'bad\': inputSchema must have "type": "object"'):
        tools.add(Tool("bad", {"type": "array"}, double))
    with pytest.raises(ValueError, match="'bad': invalid JSON Schema"):
        tools.add(Tool("bad", {"type": "object", "properties": {"a": {"type": 12}}}, double))
    with pytest.raises(ValueError, match="not an OAuth scope"):
        tools.add(Tool("bad", SCHEMA, double, scopes=["has space"]))
    with pytest.raises(ValueError, match="is called as handler\\(arguments, context\\)"):
        tools.add(Tool("bad", SCHEMA, lambda: "no arguments"))
    assert len(tools) == 0 and changes == []


def test_a_tool_without_handler_needs_a_fallback_and_strict_names_refuse() -> None:
    with pytest.raises(ValueError, match="has no handler"):
        ToolRegistry().add(Tool("bare", SCHEMA))

    async def fallback(name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult.text(name)

    answered = ToolRegistry(fallback=fallback)
    answered.add(Tool("bare", SCHEMA))
    assert [tool.name for tool in answered] == ["bare"]
    with pytest.raises(ValueError, match="SEP-986"):
        ToolRegistry(strict_names=True).add(Tool("has space", SCHEMA, double))
    lenient = ToolRegistry()
    lenient.add(Tool("has space", SCHEMA, double))
    assert "has space" in lenient


def test_a_tool_with_task_support_declares_tasks_and_mirrored_headers_come_from_its_schema() -> None:
    tools = ToolRegistry()
    tools.add(Tool("double", SCHEMA, double))
    assert not tools.tasks_declared and tools.mirrored_headers("double") == () and tools.mirrored_headers("x") == ()
    tools.add(Tool("slow", SCHEMA, double, task_support="optional"))
    assert tools.tasks_declared


async def test_the_servers_tool_registry_is_what_its_sessions_are_served(connect: Connect) -> None:
    server = McpServer("s", page_size=1)
    client = await connect(server)
    server.tool_registry.add(Tool("double", SCHEMA, double))
    server.tool_registry.add(Tool("triple", SCHEMA, double))
    await client.notification("notifications/tools/list_changed")
    assert server.tools == list(server.tool_registry)
    first = await client.result("tools/list")
    second = await client.result("tools/list", {"cursor": first["nextCursor"]})
    assert [tool["name"] for tool in first["tools"] + second["tools"]] == ["double", "triple"]
    assert "nextCursor" not in second
    assert (await client.result("tools/call", {"name": "double", "arguments": {"a": 4}}))["content"][0]["text"] == "8"
    invalid = await client.result("tools/call", {"name": "double", "arguments": {}})
    assert invalid["isError"] is True  # validated by the validator compiled at add
    assert server.tool_registry.remove("triple") and server.tools == [server.tool_registry.get("double")]


async def test_a_server_without_tools_does_not_offer_them(connect: Connect) -> None:
    client = await connect(McpServer("s"))
    refused = await client.error("tools/list")
    assert (refused.code, refused.message) == (-32601, "This server does not offer tools")


# --- resources ------------------------------------------------------------------------------


def test_resources_and_templates_are_kept_apart_and_each_change_is_announced() -> None:
    changes = Changes()
    resources = ResourceRegistry(on_change=changes)
    assert not resources
    config = Resource.text("config://app", "app", "{}")
    resources.add(config)
    template = ResourceTemplate("users://{id}", "user", lambda uri, variables, context: variables["id"])
    resources.add_template(template)
    assert resources and list(resources) == [config] and len(resources) == 1 and "config://app" in resources
    assert resources.get("config://app") is config and resources.get("users://1") is None
    assert resources.templates == [template] and resources.template("users://{id}") is template
    assert not resources.has_completers
    resources.add_template(ResourceTemplate("docs://{name}", "doc", lambda uri, v, c: "", completer=complete))
    assert resources.has_completers
    assert resources.remove_template("docs://{name}") and not resources.remove_template("docs://{name}")
    assert resources.remove("config://app") and not resources.remove("config://app")
    assert resources.templates == [template] and resources  # a template alone still offers resources
    assert changes == ["notifications/resources/list_changed"] * 5


def test_bad_resources_are_refused() -> None:
    resources = ResourceRegistry()
    with pytest.raises(ValueError, match="needs a reader or fixed contents"):
        resources.add(Resource("config://app", "app"))
    with pytest.raises(ValueError):
        resources.add_template(ResourceTemplate("users://{?id}", "user", lambda uri, variables, context: ""))
    assert not resources


def test_a_uris_scopes_are_those_of_what_would_read_it() -> None:
    resources = ResourceRegistry()
    resources.add(Resource.text("users://me", "me", "me", scopes=["me:read"]))
    resources.add_template(ResourceTemplate("users://{id}", "user", lambda uri, v, c: "", scopes=["users:read"]))
    assert resources.scopes_of("users://me") == ["me:read"]  # the fixed resource comes first
    assert resources.scopes_of("users://7") == ["users:read"] and resources.scopes_of("other://x") == ()
    assert resources.template_scopes("users://{id}") == ["users:read"] and resources.template_scopes("x") == ()


async def test_reads_look_at_fixed_resources_then_served_files_then_templates(connect: Connect) -> None:
    server = McpServer("s")
    resources = server.resource_registry
    resources.add(Resource.text("doc://fixed", "fixed", "the fixed resource"))
    resources.add_template(ResourceTemplate("doc://{name}", "doc", lambda uri, variables, context: "the template"))

    class File:
        def __init__(self, uri: str) -> None:
            self.uri = uri

        def contents(self) -> TextResourceContents:
            return TextResourceContents(self.uri, "the served file", "text/plain")

    resources.serve_files({"doc://file": File("doc://file"), "doc://fixed": File("doc://fixed")})
    client = await connect(server)

    async def read(uri: str) -> str:
        return str((await client.result("resources/read", {"uri": uri}))["contents"][0]["text"])

    assert [await read(uri) for uri in ("doc://fixed", "doc://file", "doc://other")] == [
        "the fixed resource",
        "the served file",
        "the template",
    ]
    listed = await client.result("resources/list")
    assert [entry["uri"] for entry in listed["resources"]] == ["doc://fixed"]  # served files are not listed
    assert (await client.error("resources/read", {"uri": "nope://x"})).code == -32002


# --- prompts ------------------------------------------------------------------------------------


def test_prompts_are_added_found_and_removed_with_a_change_each() -> None:
    changes = Changes()
    prompts = PromptRegistry(on_change=changes)
    greet = Prompt("greet", lambda arguments, context: "Say hello.", scopes=["chat"])
    prompts.add(greet)
    assert list(prompts) == [greet] and len(prompts) == 1 and "greet" in prompts and prompts.get("greet") is greet
    assert prompts.scopes_of("greet") == ["chat"] and prompts.scopes_of("nope") == ()
    assert not prompts.has_completers
    prompts.add(Prompt("review", lambda arguments, context: "Review.", completer=complete))
    assert prompts.has_completers
    assert prompts.remove("greet") and not prompts.remove("greet") and prompts.get("greet") is None
    assert changes == ["notifications/prompts/list_changed"] * 3
    with pytest.raises(ValueError, match="Prompt 'bad': not an OAuth scope"):
        prompts.add(Prompt("bad", lambda arguments, context: "", scopes=['"quoted"']))


async def test_the_servers_prompt_registry_is_what_its_sessions_are_served(connect: Connect) -> None:
    server = McpServer("s")
    server.prompt_registry.add(Prompt("greet", lambda arguments, context: "Say hello.", description="Greets."))
    client = await connect(server)
    assert [prompt["name"] for prompt in (await client.result("prompts/list"))["prompts"]] == ["greet"]
    got = await client.result("prompts/get", {"name": "greet"})
    assert got["description"] == "Greets." and got["messages"][0]["content"]["text"] == "Say hello."
    assert "prompts" in server.capabilities and "completions" not in server.capabilities


# --- what the registries share: pages, skills ----------------------------------------------------


def test_a_pager_cuts_pages_with_cursors_bound_to_their_collection() -> None:
    with pytest.raises(ValueError, match="page_size must be a positive integer or None"):
        Pager(0)
    pager = Pager(2)
    items = [{"n": n} for n in range(5)]
    first = pager.page("tools", "tools", items, {})
    assert first["tools"] == items[:2]
    second = pager.page("tools", "tools", items, {"cursor": first["nextCursor"]})
    assert second["tools"] == items[2:4]
    assert pager.page("tools", "tools", items, {"cursor": second["nextCursor"]}) == {"tools": items[4:]}
    for bad in (first["nextCursor"], "not base64!", 12):
        with pytest.raises(McpError) as caught:
            pager.page("prompts", "prompts", items, {"cursor": bad})
        assert caught.value.code == -32602
    with pytest.raises(McpError):
        Pager().page("tools", "tools", items, {"cursor": first["nextCursor"]})  # lists are not paged here
    assert Pager().page("tools", "tools", items, {}) == {"tools": items}


def test_a_skill_registry_merges_catalogs_and_refuses_a_uri_twice(tmp_path: Path) -> None:
    skill = tmp_path / "pdf"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: pdf\ndescription: Reads PDFs.\n---\nUse it.\n")
    skills = SkillRegistry()
    assert not skills
    catalog = skills.add(load_skills(skill))
    assert skills and skills.catalog is catalog and [s.name for s in catalog.skills] == ["pdf"]
    with pytest.raises(ValueError, match="published twice"):
        skills.add(load_skills(skill))
    assert skills.catalog is catalog
