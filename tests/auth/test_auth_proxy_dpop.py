"""DPoP through the OAuth proxy (RFC 9449): our client with ``dpop=True`` gets tokens bound to its
key from our token endpoint (``cnf.jkt``, ``token_type`` DPoP) and our resource server takes them
only with a valid proof; the bound token as Bearer is refused, the bound refresh token needs a
proof by the same key, a proof replayed at the token endpoint is refused, and a code bound to a
key at authorize (``dpop_jkt``) needs that key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import orjson
import pytest

from fixtures.auth_proxy import REDIRECT, Browser, Proxied, client_signs_in, proxied_endpoint, walk_to_code
from mcp_sse_server.auth import DPoP
from mcp_sse_server.client.oauth.assertions import DPoPKey


@pytest.fixture
async def proxied() -> AsyncIterator[Proxied]:
    async with proxied_endpoint(dpop=DPoP("allowed"), rs_options={"dpop": DPoP("allowed")}) as running:
        yield running


async def test_our_dpop_client_gets_bound_tokens_and_calls_a_tool(proxied: Proxied) -> None:
    auth, _, result = await client_signs_in(proxied.resource, "dpop through the proxy", dpop=True)
    assert orjson.loads(result.content[0].text)["subject"] == "oidc:alice"  # type: ignore[union-attr]
    assert auth.tokens is not None and auth.tokens.token_type == "DPoP"
    claims = jwt.decode(auth.tokens.access_token, options={"verify_signature": False})
    assert claims["cnf"]["jkt"]
    # The bound token without its proof (stolen, sent as Bearer): refused.
    async with httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        headers = {
            "authorization": f"Bearer {auth.tokens.access_token}",
            "accept": "application/json, text/event-stream",
        }
        refused = await http.post(proxied.resource, json=body, headers=headers)
    assert refused.status_code == 401


async def sign_in_with_key(proxied: Proxied, key: DPoPKey, **authorize: str) -> tuple[str, dict[str, Any]]:
    """A registered client id and its token answer, the code redeemed with a proof by ``key``."""
    async with httpx.AsyncClient() as http:
        registered = await http.post(
            proxied.issuer + "/oauth/register",
            json={"redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "refresh_token"]},
        )
        client_id = registered.json()["client_id"]
        browser = Browser()
        back, verifier = await walk_to_code(browser, proxied.issuer, client_id, **authorize)
        await browser.aclose()
        endpoint = proxied.issuer + "/oauth/token"
        form = {"grant_type": "authorization_code", "client_id": client_id, "code": back["code"]}
        form |= {"code_verifier": verifier, "redirect_uri": REDIRECT}
        answer = await http.post(endpoint, data=form, headers={"dpop": key.proof("POST", endpoint)})
    return client_id, answer.json() | {"status": answer.status_code}


async def test_a_bound_refresh_token_needs_a_proof_by_its_key(proxied: Proxied) -> None:
    key = DPoPKey()
    client_id, answer = await sign_in_with_key(proxied, key)
    assert answer["status"] == 200 and answer["token_type"] == "DPoP"
    endpoint = proxied.issuer + "/oauth/token"
    form = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": answer["refresh_token"]}
    async with httpx.AsyncClient() as http:
        without = await http.post(endpoint, data=form)
        other_key = await http.post(endpoint, data=form, headers={"dpop": DPoPKey().proof("POST", endpoint)})
        proof = key.proof("POST", endpoint)
        with_key = await http.post(endpoint, data=form, headers={"dpop": proof})
        form["refresh_token"] = with_key.json()["refresh_token"]
        replayed = await http.post(endpoint, data=form, headers={"dpop": proof})
        wrong_url = await http.post(endpoint, data=form, headers={"dpop": key.proof("POST", proxied.issuer + "/x")})
    assert without.status_code == 400 and without.json()["error"] == "invalid_grant"
    assert other_key.status_code == 400 and other_key.json()["error"] == "invalid_grant"
    assert with_key.status_code == 200 and with_key.json()["token_type"] == "DPoP"
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_dpop_proof"
    assert wrong_url.status_code == 400 and wrong_url.json()["error"] == "invalid_dpop_proof"


async def test_a_code_bound_at_authorize_needs_that_key(proxied: Proxied) -> None:
    bound = DPoPKey()
    _, answer = await sign_in_with_key(proxied, DPoPKey(), dpop_jkt=bound.thumbprint())
    assert answer["status"] == 400 and answer["error"] == "invalid_grant"
    _, answer = await sign_in_with_key(proxied, bound, dpop_jkt=bound.thumbprint())
    assert answer["status"] == 200 and answer["token_type"] == "DPoP"


async def test_the_metadata_lists_dpop_algorithms(proxied: Proxied) -> None:
    async with httpx.AsyncClient() as http:
        metadata = (await http.get(proxied.issuer + "/.well-known/oauth-authorization-server")).json()
    assert "ES256" in metadata["dpop_signing_alg_values_supported"]
