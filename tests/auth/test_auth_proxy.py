"""The OAuth proxy (``auth.proxy``) end to end: our OAuth client signs in through it to a real
OpenID provider (oidc-provider on loopback) and calls a tool; the metadata, registration rules,
our own tokens and their refresh."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import jwt
import orjson
import pytest

from fixtures.auth_proxy import Browser, Proxied, proxied_endpoint
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import MemoryTokenStorage, OAuth, OAuthSettings

REDIRECT = "http://127.0.0.1:9/callback"  # never served: the browser stops at its Location


@pytest.fixture
async def proxied() -> AsyncIterator[Proxied]:
    async with proxied_endpoint() as running:
        yield running


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


async def register(http: httpx.AsyncClient, proxied: Proxied, **metadata: Any) -> httpx.Response:
    body = {"redirect_uris": [REDIRECT], "client_name": "test", **metadata}
    return await http.post(proxied.issuer + "/oauth/register", json=body)


async def test_our_client_signs_in_through_the_proxy_and_calls_a_tool(proxied: Proxied) -> None:
    browser = Browser()
    auth = OAuth(
        OAuthSettings(client_name="proxy test"),
        storage=MemoryTokenStorage(),
        user_agent=browser.user_agent(REDIRECT),
    )
    async with (
        httpx.AsyncClient(timeout=30) as http,
        StreamableHttpClient(proxied.resource, auth=auth, http_client=http) as client,
    ):
        result = await client.call_tool("whoami", {})
    await browser.aclose()
    seen = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    assert seen["subject"] == "oidc:alice"
    assert seen["issuer"] == proxied.issuer
    assert seen["audience"] == [proxied.resource]
    assert "mcp:tools" in seen["scopes"]
    # The consent page came first (our origin), then the upstream sign-in at the IdP.
    assert browser.pages[0][1].startswith(proxied.issuer + "/oauth/authorize")
    assert browser.upstream_url is not None and browser.upstream_url.startswith(proxied.op.url)
    upstream = dict(parse_qsl(urlsplit(browser.upstream_url).query))
    # Our own PKCE, nonce and state upstream; nothing of the client's goes there.
    assert upstream["code_challenge_method"] == "S256" and upstream["nonce"]
    assert upstream["redirect_uri"] == proxied.issuer + "/oauth/callback"
    assert "resource" not in upstream and upstream["client_id"] == "mcp-proxy"
    assert auth.tokens is not None
    header = jwt.get_unverified_header(auth.tokens.access_token)
    assert header["alg"] == "ES256" and header["typ"] == "at+jwt" and header["kid"]
    claims = jwt.decode(auth.tokens.access_token, options={"verify_signature": False})
    assert claims["iss"] == proxied.issuer and claims["aud"] == proxied.resource and claims["idp"] == "oidc"
    # The token is ours alone: no upstream token or secret in it or in the answer.
    assert set(claims) == {"iss", "aud", "sub", "client_id", "scope", "iat", "exp", "jti", "sid", "idp"}


async def test_metadata_and_protected_resource_metadata_point_at_us(proxied: Proxied) -> None:
    async with httpx.AsyncClient() as http:
        metadata = (await http.get(proxied.issuer + "/.well-known/oauth-authorization-server")).json()
        prm = (await http.get(proxied.issuer + "/.well-known/oauth-protected-resource/mcp")).json()
        jwks = (await http.get(metadata["jwks_uri"])).json()
    assert metadata["issuer"] == proxied.issuer
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["registration_endpoint"] == proxied.issuer + "/oauth/register"
    assert prm["authorization_servers"] == [proxied.issuer] and prm["resource"] == proxied.resource
    assert [key["kty"] for key in jwks["keys"]] == ["EC"] and all("d" not in key for key in jwks["keys"])
