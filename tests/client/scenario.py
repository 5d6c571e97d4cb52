"""One client session, the same for every transport: initialize, list the
tools, call math tools (exact integers, decimals, a domain error), ping.

``run_scenario`` returns a plain record of what came back, so tests can check
that every client type, over every transport, sees the same thing.
"""

from __future__ import annotations

from typing import Any

from mcp_sse_server.client import McpClient

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 2, "b": 3}),
    ("add", {"a": 1.5, "b": 2}),
    ("divide", {"a": 7, "b": 2}),
    ("divide", {"a": 9, "b": 3}),
    ("divide", {"a": 1, "b": 0}),  # an isError result, not a protocol error
]


async def run_scenario(client: McpClient) -> dict[str, Any]:
    """Run the session on ``client`` (not yet initialized) and close it."""
    initialized = await client.initialize()
    try:
        tools = {tool.name: tool for tool in await client.list_tools()}
        record: dict[str, Any] = {
            "protocolVersion": initialized["protocolVersion"],
            "tools present": {"add", "divide"} <= set(tools),
            "add takes a and b": {"a", "b"} <= set(tools["add"].input_schema.get("properties", {})),
        }
        for name, arguments in CALLS:
            result = await client.call_tool(name, arguments)
            record[f"{name}{sorted(arguments.items())}"] = {
                "text": [getattr(block, "text", None) for block in result.content],
                "structured": result.structured_content,
                "isError": result.is_error,
            }
        await client.ping()
    finally:
        await client.close()
    return record
