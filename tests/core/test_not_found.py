"""``NotFound`` (issue 37, stumble 2) and the derived ``mimeType`` of decorated resources (stumble 11).

A reader, prompt or tool says "not found" by raising ``NotFound`` (or, a reader, by returning
None): each revision gets its own resource-not-found error, a prompt -32602, a tool an
``isError`` result. Before, a decorated template reader had no way to say it and answered -32603.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel

from fixtures.sessions import Connect
from mcp_sse_server import McpServer, NotFound, ReadResourceResult, RequestContext, ResourceTemplate
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND
from mcp_sse_server.engine.versions import SESSION

NOTES = {"1": "first note"}
HANDSHAKE_REVISIONS = [revision.name for revision in SESSION]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def build() -> McpServer:
    server = McpServer("notes")

    @server.resource("notes://{id}")
    def note(id: str) -> str:
        if id not in NOTES:
            raise NotFound(f"No note {id}")
        return NOTES[id]

    @server.resource("quiet://{id}")
    def quiet(id: str) -> str | None:
        return NOTES.get(id)  # None: nothing at this URI

    @server.resource("plain://{id}")
    def plain(id: str) -> str:
        raise NotFound()

    @server.prompt
    def summarise(id: str) -> str:
        if id not in NOTES:
            raise NotFound(f"no note {id}")
        return f"Summarise: {NOTES[id]}"

    @server.tool
    def fetch(id: str) -> str:
        if id not in NOTES:
            raise NotFound(f"No note {id}")
        return NOTES[id]

    return server


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
async def test_a_reader_says_not_found_with_the_revisions_error(connect: Connect, revision: str) -> None:
    client = await connect(build(), initialize=False)
    await client.initialize(protocol_version=revision)
    found = await client.result("resources/read", {"uri": "notes://1"})
    assert found["contents"][0]["text"] == "first note"
    error = await client.error("resources/read", {"uri": "notes://9"})
    assert (error.code, error.message, error.data) == (RESOURCE_NOT_FOUND, "No note 9", {"uri": "notes://9"})
    quiet = await client.error("resources/read", {"uri": "quiet://9"})
    assert (quiet.code, quiet.message) == (RESOURCE_NOT_FOUND, "Resource not found: quiet://9")
    plain = await client.error("resources/read", {"uri": "plain://1"})
    assert (plain.code, plain.message, plain.data) == (
        RESOURCE_NOT_FOUND,
        "Resource not found: plain://1",
        {"uri": "plain://1"},
    )


async def test_on_2026_07_28_not_found_is_invalid_params(connect: Connect) -> None:
    client = await connect(build(), initialize=False)
    for uri, message in (("notes://9", "No note 9"), ("quiet://2", "Resource not found: quiet://2")):
        error = await client.error("resources/read", {"_meta": MODERN_META, "uri": uri})
        assert (error.code, error.message, error.data) == (INVALID_PARAMS, message, {"uri": uri})


async def test_a_plain_template_reader_returning_none_is_not_found(connect: Connect) -> None:
    server = McpServer("plain")

    def read(uri: str, variables: dict[str, str], context: RequestContext) -> ReadResourceResult | None:
        return None

    server.add_resource_template(ResourceTemplate("users://{id}", "user", read))  # type: ignore[arg-type]
    client = await connect(server)
    error = await client.error("resources/read", {"uri": "users://7"})
    assert (error.code, error.data) == (RESOURCE_NOT_FOUND, {"uri": "users://7"})


async def test_a_prompt_says_not_found_as_invalid_params(connect: Connect) -> None:
    client = await connect(build())
    error = await client.error("prompts/get", {"name": "summarise", "arguments": {"id": "9"}})
    assert (error.code, error.message) == (INVALID_PARAMS, "Prompt summarise: no note 9")
    found = await client.result("prompts/get", {"name": "summarise", "arguments": {"id": "1"}})
    assert found["messages"][0]["content"]["text"] == "Summarise: first note"


async def test_a_tool_says_not_found_as_a_tool_error(connect: Connect) -> None:
    client = await connect(build())
    result = await client.result("tools/call", {"name": "fetch", "arguments": {"id": "9"}})
    assert result == {"content": [{"type": "text", "text": "No note 9"}], "isError": True}
    stateless = await connect(build(), initialize=False)
    modern = await stateless.result("tools/call", {"_meta": MODERN_META, "name": "fetch", "arguments": {"id": "9"}})
    assert modern["isError"] is True and modern["content"][0]["text"] == "No note 9"


# --- stumble 11: the listed mimeType of a decorated resource ---------------------------------


class Settings(BaseModel):
    debug: bool = False


@dataclasses.dataclass
class Point:
    x: int


async def test_the_listed_mime_type_comes_from_the_return_annotation(connect: Connect) -> None:
    server = McpServer("typed")

    @server.resource("data://settings")
    def settings() -> Settings:
        return Settings()

    @server.resource("data://dict")
    def as_dict() -> dict[str, Any]:
        return {"a": 1}

    @server.resource("data://list")
    async def as_list() -> list[int]:
        return [1]

    @server.resource("data://point")
    def point() -> Point:
        return Point(1)

    @server.resource("data://text")
    def text() -> str:
        return "t"

    @server.resource("data://bytes")
    def raw() -> bytes:
        return b"\x00"

    @server.resource("data://given", mime_type="text/csv")
    def given() -> str:
        return "a,b"

    @server.resource("data://unknown")
    def unknown():  # type: ignore[no-untyped-def]  # no annotation: nothing to derive
        return "x"

    @server.resource("rows://{id}")
    def row(id: str) -> dict[str, str] | None:
        return {"id": id}

    client = await connect(server)
    listed = {item["uri"]: item.get("mimeType") for item in (await client.result("resources/list"))["resources"]}
    assert listed == {
        "data://settings": "application/json",
        "data://dict": "application/json",
        "data://list": "application/json",
        "data://point": "application/json",
        "data://text": "text/plain",
        "data://bytes": "application/octet-stream",
        "data://given": "text/csv",
        "data://unknown": None,
    }
    templates = (await client.result("resources/templates/list"))["resourceTemplates"]
    assert templates[0]["mimeType"] == "application/json"
    read = await client.result("resources/read", {"uri": "data://settings"})
    assert read["contents"][0]["mimeType"] == "application/json"
