"""The OAuth proxy with an Amazon Cognito user pool upstream (``Upstream.cognito``). Cognito cannot
be reached from the tests: its stand-in is the real oidc-provider serving at Cognito's documented
issuer shape (``/{poolId}``, the path of ``https://cognito-idp.{region}.amazonaws.com/{poolId}``),
with the hosted-UI endpoints at ``/oauth2/authorize``, ``/oauth2/token``, ``/oauth2/userInfo``,
``/oauth2/revoke``, its keys at ``/.well-known/jwks.json``, no revocation endpoint in discovery,
and ``cognito:groups`` in the ID token. It is a stand-in of the shapes AWS documents, not
Cognito (issuer and hosted-UI domain are one host here; at AWS they are two).

Our client signs in through the proxy and calls a tool (``cognito:<sub>``); what goes upstream
has no ``offline_access`` (Cognito has no such scope); ``group:`` (``cognito:groups``) and
``domain:`` rules admit and refuse; revoking our refresh token revokes the Cognito token at the
hosted UI's ``/oauth2/revoke``, which discovery does not list."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import jwt
import orjson
import pytest

from fixtures.auth_proxy import UPSTREAM_CLIENT, client_signs_in, listening, refusal, serving
from fixtures.oidc_provider import running_oidc_provider
from mcp_sse_server.auth.providers import PRESETS, AllowPolicy
from mcp_sse_server.auth.providers.discovery import fetch_discovery
from mcp_sse_server.auth.proxy import AuthProxy, Upstream
from mcp_sse_server.auth.proxy.upstream import COGNITO_CLAIMS, cognito_issuer
from mcp_sse_server.engine.tokens import AccessToken

POOL = "us-east-1_Ab12Cd34E"
SUB = "94f8a4b8-0031-70b5-6e3c-e1f0a2b3c4d5"
ANN = {"email": "ann@acme.example", "email_verified": True, "cognito:groups": ["ops"], "cognito:username": "ann"}
# Cognito's hosted-UI endpoints (AWS docs: cognito-userpools-server-contract-reference.html)
ROUTES = {
    "authorization": "/oauth2/authorize",
    "token": "/oauth2/token",
    "userinfo": "/oauth2/userInfo",
    "revocation": "/oauth2/revoke",
    "jwks": "/.well-known/jwks.json",
}


@contextlib.asynccontextmanager
async def cognito_proxy(allow: tuple[str, ...]) -> AsyncIterator[AuthProxy]:
    sock, issuer = listening()
    with running_oidc_provider(
        path=f"/{POOL}",
        code_clients={UPSTREAM_CLIENT: [issuer + "/oauth/callback"]},
        account=SUB,
        account_claims=ANN,
        id_token_claims=("cognito:groups", "email", "email_verified"),
        routes=ROUTES,
    ) as op:
        document = await asyncio.to_thread(fetch_discovery, PRESETS["oidc"], op.issuer)
        assert document["jwks_uri"] == op.issuer + "/.well-known/jwks.json"
        document.pop("revocation_endpoint", None)  # Cognito's discovery lists none
        upstream = Upstream.cognito(
            document,
            domain=op.issuer,  # the hosted-UI domain: a URL with a scheme for a stand-in
            client_id=UPSTREAM_CLIENT,
            client_secret=op.secrets[UPSTREAM_CLIENT],
            scopes=("openid", "email", "profile", "offline_access"),
        )
        assert upstream.revocation_endpoint == op.issuer + "/oauth2/revoke"
        proxy = AuthProxy(
            issuer=issuer,
            resource=issuer + "/mcp",
            upstream=upstream,
            idp="cognito",
            allow=AllowPolicy(allow, claims=COGNITO_CLAIMS),
        )
        async with serving(proxy, sock):
            yield proxy


@pytest.mark.parametrize("rule", ["group:ops", "domain:acme.example", f"user:{SUB}"])
async def test_a_cognito_user_signs_in_and_calls_a_tool(rule: str) -> None:
    async with cognito_proxy((rule,)) as proxy:
        _, browser, result = await client_signs_in(proxy.resource, "cognito")
    seen: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    assert seen["subject"] == f"cognito:{SUB}"
    assert browser.upstream_url is not None and urlsplit(browser.upstream_url).path == f"/{POOL}/oauth2/authorize"
    sent = dict(parse_qsl(urlsplit(browser.upstream_url).query))
    assert sent["scope"].split() == ["openid", "email", "profile"]  # no offline_access: Cognito has none


@pytest.mark.parametrize("rule", ["group:admins", "domain:other.example", "user:someone"])
async def test_a_cognito_user_no_rule_admits_is_refused(rule: str) -> None:
    async with cognito_proxy((rule,)) as proxy:
        back = await refusal(proxy)
    assert back["error"] == "access_denied" and "code" not in back


async def test_revoking_our_refresh_token_revokes_the_cognito_token_at_the_hosted_ui() -> None:
    async with cognito_proxy(("group:ops",)) as proxy, httpx.AsyncClient() as http:
        auth, _, _ = await client_signs_in(proxy.resource, "cognito")
        assert auth.tokens is not None and auth.tokens.refresh_token is not None
        claims = jwt.decode(auth.tokens.access_token, options={"verify_signature": False})
        upstream = await proxy.upstream_token(AccessToken(issuer=proxy.issuer, claims=claims))
        assert upstream is not None
        userinfo = proxy.upstream.userinfo_endpoint
        assert userinfo is not None
        assert (await http.get(userinfo, headers={"authorization": f"Bearer {upstream}"})).status_code == 200
        revoked = await http.post(
            proxy.issuer + "/oauth/revoke",
            data={"token": auth.tokens.refresh_token, "client_id": claims["client_id"]},
        )
        assert revoked.status_code == 200
        # No refresh token from the stand-in (no offline_access): the access token was revoked there.
        assert (await http.get(userinfo, headers={"authorization": f"Bearer {upstream}"})).status_code == 401


def test_cognito_issuer_and_hosted_ui_endpoints() -> None:
    issuer = cognito_issuer("eu-west-1", "eu-west-1_Xy")
    assert issuer == "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Xy"
    document = {
        "issuer": issuer,
        "authorization_endpoint": "https://acme.auth.eu-west-1.amazoncognito.com/oauth2/authorize",
        "token_endpoint": "https://acme.auth.eu-west-1.amazoncognito.com/oauth2/token",
        "jwks_uri": issuer + "/.well-known/jwks.json",
    }
    upstream = Upstream.cognito(document, domain="login.acme.example", client_id="c", client_secret="s")
    assert upstream.token_endpoint == "https://login.acme.example/oauth2/token"  # the custom domain
    assert upstream.revocation_endpoint == "https://login.acme.example/oauth2/revoke"
    assert upstream.jwks_uri == issuer + "/.well-known/jwks.json"
