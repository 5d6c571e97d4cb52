"""A hand-written stdio server that speaks 2026-07-28 and also takes ``initialize`` on the same
process afterwards (test_stdio_fallback.py): at 2026-07-28 its ``ask_colour`` fails with the
official SDK's wording for a missing back-channel; on a session it sends a real
``elicitation/create`` request and answers with what the client said. Every ``initialize`` it
takes is written to stderr as ``initialized <n>``."""

import json
import sys
from typing import Any

MODERN = "2026-07-28"
REFUSAL = "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."
INFO = {"name": "dual-era", "version": "1"}
SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    for line in sys.stdin:
        if line.strip():
            message: dict[str, Any] = json.loads(line)
            return message
    return None


initialized = 0
while (message := read()) is not None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None or method is None:
        continue
    if method == "server/discover":
        result = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
        }
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif method == "initialize":
        initialized += 1
        print(f"initialized {initialized}", file=sys.stderr, flush=True)
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": INFO},
            }
        )
    elif method == "tools/call" and initialized == 0:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": REFUSAL}})
    elif method == "tools/call":
        params = {"mode": "form", "message": "Favourite colour?", "requestedSchema": SCHEMA}
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": params})
        answer = read()
        while answer is not None and answer.get("id") != "ask-1":
            answer = read()
        content = ((answer or {}).get("result") or {}).get("content") or {}
        text = f"you said {content.get('colour')}"
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
