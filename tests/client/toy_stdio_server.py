"""A hand-written, misbehaving stdio MCP server for failure tests.

    python toy_stdio_server.py exit       # exits with code 3 when a tool is called
    python toy_stdio_server.py stubborn   # ignores SIGTERM and the end of stdin

It prints a banner line that is not JSON on stdout (as some servers do) and
a line on stderr.
"""

import json
import signal
import sys
import time

mode = sys.argv[1]
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def reply(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


print("toy server ready (this line is not JSON-RPC)", flush=True)
print("toy: started", file=sys.stderr, flush=True)
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        reply(
            message["id"],
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "toy", "version": "1"},
            },
        )
    elif method == "tools/call" and mode == "exit":
        print("toy: dying", file=sys.stderr, flush=True)
        sys.exit(3)
    elif method is not None and "id" in message:
        reply(message["id"], {"tools": []} if method == "tools/list" else {})
while mode == "stubborn":
    time.sleep(1)
