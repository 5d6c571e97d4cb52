"""This package's server over stdio (test_stdio_fallback.py) with a tool that elicits through
``context.session.elicit``: at 2026-07-28 that is an ``input_required`` round, so the client
never needs the session fallback here."""

from mcp_sse_server import McpServer, RequestContext

server = McpServer("eliciting-ours")


@server.tool()
async def ask_colour(ctx: RequestContext) -> str:
    """Asks the user for a colour."""
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
    answer = await ctx.session.elicit("Favourite colour?", schema)
    return f"you said {answer.content['colour']}" if answer.action == "accept" and answer.content else answer.action


if __name__ == "__main__":
    server.run()
