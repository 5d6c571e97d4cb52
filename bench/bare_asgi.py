"""The ceiling for any framework on this ASGI server: a bare ASGI app on
uvicorn with httptools and uvloop that reads each request's body, as every
MCP server must, and answers it with a fixed JSON-RPC result.

    python bench/bare_asgi.py PORT [--json] [--no-read]

SSE replies by default (one `message` event, like an MCP server answering a
POST on its own stream), a plain JSON body with --json. --no-read answers
without reading the request body (the ceiling as it was first measured:
run.py's second row, "bare ASGI, body not read"). No sessions: it sends no
Mcp-Session-Id, so the load scripts run it stateless.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

RESULT = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"5"}],"isError":false}}'


def make_app(json_response: bool, read_body: bool = True) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The fixed-body app, SSE framed unless json_response; `read_body`: receive the whole
    request body before answering (what any server that parses the request pays)."""
    if json_response:
        body, content_type = RESULT, b"application/json"
    else:
        body, content_type = b"event: message\ndata: " + RESULT + b"\n\n", b"text/event-stream"
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
    }
    done = {"type": "http.response.body", "body": body}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if read_body:
            message = await receive()
            request = message.get("body", b"")
            while message.get("more_body", False):
                message = await receive()
                request += message.get("body", b"")
            if message["type"] != "http.request":
                return  # the client left
        await send(start)
        await send(done)

    return app


def main() -> None:
    """Serve on 127.0.0.1:PORT until killed."""
    port = int(sys.argv[1])
    uvicorn.run(
        make_app("--json" in sys.argv, read_body="--no-read" not in sys.argv),
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
