"""The demo server that ``mcp-sse-server serve`` runs when given no target.

It carries the built-in math and artifact-instructions tools, plus a few
small things that exercise the rest of the protocol, so a client pointed at it
sees every feature at least once:

- ``slow_count`` reports progress and logs at every step, and stops when cancelled;
- ``draw_swatch`` returns an image and a resource link;
- ``describe_demo`` returns an embedded resource;
- ``ask_model`` asks the client's model a question (sampling), when the client allows it;
- fixed resources (Markdown, JSON, a PNG), a resource template with listing and
  completion, and prompts with argument completion.

>>> server = build_demo_server()
>>> sorted(server.capabilities)
['completions', 'logging', 'prompts', 'resources', 'tools']
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
import zlib
from typing import Any, Final

from ..context import RequestContext
from ..jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from ..server import McpServer
from ..types import (
    CallToolResult,
    CompleteRequest,
    CreateMessageRequest,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceInfo,
    ResourceLink,
    ResourceTemplate,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from .artifact_instructions import ARTIFACT_TYPES, ArtifactTypeError, artifact_instructions, artifact_tools
from .math import MATH_TOOL_SPECS, math_tools

__all__ = ["DEMO_NAME", "build_demo_server", "solid_png"]

DEMO_NAME: Final = "mcp-sse-server-demo"
DEMO_VERSION: Final = "1.0.0"

README_URI: Final = "demo://readme"
SETTINGS_URI: Final = "demo://settings"
SWATCH_URI: Final = "demo://swatch.png"
ARTIFACT_TEMPLATE: Final = "demo://artifact-instructions/{type}"

# Bounds that keep slow_count from pinning a session: at most 100 steps of at most 2 s.
MAX_STEPS: Final = 100
MAX_INTERVAL: Final = 2.0

# How long ask_model waits for the client to answer its sampling request (a person may be reviewing it).
SAMPLING_TIMEOUT: float = 300.0

_INSTRUCTIONS: Final = (
    "A demonstration server. The math tools compute exactly; get_artifact_instructions explains how to "
    "write artifacts; slow_count shows progress, logging and cancellation; draw_swatch returns an image."
)

_README: Final = f"""\
# mcp-sse-server demo

This server shows every part of the Model Context Protocol that mcp-sse-server implements.

- Tools: 19 math tools (add, divide, factorial, ...), get_artifact_instructions, slow_count
  (progress, logging, cancellation), draw_swatch (image content and a resource link),
  describe_demo (an embedded resource) and ask_model (sampling, if your client allows it).
- Resources: this file ({README_URI}), the server settings ({SETTINGS_URI}) and a PNG ({SWATCH_URI}).
- A resource template, {ARTIFACT_TEMPLATE}, that lists and completes the artifact types.
- Prompts: write_artifact and calculate, with argument completion.

Try: `mcp-sse-server call URL slow_count steps=5`
"""

_HEX_COLOR: Final = re.compile(r"^#?([0-9a-fA-F]{6})$")


def solid_png(rgb: tuple[int, int, int], size: int = 16) -> bytes:
    """A ``size`` x ``size`` PNG of one colour, built without an imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    row = b"\x00" + bytes(rgb) * size  # filter byte 0, then the pixels
    pixels = zlib.compress(row * size)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


# --- tools -----------------------------------------------------------------------------


async def _slow_count(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    steps: int = arguments.get("steps", 5)
    interval: float = arguments.get("interval", 0.2)
    await context.log("info", {"event": "start", "steps": steps}, "slow_count")
    for step in range(1, steps + 1):
        context.throw_if_cancelled()
        await asyncio.sleep(interval)
        await context.report_progress(step, total=steps, message=f"step {step} of {steps}")
        await context.log("debug", {"event": "step", "step": step}, "slow_count")
    await context.log("info", {"event": "done", "steps": steps}, "slow_count")
    return CallToolResult.structured({"counted": steps}, text=f"Counted to {steps}.")


async def _draw_swatch(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    match = _HEX_COLOR.match(arguments["color"])
    if match is None:
        return CallToolResult.error(f"color must be six hex digits such as #ff8800, got {arguments['color']!r}")
    digits = match.group(1).lower()
    rgb = (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    return CallToolResult(
        [
            TextContent(f"A 16x16 swatch of #{digits}."),
            ImageContent.from_bytes(solid_png(rgb), "image/png"),
            ResourceLink(SWATCH_URI, "swatch.png", description="The demo's own swatch", mime_type="image/png"),
        ]
    )


async def _describe_demo(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    return CallToolResult(
        [EmbeddedResource(TextResourceContents(README_URI, _README, "text/markdown"))],
    )


async def _ask_model(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    server: McpServer = context.server
    if "sampling" not in (server.client_capabilities or {}):
        return CallToolResult.error("This client does not offer sampling, so the server cannot ask its model.")
    timeout = SAMPLING_TIMEOUT
    try:
        reply = await server.create_message(
            CreateMessageRequest([SamplingMessage.user(arguments["question"])], max_tokens=200), timeout=timeout
        )
    except TimeoutError:
        return CallToolResult.error(
            f"The client did not answer the sampling request within {timeout:g} s, so its model gave no answer."
        )
    except McpError as error:  # the client refused (its user declined, say): its reason is the answer
        return CallToolResult.error(f"The client refused the sampling request: {error.message}")
    return CallToolResult.text(reply.text if reply.text is not None else json.dumps(reply.content))


def _demo_tools() -> list[Tool]:
    quiet = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    return [
        Tool(
            "slow_count",
            {
                "type": "object",
                "properties": {
                    "steps": {"type": "integer", "minimum": 1, "maximum": MAX_STEPS, "default": 5},
                    "interval": {"type": "number", "minimum": 0, "maximum": MAX_INTERVAL, "default": 0.2},
                },
                "additionalProperties": False,
            },
            _slow_count,
            title="Slow count",
            description=(
                f"Count to steps (1 to {MAX_STEPS}, default 5), one step every interval seconds (0 to "
                f"{MAX_INTERVAL:g}, default 0.2), reporting progress and logging each step. Cancel it to stop early."
            ),
            output_schema={
                "type": "object",
                "properties": {"counted": {"type": "integer"}},
                "required": ["counted"],
            },
            annotations=quiet,
        ),
        Tool(
            "draw_swatch",
            {
                "type": "object",
                "properties": {"color": {"type": "string", "description": "A colour as six hex digits, e.g. #ff8800."}},
                "required": ["color"],
                "additionalProperties": False,
            },
            _draw_swatch,
            title="Draw a colour swatch",
            description="Return a small PNG filled with one colour, and a link to the demo's swatch resource.",
            annotations=quiet,
        ),
        Tool(
            "describe_demo",
            {"type": "object", "properties": {}, "additionalProperties": False},
            _describe_demo,
            title="Describe the demo",
            description="Return the demo's README as an embedded resource.",
            annotations=quiet,
        ),
        Tool(
            "ask_model",
            {
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
                "additionalProperties": False,
            },
            _ask_model,
            title="Ask the client's model",
            description="Ask the client's own model a question through sampling; fails if the client has none.",
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
        ),
    ]


# --- resources and prompts --------------------------------------------------------------------


def _starting_with(prefix: str, values: list[str] | tuple[str, ...]) -> list[str]:
    return [value for value in values if value.startswith(prefix)]


def _artifact_template() -> ResourceTemplate:
    def read(uri: str, variables: dict[str, str], context: RequestContext) -> str:
        try:
            return artifact_instructions(variables["type"])
        except ArtifactTypeError as error:
            raise McpError(RESOURCE_NOT_FOUND, str(error), {"uri": uri}) from None

    def list_types() -> list[ResourceInfo]:
        return [
            ResourceInfo(
                ARTIFACT_TEMPLATE.replace("{type}", kind), f"{kind}-artifact-instructions", mime_type="text/markdown"
            )
            for kind in ARTIFACT_TYPES
        ]

    def complete(request: CompleteRequest, context: RequestContext) -> list[str]:
        return _starting_with(request.argument_value, ARTIFACT_TYPES) if request.argument_name == "type" else []

    return ResourceTemplate(
        ARTIFACT_TEMPLATE,
        "artifact-instructions",
        read,
        lister=list_types,
        completer=complete,
        title="Artifact instructions by type",
        description="How to write an artifact of one type.",
        mime_type="text/markdown",
    )


def _prompts() -> list[Prompt]:
    def write_artifact(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
        kind = arguments["type"]
        try:
            text = artifact_instructions(kind)
        except ArtifactTypeError as error:
            raise McpError(INVALID_PARAMS, str(error)) from None
        uri = ARTIFACT_TEMPLATE.replace("{type}", kind)
        return GetPromptResult(
            [
                PromptMessage.user(EmbeddedResource(TextResourceContents(uri, text, "text/markdown"))),
                PromptMessage.user(f"Following those instructions, write a {kind!r} artifact: {arguments['subject']}"),
            ],
            description=f"Write a {kind} artifact",
        )

    def complete_type(request: CompleteRequest, context: RequestContext) -> list[str]:
        return _starting_with(request.argument_value, ARTIFACT_TYPES) if request.argument_name == "type" else []

    def calculate(arguments: dict[str, str], context: RequestContext) -> list[PromptMessage]:
        return [
            PromptMessage.user(
                f"Compute {arguments['expression']} step by step with the math tools; do no arithmetic yourself."
            )
        ]

    operations = tuple(spec.name for spec in MATH_TOOL_SPECS)

    def explain(arguments: dict[str, str], context: RequestContext) -> str:
        return f"Explain what the {arguments['operation']} tool does and show one example call."

    def complete_operation(request: CompleteRequest, context: RequestContext) -> list[str]:
        return _starting_with(request.argument_value, operations) if request.argument_name == "operation" else []

    return [
        Prompt(
            "write_artifact",
            write_artifact,
            title="Write an artifact",
            description="Write an artifact of a given type, with that type's instructions attached.",
            arguments=[
                PromptArgument("type", f"One of: {', '.join(ARTIFACT_TYPES)}.", required=True),
                PromptArgument("subject", "What the artifact should contain.", required=True),
            ],
            completer=complete_type,
        ),
        Prompt(
            "calculate",
            calculate,
            title="Calculate with tools",
            description="Ask the model to evaluate an expression using only the math tools.",
            arguments=[PromptArgument("expression", "The expression, e.g. (2 + 3) * 7.", required=True)],
        ),
        Prompt(
            "explain_operation",
            explain,
            title="Explain a math tool",
            description="Ask for an explanation of one math tool.",
            arguments=[PromptArgument("operation", "A math tool name, e.g. factorial.", required=True)],
            completer=complete_operation,
        ),
    ]


def build_demo_server() -> McpServer:
    """A fresh demo server (one per session): math, artifact instructions, and the protocol tour."""
    server = McpServer(DEMO_NAME, DEMO_VERSION, title="mcp-sse-server demo", instructions=_INSTRUCTIONS)
    for tool in [*math_tools(), *artifact_tools(), *_demo_tools()]:
        server.add_tool(tool)
    server.add_resource(
        Resource.text(README_URI, "readme", _README, mime_type="text/markdown", title="About this demo")
    )
    settings = {"name": DEMO_NAME, "version": DEMO_VERSION, "max_steps": MAX_STEPS, "max_interval": MAX_INTERVAL}
    server.add_resource(
        Resource.text(SETTINGS_URI, "settings", json.dumps(settings, indent=2), mime_type="application/json")
    )
    server.add_resource(Resource.blob(SWATCH_URI, "swatch.png", solid_png((0x33, 0x66, 0xCC)), mime_type="image/png"))
    server.add_resource_template(_artifact_template())
    for prompt in _prompts():
        server.add_prompt(prompt)
    return server
