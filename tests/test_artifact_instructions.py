"""The artifact_instructions server: guidance per type, unknown types, and the tool over the core."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import jsonschema_rs
import pytest

from fixtures.sessions import initialized_session
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, McpError
from mcp_sse_server.engine.protocol import Connection
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.servers import MemoryServerFactory
from mcp_sse_server.servers.artifact_instructions import (
    ARTIFACT_TYPES,
    TOOL_NAME,
    ArtifactInstructionsServer,
    ArtifactTypeError,
    artifact_instructions,
    artifact_tool_result,
    artifact_tools,
)

TYPES = ["code", "documents", "html", "svg", "mermaid", "react"]

# What each type's own section must say, beyond the shared rules.
TYPE_RULES: dict[str, list[str]] = {
    "code": ['## Type "code"', "language", "python"],
    "documents": ['## Type "documents"', "Markdown"],
    "html": ['## Type "html"', "self-contained", "<!DOCTYPE html>", "<style>", "<script>"],
    "svg": ['## Type "svg"', "viewBox", 'xmlns="http://www.w3.org/2000/svg"'],
    "mermaid": ['## Type "mermaid"', "Mermaid syntax", "flowchart", "No ```mermaid fences"],
    "react": ['## Type "react"', "export default", "no props", "lucide-react", "recharts", "Tailwind"],
}


def test_the_six_types() -> None:
    assert list(ARTIFACT_TYPES) == TYPES


@pytest.mark.parametrize("artifact_type", TYPES)
def test_instructions_cover_the_shared_rules(artifact_type: str) -> None:
    text = artifact_instructions(artifact_type)
    assert "## When to make an artifact" in text
    assert "Do not make one for" in text
    assert '<artifact identifier="..." type="..." title="..." language="...">' in text
    for attribute in ("- identifier:", "- type:", "- title:", "- language:"):
        assert attribute in text
    assert "## Updating an artifact" in text
    assert "same identifier" in text


# What each type's update and removal pattern must mention.
REMOVAL_RULES: dict[str, list[str]] = {
    "code": ["imports", "commented-out"],
    "documents": ["table of contents"],
    "html": ["<!DOCTYPE html>", "CSS rules", "JavaScript"],
    "svg": ["viewBox", "<defs>"],
    "mermaid": ["every edge"],
    "react": ["default export", "state"],
}


@pytest.mark.parametrize("artifact_type", TYPES)
def test_instructions_say_how_to_remove_and_withdraw(artifact_type: str) -> None:
    text = artifact_instructions(artifact_type)
    shared = text.split("## Removing an artifact\n", 1)[1].split("\n## ", 1)[0]
    assert "withdraw" in shared and "same identifier" in shared
    own = text.split(f'## Type "{artifact_type}"', 1)[1]
    pattern = own.split("Updating and removing: ", 1)[1].split("\n\n", 1)[0]
    assert "same identifier" in pattern
    assert "remov" in pattern
    for phrase in REMOVAL_RULES[artifact_type]:
        assert phrase in pattern, phrase


@pytest.mark.parametrize("artifact_type", TYPES)
def test_instructions_carry_the_type_rules(artifact_type: str) -> None:
    text = artifact_instructions(artifact_type)
    for phrase in TYPE_RULES[artifact_type]:
        assert phrase in text, phrase
    for other in TYPES:
        if other != artifact_type:
            assert f'## Type "{other}"' not in text  # only the requested type's section


@pytest.mark.parametrize("artifact_type", TYPES)
def test_examples_use_the_tag_format(artifact_type: str) -> None:
    text = artifact_instructions(artifact_type)
    if artifact_type == "html":
        return  # described, not exemplified: a full page would dwarf the rules
    assert f'type="{artifact_type}"' in text
    assert text.count("<artifact identifier=") >= 2  # the format line and the example
    assert text.count("</artifact>") >= 2
    with_language = 'language="' in text.split('## Type "')[1]
    assert with_language == (artifact_type == "code")


@pytest.mark.parametrize("bad", ["python", "Code", " code", "", "svg ", "markdown", None, 3, ["code"], True])
def test_unknown_types_list_the_valid_ones(bad: object) -> None:
    with pytest.raises(ArtifactTypeError) as raised:
        artifact_instructions(bad)
    message = str(raised.value)
    assert "code, documents, html, svg, mermaid, react" in message
    assert "\n" not in message


def test_tool_results() -> None:
    ok = artifact_tool_result({"type": "svg"}).to_dict()
    assert ok == {"content": [{"type": "text", "text": artifact_instructions("svg")}]}
    for arguments, needle in [
        ({"type": "pdf"}, "Unknown artifact type 'pdf'"),
        ({}, "Missing required argument 'type'"),
        (None, "Missing required argument 'type'"),
        ({"type": "svg", "size": 3}, "Unexpected argument 'size'"),
        ({"type": 1}, "Unknown artifact type"),
    ]:
        error = artifact_tool_result(arguments).to_dict()
        assert error["isError"] is True
        assert needle in error["content"][0]["text"]


def test_the_tool_definition() -> None:
    (tool,) = artifact_tools()
    wire = tool.to_dict()
    assert wire["name"] == TOOL_NAME == "get_artifact_instructions"
    schema = wire["inputSchema"]
    jsonschema_rs.meta.validate(schema)
    assert schema["properties"]["type"]["enum"] == TYPES
    assert schema["required"] == ["type"]
    assert schema["additionalProperties"] is False
    assert wire["annotations"]["readOnlyHint"] is True
    assert wire["annotations"]["openWorldHint"] is False
    for artifact_type in TYPES:
        assert artifact_type in wire["description"]
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid({"type": "react"})
    assert not validator.is_valid({"type": "pdf"})
    assert not validator.is_valid({"type": "react", "extra": 1})


async def test_the_tool_handler() -> None:
    (tool,) = artifact_tools()
    assert tool.handler is not None
    result = await tool.handler({"type": "mermaid"}, None)  # type: ignore[arg-type,misc]
    assert result.content[0].text == artifact_instructions("mermaid")
    (bare,) = artifact_tools(handlers=False)
    assert bare.handler is None


# -- through the core ------------------------------------------------------------------------------------


@pytest.fixture
async def session() -> AsyncIterator[Connection]:
    server = MemoryServerFactory.create_memory_server("artifact_instructions")
    assert isinstance(server, ArtifactInstructionsServer)
    async with initialized_session(server) as (client, init):
        assert init["serverInfo"]["name"] == "artifact_instructions"
        yield client


async def test_server_lists_the_tool(session: Connection) -> None:
    listed = await session.request("tools/list")
    assert [tool["name"] for tool in listed["tools"]] == [TOOL_NAME]


@pytest.mark.parametrize("artifact_type", TYPES)
async def test_server_answers_each_type(session: Connection, artifact_type: str) -> None:
    result = await session.request("tools/call", {"name": TOOL_NAME, "arguments": {"type": artifact_type}})
    assert "isError" not in result
    assert result["content"] == [{"type": "text", "text": artifact_instructions(artifact_type)}]


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({"type": "pdf"}, '"type"'),
        ({"type": 3}, '"type"'),
        ({"type": True}, '"type"'),
        ({}, '"type"'),
        ({"type": "svg", "width": 10}, '"width"'),
    ],
)
async def test_server_names_the_bad_argument(session: Connection, arguments: dict[str, Any], needle: str) -> None:
    result = await session.request("tools/call", {"name": TOOL_NAME, "arguments": arguments})
    assert result["isError"] is True
    assert needle in result["content"][0]["text"]


async def test_server_rejects_an_unknown_tool(session: Connection) -> None:
    with pytest.raises(McpError) as raised:
        await session.request("tools/call", {"name": "get_instructions", "arguments": {}})
    assert raised.value.code == INVALID_PARAMS


async def test_on_tool_call_refuses_other_names() -> None:
    server = ArtifactInstructionsServer()
    result = await server.on_tool_call("nope", {"type": "svg"}, None)  # type: ignore[arg-type]
    assert result.is_error


def test_artifact_tools_work_on_any_server() -> None:
    server = McpServer("docs", "1.0.0")
    for tool in artifact_tools():
        server.add_tool(tool)
