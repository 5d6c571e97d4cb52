"""The TypeScript SDK v2 client (@modelcontextprotocol/client 2.4) at 2026-07-28 against our
server: probing (versionNegotiation "auto") and pinned; list, call, read, prompt, progress,
and sampling and elicitation through input_required."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures.node import run_node_json
from mcp_sse_server.transport.http import McpHttpServer

SCRIPT = Path(__file__).with_name("ts_v2_client.mjs")


async def run_client(endpoint: str, mode: str) -> dict[str, Any]:
    return await run_node_json(SCRIPT, endpoint, mode)


@pytest.mark.parametrize("mode", ["auto", "pin"])
async def test_the_typescript_v2_client_speaks_2026_07_28(bound: McpHttpServer, mode: str) -> None:
    out = await run_client(bound.endpoint, mode)
    assert out["protocolVersion"] == "2026-07-28"
    assert out["tools"][:3] == ["add", "wait", "chatty"]
    assert out["add"]["content"] == [{"type": "text", "text": "42"}]
    assert out["hello"]["contents"][0]["text"] == "Hello, world."
    assert out["prompt"]["messages"][0]["content"]["text"] == "Say hello to Grace."
    assert out["chatty"]["content"][0]["text"] == "chatty done"
    assert out["sample"]["content"][0]["text"] == "model said: forty-two" and out["sampled"] == ["meaning of life?"]
    assert out["elicit"]["content"][0]["text"] == "accept: Grace" and out["elicited"] == ["Your name?"]
    assert len(bound.app.live_sessions) == 0  # no session: every request stood alone
