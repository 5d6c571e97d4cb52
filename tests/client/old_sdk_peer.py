"""A real MCP server written with the official Python SDK **1.2.1** (protocol 2024-11-05), for the
tests of our clients' probe recovery: it predates ``server/discover``, and its stdio server exits on
a request whose method it does not know (see tests/client/test_old_sdk.py). Nobody here wrote its
transports. It runs in a virtualenv of its own (``setup_old_sdk`` in scripts/setup.sh).

    python old_sdk_peer.py stdio
    python old_sdk_peer.py sse      # legacy HTTP+SSE at /sse

The sse mode binds 127.0.0.1 on a free port and prints ``PORT <n>`` first. Each start prints
``OLD-SDK-PEER-START`` on stderr, so a test can count the processes a client started.
"""

from __future__ import annotations

import socket
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("old-sdk-peer", log_level="WARNING")


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    total = a + b
    return str(int(total) if total.is_integer() else total)


@server.tool()
def echo(text: str) -> str:
    """Answer with the text given."""
    return text


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    print("OLD-SDK-PEER-START", file=sys.stderr, flush=True)
    if mode == "stdio":
        server.run("stdio")
        return
    if mode != "sse":
        raise SystemExit(f"usage: {sys.argv[0]} stdio|sse")
    import anyio
    import uvicorn
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route

    # FastMCP.run("sse") binds a fixed port; this is its app (1.2.1's run_sse_async) on a free one.
    sse = SseServerTransport("/messages/")
    low_level = server._mcp_server

    async def handle_sse(request):  # type: ignore[no-untyped-def]
        async with sse.connect_sse(request.scope, request.receive, request._send) as streams:
            await low_level.run(streams[0], streams[1], low_level.create_initialization_options())

    app = Starlette(routes=[Route("/sse", endpoint=handle_sse), Mount("/messages/", app=sse.handle_post_message)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
