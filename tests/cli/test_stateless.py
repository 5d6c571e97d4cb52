"""``tools`` and ``call`` and revision 2026-07-28 where no peer SDK is needed: a server that
refuses every revision the client speaks shows its supported list, and ``--verbose`` names
the session revision of a built-in server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fixtures.commands import Cli


class _Refusing(BaseHTTPRequestHandler):
    """Answers every POST with -32022 naming only a revision nobody speaks."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        error = {"code": -32022, "message": "Unsupported protocol version"}
        error["data"] = {"supported": ["2099-01-01"], "requested": self.headers.get("mcp-protocol-version")}
        payload = json.dumps({"jsonrpc": "2.0", "id": body.get("id"), "error": error}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def refusing() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def test_an_unsupported_revision_shows_what_the_server_supports(cli: Cli, refusing: str) -> None:
    result = cli("tools", refusing)
    assert result.returncode == 1
    assert "the server supports: 2099-01-01" in result.stderr, result.stderr
    assert "(JSON-RPC error -32022)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    session = cli("tools", "--mode", "session", refusing)  # the handshake gets the same answer
    assert "the server supports: 2099-01-01" in session.stderr, session.stderr


def test_tools_verbose_on_a_built_in_server(cli: Cli) -> None:
    result = cli("tools", "--verbose", "math")
    assert result.returncode == 0, result.stderr
    # The built-in servers serve the stateless revision, which the CLI prefers.
    assert result.stderr.startswith("Protocol revision 2026-07-28 (stateless)")
    session = cli("tools", "--verbose", "--mode", "session", "math")
    assert session.returncode == 0 and "(session)" in session.stderr
    # "legacy", the old name of "session", is gone.
    legacy = cli("tools", "--verbose", "--mode", "legacy", "math")
    assert legacy.returncode == 2 and "'legacy' is not one of" in legacy.stderr
