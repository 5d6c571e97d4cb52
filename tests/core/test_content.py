"""Every content type's wire form, alone and inside a tool result and a prompt message."""

from __future__ import annotations

import base64
from typing import Any

from fixtures.sessions import Connect
from mcp_sse_server import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    McpServer,
    Prompt,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)
from mcp_sse_server.engine.types import ContentBlock

PNG = b"\x89PNG\r\n\x1a\nfake"
PNG_B64 = base64.b64encode(PNG).decode()
ANNOTATIONS = Annotations(audience=["user", "assistant"], priority=0.5, last_modified="2025-06-18T00:00:00Z")
ANNOTATIONS_WIRE = {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2025-06-18T00:00:00Z"}
META = {"example.com/k": 1}

CASES: list[tuple[ContentBlock, dict[str, Any]]] = [
    (TextContent("hello"), {"type": "text", "text": "hello"}),
    (
        TextContent("hello", ANNOTATIONS, META),
        {"type": "text", "text": "hello", "annotations": ANNOTATIONS_WIRE, "_meta": META},
    ),
    (ImageContent(PNG_B64, "image/png"), {"type": "image", "data": PNG_B64, "mimeType": "image/png"}),
    (ImageContent.from_bytes(PNG, "image/png"), {"type": "image", "data": PNG_B64, "mimeType": "image/png"}),
    (
        ImageContent(PNG_B64, "image/png", ANNOTATIONS, META),
        {"type": "image", "data": PNG_B64, "mimeType": "image/png", "annotations": ANNOTATIONS_WIRE, "_meta": META},
    ),
    (AudioContent.from_bytes(b"RIFF", "audio/wav"), {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
    (
        AudioContent("UklGRg==", "audio/wav", Annotations(priority=1.0), META),
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": {"priority": 1.0}, "_meta": META},
    ),
    (ResourceLink("file:///a.txt", "a"), {"type": "resource_link", "uri": "file:///a.txt", "name": "a"}),
    (
        ResourceLink("file:///a.txt", "a", "A file", "The a file", "text/plain", 12, ANNOTATIONS, META),
        {
            "type": "resource_link",
            "uri": "file:///a.txt",
            "name": "a",
            "title": "A file",
            "description": "The a file",
            "mimeType": "text/plain",
            "size": 12,
            "annotations": ANNOTATIONS_WIRE,
            "_meta": META,
        },
    ),
    (
        EmbeddedResource(TextResourceContents("config://app", "{}", "application/json")),
        {"type": "resource", "resource": {"uri": "config://app", "text": "{}", "mimeType": "application/json"}},
    ),
    (
        EmbeddedResource(BlobResourceContents.from_bytes("blob://x", PNG, "image/png"), ANNOTATIONS, META),
        {
            "type": "resource",
            "resource": {"uri": "blob://x", "blob": PNG_B64, "mimeType": "image/png"},
            "annotations": ANNOTATIONS_WIRE,
            "_meta": META,
        },
    ),
    (
        EmbeddedResource(TextResourceContents("a://b", "t", meta={"m": 1})),
        {"type": "resource", "resource": {"uri": "a://b", "text": "t", "_meta": {"m": 1}}},
    ),
]


def test_each_content_type_serializes_to_its_wire_form() -> None:
    for block, wire in CASES:
        assert block.to_dict() == wire, block


def test_empty_annotations_serialize_to_an_empty_object() -> None:
    assert Annotations().to_dict() == {}
    assert TextContent("x", Annotations()).to_dict() == {"type": "text", "text": "x", "annotations": {}}


async def test_every_content_type_travels_in_a_tool_result(server: McpServer, connect: Connect) -> None:
    blocks = [block for block, _ in CASES]
    server.add_tool(
        Tool("all", {"type": "object"}, lambda args, ctx: CallToolResult(blocks, meta={"example.com/t": True}))
    )
    client = await connect(server)
    result = await client.result("tools/call", {"name": "all"})
    assert result == {"content": [wire for _, wire in CASES], "_meta": {"example.com/t": True}}


async def test_every_content_type_travels_in_a_prompt_message(server: McpServer, connect: Connect) -> None:
    server.add_prompt(Prompt("all", lambda args, ctx: [PromptMessage.assistant(block) for block, _ in CASES]))
    client = await connect(server)
    result = await client.result("prompts/get", {"name": "all"})
    assert result == {"messages": [{"role": "assistant", "content": wire} for _, wire in CASES]}
