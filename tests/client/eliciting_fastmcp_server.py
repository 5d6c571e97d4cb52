"""A fastmcp 4 server for ``fastmcp run`` over stdio (test_stdio_fallback.py), written as its
docs show: ``ask_colour`` asks the user with ``ctx.elicit``, which fastmcp refuses on a
2026-07-28 connection ("elicitation via server-initiated requests is unavailable"). Each run of
the tool appends a line to the file named by ``$ELICIT_RUNS``, when set."""

import os
from dataclasses import dataclass

from fastmcp import Context, FastMCP

mcp = FastMCP("eliciting-fastmcp")


@dataclass
class Colour:
    colour: str


def _count_run() -> None:
    runs = os.environ.get("ELICIT_RUNS")
    if runs:
        with open(runs, "a") as file:
            file.write("run\n")


@mcp.tool
async def ask_colour(ctx: Context) -> str:
    """Asks the user for a colour."""
    _count_run()
    result = await ctx.elicit("Favourite colour?", response_type=Colour)
    return f"you said {result.data.colour}" if result.action == "accept" else f"no answer: {result.action}"


@mcp.tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b
