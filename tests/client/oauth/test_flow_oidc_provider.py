"""Our OAuth client signing in at a real OpenID provider: oidc-provider 9.13.3 on loopback
(``fixtures.oidc_provider``, its sign-in scripted), for our MCP endpoint verifying its tokens, on
real sockets. oidc-provider grants ``offline_access`` (a refresh token) only when the
authorization request says ``prompt=consent``, as Google does with ``access_type=offline``. Also: a
DPoP refresh met with a rotated nonce, and issuers with a path (Keycloak, Auth0, Okta shapes)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator, Mapping

import httpx
import pytest

from fixtures.oidc_provider import OpenIdProvider, running_oidc_provider
from fixtures.protected import whoami_server
from mcp_sse_server.auth import DPoP, JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import HeadlessUserAgent, MemoryTokenStorage, OAuth, OAuthSettings
from mcp_sse_server.client.oauth.grants import origin_of
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp, McpHttpServer
from mcp_sse_server.transport.http.server import listening_socket

REDIRECT = "http://127.0.0.1:9/callback"  # never served: HeadlessUserAgent reads the Location


@pytest.fixture(scope="module")
def op() -> Iterator[OpenIdProvider]:
    with running_oidc_provider(public_clients={"mcp-cli": [REDIRECT]}, registration=True) as provider:
        yield provider


@contextlib.asynccontextmanager
async def endpoint_for(op: OpenIdProvider, dpop: DPoP | None = None) -> AsyncIterator[str]:
    """Our MCP endpoint (``/mcp``, needing ``mcp:tools``) verifying ``op``'s JWT access tokens,
    with ``dpop`` its DPoP settings."""
    sock = listening_socket("127.0.0.1", 0)
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    verifier = JwtVerifier(issuer=op.issuer, audience=resource, jwks_uri=op.url.rstrip("/") + "/jwks")
    auth = ResourceServer(resource, [op.issuer], verifier=verifier, required_scopes={"mcp:tools"}, dpop=dpop)
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


class CountingUserAgent(HeadlessUserAgent):
    """The headless user, counting the sign-ins it is sent to."""

    signed_in = 0

    async def authorize(self, url: str) -> Mapping[str, str]:
        self.signed_in += 1
        return await super().authorize(url)


async def test_a_dpop_refresh_met_with_use_dpop_nonce_is_retried_with_the_nonce() -> None:
    # An authorization server requiring DPoP nonces rotates them: by the time the access token
    # expires, the nonce the client kept is stale, and the refresh is answered use_dpop_nonce. The
    # refresh was not retried with the new nonce: the tokens were dropped and the user was sent
    # to sign in again.
    with running_oidc_provider(public_clients={"mcp-cli": [REDIRECT]}, dpop="nonce") as op:
        async with (
            asyncio.timeout(60),
            endpoint_for(op, dpop=DPoP("required")) as endpoint,
            httpx.AsyncClient(timeout=10) as http,
        ):
            agent = CountingUserAgent(REDIRECT, http=http, max_hops=8)
            auth = OAuth(OAuthSettings(client_id="mcp-cli", dpop=True), storage=MemoryTokenStorage(), user_agent=agent)
            async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
                assert not (await client.call_tool("whoami", {})).is_error
                tokens = auth.tokens
                assert tokens is not None and tokens.token_type == "DPoP" and tokens.refresh_token
                auth.tokens = dataclasses.replace(tokens, expires_at=0.0)
                auth._dpop_nonces[origin_of(op.url)] = "a-nonce-the-server-rotated-away"
                assert not (await client.call_tool("whoami", {})).is_error
            assert auth.tokens is not None and auth.tokens.access_token != tokens.access_token
            assert agent.signed_in == 1


@pytest.mark.parametrize("path", ["/realms/demo", "/", "/oauth2/default"], ids=["keycloak", "auth0", "okta"])
async def test_a_sign_in_at_an_issuer_with_a_path(path: str) -> None:
    # Issuers shaped like Keycloak's realm, Auth0's trailing slash and Okta's custom authorization
    # server: the metadata is found (OpenID path-appended; root for "/") and its issuer matched as
    # a plain string.
    with running_oidc_provider(public_clients={"mcp-cli": [REDIRECT]}, path=path) as op:
        async with asyncio.timeout(60), endpoint_for(op) as endpoint, httpx.AsyncClient(timeout=10) as http:
            auth = oauth(http, client_id="mcp-cli")
            async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
                assert not (await client.call_tool("whoami", {})).is_error
            assert auth.tokens is not None and auth.tokens.issuer == op.issuer and auth.tokens.refresh_token
