"""A Streamable HTTP MCP server (2025-06-18, JSON answers, one ``echo`` tool, no session id) that
answers the ``server/discover`` probe with an HTTP error whose body is not JSON-RPC, for
tests/client/test_probe_recovery.py:

    python probe_refusing_http_server.py 500|404|405   # binds 127.0.0.1, prints PORT <n>

``serving(status)`` runs it in a thread of this process instead; its ``methods`` list holds the
method of every POST, so a test can count probes. The endpoint is ``/mcp``; GET and DELETE get 405.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = [{"name": "echo", "description": "Echo text.", "inputSchema": {"type": "object"}}]
# What each status answers server/discover with: (content type, body).
REFUSALS = {
    500: ("text/html", b"<html><body><h1>500 Internal Server Error</h1></body></html>"),
    404: ("text/plain", b"404 page not found"),
    405: ("text/plain", b""),
}


class ProbeRefusingServer(ThreadingHTTPServer):
    """The HTTP server: ``status`` is what the probe gets, ``methods`` what was asked."""

    daemon_threads = True

    def __init__(self, status: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status = status
        self.methods: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"


class _Handler(BaseHTTPRequestHandler):
    server: ProbeRefusingServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(405, "text/plain", b"")

    def do_DELETE(self) -> None:
        self._reply(405, "text/plain", b"")

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        method, ident = message.get("method"), message.get("id")
        self.server.methods.append(str(method))
        if method == "server/discover":
            self._reply(self.server.status, *REFUSALS[self.server.status])
            return
        if ident is None:  # a notification
            self._reply(202, "text/plain", b"")
            return
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "probe-refusing", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            text = str((message.get("params") or {}).get("arguments", {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        self._reply(200, "application/json", json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())


@contextlib.contextmanager
def serving(status: int) -> Iterator[ProbeRefusingServer]:
    """The server, listening in a thread until the block ends."""
    server = ProbeRefusingServer(status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def main() -> None:
    server = ProbeRefusingServer(int(sys.argv[1]))
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
