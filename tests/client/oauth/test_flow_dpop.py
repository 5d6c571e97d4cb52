"""Our OAuth client with DPoP (``OAuthSettings(dpop=True)``) against our DPoP-required MCP endpoint
and the test authorization server, on real loopback sockets: the client proves its key at the token
endpoint, gets a token bound to it (``cnf.jkt``, which the endpoint reads from the JWT or from the
introspection answer), sends it as ``Authorization: DPoP`` with a fresh proof on every request, and
retries once with the nonce a ``use_dpop_nonce`` refusal hands it."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from fixtures.oauth_records import RecordingAuthorizationServer, Wire
from fixtures.protected import protected_endpoint as protected
from mcp_sse_server.auth import DPoP, DPoPNonces
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import HeadlessUserAgent, MemoryTokenStorage, OAuth, OAuthError, OAuthSettings

REDIRECT = "http://127.0.0.1:9/callback"  # never served: HeadlessUserAgent reads the Location


def oauth(http: httpx.AsyncClient) -> OAuth:
    return OAuth(
        OAuthSettings(client_name="dpop flow test", dpop=True),
        storage=MemoryTokenStorage(),
        user_agent=HeadlessUserAgent(REDIRECT, http=http),
        clock=time.time,
    )


@pytest.mark.parametrize("introspection", [False, True], ids=["jwt", "introspection"])
async def test_our_client_calls_a_dpop_required_server_with_nonces_end_to_end(introspection: bool) -> None:
    wire = Wire()
    nonces = DPoPNonces(b"a DPoP nonce secret of 32 bytes at least")
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server, introspection=introspection, dpop=DPoP("required", nonces=nonces)) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            result = await client.call_tool("whoami", {})
            again = await client.call_tool("whoami", {})
        assert auth.tokens is not None and auth.tokens.token_type == "DPoP"

    assert not result.is_error and not again.is_error
    # The token the server accepted is bound to the client's key, proved at the token endpoint.
    assert auth_server.dpop_bound == [auth._dpop.thumbprint()]  # type: ignore[union-attr]
    to_mcp = wire.to(endpoint)
    with_token = [sent for sent in to_mcp if sent.authorization is not None]
    assert with_token and all(sent.authorization.startswith("DPoP ") for sent in with_token)  # type: ignore[union-attr]
    # The first request with the token met use_dpop_nonce (401), the retry with the nonce passed;
    # after that every request passed at once (the client keeps the server's nonce).
    statuses = [sent.status for sent in with_token]
    assert statuses[0] == 401 and all(status in (200, 202) for status in statuses[1:]), statuses


async def test_a_client_without_dpop_gets_a_bearer_token_the_dpop_required_server_refuses() -> None:
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server, dpop=DPoP("required")) as endpoint,
        httpx.AsyncClient(timeout=10) as http,
    ):
        plain = OAuth(
            OAuthSettings(client_name="no dpop"),
            storage=MemoryTokenStorage(),
            user_agent=HeadlessUserAgent(REDIRECT, http=http),
        )
        with pytest.raises(OAuthError, match="refused the token it was just given"):
            async with StreamableHttpClient(endpoint, auth=plain, http_client=http) as client:
                await client.list_tools()
    assert auth_server.dpop_bound == []
