"""Our OAuth client signing in at a real OpenID provider: oidc-provider 9.13.3 on loopback
(``fixtures.oidc_provider``, its sign-in scripted), for our MCP endpoint verifying its tokens, on
real sockets. oidc-provider grants ``offline_access`` (a refresh token) only when the
authorization request says ``prompt=consent``, as Google does with ``access_type=offline``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from fixtures.oidc_provider import OpenIdProvider, running_oidc_provider
from fixtures.protected import whoami_server
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import HeadlessUserAgent, MemoryTokenStorage, OAuth, OAuthSettings
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp, McpHttpServer
from mcp_sse_server.transport.http.server import listening_socket

REDIRECT = "http://127.0.0.1:9/callback"  # never served: HeadlessUserAgent reads the Location


@pytest.fixture(scope="module")
def op() -> Iterator[OpenIdProvider]:
    with running_oidc_provider(public_clients={"mcp-cli": [REDIRECT]}, registration=True) as provider:
        yield provider


@contextlib.asynccontextmanager
async def endpoint_for(op: OpenIdProvider) -> AsyncIterator[str]:
    """Our MCP endpoint (``/mcp``, needing ``mcp:tools``) verifying ``op``'s JWT access tokens."""
    sock = listening_socket("127.0.0.1", 0)
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    verifier = JwtVerifier(issuer=op.issuer, audience=resource, jwks_uri=op.url + "/jwks")
    auth = ResourceServer(resource, [op.issuer], verifier=verifier, required_scopes={"mcp:tools"})
    app = McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=auth), bind_host="127.0.0.1")
    http = await McpHttpServer.on_socket(app, sock)
    try:
        yield resource
    finally:
        await http.close(1.0)
        await verifier.aclose()


def oauth(http: httpx.AsyncClient, **settings: object) -> OAuth:
    return OAuth(
        OAuthSettings(client_name="oidc-provider test", **settings),  # type: ignore[arg-type]
        storage=MemoryTokenStorage(),
        # The scripted sign-in: authorize, login, resume, consent, resume, back (cookies kept).
        user_agent=HeadlessUserAgent(REDIRECT, http=http, max_hops=8),
    )


@pytest.mark.parametrize("client_id", [None, "mcp-cli"], ids=["registered", "preregistered"])
async def test_a_sign_in_at_oidc_provider_brings_a_refresh_token_that_works(
    op: OpenIdProvider, client_id: str | None
) -> None:
    async with asyncio.timeout(60), endpoint_for(op) as endpoint, httpx.AsyncClient(timeout=10) as http:
        auth = oauth(http, client_id=client_id)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            assert not (await client.call_tool("whoami", {})).is_error
            tokens = auth.tokens
            assert tokens is not None and tokens.issuer == op.issuer
            # offline_access was asked with prompt=consent: the provider granted a refresh token.
            assert tokens.refresh_token, "no refresh token from oidc-provider"
            # It works: the access token, dropped, comes back by the refresh grant, no new sign-in.
            first = tokens.access_token
            auth.tokens = dataclasses.replace(tokens, expires_at=0.0)
            assert not (await client.call_tool("whoami", {})).is_error
            assert auth.tokens is not None and auth.tokens.access_token != first
