"""Sessions of revisions 2024-11-05 and 2025-03-26: initialize answers them, and what such a
session sees is cut down to its revision (downlevel.py's rules) while 2025-06-18 and later see
everything as before."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from fixtures.sessions import Connect, RawClient
from mcp_sse_server import (
    AudioContent,
    CallToolResult,
    McpServer,
    Prompt,
    PromptArgument,
    PromptMessage,
    RequestContext,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
)
from mcp_sse_server.engine import versions
from mcp_sse_server.engine.jsonrpc import JsonRpcError

NOVEMBER_2024, MARCH_2025, JUNE_2025 = "2024-11-05", "2025-03-26", "2025-06-18"
OBJECT = {"type": "object", "properties": {"n": {"type": "integer"}}}
OUTPUT = {"type": "object", "properties": {"doubled": {"type": "integer"}}, "required": ["doubled"]}
AUDIO = AudioContent(base64.b64encode(b"RIFF....").decode(), "audio/wav")


def _server() -> McpServer:
    server = McpServer("old-friends", "1.0.0", title="Old Friends")

    async def double(arguments: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        await context.report_progress(1, 1, "halfway there")
        return {"doubled": arguments["n"] * 2}

    def linked(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return CallToolResult([TextContent("see"), ResourceLink("memo://note", "note"), AUDIO])

    server.add_tool(
        Tool(
            "double",
            OBJECT,
            double,
            title="Double",
            output_schema=OUTPUT,
            annotations=ToolAnnotations(read_only_hint=True),
        )
    )
    server.add_tool(Tool("linked", {"type": "object"}, linked))
    server.add_prompt(
        Prompt(
            "greet",
            lambda arguments, context: [PromptMessage("user", AUDIO), PromptMessage.user("hi")],
            title="Greet",
            arguments=[PromptArgument("name", "who", title="Name")],
        )
    )
    return server


async def _session(connect: Connect, revision: str) -> tuple[RawClient, dict[str, Any], McpServer]:
    server = _server()
    client = await connect(server, initialize=False)
    result = await client.initialize(protocol_version=revision)
    return client, result, server


def test_five_revisions_are_served_and_named_by_their_differences() -> None:
    names = [revision.name for revision in versions.SERVED]
    assert names == [NOVEMBER_2024, MARCH_2025, JUNE_2025, "2025-11-25", "2026-07-28"]
    for name in (NOVEMBER_2024, MARCH_2025):
        assert versions.negotiate(name).name == name and versions.for_header(name.encode())
    old, march, june = (versions.served(name) for name in (NOVEMBER_2024, MARCH_2025, JUNE_2025))
    assert old is not None and march is not None and june is not None
    assert (old.tool_annotations, march.tool_annotations, june.tool_annotations) == (False, True, True)
    assert (old.batches, march.batches, june.batches) == (False, True, False)
    assert [r.structured_output for r in (old, march, june)] == [False, False, True]
    assert [r.titles for r in (old, march, june)] == [r.elicitation for r in (old, march, june)] == [False, False, True]


@pytest.mark.parametrize("revision", [NOVEMBER_2024, MARCH_2025])
async def test_initialize_answers_the_old_revision_without_newer_fields(connect: Connect, revision: str) -> None:
    _, result, server = await _session(connect, revision)
    assert result["protocolVersion"] == revision
    assert result["serverInfo"] == {"name": "old-friends", "version": "1.0.0"}  # no title
    assert server.sessions[0].protocol is versions.served(revision)


async def test_a_june_2025_session_sees_everything_as_before(connect: Connect) -> None:
    client, result, _ = await _session(connect, JUNE_2025)
    assert result["serverInfo"]["title"] == "Old Friends"
    (double, _linked) = (await client.result("tools/list"))["tools"]
    assert double["title"] == "Double" and double["outputSchema"] == OUTPUT
    called = await client.result("tools/call", {"name": "double", "arguments": {"n": 2}})
    assert called["structuredContent"] == {"doubled": 4}
    linked = await client.result("tools/call", {"name": "linked", "arguments": {}})
    assert [block["type"] for block in linked["content"]] == ["text", "resource_link", "audio"]


@pytest.mark.parametrize("revision", [NOVEMBER_2024, MARCH_2025])
async def test_tools_are_listed_without_title_and_output_schema(connect: Connect, revision: str) -> None:
    client, _, _ = await _session(connect, revision)
    double = (await client.result("tools/list"))["tools"][0]
    assert "title" not in double and "outputSchema" not in double
    # annotations came with 2025-03-26
    assert ("annotations" in double) == (revision == MARCH_2025)


@pytest.mark.parametrize("revision", [NOVEMBER_2024, MARCH_2025])
async def test_structured_content_reaches_an_old_session_as_text(connect: Connect, revision: str) -> None:
    client, _, _ = await _session(connect, revision)
    called = await client.result("tools/call", {"name": "double", "arguments": {"n": 21}})
    assert "structuredContent" not in called
    assert [block["type"] for block in called["content"]] == ["text"]
    assert '"doubled": 42' in called["content"][0]["text"] or '"doubled":42' in called["content"][0]["text"]


async def test_links_become_text_and_audio_is_left_out_before_it_existed(connect: Connect) -> None:
    march, _, _ = await _session(connect, MARCH_2025)
    blocks = (await march.result("tools/call", {"name": "linked", "arguments": {}}))["content"]
    assert blocks[1] == {"type": "text", "text": "memo://note"}
    assert blocks[2]["type"] == "audio"  # 2025-03-26 has audio
    november, _, _ = await _session(connect, NOVEMBER_2024)
    blocks = (await november.result("tools/call", {"name": "linked", "arguments": {}}))["content"]
    assert [block["type"] for block in blocks] == ["text", "text", "text"]
    assert "audio/wav audio left out" in blocks[2]["text"]


async def test_prompts_lose_titles_and_audio_at_2024_11_05(connect: Connect) -> None:
    client, _, _ = await _session(connect, NOVEMBER_2024)
    greet = (await client.result("prompts/list"))["prompts"][0]
    assert "title" not in greet and greet["arguments"] == [{"name": "name", "description": "who"}]
    got = await client.result("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    assert got["messages"][0]["content"]["type"] == "text"
    assert got["messages"][1]["content"] == {"type": "text", "text": "hi"}


async def test_progress_carries_no_message_at_2024_11_05(connect: Connect) -> None:
    for revision, has_message in ((NOVEMBER_2024, False), (MARCH_2025, True)):
        client, _, _ = await _session(connect, revision)
        await client.result("tools/call", {"name": "double", "arguments": {"n": 1}, "_meta": {"progressToken": 7}})
        (progress,) = client.notifications("notifications/progress")
        assert ("message" in (progress.params or {})) == has_message


async def test_elicitation_is_refused_on_a_session_before_it_existed(connect: Connect) -> None:
    server = McpServer("asks")

    async def ask(arguments: dict[str, Any], context: RequestContext) -> str:
        try:
            await context.session.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        except RuntimeError as error:
            return str(error)
        return "asked"

    server.add_tool(Tool("ask", {"type": "object"}, ask))
    client = await connect(server, initialize=False)
    await client.initialize(protocol_version=MARCH_2025, capabilities={"elicitation": {}})
    said = await client.result("tools/call", {"name": "ask", "arguments": {}})
    assert "elicitation needs 2025-06-18" in said["content"][0]["text"]


async def test_an_unknown_revision_still_gets_the_latest(connect: Connect) -> None:
    client = await connect(_server(), initialize=False)
    result = await client.initialize(protocol_version="2024-01-01")
    assert result["protocolVersion"] == versions.LATEST.name
    assert not isinstance(await client.call("ping"), JsonRpcError)
