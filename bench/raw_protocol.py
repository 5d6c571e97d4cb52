"""The ceiling for Python on this machine: one HTTP exchange with no framework at all, an
`asyncio.Protocol` on uvloop parsing with httptools (the llhttp parser uvicorn uses), reading
each request's body and answering it with the same fixed JSON-RPC result as bare_asgi.py.

    python bench/raw_protocol.py PORT [--json]

SSE replies by default (one `message` event), a plain JSON body with --json; keep-alive and
pipelined requests (answered in order, as they parse). No sessions, no scope, no task per
request: what is left is the parser's callbacks and one write per reply. run.py's
`raw-protocol` row (issue 41's first row), the ceiling the fast path is measured against.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httptools
import uvloop

RESULT = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"5"}],"isError":false}}'


def reply(json_response: bool) -> bytes:
    """The whole response, head and body, written once per request."""
    if json_response:
        body, content_type = RESULT, b"application/json"
    else:
        body, content_type = b"event: message\ndata: " + RESULT + b"\n\n", b"text/event-stream"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: " + content_type + b"\r\ncontent-length: %d\r\n\r\n" % len(body)
    return head + body


class Exchange(asyncio.Protocol):
    """One connection: the parser's callbacks collect the body; the message's end answers it."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.parser = httptools.HttpRequestParser(self)
        self.transport: Any = None  # (uvloop's transports are not asyncio.Transport subclasses)
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self.transport.close()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)  # read, as every MCP server must

    def on_message_complete(self) -> None:
        self.body.clear()
        self.transport.write(self.answer)
        if not self.parser.should_keep_alive():
            self.transport.close()


async def serve(port: int, json_response: bool) -> None:
    answer = reply(json_response)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Exchange(answer), "127.0.0.1", port, backlog=2048)
    async with server:
        await server.serve_forever()


def main() -> None:
    """Serve on 127.0.0.1:PORT until killed."""
    uvloop.run(serve(int(sys.argv[1]), "--json" in sys.argv[2:]))


if __name__ == "__main__":
    main()
