"""The server the event hook tests talk to (test_event_hooks.py), in memory, over Streamable HTTP
and, run as a script, over stdio: ``whoami`` answers the JSON-RPC id of the request it serves,
``ask`` logs a line and asks the user for a colour, ``add`` adds; ``calls`` counts tool runs."""

from __future__ import annotations

from mcp_sse_server import McpServer, RequestContext

SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def build() -> McpServer:
    """A new server with the three tools."""
    server = McpServer("hooked")
    server.calls = 0  # type: ignore[attr-defined]

    @server.tool()
    def whoami(ctx: RequestContext) -> str:
        """The id of the request that called this tool."""
        server.calls += 1  # type: ignore[attr-defined]
        return repr(ctx.request_id)

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        """Logs a line, then asks the user for a colour."""
        server.calls += 1  # type: ignore[attr-defined]
        await ctx.log("info", "asking")
        answer = await ctx.session.elicit("Favourite colour?", SCHEMA)
        return f"you said {answer.content['colour']}" if answer.action == "accept" and answer.content else answer.action

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        server.calls += 1  # type: ignore[attr-defined]
        return a + b

    return server


if __name__ == "__main__":
    build().run()
