"""Our math server over stdio, through StdioServerTransport (for StdioClient tests)."""

import asyncio

from mcp_sse_server.servers.factory import MemoryServerFactory
from mcp_sse_server.transport.stdio import serve_stdio

if __name__ == "__main__":
    asyncio.run(serve_stdio(MemoryServerFactory.create_memory_server("math")))
