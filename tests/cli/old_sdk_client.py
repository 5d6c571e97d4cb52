"""A client written with the official Python SDK 1.2.1, which speaks revision 2024-11-05 only,
for tests of our servers against the clients older hosts still ship. Run with that SDK's Python
(``setup_old_sdk``: .tools/mcp-1.2.1, MCP_TEST_OLD_SDK_PYTHON):

    python old_sdk_client.py stdio COMMAND [ARGS...]    # starts COMMAND and speaks over its stdio
    python old_sdk_client.py sse URL                    # the HTTP+SSE transport of 2024-11-05

It initializes, lists the tools, calls ``add`` with 2 and 3 and prints one JSON line: the
revision the server answered, the tool names, the call's text and isError. The script runs
on the SDK 2.3 of the test environment too (the same calls; its models name members in snake_case).
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client


async def exercise(read, write) -> dict:  # type: ignore[no-untyped-def]
    async with ClientSession(read, write) as session:
        initialized = await session.initialize()
        tools = await session.list_tools()
        called = await session.call_tool("add", {"a": 2, "b": 3})
        return {
            "revision": _field(initialized, "protocolVersion", "protocol_version"),
            "tools": [tool.name for tool in tools.tools],
            "text": [block.text for block in called.content if getattr(block, "type", "") == "text"],
            "isError": _field(called, "isError", "is_error"),
        }


def _field(model, old: str, new: str):  # type: ignore[no-untyped-def]
    """A result's member under SDK 1.2.1's name or SDK 2.3's (which took snake_case names)."""
    return getattr(model, old) if hasattr(model, old) else getattr(model, new)


async def main() -> None:
    mode, target = sys.argv[1], sys.argv[2:]
    if mode == "stdio":
        params = StdioServerParameters(command=target[0], args=target[1:])
        async with stdio_client(params) as (read, write):
            result = await exercise(read, write)
    else:
        async with sse_client(target[0]) as (read, write):
            result = await exercise(read, write)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
