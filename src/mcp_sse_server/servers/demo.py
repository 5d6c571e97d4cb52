"""The demo server that ``mcp-sse-server serve`` runs when given no target.

It carries the built-in math and artifact-instructions tools, plus a few
small things that exercise the rest of the protocol, so a client pointed at it
sees every feature at least once:

- ``slow_count`` reports progress and logs at every step, and stops when cancelled;
- ``draw_swatch`` returns an image and a resource link;
- ``describe_demo`` returns an embedded resource;
- ``ask_model`` asks the client's model a question (sampling), when the client allows it;
- ``calculator`` brings an MCP App (``demo_app.py``): hosts with the extension render its answer
  in a small interactive calculator, every other client gets the text;
- fixed resources (Markdown, JSON, a PNG), a resource template with listing and
  completion, and prompts with argument completion.

The tour's tools, the fixed resources and the ``calculate`` prompt are typed
functions registered with ``@server.tool``, ``@server.resource`` and
``@server.prompt``. The decorators take no lister or completer, so the
template (``ResourceTemplate``) and the two prompts with completion
(``Prompt``) use the object form; the math and artifact tools are the
built-in servers' own ``Tool`` objects.

>>> server = build_demo_server()
>>> sorted(server.capabilities)
['completions', 'extensions', 'logging', 'prompts', 'resources', 'tools']
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
import zlib
from typing import Annotated, Final

from pydantic import Field

from ..engine.context import RequestContext
from ..engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from ..engine.server import McpServer
from ..engine.types import (
    CallToolResult,
    CompleteRequest,
    CreateMessageRequest,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Prompt,
    PromptArgument,
    PromptMessage,
    ResourceInfo,
    ResourceLink,
    ResourceTemplate,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from .artifact_instructions import ARTIFACT_TYPES, ArtifactTypeError, artifact_instructions, artifact_tools
from .demo_app import add_calculator_app
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
  describe_demo (an embedded resource), ask_model (sampling, if your client allows it) and
  calculator (an MCP App: hosts that render apps show an interactive calculator).
- Resources: this file ({README_URI}), the server settings ({SETTINGS_URI}) and a PNG ({SWATCH_URI}).
- A resource template, {ARTIFACT_TEMPLATE}, that lists and completes the artifact types.
- Prompts: write_artifact and calculate, with argument completion.

Try: `mcp-sse-server call URL slow_count steps=5`
"""

_HEX_COLOR: Final = re.compile(r"^#?([0-9a-fA-F]{6})$")

# slow_count returns a CallToolResult (its text is "Counted to N."), so its output schema is given.
_COUNTED_SCHEMA: Final = {
    "type": "object",
    "properties": {"counted": {"type": "integer"}},
    "required": ["counted"],
}
_QUIET: Final = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def solid_png(rgb: tuple[int, int, int], size: int = 16) -> bytes:
    """A ``size`` x ``size`` PNG of one colour, built without an imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    row = b"\x00" + bytes(rgb) * size  # filter byte 0, then the pixels
    pixels = zlib.compress(row * size)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _starting_with(prefix: str, values: list[str] | tuple[str, ...]) -> list[str]:
    return [value for value in values if value.startswith(prefix)]


# --- tools -----------------------------------------------------------------------------


def _add_tour_tools(server: McpServer) -> None:
    quiet = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    @server.tool(title="Slow count", annotations=quiet, output_schema=_COUNTED_SCHEMA)
    async def slow_count(
        context: RequestContext,
        steps: Annotated[int, Field(ge=1, le=MAX_STEPS)] = 5,
        interval: Annotated[float, Field(ge=0, le=MAX_INTERVAL)] = 0.2,
    ) -> CallToolResult:
        """Count to steps, one step every interval seconds, reporting progress and logging each step; cancel to stop.

        Args:
            steps: How many steps to count.
            interval: The seconds between two steps.
        """
        await context.log("info", {"event": "start", "steps": steps}, "slow_count")
        for step in range(1, steps + 1):
            context.throw_if_cancelled()
            await asyncio.sleep(interval)
            await context.report_progress(step, total=steps, message=f"step {step} of {steps}")
            await context.log("debug", {"event": "step", "step": step}, "slow_count")
        await context.log("info", {"event": "done", "steps": steps}, "slow_count")
        return CallToolResult.structured({"counted": steps}, text=f"Counted to {steps}.")

    @server.tool(title="Draw a colour swatch", annotations=quiet)
    async def draw_swatch(color: str) -> CallToolResult:
        """Return a small PNG filled with one colour, and a link to the demo's swatch resource.

        Args:
            color: A colour as six hex digits, e.g. #ff8800.
        """
        match = _HEX_COLOR.match(color)
        if match is None:
            return CallToolResult.error(f"color must be six hex digits such as #ff8800, got {color!r}")
        digits = match.group(1).lower()
        rgb = (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
        return CallToolResult(
            [
                TextContent(f"A 16x16 swatch of #{digits}."),
                ImageContent.from_bytes(solid_png(rgb), "image/png"),
                ResourceLink(SWATCH_URI, "swatch.png", description="The demo's own swatch", mime_type="image/png"),
            ]
        )

    @server.tool(title="Describe the demo", annotations=quiet)
    async def describe_demo() -> EmbeddedResource:
        """Return the demo's README as an embedded resource."""
        return EmbeddedResource(TextResourceContents(README_URI, _README, "text/markdown"))

    @server.tool(title="Ask the client's model", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    async def ask_model(question: str, context: RequestContext) -> CallToolResult:
        """Ask the client's own model a question through sampling; fails if the client has none."""
        asked = context.session  # this request's client
        if "sampling" not in (asked.client_capabilities or {}):
            return CallToolResult.error("This client does not offer sampling, so the server cannot ask its model.")
        timeout = SAMPLING_TIMEOUT
        try:
            reply = await asked.create_message(
                CreateMessageRequest([SamplingMessage.user(question)], max_tokens=200), timeout=timeout
            )
        except TimeoutError:
            return CallToolResult.error(
                f"The client did not answer the sampling request within {timeout:g} s, so its model gave no answer."
            )
        except McpError as error:  # the client refused (its user declined, say): its reason is the answer
            return CallToolResult.error(f"The client refused the sampling request: {error.message}")
        return CallToolResult.text(reply.text if reply.text is not None else json.dumps(reply.content))


# --- resources ---------------------------------------------------------------------------


def _add_resources(server: McpServer) -> None:
    @server.resource(README_URI, name="readme", title="About this demo", mime_type="text/markdown")
    async def readme() -> str:
        return _README

    @server.resource(SETTINGS_URI, name="settings", mime_type="application/json")
    async def settings() -> str:  # a dict would be read as compact JSON; this text is indented
        limits = {"name": DEMO_NAME, "version": DEMO_VERSION, "max_steps": MAX_STEPS, "max_interval": MAX_INTERVAL}
        return json.dumps(limits, indent=2)

    @server.resource(SWATCH_URI, name="swatch.png", mime_type="image/png")
    async def swatch() -> bytes:  # bytes are read as a blob
        return solid_png((0x33, 0x66, 0xCC))

    server.add_resource_template(_artifact_template())


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


# --- prompts ------------------------------------------------------------------------------


def _write_artifact_prompt() -> Prompt:
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

    return Prompt(
        "write_artifact",
        write_artifact,
        title="Write an artifact",
        description="Write an artifact of a given type, with that type's instructions attached.",
        arguments=[
            PromptArgument("type", f"One of: {', '.join(ARTIFACT_TYPES)}.", required=True),
            PromptArgument("subject", "What the artifact should contain.", required=True),
        ],
        completer=complete_type,
    )


def _explain_operation_prompt() -> Prompt:
    operations = tuple(spec.name for spec in MATH_TOOL_SPECS)

    def explain(arguments: dict[str, str], context: RequestContext) -> str:
        return f"Explain what the {arguments['operation']} tool does and show one example call."

    def complete_operation(request: CompleteRequest, context: RequestContext) -> list[str]:
        return _starting_with(request.argument_value, operations) if request.argument_name == "operation" else []

    return Prompt(
        "explain_operation",
        explain,
        title="Explain a math tool",
        description="Ask for an explanation of one math tool.",
        arguments=[PromptArgument("operation", "A math tool name, e.g. factorial.", required=True)],
        completer=complete_operation,
    )


def _add_prompts(server: McpServer) -> None:
    server.add_prompt(_write_artifact_prompt())

    @server.prompt(title="Calculate with tools")
    def calculate(expression: str) -> str:
        """Ask the model to evaluate an expression using only the math tools.

        Args:
            expression: The expression, e.g. (2 + 3) * 7.
        """
        return f"Compute {expression} step by step with the math tools; do no arithmetic yourself."

    server.add_prompt(_explain_operation_prompt())


def build_demo_server() -> McpServer:
    """A fresh demo server (one per session): math, artifact instructions, and the protocol tour."""
    server = McpServer(DEMO_NAME, DEMO_VERSION, title="mcp-sse-server demo", instructions=_INSTRUCTIONS)
    for tool in [*math_tools(), *artifact_tools()]:
        server.add_tool(tool)
    _add_tour_tools(server)
    _add_resources(server)
    add_calculator_app(server)
    _add_prompts(server)
    return server
