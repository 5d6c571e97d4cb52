"""The OAuth proxy with Google upstream (``Upstream.google``), against a stand-in of Google's
documented OpenID Connect endpoints (``fixtures.google_double``: Google cannot be reached from
the tests). Our client signs in and the tool sees ``google:<sub>``; what goes to Google is what
Google needs for a refresh token (``access_type=offline``, ``prompt=consent``, no
``offline_access`` scope, our nonce, no ``resource``); our refresh refreshes the Google token,
which Google does not rotate (the old refresh token kept); a Workspace domain rule (``org:``, the
``hd`` claim) admits and refuses."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import jwt
import orjson

from fixtures.auth_proxy import client_signs_in, listening, refusal, serving
from fixtures.google_double import GoogleDouble, running_google
from mcp_sse_server.auth.providers import PRESETS, AllowPolicy
from mcp_sse_server.auth.providers.discovery import fetch_discovery
from mcp_sse_server.auth.proxy import GOOGLE_CLAIMS, AuthProxy, Upstream
from mcp_sse_server.engine.tokens import AccessToken

ANN = {"sub": "107700000000000000001", "email": "ann@acme.example", "email_verified": True, "hd": "acme.example"}


@contextlib.asynccontextmanager
async def google_proxy(
    allow: tuple[str, ...], clock: Callable[[], float] = time.time
) -> AsyncIterator[tuple[AuthProxy, GoogleDouble]]:
    sock, issuer = listening()
    double = GoogleDouble("123.apps.googleusercontent.com", "gsecret", issuer + "/oauth/callback", ANN)
    async with running_google(double):
        document = await asyncio.to_thread(fetch_discovery, PRESETS["oidc"], double.url)
        upstream = Upstream.google(document, client_id=double.client_id, client_secret="gsecret")
        proxy = AuthProxy(
            issuer=issuer,
            resource=issuer + "/mcp",
            upstream=upstream,
            idp="google",
            allow=AllowPolicy(allow, claims=GOOGLE_CLAIMS),
            clock=clock,
        )
        async with serving(proxy, sock):
            yield proxy, double


async def test_our_client_signs_in_with_google_and_the_google_token_is_refreshed() -> None:
    offset = [0.0]
    async with google_proxy(("org:acme.example",), clock=lambda: time.time() + offset[0]) as (proxy, double):
        auth, browser, result = await client_signs_in(proxy.resource, "google")
        seen: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
        assert seen["subject"] == "google:" + ANN["sub"]
        assert browser.upstream_url is not None
        sent = dict(parse_qsl(urlsplit(browser.upstream_url).query))
        assert sent["access_type"] == "offline" and sent["prompt"] == "consent" and sent["nonce"]
        assert "offline_access" not in sent["scope"].split() and "resource" not in sent
        assert double.refresh_tokens_issued == 1
        assert auth.tokens is not None and auth.tokens.refresh_token is not None
        claims = jwt.decode(auth.tokens.access_token, options={"verify_signature": False})
        ours = AccessToken(issuer=proxy.issuer, claims=claims)
        first = await proxy.upstream_token(ours)
        refresh_token = auth.tokens.refresh_token
        async with httpx.AsyncClient() as http:
            for hours in (1, 2):  # Google's access tokens live an hour; its refresh token is not rotated
                offset[0] = hours * 3600.0
                answer = await http.post(
                    proxy.issuer + "/oauth/token",
                    data={
                        "grant_type": "refresh_token",
                        "client_id": claims["client_id"],
                        "refresh_token": refresh_token,
                    },
                )
                assert answer.status_code == 200, answer.text
                refresh_token = answer.json()["refresh_token"]
                now = await proxy.upstream_token(ours)
                assert now is not None and now != first and now in double.access
                first = now
        assert double.refresh_tokens_issued == 1  # the first one served both refreshes


async def test_a_google_account_outside_the_workspace_rule_is_refused() -> None:
    async with google_proxy(("org:other.example",)) as (proxy, _):
        back = await refusal(proxy)
    assert back["error"] == "access_denied" and "code" not in back
