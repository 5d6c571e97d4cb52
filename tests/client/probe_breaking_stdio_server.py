"""A stdio MCP server (2025-06-18, one ``echo`` tool) that mishandles the ``server/discover``
probe in one of several ways, for tests/client/test_probe_recovery.py:

    python probe_breaking_stdio_server.py garbage     # prints a line that is not JSON-RPC
    python probe_breaking_stdio_server.py malformed   # prints JSON that is no JSON-RPC message
    python probe_breaking_stdio_server.py notify      # sends a notification, then nothing
    python probe_breaking_stdio_server.py exit        # exits with code 3
    python probe_breaking_stdio_server.py stateless   # serves 2026-07-28 only: refuses initialize
    python probe_breaking_stdio_server.py banner      # a stdout banner first, then as stateless (0.2 s late)

Each start prints ``PROBE-SERVER-START`` on stderr, and each request's method as
``METHOD <name>``, so a test can count starts and probes. Empty lines are skipped.
"""

from __future__ import annotations

import json
import sys
import time

MODE = sys.argv[1]
TOOLS = [{"name": "echo", "description": "Echo text.", "inputSchema": {"type": "object"}}]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, object]) -> None:
    method, ident = request.get("method"), request.get("id")
    params = request.get("params") or {}
    assert isinstance(params, dict)
    if method == "server/discover":
        if MODE == "garbage":
            print("Welcome to the server! Type help for help.", flush=True)
        elif MODE == "malformed":
            send({"jsonrpc": "2.0", "id": ident})
        elif MODE == "notify":
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}})
        elif MODE == "exit":
            sys.exit(3)
        else:  # stateless, banner
            if MODE == "banner":
                time.sleep(0.2)
            version = "2026-07-28"
            info = {"io.modelcontextprotocol/serverInfo": {"name": "probe-server", "version": "1"}}
            result = {"supportedVersions": [version], "capabilities": {"tools": {}}, "_meta": info}
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        return
    if method == "initialize":
        if MODE in ("stateless", "banner"):
            error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}
            send({"jsonrpc": "2.0", "id": ident, "error": error})
            return
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "probe-server", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", ""))
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    print("PROBE-SERVER-START", file=sys.stderr, flush=True)
    if MODE == "banner":
        print("probe-server 1.0 starting", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "method" in request:
            print(f"METHOD {request['method']}", file=sys.stderr, flush=True)
            answer(request)


if __name__ == "__main__":
    main()
