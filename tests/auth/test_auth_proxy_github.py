"""The OAuth proxy with GitHub upstream (``Upstream.github``), against a stand-in of GitHub's
documented web flow and ``/user`` (``fixtures.github_double``: GitHub cannot be reached from the
tests). Our OAuth client signs in and the tool sees ``github:<numeric id>``; the allow policy
refuses another user; GitHub's quirks (errors answered with HTTP 200, form-encoded answers unless
JSON is asked for) are met; our own PKCE reaches GitHub, the client's does not."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import orjson
import pytest

from fixtures.auth_proxy import Browser
from fixtures.github_double import GitHubDouble, running_github
from fixtures.protected import whoami_server
from mcp_sse_server.auth.providers import AllowPolicy
from mcp_sse_server.auth.proxy import AuthProxy, Upstream, UpstreamError
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import MemoryTokenStorage, OAuth, OAuthSettings
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp, McpHttpServer

REDIRECT = "http://127.0.0.1:9/callback"
USERS = {"octocat": {"id": 583231, "email": "octocat@github.example", "name": "The Octocat"}}
GITHUB_CLAIMS = {"user": ("sub",), "email": ("email",)}


@contextlib.asynccontextmanager
async def github_proxy(allow: tuple[str, ...]) -> AsyncIterator[tuple[str, GitHubDouble]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
    double = GitHubDouble("Ov23liTEST", "s3cret", issuer + "/oauth/callback", USERS)
    async with running_github(double):
        upstream = Upstream.github(client_id="Ov23liTEST", client_secret="s3cret", web=double.url, api=double.url)
        proxy = AuthProxy(
            issuer=issuer,
            resource=issuer + "/mcp",
            upstream=upstream,
            idp="github",
            allow=AllowPolicy(allow, claims=GITHUB_CLAIMS),
        )
        auth = proxy.resource_server(["mcp:tools"])
        app = McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=auth), bind_host="127.0.0.1")
        served = await McpHttpServer.on_socket(app, sock)
        try:
            yield issuer, double
        finally:
            await served.close(1.0)
            await proxy.aclose()


async def test_our_client_signs_in_with_github_through_the_proxy() -> None:
    async with github_proxy(allow=("user:583231",)) as (issuer, double):
        browser = Browser()
        auth = OAuth(
            OAuthSettings(client_name="gh"), storage=MemoryTokenStorage(), user_agent=browser.user_agent(REDIRECT)
        )
        async with (
            httpx.AsyncClient(timeout=30) as http,
            StreamableHttpClient(issuer + "/mcp", auth=auth, http_client=http) as client,
        ):
            result = await client.call_tool("whoami", {})
        await browser.aclose()
    seen: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    assert seen["subject"] == "github:583231"  # the numeric id, never the login
    assert browser.upstream_url is not None
    sent = dict(parse_qsl(urlsplit(browser.upstream_url).query))
    assert sent["code_challenge_method"] == "S256" and "nonce" not in sent and "resource" not in sent
    assert double.token_requests and double.token_requests[0]["code_verifier"]  # our verifier, at GitHub
    assert auth.tokens is not None and not auth.tokens.access_token.startswith("gho_")


async def test_a_github_user_outside_the_allow_policy_is_refused() -> None:
    async with github_proxy(allow=("user:1",)) as (issuer, _), httpx.AsyncClient() as http:
        registered = await http.post(issuer + "/oauth/register", json={"redirect_uris": [REDIRECT]})
        client_id = registered.json()["client_id"]
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
            "state": "s",
        }
        browser = Browser()
        back = await browser.walk(issuer + "/oauth/authorize?" + urlencode(query), REDIRECT)
        await browser.aclose()
    assert back["error"] == "access_denied" and "code" not in back


async def test_githubs_errors_answered_with_200_are_errors() -> None:
    double = GitHubDouble("Ov23liTEST", "s3cret", "http://127.0.0.1:1/oauth/callback", USERS)
    async with running_github(double), httpx.AsyncClient() as http:
        upstream = Upstream.github(client_id="Ov23liTEST", client_secret="s3cret", web=double.url, api=double.url)
        raw = await http.post(
            double.url + "/login/oauth/access_token",
            data={"client_id": "Ov23liTEST", "client_secret": "s3cret", "code": "nope"},
        )
        assert raw.status_code == 200 and raw.text.startswith("error=bad_verification_code")  # form-encoded, 200
        with pytest.raises(UpstreamError) as refused:
            await upstream.exchange(http, code="nope", callback=double.callback, verifier="v" * 43)
    assert refused.value.error == "bad_verification_code"
