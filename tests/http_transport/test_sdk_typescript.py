"""Interoperability with the official TypeScript SDK client over a real socket (needs Node 22)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.http_app import Gate
from fixtures.node import run_node_json
from mcp_sse_server.transport.http import McpHttpServer

SCRIPT = Path(__file__).with_name("ts_client.mjs")


async def run_client(endpoint: str) -> dict[str, Any]:
    return await run_node_json(SCRIPT, endpoint)


async def test_the_typescript_client_does_everything(bound: McpHttpServer, gate: Gate) -> None:
    out = await run_client(bound.endpoint)
    assert out["sessionId"] and out["serverVersion"]["name"] == "http-test"
    assert out["protocolVersion"] == "2025-11-25"  # the SDK's latest, which we serve
    assert out["tools"][:3] == ["add", "wait", "chatty"]
    assert out["add"]["content"] == [{"type": "text", "text": "42"}]
    assert out["resources"] == ["test://hello"]
    assert out["hello"]["contents"][0]["text"] == "Hello, world."
    assert out["templates"] == ["test://items/{id}"]
    assert out["item"]["contents"][0]["text"] == "item 9"
    assert out["prompts"] == ["greet"]
    assert out["prompt"]["messages"][0]["content"]["text"] == "Say hello to Grace."
    assert out["completion"]["completion"]["values"] == ["alice", "albert"]
    assert out["chatty"]["content"][0]["text"] == "chatty done"
    assert out["progress"] == [[1, 2, "half"], [2, 2, "done"]]
    assert out["logs"] == ["working"]
    assert out["sample"]["content"][0]["text"] == "model said: forty-two"
    assert out["sampled"] == ["meaning of life?"]
    assert out["elicit"]["content"][0]["text"] == "accept: Grace"
    assert out["elicited"] == ["Your name?"]
    assert "changed my mind" in out["cancelled"]
    assert gate.cancelled.is_set()  # the abort reached the server and stopped the handler
    assert out["pingAfterCancel"] == {}
    assert out["terminated"] is True
    assert len(bound.app.live_sessions) == 0  # DELETE ended it
