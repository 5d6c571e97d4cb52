"""The demo server ``serve`` runs by default, exercised in-process."""

from __future__ import annotations

import asyncio
import base64
import zlib
from typing import Any

import pytest

from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, McpError
from mcp_sse_server.engine.types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from mcp_sse_server.servers.artifact_instructions import ARTIFACT_TYPES
from mcp_sse_server.servers.demo import ARTIFACT_TEMPLATE, build_demo_server, solid_png
from mcp_sse_server.servers.math import MATH_TOOL_SPECS


def test_every_session_gets_a_fresh_server() -> None:
    assert build_demo_server() is not build_demo_server()


def test_capabilities_cover_the_protocol() -> None:
    assert build_demo_server().capabilities == {
        "logging": {},
        "completions": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True},
        "extensions": {"io.modelcontextprotocol/ui": {}},  # the calculator is an MCP App
    }


async def test_tools_are_math_artifacts_and_the_tour() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        names = [tool.name for tool in await client.list_tools()]
    assert names[: len(MATH_TOOL_SPECS)] == [spec.name for spec in MATH_TOOL_SPECS]
    assert names[len(MATH_TOOL_SPECS) :] == [
        "get_artifact_instructions",
        "slow_count",
        "draw_swatch",
        "describe_demo",
        "ask_model",
        "calculator",
    ]


async def test_slow_count_reports_progress_and_logs() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[dict[str, Any]] = []
    # At 2026-07-28 a request gets logs only at the level it names.
    async with InMemoryClient(build_demo_server(), on_log=logs.append, log_level="debug") as client:
        result = await client.call_tool(
            "slow_count", {"steps": 3, "interval": 0}, on_progress=lambda *update: progress.append(update)
        )
    assert result.structured_content == {"counted": 3}
    assert progress == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert [entry["data"]["event"] for entry in logs] == ["start", "step", "step", "step", "done"]
    assert {entry["logger"] for entry in logs} == {"slow_count"}


async def test_slow_count_stops_when_cancelled() -> None:
    progress: list[float] = []
    async with InMemoryClient(build_demo_server()) as client:

        def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)
            if len(progress) == 1:
                call.cancel()

        call = asyncio.create_task(
            client.call_tool("slow_count", {"steps": 100, "interval": 0}, on_progress=on_progress)
        )
        with pytest.raises(asyncio.CancelledError):
            await call
        await client.ping()  # the session is still usable
    assert len(progress) < 100


async def test_slow_count_bounds_its_work() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        result = await client.call_tool("slow_count", {"steps": 1000})
    assert result.is_error
    assert "steps" in result.content[0].text  # type: ignore[union-attr]


def test_solid_png_is_a_valid_png() -> None:
    png = solid_png((255, 0, 0), size=2)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    length = int.from_bytes(png[33:37], "big")
    assert png[37:41] == b"IDAT"
    pixels = zlib.decompress(png[41 : 41 + length])
    assert pixels == (b"\x00" + b"\xff\x00\x00" * 2) * 2


async def test_draw_swatch_returns_an_image_and_a_link() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        result = await client.call_tool("draw_swatch", {"color": "#FF8800"})
        bad = await client.call_tool("draw_swatch", {"color": "orange"})
    text, image, link = result.content
    assert text.text == "A 16x16 swatch of #ff8800."  # type: ignore[union-attr]
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == solid_png((0xFF, 0x88, 0x00))
    assert isinstance(link, ResourceLink) and link.uri == "demo://swatch.png"
    assert bad.is_error


async def test_describe_demo_embeds_the_readme() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        result = await client.call_tool("describe_demo", {})
        readme = await client.read_resource("demo://readme")
    [embedded] = result.content
    assert embedded.resource == readme.contents[0]  # type: ignore[union-attr]


async def test_ask_model_uses_sampling_when_the_client_offers_it() -> None:
    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        question = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "content": {"type": "text", "text": f"You asked: {question}"}, "model": "echo"}

    async with InMemoryClient(build_demo_server(), sampling_handler=answer) as client:
        result = await client.call_tool("ask_model", {"question": "why?"})
    assert result.content[0].text == "You asked: why?"  # type: ignore[union-attr]
    async with InMemoryClient(build_demo_server()) as client:
        refused = await client.call_tool("ask_model", {"question": "why?"})
    assert refused.is_error
    assert "sampling" in refused.content[0].text  # type: ignore[union-attr]


async def test_resources_and_the_template() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        uris = [resource.uri for resource in await client.list_resources()]
        templates = await client.list_resource_templates()
        svg = await client.read_resource("demo://artifact-instructions/svg")
        png = await client.read_resource("demo://swatch.png")
        with pytest.raises(McpError) as missing:
            await client.read_resource("demo://artifact-instructions/pdf")
    assert uris == [
        "demo://readme",
        "demo://settings",
        "demo://swatch.png",
        "ui://demo/calculator.html",
        *(ARTIFACT_TEMPLATE.replace("{type}", kind) for kind in ARTIFACT_TYPES),
    ]
    assert [template.uri_template for template in templates] == [ARTIFACT_TEMPLATE]
    assert isinstance(svg.contents[0], TextResourceContents) and "viewBox" in svg.contents[0].text
    assert isinstance(png.contents[0], BlobResourceContents) and png.contents[0].mime_type == "image/png"
    assert missing.value.code == INVALID_PARAMS  # at 2026-07-28 an unknown resource is invalid params


async def test_completion_for_the_template_and_the_prompts() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        template = await client.complete({"type": "ref/resource", "uri": ARTIFACT_TEMPLATE}, "type", "m")
        artifact = await client.complete({"type": "ref/prompt", "name": "write_artifact"}, "type", "")
        operation = await client.complete({"type": "ref/prompt", "name": "explain_operation"}, "operation", "fa")
    assert template.values == ["mermaid"]
    assert artifact.values == list(ARTIFACT_TYPES)
    assert operation.values == ["factorial"]


async def test_prompts() -> None:
    async with InMemoryClient(build_demo_server()) as client:
        names = [prompt.name for prompt in await client.list_prompts()]
        written = await client.get_prompt("write_artifact", {"type": "mermaid", "subject": "a login flow"})
        calculated = await client.get_prompt("calculate", {"expression": "(2 + 3) * 7"})
        with pytest.raises(McpError):
            await client.get_prompt("write_artifact", {"type": "mermaid"})
    assert names == ["write_artifact", "calculate", "explain_operation"]
    instructions, request = written.messages
    assert isinstance(instructions.content, EmbeddedResource)
    assert instructions.content.resource.uri == "demo://artifact-instructions/mermaid"
    assert isinstance(request.content, TextContent) and "a login flow" in request.content.text
    assert isinstance(calculated.messages[0].content, TextContent)
    assert "(2 + 3) * 7" in calculated.messages[0].content.text


async def test_the_calculator_answers_in_text_and_brings_its_app() -> None:
    async with InMemoryClient(build_demo_server(), apps=True) as client:
        added = await client.call_tool("calculator", {"a": 20, "b": 22})
        halved = await client.call_tool("calculator", {"a": 1, "b": 2, "operation": "divide"})
        by_zero = await client.call_tool("calculator", {"a": 1, "b": 0, "operation": "divide"})
        (page,) = (await client.read_resource("ui://demo/calculator.html")).contents
    assert added.content == [TextContent("20 + 22 = 42")]
    assert added.structured_content == {"a": 20, "b": 22, "operation": "add", "symbol": "+", "result": 42}
    assert halved.content == [TextContent("1 / 2 = 0.5")]
    assert by_zero.is_error and "division by zero" in by_zero.content[0].text  # type: ignore[union-attr]
    assert isinstance(page, TextResourceContents) and page.mime_type == "text/html;profile=mcp-app"
    assert '"ui/initialize"' in page.text and "tools/call" in page.text
