"""The official Python SDK's (``mcp`` 2.x) MCPServer over stdio (test_stdio_fallback.py), with a
tool that asks the user the pre-2026 way, ``ctx.elicit`` pushed on the session: on a 2026-07-28
request the SDK answers "Cannot send 'elicitation/create': this transport context has no
back-channel". Each run of the tool appends a line to ``$ELICIT_RUNS``, when set."""

import os

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("eliciting-sdk")


class Colour(BaseModel):
    colour: str


def _count_run() -> None:
    runs = os.environ.get("ELICIT_RUNS")
    if runs:
        with open(runs, "a") as file:
            file.write("run\n")


@server.tool()
async def ask_colour(ctx: Context) -> str:
    """Asks the user for a colour."""
    _count_run()
    result = await ctx.elicit("Favourite colour?", Colour)
    return f"you said {result.data.colour}" if result.action == "accept" and result.data else result.action


if __name__ == "__main__":
    server.run("stdio")
