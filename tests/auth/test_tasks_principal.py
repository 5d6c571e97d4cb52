"""Tasks on a server that checks bearer tokens: a 2026-07-28 task is bound to the principal of
the token that made it; another principal's requests never see it (-32602, as an unknown id)."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.keys import ISSUER, RESOURCE, SigningKey
from fixtures.tasks import Client, build
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1", "ES256")


async def answer(client: Client, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    reply = await client.reply(method, params, authorization=f"Bearer {token}")
    assert reply.status in (200, 400), reply.body
    message: dict[str, Any] = reply.messages[-1] if reply.messages else reply.json
    return message


async def test_a_task_is_seen_only_by_the_principal_that_made_it(key: SigningKey) -> None:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    server = build()
    auth = ResourceServer(RESOURCE, [ISSUER], verifier=verifier, required_scopes={"mcp:tools"})
    client = Client(McpHttpApp(server, settings=HttpSettings(path="/mcp", auth=auth)))
    alice, bob = key.sign(sub="alice"), key.sign(sub="bob")
    created = await answer(client, alice, "tools/call", {"name": "slow", "arguments": {"wait": True}})
    task_id = created["result"]["taskId"]
    assert (await answer(client, alice, "tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
    for method, params in (
        ("tasks/get", {"taskId": task_id}),
        ("tasks/cancel", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
    ):
        refused = await answer(client, bob, method, params)
        assert refused["error"]["code"] == INVALID_PARAMS and "Unknown task" in refused["error"]["message"], method
    server.release.set()  # type: ignore[attr-defined]
    assert (await client.until_with(alice, task_id, "completed"))["result"]["content"][0]["text"] == "slow 0"
