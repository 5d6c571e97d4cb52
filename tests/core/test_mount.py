"""Mounting and importing servers (engine/mount.py): namespacing, collisions, live changes,
middleware exactly once, context through a mount, URI rewriting; in memory at each era, and
over a real HTTP server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_sse_server import CallToolResult, InMemoryClient, McpError, McpServer, RequestContext, Resource, Tool
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification
from mcp_sse_server.engine.middleware import CallNext, Middleware, RunNext
from mcp_sse_server.engine.mount import back_key, check_namespace, front_key
from mcp_sse_server.engine.types import ResourceLink, ResourceTemplate

SESSION, STATELESS = "session", "2026-07-28"
MODES = [SESSION, STATELESS]
CITIES = ("Oslo", "Osaka", "Lima")


class Seen(Middleware):
    """Notes every tier-1 request and every tier-2 tool run, under its name."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def on_call_tool(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        self.log.append(f"{self.name}:call {params['name']}")
        context.state.setdefault("seen", []).append(self.name)
        return await call_next(params)

    async def on_tool_run(
        self, context: RequestContext, tool: Tool, arguments: dict[str, Any], call_next: RunNext
    ) -> Any:
        self.log.append(f"{self.name}:run {tool.name}")
        return await call_next(arguments)


def weather() -> McpServer:
    child = McpServer("weather")

    @child.tool()
    def forecast(city: str) -> str:
        """The forecast."""
        return f"sunny in {city}"

    @child.tool()
    def report(city: str) -> CallToolResult:
        """A link to the report."""
        return CallToolResult([ResourceLink(f"report://{city}", city), ResourceLink("https://example.com/x", "web")])

    child.add_resource(Resource.text("file:///notes.txt", "notes", "cloudy"))
    child.add_resource_template(
        ResourceTemplate("report://{city}", "report", lambda uri, variables, ctx: f"report for {variables['city']}")
    )

    @child.prompt()
    def ask(city: str) -> str:
        """Ask about a city."""
        return f"What is the weather in {city}?"

    return child


# --- the namespacing rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "key", "front"),
    [
        ("tool", "forecast", "wx_forecast"),
        ("prompt", "ask_me", "wx_ask_me"),
        ("resource", "file:///a/b", "wx+file:///a/b"),
        ("resource", "urn:isbn:1", "wx+urn:isbn:1"),
        ("resource", "git+ssh://host/repo", "wx+git+ssh://host/repo"),
        ("template", "users://{id}", "wx+users://{id}"),
        ("resource", "skill://pdf/SKILL.md", "skill://wx/pdf/SKILL.md"),
    ],
)
def test_the_rule_round_trips(kind: Any, key: str, front: str) -> None:
    assert front_key("wx", kind, key) == front
    assert back_key("wx", kind, front) == key
    assert back_key("other", kind, front) is None
    assert front_key("", kind, key) == key


@pytest.mark.parametrize("bad", ["Wx", "w_x", "w+x", "1wx", "x" * 33, "w x"])
def test_a_bad_namespace_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        check_namespace(bad)
    with pytest.raises(ValueError, match="namespace"):
        McpServer("p").mount(weather(), namespace=bad)


# --- listing and calling -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_mounted_entries_are_listed_and_served_under_the_namespace(mode: str) -> None:
    parent = McpServer("front")
    parent.add_tool(Tool("own", {"type": "object"}, lambda args, ctx: "mine"))
    parent.mount(weather(), namespace="wx")
    async with InMemoryClient(parent, mode=mode) as client:
        assert [tool.name for tool in await client.list_tools()] == ["own", "wx_forecast", "wx_report"]
        result = await client.call_tool("wx_forecast", {"city": "Oslo"})
        assert result.content[0].text == "sunny in Oslo"  # type: ignore[union-attr]
        assert (await client.call_tool("own")).content[0].text == "mine"  # type: ignore[union-attr]
        resources = await client.list_resources(raw=True)
        assert [r["uri"] for r in resources] == ["wx+file:///notes.txt"]
        templates = await client.list_resource_templates(raw=True)
        assert [t["uriTemplate"] for t in templates] == ["wx+report://{city}"]
        read = await client.read_resource("wx+file:///notes.txt", raw=True)
        assert read["contents"][0] == {"uri": "wx+file:///notes.txt", "mimeType": "text/plain", "text": "cloudy"}
        read = await client.read_resource("wx+report://Oslo", raw=True)
        assert read["contents"][0]["uri"] == "wx+report://Oslo" and read["contents"][0]["text"] == "report for Oslo"
        prompt = await client.get_prompt("wx_ask", {"city": "Oslo"}, raw=True)
        assert "Oslo" in prompt["messages"][0]["content"]["text"]
        with pytest.raises(McpError, match="Unknown tool"):
            await client.call_tool("forecast", {"city": "Oslo"})  # the child's own name is not served


async def test_resource_links_in_results_name_the_front_uri_and_are_readable() -> None:
    parent = McpServer("front")
    parent.mount(weather(), namespace="wx")
    async with InMemoryClient(parent) as client:
        result = await client.call_tool("wx_report", {"city": "Oslo"}, raw=True)
        uris = [block["uri"] for block in result["content"]]
        assert uris == ["wx+report://Oslo", "https://example.com/x"]  # a foreign URI is left alone
        read = await client.read_resource(uris[0], raw=True)
        assert read["contents"][0]["text"] == "report for Oslo"


async def test_an_older_revision_gets_the_mounted_result_cut_down_once() -> None:
    child = McpServer("c")

    @child.tool()
    def total(n: int) -> dict[str, int]:
        return {"total": n}

    parent = McpServer("front")
    parent.mount(child, namespace="c")
    async with InMemoryClient(parent, mode=SESSION) as new:
        assert (await new.call_tool("c_total", {"n": 2}, raw=True))["structuredContent"] == {"total": 2}
    from fixtures.sessions import RawClient  # a raw 2024-11-05 session: no structuredContent there
    from mcp_sse_server import MemoryTransport

    server_side, client_side = MemoryTransport.pair()
    await parent.connect(server_side)
    raw = RawClient(parent, client_side)
    try:
        await raw.initialize(protocol_version="2024-11-05")
        result = await raw.result("tools/call", {"name": "c_total", "arguments": {"n": 2}})
        assert "structuredContent" not in result and '"total"' in result["content"][0]["text"]
    finally:
        await raw.close()


async def test_three_levels_deep_route_and_list() -> None:
    leaf = McpServer("leaf")
    leaf.add_tool(Tool("ping", {"type": "object"}, lambda args, ctx: "pong"))
    leaf.add_resource(Resource.text("mem://x", "x", "leaf data"))
    middle, top = McpServer("middle"), McpServer("top")
    middle.mount(leaf, namespace="leaf")
    top.mount(middle, namespace="mid")
    async with InMemoryClient(top) as client:
        assert [tool.name for tool in await client.list_tools()] == ["mid_leaf_ping"]
        assert (await client.call_tool("mid_leaf_ping")).content[0].text == "pong"  # type: ignore[union-attr]
        read = await client.read_resource("mid+leaf+mem://x", raw=True)
        assert read["contents"][0] == {"uri": "mid+leaf+mem://x", "mimeType": "text/plain", "text": "leaf data"}


async def test_the_parent_pages_the_merged_list() -> None:
    parent = McpServer("front", page_size=2)
    parent.add_tool(Tool("own", {"type": "object"}, lambda args, ctx: "mine"))
    parent.mount(weather(), namespace="wx")
    parent.mount(weather(), namespace="wy")
    async with InMemoryClient(parent) as client:
        first = await client.request("tools/list", {})
        assert [t["name"] for t in first["tools"]] == ["own", "wx_forecast"]
        second = await client.request("tools/list", {"cursor": first["nextCursor"]})
        assert [t["name"] for t in second["tools"]] == ["wx_report", "wy_forecast"]
        names = [tool.name for tool in await client.list_tools()]
        assert names == ["own", "wx_forecast", "wx_report", "wy_forecast", "wy_report"]


async def test_capabilities_include_what_only_a_mount_offers() -> None:
    parent = McpServer("front")
    assert "tools" not in parent.capabilities
    parent.mount(weather(), namespace="wx")
    assert {"tools", "prompts", "resources"} <= set(parent.capabilities)


# --- collisions -----------------------------------------------------------------------------------


def test_a_collision_at_mount_names_both_owners_and_mounts_nothing() -> None:
    parent = McpServer("front")
    parent.add_tool(Tool("wx_forecast", {"type": "object"}, lambda args, ctx: "mine"))
    child = weather()
    with pytest.raises(ValueError, match=r"'wx_forecast' of mounted server 'weather' collides with 'front'"):
        parent.mount(child, namespace="wx")
    assert parent.mounted_names("tool") == [] and child._mounted_in is None


def test_a_later_registration_that_collides_is_refused_on_either_side() -> None:
    parent, child, other = McpServer("front"), McpServer("a"), McpServer("b")
    parent.mount(child, namespace="")  # no namespace: the child's names are the front names
    parent.mount(other, namespace="b")
    parent.add_tool(Tool("x", {"type": "object"}, lambda args, ctx: "parent"))
    with pytest.raises(ValueError, match="collides with 'front'"):
        child.add_tool(Tool("x", {"type": "object"}, lambda args, ctx: "child"))
    assert "x" not in child.tool_registry
    child.add_tool(Tool("y", {"type": "object"}, lambda args, ctx: "child"))
    with pytest.raises(ValueError, match="collides with mounted server 'a'"):
        parent.add_tool(Tool("y", {"type": "object"}, lambda args, ctx: "parent"))
    child.add_tool(Tool("b_z", {"type": "object"}, lambda args, ctx: "child"))
    with pytest.raises(ValueError, match="collides with mounted server 'a'"):
        other.add_tool(Tool("z", {"type": "object"}, lambda args, ctx: "other"))
    child.add_tool(Tool("y", {"type": "object"}, lambda args, ctx: "again"))  # replacing its own: allowed
    with pytest.raises(ValueError, match="collides"):
        child.add_resource(Resource.text("b+mem://r", "r", "x"))
        other.add_resource(Resource.text("mem://r", "r", "y"))


def test_a_collision_deep_in_the_tree_is_refused() -> None:
    leaf, middle, top = McpServer("leaf"), McpServer("middle"), McpServer("top")
    middle.mount(leaf, namespace="l")
    top.mount(middle, namespace="m")
    top.add_tool(Tool("m_l_t", {"type": "object"}, lambda args, ctx: "top"))
    with pytest.raises(ValueError, match="collides with 'top'"):
        leaf.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: "leaf"))


def test_mounting_twice_in_itself_or_after_serving_is_refused() -> None:
    parent, child = McpServer("front"), McpServer("c")
    parent.mount(child, namespace="c")
    with pytest.raises(ValueError, match="already mounted"):
        McpServer("other").mount(child, namespace="c")
    with pytest.raises(ValueError, match="inside itself"):
        child.mount(parent, namespace="p")
    with pytest.raises(ValueError, match="inside itself"):
        parent.mount(parent, namespace="p")


async def test_a_child_that_served_on_its_own_is_refused() -> None:
    child = weather()
    async with InMemoryClient(child) as client:
        await client.list_tools()
    with pytest.raises(RuntimeError, match="already served"):
        McpServer("front").mount(child, namespace="wx")


# --- live changes --------------------------------------------------------------------------------


async def test_later_registrations_show_through_and_list_changed_reaches_the_parent_session() -> None:
    parent, child = McpServer("front"), weather()
    parent.mount(child, namespace="wx")
    changed: list[str] = []

    def on_notification(notification: JsonRpcNotification) -> None:
        changed.append(notification.method)

    async with InMemoryClient(parent, mode=SESSION, on_notification=on_notification) as client:
        assert "wx_new" not in [tool.name for tool in await client.list_tools()]
        await client.call_tool("wx_forecast", {"city": "Oslo"})  # (the parent's routes are built now)
        child.add_tool(Tool("new", {"type": "object"}, lambda args, ctx: "fresh"))
        for _ in range(200):  # (bounded: the notification is sent soon after)
            if "notifications/tools/list_changed" in changed:
                break
            await asyncio.sleep(0.01)
        assert "notifications/tools/list_changed" in changed
        assert "wx_new" in [tool.name for tool in await client.list_tools()]
        assert (await client.call_tool("wx_new")).content[0].text == "fresh"  # type: ignore[union-attr]
        child.remove_tool("new")
        with pytest.raises(McpError, match="Unknown tool"):
            await client.call_tool("wx_new")


async def test_a_child_resource_update_reaches_a_subscriber_under_the_front_uri() -> None:
    parent, child = McpServer("front"), weather()
    parent.mount(child, namespace="wx")
    updated: list[Any] = []

    def on_notification(notification: JsonRpcNotification) -> None:
        if notification.method == "notifications/resources/updated":
            updated.append((notification.params or {}).get("uri"))

    async with InMemoryClient(parent, mode=SESSION, on_notification=on_notification) as client:
        await client.request("resources/subscribe", {"uri": "wx+file:///notes.txt"})
        await child.notify_resource_updated("file:///notes.txt")
        for _ in range(200):
            if updated:
                break
            await asyncio.sleep(0.01)
        assert updated == ["wx+file:///notes.txt"]


# --- middleware and context ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_parent_and_child_middleware_each_run_once_around_a_mounted_tool(mode: str) -> None:
    log: list[str] = []
    child = McpServer("c", middleware=[Seen("child", log)])
    seen_state: list[Any] = []

    @child.tool()
    def echo(text: str, ctx: RequestContext) -> str:
        seen_state.append(list(ctx.state["seen"]))
        return text

    parent = McpServer("front", middleware=[Seen("parent", log)])
    parent.mount(child, namespace="c")
    async with InMemoryClient(parent, mode=mode) as client:
        log.clear()
        assert (await client.call_tool("c_echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
    assert log == ["parent:call c_echo", "child:call echo", "parent:run echo", "child:run echo"]
    assert seen_state == [["parent", "child"]]  # the parent's context.state is the child's (one request)


async def test_middleware_added_to_the_parent_after_the_mount_wraps_mounted_tools() -> None:
    log: list[str] = []
    child = McpServer("c")
    child.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: "ok"))
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    parent.add_middleware(Seen("parent", log))
    async with InMemoryClient(parent) as client:
        log.clear()
        await client.call_tool("c_t")
        assert [t.name for t in await client.list_tools()] == ["c_t"]
    assert log == ["parent:call c_t", "parent:run t"]


@pytest.mark.parametrize("mode", MODES)
async def test_progress_logging_and_elicitation_work_through_a_mount(mode: str) -> None:
    child = McpServer("c")

    async def ask(arguments: dict[str, Any], ctx: RequestContext) -> str:
        await ctx.report_progress(1, 2)
        await ctx.log("info", "asking")
        answer = await ctx.session.elicit("Colour?", {"type": "object", "properties": {"c": {"type": "string"}}})
        return f"{answer.action}:{(answer.content or {})['c']}"

    child.add_tool(Tool("ask", {"type": "object"}, ask))
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    progress: list[float] = []
    logs: list[Any] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"c": "blue"}}

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    def on_log(params: dict[str, Any]) -> None:
        logs.append(params.get("data"))

    async with InMemoryClient(parent, mode=mode, elicitation_handler=elicit, on_log=on_log) as client:
        result = await client.call_tool("c_ask", on_progress=on_progress)
        assert result.content[0].text == "accept:blue"  # type: ignore[union-attr]
    assert progress and progress[0] == 1
    assert "asking" in logs


async def test_cancelling_a_mounted_call_cancels_the_child_tool() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(arguments: dict[str, Any], ctx: RequestContext) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    child = McpServer("c")
    child.add_tool(Tool("slow", {"type": "object"}, slow))
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    async with InMemoryClient(parent, mode=SESSION) as client:
        call = asyncio.create_task(client.call_tool("c_slow"))
        await asyncio.wait_for(started.wait(), 5)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), 5)


async def test_the_child_visibility_and_scopes_are_respected() -> None:
    child = McpServer("c")
    child.add_tool(Tool("shown", {"type": "object"}, lambda args, ctx: "s"))
    child.add_tool(Tool("secret", {"type": "object"}, lambda args, ctx: "x", tags=frozenset({"internal"})))
    child.disable(tags=["internal"])
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    async with InMemoryClient(parent) as client:
        assert [tool.name for tool in await client.list_tools()] == ["c_shown"]
        with pytest.raises(McpError, match="Unknown tool"):
            await client.call_tool("c_secret")


async def test_completion_of_a_mounted_prompt_goes_to_the_child_completer() -> None:
    from mcp_sse_server.engine.types import Prompt, PromptArgument

    child = McpServer("c")
    child.add_prompt(
        Prompt(
            "city",
            lambda args, ctx: "x",
            arguments=[PromptArgument("name")],
            completer=lambda request, ctx: [
                c for c in ("Oslo", "Osaka", "Lima") if c.startswith(request.argument_value)
            ],
        )
    )
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    async with InMemoryClient(parent) as client:
        result = await client.request(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "c_city"}, "argument": {"name": "name", "value": "Os"}},
        )
        assert result["completion"]["values"] == ["Oslo", "Osaka"]


async def test_a_mounted_task_tool_runs_in_the_parents_runtime() -> None:
    child = McpServer("c")

    async def work(arguments: dict[str, Any], ctx: RequestContext) -> str:
        return "done"

    child.add_tool(Tool("work", {"type": "object"}, work, task_support="optional"))
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    assert parent.tasks_declared
    async with InMemoryClient(parent, mode=SESSION) as client:
        handle = await client.call_tool_task("c_work")
        result = await handle.result()
        assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert parent.has_task_runtime


# --- over HTTP ------------------------------------------------------------------------------------


async def test_a_mounted_server_over_http() -> None:
    from mcp_sse_server.client import StreamableHttpClient
    from mcp_sse_server.transport.http import McpHttpServer

    log: list[str] = []
    parent = McpServer("front", middleware=[Seen("parent", log)])
    parent.mount(weather(), namespace="wx")
    http = await McpHttpServer.bind(parent, host="127.0.0.1", port=0)
    try:
        for mode in MODES:
            async with StreamableHttpClient(http.endpoint, mode=mode) as client:
                assert [tool.name for tool in await client.list_tools()] == ["wx_forecast", "wx_report"]
                result = await client.call_tool("wx_report", {"city": "Rome"}, raw=True)
                assert result["content"][0]["uri"] == "wx+report://Rome"
                read = await client.read_resource("wx+report://Rome", raw=True)
                assert read["contents"][0]["text"] == "report for Rome"
    finally:
        await http.close()
    assert log.count("parent:run report") == 2


# --- import_server --------------------------------------------------------------------------------


async def test_import_server_is_a_snapshot() -> None:
    parent, child = McpServer("front"), weather()
    parent.import_server(child, namespace="wx")
    child.add_tool(Tool("later", {"type": "object"}, lambda args, ctx: "later"))
    assert [tool.name for tool in parent.tools] == ["wx_forecast", "wx_report"]
    async with InMemoryClient(parent) as client:
        assert (await client.call_tool("wx_forecast", {"city": "Oslo"})).content[0].text == "sunny in Oslo"  # type: ignore[union-attr]
        read = await client.read_resource("wx+report://Oslo", raw=True)
        assert read["contents"][0]["text"] == "report for Oslo"
        prompt = await client.get_prompt("wx_ask", {"city": "Oslo"}, raw=True)
        assert "Oslo" in prompt["messages"][0]["content"]["text"]
    with pytest.raises(ValueError, match="already served"):
        parent.import_server(weather(), namespace="wx")


# --- skills ---------------------------------------------------------------------------------------


async def test_mounted_skills_are_listed_got_and_read_under_skill_ns(tmp_path: Any) -> None:
    root = tmp_path / "skills" / "pdf"
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: pdf\ndescription: Reads PDFs.\n---\n# pdf\n", encoding="utf-8")
    (root / "references" / "FORMS.md").write_text("forms", encoding="utf-8")
    child = McpServer("docs", skills=[tmp_path / "skills"])
    parent = McpServer("front")
    parent.mount(child, namespace="docs")
    async with InMemoryClient(parent, mode=SESSION) as client:
        listed = await client.request("skills/list", {})
        [entry] = listed["skills"]
        assert entry["uri"] == "skill://docs/pdf/SKILL.md"
        assert sorted(file["uri"] for file in entry["resources"]) == [
            "skill://docs/pdf/SKILL.md",
            "skill://docs/pdf/references/FORMS.md",
        ]
        got = await client.request("skills/get", {"uri": "skill://docs/pdf/SKILL.md"})
        assert got["skill"]["uri"] == "skill://docs/pdf/SKILL.md"
        directory = await client.request("resources/directory/read", {"uri": "skill://docs/pdf/references"})
        assert [row["uri"] for row in directory["resources"]] == ["skill://docs/pdf/references/FORMS.md"]
        read = await client.read_resource("skill://docs/pdf/references/FORMS.md", raw=True)
        assert read["contents"][0]["uri"] == "skill://docs/pdf/references/FORMS.md"
        assert read["contents"][0]["text"] == "forms"
        assert "skill://docs/pdf/SKILL.md" in [r["uri"] for r in await client.list_resources(raw=True)]


async def test_the_child_servers_own_log_reaches_the_requests_session() -> None:
    child = McpServer("c")

    async def noisy(arguments: dict[str, Any], ctx: RequestContext) -> str:
        await child.log("warning", "from the child")  # the server's method, not the context's
        return "ok"

    child.add_tool(Tool("noisy", {"type": "object"}, noisy))
    parent = McpServer("front")
    parent.mount(child, namespace="c")
    logs: list[Any] = []
    async with InMemoryClient(parent, mode=SESSION, on_log=lambda params: logs.append(params.get("data"))) as client:
        await client.call_tool("c_noisy")
    assert logs == ["from the child"]


def test_a_mounted_tools_mirrored_headers_are_its_childs_at_any_depth() -> None:
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    inner, middle, top = McpServer("inner"), McpServer("middle"), McpServer("top")
    top.add_tool(Tool("own", schema, lambda args, ctx: "own"))
    middle.mount(inner, namespace="a")
    top.mount(middle, namespace="b")
    inner.add_tool(Tool("route", schema, lambda args, ctx: "routed"))  # (after the mounts: shows through)
    [header] = top.mirrored_headers("b_a_route")
    assert (header.name, header.path) == ("Region", ("region",))
    assert [found.name for found in top.mirrored_headers("own")] == ["Region"]  # the parent's own, still
    assert top.mirrored_headers("b_a_missing") == top.mirrored_headers("route") == ()


def test_a_mounted_entrys_scopes_are_needed_through_the_parent_at_any_depth() -> None:
    inner, middle, top = McpServer("inner"), McpServer("middle"), McpServer("top")
    middle.mount(inner, namespace="a")
    top.mount(middle, namespace="b")
    inner.add_tool(Tool("deploy", {"type": "object"}, lambda args, ctx: "deployed", scopes=["ops:write"]))
    inner.add_resource(Resource.text("config://secret", "secret", "s3cret", scopes=["config:read"]))
    inner.add_resource_template(
        ResourceTemplate("notes://{id}", "note", lambda uri, params, ctx: "n", scopes=["notes:read"])
    )
    middle.add_tool(Tool("plan", {"type": "object"}, lambda args, ctx: "planned", scopes=["plan:use"]))
    assert top.scopes_needed("tools/call", {"name": "b_a_deploy"}) == {"ops:write"}
    assert top.scopes_needed("tools/call", {"name": "b_plan"}) == {"plan:use"}
    assert top.scopes_needed("resources/read", {"uri": "b+a+config://secret"}) == {"config:read"}
    assert top.scopes_needed("resources/read", {"uri": "b+a+notes://7"}) == {"notes:read"}
    assert top.scopes_needed("tools/call", {"name": "b_a_other"}) == frozenset()
    top.add_tool(Tool("own", {"type": "object"}, lambda args, ctx: "own", scopes=["own:use"]))
    assert top.scopes_needed("tools/call", {"name": "own"}) == {"own:use"}


async def test_a_mounted_tool_needing_a_scope_is_refused_over_http_without_it() -> None:
    from fixtures.keys import ISSUER, RESOURCE, SigningKey
    from mcp_sse_server.auth import JwtVerifier
    from mcp_sse_server.auth.resource import ResourceServer
    from mcp_sse_server.client import StreamableHttpClient
    from mcp_sse_server.transport.http import HttpSettings, McpHttpServer

    child, parent = McpServer("child"), McpServer("parent")
    child.add_tool(Tool("deploy", {"type": "object"}, lambda args, ctx: "deployed", scopes=["ops:write"]))
    parent.mount(child, namespace="wx")
    key = SigningKey("mount-scopes")
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    http = await McpHttpServer.bind(
        parent, settings=HttpSettings(path="/mcp", auth=ResourceServer(RESOURCE, [ISSUER], verifier=verifier))
    )
    try:
        for mode in ("session", "2026-07-28"):
            narrow = {"authorization": f"Bearer {key.sign(scope='mcp:tools')}"}
            async with StreamableHttpClient(http.endpoint, headers=narrow, mode=mode) as client:
                assert await client.list_tools() == []
                with pytest.raises(McpError, match="needs the scope ops:write"):
                    await client.call_tool("wx_deploy", {})
            wide = {"authorization": f"Bearer {key.sign(scope='mcp:tools ops:write')}"}
            async with StreamableHttpClient(http.endpoint, headers=wide, mode=mode) as client:
                assert (await client.call_tool("wx_deploy", {})).content[0].text == "deployed"  # type: ignore[union-attr]
    finally:
        await http.close(deadline=1)
        await verifier.aclose()
