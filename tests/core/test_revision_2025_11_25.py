"""Revision 2025-11-25 server features, gated on the session's negotiated revision.

Each test connects sessions at 2025-11-25 and, where behaviour differs, at
2025-06-18, which must see exactly what it saw before this revision existed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest

from fixtures.sessions import Connect, RawClient, text_of
from mcp_sse_server import (
    CallToolResult,
    CreateMessageRequest,
    McpServer,
    Prompt,
    RequestContext,
    Resource,
    ResourceLink,
    ResourceTemplate,
    SamplingMessage,
    TextContent,
    Tool,
)
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.elicitation_schema import check_elicitation_schema
from mcp_sse_server.engine.jsonrpc import MISSING_CLIENT_CAPABILITY, JsonRpcError, JsonRpcResponse
from mcp_sse_server.engine.session import URL_ELICITATION_REQUIRED, UrlElicitationRequired
from mcp_sse_server.engine.types import Icon, ToolResultContent, ToolUseContent

NEW = "2025-11-25"
OLD = "2025-06-18"
ICON = Icon("https://example.com/icon.png", "image/png", ["48x48"], "dark")
ICON_WIRE = {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}


async def session(
    server: McpServer, connect: Connect, revision: str, capabilities: dict[str, Any] | None = None
) -> tuple[RawClient, dict[str, Any]]:
    client = await connect(server, initialize=False)
    result = await client.initialize(protocol_version=revision, capabilities=capabilities)
    assert result["protocolVersion"] == revision
    return client, result


# --- negotiation ---------------------------------------------------------------------------


def test_2025_11_25_is_served_offered_and_its_header_accepted() -> None:
    assert versions.negotiate(NEW) is versions.REVISION_2025_11_25
    assert versions.negotiate(OLD) is versions.REVISION_2025_06_18
    assert versions.for_header(NEW.encode()) and versions.for_header(OLD.encode())
    assert versions.PROTOCOL_VERSION == versions.CLIENT_OFFERS == NEW
    new, old = versions.REVISION_2025_11_25, versions.REVISION_2025_06_18
    assert (new.icons, new.elicitation_modes, new.sampling_tools, new.resumable_streams) == (True,) * 4
    assert (old.icons, old.elicitation_modes, old.sampling_tools, old.resumable_streams) == (False,) * 4


async def test_the_session_knows_its_revision_object(server: McpServer, connect: Connect) -> None:
    await session(server, connect, NEW)
    assert server.sessions[0].protocol is versions.REVISION_2025_11_25
    assert server.sessions[0].revision == NEW


# --- icons and serverInfo (SEP-973) ----------------------------------------------------------


def _iconic_server() -> McpServer:
    server = McpServer(
        "iconic",
        "1.0.0",
        title="Iconic",
        icons=[ICON],
        description="A server with icons.",
        website_url="https://example.com",
    )
    server.add_tool(Tool("paint", handler=lambda a, c: "ok", description="Paints.", icons=[ICON]))
    server.add_tool(Tool("plain", handler=lambda a, c: "ok"))
    server.add_prompt(Prompt("greet", lambda a, c: "hi", icons=[ICON]))
    server.add_resource(Resource.text("file:///a.txt", "a", "A", icons=[ICON]))
    server.add_resource_template(
        ResourceTemplate("file:///{name}", "files", lambda u, v, c: "x", icons=[ICON], mime_type="text/plain")
    )
    return server


async def test_server_info_gains_icons_description_and_website_at_2025_11_25_only(connect: Connect) -> None:
    server = _iconic_server()
    _, new = await session(server, connect, NEW)
    assert new["serverInfo"] == {
        "name": "iconic",
        "version": "1.0.0",
        "title": "Iconic",
        "description": "A server with icons.",
        "icons": [ICON_WIRE],
        "websiteUrl": "https://example.com",
    }
    _, old = await session(server, connect, OLD)
    assert old["serverInfo"] == {"name": "iconic", "version": "1.0.0", "title": "Iconic"}


async def test_listings_carry_icons_at_2025_11_25_and_are_unchanged_at_2025_06_18(connect: Connect) -> None:
    server = _iconic_server()
    new, _ = await session(server, connect, NEW)
    old, _ = await session(server, connect, OLD)
    listings = [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ]
    for method, key in listings:
        with_icons = (await new.result(method))[key]
        without = (await old.result(method))[key]
        assert with_icons[0]["icons"] == [ICON_WIRE], method
        assert all("icons" not in entry for entry in without), method
        # apart from icons, the two revisions see the same entries
        assert [{k: v for k, v in entry.items() if k != "icons"} for entry in with_icons] == without
    plain = (await new.result("tools/list"))["tools"][1]
    assert plain == {"name": "plain", "inputSchema": {"type": "object"}}


async def test_each_revisions_listing_is_built_once(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    server = _iconic_server()
    built: list[bool] = []
    to_dict = Prompt.to_dict

    def counting(self: Prompt, icons: bool = True) -> dict[str, Any]:
        built.append(icons)
        return to_dict(self, icons)

    monkeypatch.setattr(Prompt, "to_dict", counting)
    new, _ = await session(server, connect, NEW)
    old, _ = await session(server, connect, OLD)
    other_new, _ = await session(server, connect, NEW)
    for client in (new, old, other_new, new, old):
        await client.result("prompts/list")
    assert sorted(built) == [False, True]  # one build per revision, shared by its sessions
    server.add_prompt(Prompt("bye", lambda a, c: "bye"))
    await new.result("prompts/list")
    assert len(built) == 4  # the change dropped the cache: the 2025-11-25 list was rebuilt (2 prompts)


async def test_a_resource_links_icons_reach_only_2025_11_25_sessions(server: McpServer, connect: Connect) -> None:
    link = ResourceLink("file:///a.txt", "a", mime_type="text/plain", icons=[ICON])
    server.add_tool(Tool("link", handler=lambda a, c: CallToolResult([link]), run_in_thread=False))
    new, _ = await session(server, connect, NEW)
    old, _ = await session(server, connect, OLD)
    expected = {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"}
    assert (await old.result("tools/call", {"name": "link"}))["content"] == [expected]
    assert (await new.result("tools/call", {"name": "link"}))["content"] == [{**expected, "icons": [ICON_WIRE]}]
    assert link.icons == [ICON]  # the registered value is untouched


# --- tool names (SEP-986) --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a-b", "x" * 128])
def test_valid_tool_names_register_silently(name: str, caplog: pytest.LogCaptureFixture) -> None:
    server = McpServer("s", "1", strict_tool_names=True)
    with caplog.at_level(logging.WARNING, logger="mcp_sse_server"):
        server.add_tool(Tool(name, handler=lambda a, c: "ok"))
    assert caplog.records == []


@pytest.mark.parametrize("name", ["get user", "a,b", "", "x" * 129, "tool/name", "héllo"])
def test_invalid_tool_names_warn_by_default_and_are_refused_when_strict(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    lenient = McpServer("s", "1")
    with caplog.at_level(logging.WARNING, logger="mcp_sse_server"):
        lenient.add_tool(Tool(name, handler=lambda a, c: "ok"))
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "SEP-986" in caplog.records[0].getMessage()
    assert [tool.name for tool in lenient.tools] == [name]
    strict = McpServer("s", "1", strict_tool_names=True)
    with pytest.raises(ValueError, match="SEP-986"):
        strict.add_tool(Tool(name, handler=lambda a, c: "ok"))
    assert strict.tools == []


# --- JSON Schema 2020-12 (SEP-1613) ----------------------------------------------------------

SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


async def test_a_2020_12_schema_is_listed_verbatim_and_its_local_refs_validate(
    server: McpServer, connect: Connect
) -> None:
    server.add_tool(Tool("where", SCHEMA_2020_12, lambda a, c: "ok", run_in_thread=False))
    client, _ = await session(server, connect, NEW)
    listed = (await client.result("tools/list"))["tools"][0]["inputSchema"]
    assert listed == SCHEMA_2020_12
    ok = await client.result("tools/call", {"name": "where", "arguments": {"address": {"street": "Main"}}})
    assert text_of(ok) == "ok" and "isError" not in ok
    via_ref = await client.result("tools/call", {"name": "where", "arguments": {"address": {"street": 5}}})
    assert via_ref["isError"] is True and "address.street" in text_of(via_ref)
    extra = await client.result("tools/call", {"name": "where", "arguments": {"nickname": "x"}})
    assert extra["isError"] is True and "nickname" in text_of(extra)


def test_an_unsupported_dialect_is_refused_at_registration_naming_it(server: McpServer) -> None:
    schema = {"$schema": "https://example.com/my-dialect", "type": "object"}
    with pytest.raises(ValueError, match=r"unsupported JSON Schema dialect \"https://example\.com/my-dialect\""):
        server.add_tool(Tool("odd", schema, lambda a, c: "ok"))
    with pytest.raises(ValueError, match="draft-03"):
        server.add_tool(Tool("old", {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}))
    assert server.tools == []


def test_a_declared_older_dialect_is_validated_by_its_own_rules(server: McpServer) -> None:
    # draft-07 tuple validation ("items" as a list) is not 2020-12's: each follows its declared dialect
    tuple_schema = {"type": "object", "properties": {"pair": {"type": "array", "items": [{"type": "string"}]}}}
    server.add_tool(
        Tool("seven", {"$schema": "http://json-schema.org/draft-07/schema#", **tuple_schema}, lambda a, c: "ok")
    )
    assert server.tools[0].input_schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    with pytest.raises(ValueError):  # "items" must be a schema in 2020-12, the default dialect
        server.add_tool(Tool("twenty", tuple_schema))


# --- elicitation: form schemas (SEP-1034, SEP-1330) -------------------------------------------

DEFAULTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitled": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "titled": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}], "default": "#f00"},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "default": "b"},
        "multi": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["Red", "Green"]},
            "default": ["Red"],
        },
        "titledMulti": {
            "type": "array",
            "items": {"anyOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}]},
            "default": ["#0f0"],
        },
    },
}


def test_defaults_on_every_primitive_and_the_five_enum_shapes_are_accepted() -> None:
    check_elicitation_schema(DEFAULTS)
    check_elicitation_schema(ENUMS)
    with pytest.raises(ValueError, match="multi"):
        check_elicitation_schema(ENUMS, multi_select=False)


@pytest.mark.parametrize(
    ("prop", "words"),
    [
        ({"type": "string", "default": 5}, "default"),
        ({"type": "integer", "default": 1.5}, "default"),
        ({"type": "integer", "default": True}, "default"),
        ({"type": "number", "default": "x"}, "default"),
        ({"type": "boolean", "default": "yes"}, "default"),
        ({"type": "string", "enum": ["a"], "default": "z"}, "default"),
        ({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}, "enumNames"),
        ({"type": "string", "enumNames": ["A"]}, "enumNames"),
        ({"type": "string", "oneOf": [{"title": "no const"}]}, "oneOf"),
        ({"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]}, "not both"),
        ({"type": "array", "items": {"type": "string"}}, "multi-select"),
        ({"type": "array", "items": {"type": "integer", "enum": [1]}}, "multi-select"),
        ({"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["z"]}, "default"),
        ({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": -1}, "minItems"),
    ],
)
def test_malformed_defaults_and_enums_are_refused_naming_the_problem(prop: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        check_elicitation_schema({"type": "object", "properties": {"field": prop}})


async def test_form_elicitation_names_its_mode_at_2025_11_25_and_returns_multi_select_lists(
    server: McpServer, connect: Connect
) -> None:
    client, _ = await session(server, connect, NEW, {"elicitation": {}})
    task = asyncio.create_task(server.sessions[0].elicit("Pick", ENUMS))
    request = await client.server_request("elicitation/create")
    assert request.params == {"mode": "form", "message": "Pick", "requestedSchema": ENUMS}
    content = {"untitled": "b", "multi": ["Red", "Green"], "titledMulti": ["#f00"]}
    await client.send(JsonRpcResponse(request.id, {"action": "accept", "content": content}))
    answer = await task
    assert answer.accepted and answer.content == content


async def test_a_2025_06_18_session_gets_no_mode_and_no_multi_select(server: McpServer, connect: Connect) -> None:
    client, _ = await session(server, connect, OLD, {"elicitation": {}})
    with pytest.raises(ValueError, match=r"multi-select arrays need protocol revision 2025-11-25"):
        await server.sessions[0].elicit("Pick", ENUMS)
    task = asyncio.create_task(server.sessions[0].elicit("Fill", DEFAULTS))
    request = await client.server_request("elicitation/create")
    assert request.params == {"message": "Fill", "requestedSchema": DEFAULTS}
    await client.send(JsonRpcResponse(request.id, {"action": "cancel"}))
    assert (await task).action == "cancel"


async def test_form_mode_is_not_sent_to_a_client_that_declared_only_url(server: McpServer, connect: Connect) -> None:
    client, _ = await session(server, connect, NEW, {"elicitation": {"url": {}}})
    with pytest.raises(RuntimeError, match=r"form mode.*elicitation\.form is missing"):
        await server.sessions[0].elicit("x", DEFAULTS)
    await client.sync()
    assert client.received == []


# --- elicitation: URL mode (SEP-1036) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "capabilities", "words"),
    [
        (NEW, {"elicitation": {}}, r"url mode.*elicitation\.url is missing"),
        (NEW, {"elicitation": {"form": {}}}, r"url mode.*elicitation\.url is missing"),
        (NEW, {}, "did not declare the elicitation capability"),
        (OLD, {"elicitation": {"url": {}}}, "URL mode needs 2025-11-25"),
    ],
)
async def test_url_mode_is_never_sent_to_a_session_that_cannot_take_it(
    server: McpServer, connect: Connect, revision: str, capabilities: dict[str, Any], words: str
) -> None:
    client, _ = await session(server, connect, revision, capabilities)
    session_ = server.sessions[0]
    with pytest.raises(RuntimeError, match=words):
        await session_.elicit_url("Sign in", "https://example.com/login")
    with pytest.raises(RuntimeError, match=words):
        await session_.complete_elicitation("e-1")
    with pytest.raises(RuntimeError, match=words):
        session_.require_url_elicitation("Sign in", "https://example.com/login")
    await client.sync()
    assert client.received == []


async def test_elicit_url_sends_an_id_and_completes_with_a_notification(server: McpServer, connect: Connect) -> None:
    client, _ = await session(server, connect, NEW, {"elicitation": {"form": {}, "url": {}}})
    session_ = server.sessions[0]
    task = asyncio.create_task(session_.elicit_url("Sign in please", "https://example.com/login"))
    request = await client.server_request("elicitation/create")
    assert request.params is not None
    generated = request.params.pop("elicitationId")
    uuid.UUID(generated)
    assert request.params == {"mode": "url", "url": "https://example.com/login", "message": "Sign in please"}
    await client.send(JsonRpcResponse(request.id, {"action": "accept"}))
    answer = await task
    assert (answer.action, answer.content, answer.elicitation_id) == ("accept", None, generated)

    task = asyncio.create_task(session_.elicit_url("Again", "https://example.com/again", "mine-1"))
    request = await client.server_request("elicitation/create")
    assert request.params is not None and request.params["elicitationId"] == "mine-1"
    await client.send(JsonRpcResponse(request.id, {"action": "decline"}))
    assert (await task).elicitation_id == "mine-1"

    await session_.complete_elicitation(generated)
    done = await client.notification("notifications/elicitation/complete")
    assert done.params == {"elicitationId": generated}


async def test_a_handler_raises_url_elicitation_required_as_error_32042(server: McpServer, connect: Connect) -> None:
    async def connect_files(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        context.session.require_url_elicitation("Authorize access", "https://example.com/connect", "e-7")

    server.add_tool(Tool("files", handler=connect_files))
    client, _ = await session(server, connect, NEW, {"elicitation": {"url": {}}})
    reply = await client.call("tools/call", {"name": "files"})
    assert isinstance(reply, JsonRpcError)
    assert reply.code == URL_ELICITATION_REQUIRED == -32042
    assert reply.message == "This request requires more information."
    assert reply.data == {
        "elicitations": [
            {
                "mode": "url",
                "elicitationId": "e-7",
                "url": "https://example.com/connect",
                "message": "Authorize access",
            }
        ]
    }
    # a client without URL mode gets -32021 naming what it lacks (as on 2026-07-28), never a URL elicitation
    other, _ = await session(server, connect, NEW, {"elicitation": {}})
    refused = await other.call("tools/call", {"name": "files"})
    assert isinstance(refused, JsonRpcError) and refused.code == MISSING_CLIENT_CAPABILITY
    assert "elicitation.url is missing" in refused.message
    with pytest.raises(ValueError):
        UrlElicitationRequired([])


# --- sampling with tools (SEP-1577) -----------------------------------------------------------

WEATHER = Tool(
    "get_weather",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    description="Weather.",
)


def _tool_request() -> CreateMessageRequest:
    return CreateMessageRequest([SamplingMessage.user("Weather in Paris?")], 100, tools=[WEATHER], tool_choice="auto")


async def test_sampling_with_tools_sends_them_and_reads_tool_use_content(server: McpServer, connect: Connect) -> None:
    client, _ = await session(server, connect, NEW, {"sampling": {"tools": {}}})
    task = asyncio.create_task(server.sessions[0].create_message(_tool_request()))
    request = await client.server_request("sampling/createMessage")
    assert request.params == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}}],
        "maxTokens": 100,
        "tools": [WEATHER.to_dict()],
        "toolChoice": {"mode": "auto"},
    }
    use = {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
    reply = {"role": "assistant", "content": [use], "model": "m", "stopReason": "toolUse"}
    await client.send(JsonRpcResponse(request.id, reply))
    result = await task
    assert result.stop_reason == "toolUse" and result.text is None
    assert result.tool_uses == [ToolUseContent("call_1", "get_weather", {"city": "Paris"})]

    # the conversation goes on with the tool's result in a user message
    follow_up = CreateMessageRequest(
        [
            SamplingMessage.user("Weather in Paris?"),
            SamplingMessage("assistant", [ToolUseContent("call_1", "get_weather", {"city": "Paris"})]),
            SamplingMessage("user", [ToolResultContent("call_1", [TextContent("18°C")])]),
        ],
        100,
    )
    task = asyncio.create_task(server.sessions[0].create_message(follow_up))
    request = await client.server_request("sampling/createMessage")
    assert request.params is not None
    assert request.params["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "18°C"}]}],
    }
    text = [{"type": "text", "text": "It is 18°C."}]
    await client.send(JsonRpcResponse(request.id, {"role": "assistant", "content": text, "model": "m"}))
    assert (await task).text == "It is 18°C."


@pytest.mark.parametrize(
    ("revision", "capabilities", "words"),
    [
        (NEW, {"sampling": {}}, "sampling.tools"),
        (NEW, {"sampling": {"context": {}}}, "sampling.tools"),
        (OLD, {"sampling": {"tools": {}}}, "needs 2025-11-25"),
    ],
)
async def test_tools_are_never_sent_without_the_sampling_tools_capability(
    server: McpServer, connect: Connect, revision: str, capabilities: dict[str, Any], words: str
) -> None:
    client, _ = await session(server, connect, revision, capabilities)
    with pytest.raises(RuntimeError, match=words):
        await server.sessions[0].create_message(_tool_request())
    tool_result_only = CreateMessageRequest([SamplingMessage("user", [ToolResultContent("c", [])])], 10)
    with pytest.raises(RuntimeError, match=words):
        await server.sessions[0].create_message(tool_result_only)
    await client.sync()
    assert client.received == []


async def test_a_malformed_tool_use_in_a_sampling_result_is_a_value_error(server: McpServer, connect: Connect) -> None:
    client, _ = await session(server, connect, NEW, {"sampling": {"tools": {}}})
    task = asyncio.create_task(server.sessions[0].create_message(_tool_request()))
    request = await client.server_request("sampling/createMessage")
    broken = {"role": "assistant", "content": [{"type": "tool_use", "name": "x"}], "model": "m"}
    await client.send(JsonRpcResponse(request.id, broken))
    with pytest.raises(ValueError, match="tool_use"):
        await task


# --- tasks (SEP-1686): not implemented, so not declared and ignored ------------------------------


async def test_tasks_are_not_declared_and_a_task_member_on_tools_call_is_ignored(
    server: McpServer, connect: Connect
) -> None:
    server.add_tool(Tool("now", handler=lambda a, c: "done", run_in_thread=False))
    client, result = await session(server, connect, NEW, {"tasks": {"requests": {"sampling": {"createMessage": {}}}}})
    assert "tasks" not in result["capabilities"]
    reply = await client.result("tools/call", {"name": "now", "arguments": {}, "task": {"ttl": 60000}})
    assert reply == {"content": [{"type": "text", "text": "done"}]}


async def test_a_tool_that_elicits_from_a_client_without_the_capability_gets_32021(
    server: McpServer, connect: Connect
) -> None:
    async def ask(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await context.session.elicit("Pick one", {"type": "object", "properties": {}})
        return CallToolResult([])

    server.add_tool(Tool("ask", handler=ask))
    client, _ = await session(server, connect, NEW, {})
    refused = await client.call("tools/call", {"name": "ask"})
    assert isinstance(refused, JsonRpcError) and refused.code == MISSING_CLIENT_CAPABILITY
    assert refused.message == "Cannot send elicitation/create: the client did not declare the elicitation capability"
