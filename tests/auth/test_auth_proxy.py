"""The OAuth proxy (``auth.proxy``) end to end: our OAuth client signs in through it to a real
OpenID provider (oidc-provider on loopback) and calls a tool; the metadata, registration rules,
our own tokens and their refresh."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from fixtures.auth_proxy import REDIRECT, Browser, Proxied, client_signs_in, proxied_endpoint, s256
from fixtures.auth_proxy import authorize_url as proxy_authorize_url
from mcp_sse_server import McpServer, RequestContext
from mcp_sse_server.auth.proxy import GrantToken
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import MemoryTokenStorage, OAuth, OAuthSettings
from mcp_sse_server.engine.tokens import AccessToken


@pytest.fixture
async def proxied() -> AsyncIterator[Proxied]:
    async with proxied_endpoint() as running:
        yield running


async def register(http: httpx.AsyncClient, proxied: Proxied, **metadata: Any) -> httpx.Response:
    body = {"redirect_uris": [REDIRECT], "client_name": "test", **metadata}
    return await http.post(proxied.issuer + "/oauth/register", json=body)


async def test_our_client_signs_in_through_the_proxy_and_calls_a_tool(proxied: Proxied) -> None:
    auth, browser, result = await client_signs_in(proxied.resource, "proxy test")
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


# --- attacks: each one refused by its defence ------------------------------------------------------


async def client_of(proxied: Proxied, **metadata: Any) -> str:
    async with httpx.AsyncClient() as http:
        response = await register(http, proxied, grant_types=["authorization_code", "refresh_token"], **metadata)
    assert response.status_code == 201, response.text
    client_id: str = response.json()["client_id"]
    return client_id


def authorize_url(proxied: Proxied, client_id: str, verifier: str, **params: str) -> str:
    """The proxy's authorize URL as this module's client asks: its state, resource and scope."""
    wanted = {"state": "client-state", "resource": proxied.resource, "scope": "mcp:tools", **params}
    return proxy_authorize_url(proxied.issuer, client_id, s256(verifier), **wanted)


async def sign_in(proxied: Proxied, client_id: str, verifier: str, **params: str) -> dict[str, str]:
    """The redirect back to the client after a user approved and signed in."""
    browser = Browser()
    try:
        return await browser.walk(authorize_url(proxied, client_id, verifier, **params), REDIRECT)
    finally:
        await browser.aclose()


async def token(proxied: Proxied, **form: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(proxied.issuer + "/oauth/token", data=form)


async def redeem(proxied: Proxied, client_id: str, code: str, verifier: str, **form: str) -> httpx.Response:
    return await token(
        proxied,
        grant_type="authorization_code",
        client_id=client_id,
        code=code,
        code_verifier=verifier,
        redirect_uri=REDIRECT,
        **form,
    )


async def tool_status(proxied: Proxied, access_token: str) -> tuple[int, str]:
    """What the MCP endpoint answers an initialize with ``access_token``."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(
            proxied.resource,
            json=body,
            headers={"authorization": f"Bearer {access_token}", "accept": "application/json, text/event-stream"},
        )
    return response.status_code, response.headers.get("www-authenticate", "")


@pytest.mark.parametrize(
    "tampered",
    [
        REDIRECT + "/../evil",
        REDIRECT + "?x=1",
        REDIRECT + "#f",
        REDIRECT + "x",
        "http://127.0.0.1:9@evil.example/callback",
        "http://localhost:9/callback",  # not an IP literal: no port or host leeway
        "https://evil.example/callback",
        "javascript:alert(1)",
    ],
)
async def test_a_tampered_redirect_uri_gets_a_page_never_a_redirect(proxied: Proxied, tampered: str) -> None:
    client_id = await client_of(proxied)
    async with httpx.AsyncClient() as http:
        response = await http.get(authorize_url(proxied, client_id, "v" * 43, redirect_uri=tampered))
    assert response.status_code == 400 and "location" not in response.headers
    assert "text/html" in response.headers["content-type"]


async def test_the_loopback_port_may_differ_unless_strict() -> None:
    other_port = "http://127.0.0.1:51234/callback"
    async with proxied_endpoint() as proxied:
        client_id = await client_of(proxied)
        async with httpx.AsyncClient() as http:
            response = await http.get(authorize_url(proxied, client_id, "v" * 43, redirect_uri=other_port))
        assert response.status_code == 200 and "/oauth/consent" in response.text
    async with proxied_endpoint(strict_redirects=True) as proxied:
        client_id = await client_of(proxied)
        async with httpx.AsyncClient() as http:
            response = await http.get(authorize_url(proxied, client_id, "v" * 43, redirect_uri=other_port))
        assert response.status_code == 400 and "location" not in response.headers


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example/cb",  # https beyond the allowlist
        "http://app.example/cb",  # http off loopback
        "http://localhost@evil.example/cb",
        "http://127.0.0.1:3000/cb#frag",
        "javascript:alert(1)",
        "myapp:/cb",  # a custom scheme that is not a reverse domain name
    ],
)
async def test_registration_refuses_redirect_uris_outside_the_rules(proxied: Proxied, uri: str) -> None:
    async with httpx.AsyncClient() as http:
        response = await register(http, proxied, redirect_uris=[uri])
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


async def test_registration_takes_https_only_from_the_allowlist() -> None:
    hosted = "https://claude.ai/api/mcp/auth_callback"
    async with proxied_endpoint(redirect_allow=[hosted]) as proxied, httpx.AsyncClient() as http:
        allowed = await register(http, proxied, redirect_uris=[hosted])
        other = await register(http, proxied, redirect_uris=[hosted + "/x"])
        confidential = await register(http, proxied, token_endpoint_auth_method="client_secret_basic")
    assert allowed.status_code == 201
    assert other.status_code == 400 and other.json()["error"] == "invalid_redirect_uri"
    assert confidential.status_code == 400 and confidential.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"code_challenge": ""}, "missing"),
        ({"code_challenge_method": "plain"}, "plain"),
        ({"code_challenge_method": ""}, "no method"),
    ],
)
async def test_pkce_downgrade_at_authorize_is_refused(proxied: Proxied, params: dict[str, str], reason: str) -> None:
    client_id = await client_of(proxied)
    async with httpx.AsyncClient() as http:
        response = await http.get(authorize_url(proxied, client_id, "v" * 43, **params))
    assert response.status_code == 302, reason
    back = dict(parse_qsl(urlsplit(response.headers["location"]).query))
    assert response.headers["location"].startswith(REDIRECT)
    assert back["error"] == "invalid_request" and back["state"] == "client-state" and back["iss"] == proxied.issuer


async def test_a_code_needs_its_verifier_client_and_redirect(proxied: Proxied) -> None:
    client_id = await client_of(proxied)
    other = await client_of(proxied)
    verifier = secrets.token_urlsafe(48)
    cases = [
        {"code_verifier": ""},  # PKCE downgrade at the token endpoint
        {"code_verifier": secrets.token_urlsafe(48)},  # a wrong verifier
        {"client_id": other},  # the victim's code redeemed by another client
        {"redirect_uri": "http://127.0.0.1:9/other"},
    ]
    for case in cases:
        back = await sign_in(proxied, client_id, verifier)
        assert back["state"] == "client-state" and back["iss"] == proxied.issuer
        form = {"grant_type": "authorization_code", "client_id": client_id, "code": back["code"]}
        form |= {"code_verifier": verifier, "redirect_uri": REDIRECT} | case
        response = await token(proxied, **{k: v for k, v in form.items() if v})
        assert response.status_code == 400 and response.json()["error"] == "invalid_grant", case
    back = await sign_in(proxied, client_id, verifier)
    assert (await redeem(proxied, client_id, back["code"], verifier)).status_code == 200


async def test_a_code_redeemed_twice_at_once_wins_once_and_revokes_the_grant(proxied: Proxied) -> None:
    client_id = await client_of(proxied)
    verifier = secrets.token_urlsafe(48)
    back = await sign_in(proxied, client_id, verifier)

    answers = await asyncio.gather(*(redeem(proxied, client_id, back["code"], verifier) for _ in range(2)))
    assert sorted(answer.status_code for answer in answers) == [200, 400]
    won = next(answer for answer in answers if answer.status_code == 200).json()
    # The replay revoked the grant: the winner's refresh token is dead too.
    refreshed = await token(
        proxied, grant_type="refresh_token", client_id=client_id, refresh_token=won["refresh_token"]
    )
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


async def test_a_consent_form_without_its_cookie_or_token_is_refused(proxied: Proxied) -> None:
    client_id = await client_of(proxied)
    async with httpx.AsyncClient() as attacker:
        page = await attacker.get(authorize_url(proxied, client_id, "v" * 43))
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        fields = dict(re.findall(r'name="(txn|csrf)" value="([^"]*)"', page.text))
    async with httpx.AsyncClient() as victim:  # a forged POST from another browser: no cookie
        forged = await victim.post(proxied.issuer + "/oauth/consent", data={**fields, "decision": "approve"})
    assert forged.status_code == 403 and "location" not in forged.headers
    async with httpx.AsyncClient() as other:  # a cookie of its own render, the token of another
        own = await other.get(authorize_url(proxied, client_id, "v" * 43))
        assert own.status_code == 200
        wrong = await other.post(
            proxied.issuer + "/oauth/consent", data={"txn": fields["txn"], "csrf": "x" * 43, "decision": "approve"}
        )
    assert wrong.status_code == 403


async def test_a_skipped_consent_or_another_browsers_flow_is_refused_at_the_callback(proxied: Proxied) -> None:
    client_id = await client_of(proxied)

    # Skipped: the transaction id read from the consent page, the callback called directly.
    async with httpx.AsyncClient() as attacker:
        page = await attacker.get(authorize_url(proxied, client_id, "v" * 43))
        txn = re.search(r'name="txn" value="([^"]*)"', page.text).group(1)  # type: ignore[union-attr]
        skipped = await attacker.get(proxied.issuer + "/oauth/callback", params={"state": txn, "code": "x"})
    assert skipped.status_code == 403
    # Fixation: the attacker consents in their browser and sends the IdP URL to the victim.
    async with httpx.AsyncClient() as attacker:
        page = await attacker.get(authorize_url(proxied, client_id, "v" * 43))
        fields = dict(re.findall(r'name="(txn|csrf)" value="([^"]*)"', page.text))
        approved = await attacker.post(proxied.issuer + "/oauth/consent", data={**fields, "decision": "approve"})
        assert approved.status_code == 302 and approved.headers["location"].startswith(proxied.op.url)
    victim = Browser()
    with pytest.raises(AssertionError, match="403"):
        await victim.walk(approved.headers["location"], REDIRECT)
    await victim.aclose()
    # The transaction was consumed by that attempt: replaying the callback finds nothing.
    async with httpx.AsyncClient() as attacker:
        replay = await attacker.get(proxied.issuer + "/oauth/callback", params={"state": fields["txn"], "code": "x"})
    assert replay.status_code == 400


async def test_an_upstream_token_is_refused_by_our_resource_server(proxied: Proxied) -> None:
    client_id = await client_of(proxied)
    verifier = secrets.token_urlsafe(48)
    back = await sign_in(proxied, client_id, verifier)
    ours = (await redeem(proxied, client_id, back["code"], verifier)).json()
    assert (await tool_status(proxied, ours["access_token"]))[0] == 200

    claims = jwt.decode(ours["access_token"], options={"verify_signature": False})
    upstream = await proxied.proxy.upstream_token(AccessToken(issuer=proxied.issuer, claims=claims))
    assert upstream is not None and upstream != ours["access_token"]
    assert upstream not in orjson.dumps(ours).decode()  # never in what the client got
    status, challenge = await tool_status(proxied, upstream)
    assert status == 401 and 'error="invalid_token"' in challenge
    # A token shaped like ours but signed by another key: refused too.

    forged = jwt.encode(
        claims, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256", headers={"kid": "x", "typ": "at+jwt"}
    )
    assert (await tool_status(proxied, forged))[0] == 401


async def test_a_refresh_token_replayed_after_rotation_revokes_the_family() -> None:
    now = [1_000_000_000.0]

    offset = time.time() - now[0]
    async with proxied_endpoint(clock=lambda: now[0] + offset) as proxied:
        client_id = await client_of(proxied)
        verifier = secrets.token_urlsafe(48)
        back = await sign_in(proxied, client_id, verifier)
        first = (await redeem(proxied, client_id, back["code"], verifier)).json()

        async def refresh(refresh_token: str) -> httpx.Response:
            return await token(proxied, grant_type="refresh_token", client_id=client_id, refresh_token=refresh_token)

        second = await refresh(first["refresh_token"])
        assert second.status_code == 200
        rotated = second.json()
        assert rotated["refresh_token"] != first["refresh_token"]
        # Within the grace window the same answer comes back (a lost answer, a double refresh).
        again = await refresh(first["refresh_token"])
        assert again.status_code == 200 and again.json() == rotated
        # After it: a replay; the family is revoked, the newest refresh token with it.
        now[0] += 31
        replayed = await refresh(first["refresh_token"])
        assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
        newest = await refresh(rotated["refresh_token"])
        assert newest.status_code == 400 and newest.json()["error"] == "invalid_grant"


async def test_revocation_ends_the_grant(proxied: Proxied) -> None:
    client_id = await client_of(proxied)
    verifier = secrets.token_urlsafe(48)
    back = await sign_in(proxied, client_id, verifier)
    answer = (await redeem(proxied, client_id, back["code"], verifier)).json()
    claims = jwt.decode(answer["access_token"], options={"verify_signature": False})
    upstream = await proxied.proxy.upstream_token(AccessToken(issuer=proxied.issuer, claims=claims))
    async with httpx.AsyncClient() as http:
        userinfo = proxied.op.url + "/me"
        assert (await http.get(userinfo, headers={"authorization": f"Bearer {upstream}"})).status_code == 200
        revoked = await http.post(
            proxied.issuer + "/oauth/revoke", data={"token": answer["refresh_token"], "client_id": client_id}
        )
        assert revoked.status_code == 200
        # The upstream token was revoked at the IdP too (not our own token sent there).
        assert (await http.get(userinfo, headers={"authorization": f"Bearer {upstream}"})).status_code == 401
    refreshed = await token(
        proxied, grant_type="refresh_token", client_id=client_id, refresh_token=answer["refresh_token"]
    )
    assert refreshed.status_code == 400


async def test_the_allow_policy_refuses_a_user_it_does_not_name() -> None:
    async with proxied_endpoint(allow=("domain:other.example",)) as proxied:
        client_id = await client_of(proxied)
        back = await sign_in(proxied, client_id, secrets.token_urlsafe(48))
    assert back["error"] == "access_denied" and back["state"] == "client-state" and "code" not in back


async def test_a_denied_consent_goes_back_as_access_denied(proxied: Proxied) -> None:
    client_id = await client_of(proxied)
    browser = Browser(decision="deny")
    back = await browser.walk(authorize_url(proxied, client_id, "v" * 43), REDIRECT)
    await browser.aclose()
    assert back == {"error": "access_denied", "state": "client-state", "iss": proxied.issuer}
    assert browser.upstream_url is None  # the user never went to the IdP


async def test_an_idp_answer_naming_another_issuer_is_refused(proxied: Proxied) -> None:
    """Mix-up (RFC 9207): the callback's ``iss`` must be the IdP this sign-in went to."""
    client_id = await client_of(proxied)
    browser = Browser()
    callback = proxied.issuer + "/oauth/callback"
    answer = await browser.walk(authorize_url(proxied, client_id, "v" * 43), callback)
    assert answer["iss"] == proxied.op.issuer  # oidc-provider sends it
    refused = await browser.http.get(callback, params={**answer, "iss": "https://evil.example"})
    await browser.aclose()
    assert refused.status_code == 400 and "location" not in refused.headers


async def test_our_refresh_refreshes_the_upstream_token_when_it_runs_out() -> None:
    """The IdP's token is refreshed inside our refresh, once it expires within a minute; when the
    IdP no longer honours the user's grant, ours ends too (a new sign-in)."""
    offset = [0.0]
    async with proxied_endpoint(
        upstream_scopes=("openid", "email", "offline_access"),
        upstream_extra={"prompt": "consent"},  # oidc-provider grants offline_access only then
        clock=lambda: time.time() + offset[0],
    ) as proxied:
        client_id = await client_of(proxied)
        verifier = secrets.token_urlsafe(48)
        back = await sign_in(proxied, client_id, verifier)
        answer = (await redeem(proxied, client_id, back["code"], verifier)).json()
        claims = jwt.decode(answer["access_token"], options={"verify_signature": False})
        ours = AccessToken(issuer=proxied.issuer, claims=claims)
        first = await proxied.proxy.upstream_token(ours)

        async def refresh(refresh_token: str) -> httpx.Response:
            return await token(proxied, grant_type="refresh_token", client_id=client_id, refresh_token=refresh_token)

        answer = (await refresh(answer["refresh_token"])).json()
        assert await proxied.proxy.upstream_token(ours) == first  # not due: the IdP is not asked
        offset[0] = 3600.0  # oidc-provider's access tokens live an hour
        answer = (await refresh(answer["refresh_token"])).json()
        second = await proxied.proxy.upstream_token(ours)
        assert second is not None and second != first
        async with httpx.AsyncClient() as http:
            userinfo = await http.get(proxied.op.url + "/me", headers={"authorization": f"Bearer {second}"})
        assert userinfo.status_code == 200 and userinfo.json()["sub"] == "alice"
        # The grant revoked at the IdP (an administrator, the user): the IdP refuses ours next time.
        grant = await proxied.proxy.state.load(f"grant:{claims['sid']}")  # (the sealed record, read for the test)
        assert grant is not None
        async with httpx.AsyncClient() as http:
            revoked = await http.post(
                proxied.op.url + "/token/revocation",
                data={"token": grant["upstream"]["refresh_token"], "token_type_hint": "refresh_token"},
                auth=("mcp-proxy", proxied.op.secrets["mcp-proxy"]),
            )
        assert revoked.status_code == 200
        offset[0] = 7200.0
        ended = await refresh(answer["refresh_token"])
        assert ended.status_code == 400 and ended.json()["error"] == "invalid_grant"
        assert await proxied.proxy.upstream_token(ours) is None  # the grant is gone


async def test_a_tool_calls_the_idp_api_with_the_users_upstream_token() -> None:
    """``context.auth`` is a ``GrantToken``: the tool asks for the IdP's token of the same user
    and calls the IdP's API (its userinfo) with it; the client never sees that token."""
    userinfo: list[str] = []
    server = McpServer("idp-api", "1.0.0")

    @server.tool()
    async def idp_email(context: RequestContext) -> str:
        """The user's email, as the identity provider's API says."""
        assert isinstance(context.auth, GrantToken)
        upstream = await context.auth.upstream_token()
        assert upstream is not None
        async with httpx.AsyncClient() as http:
            me = await http.get(userinfo[0], headers={"authorization": f"Bearer {upstream}"})
        email: str = me.json()["email"]
        return email

    async with proxied_endpoint(server=server) as proxied:
        assert proxied.proxy.upstream.userinfo_endpoint is not None
        userinfo.append(proxied.proxy.upstream.userinfo_endpoint)
        browser = Browser()
        agent = browser.user_agent(REDIRECT)
        auth = OAuth(OAuthSettings(client_name="idp api"), storage=MemoryTokenStorage(), user_agent=agent)
        async with (
            httpx.AsyncClient(timeout=30) as http,
            StreamableHttpClient(proxied.resource, auth=auth, http_client=http) as client,
        ):
            result = await client.call_tool("idp_email", {})
            again = await client.call_tool("idp_email", {})  # (a token seen before: the cached GrantToken)
        await browser.aclose()
    assert result.content[0].text == "alice@acme.example"  # type: ignore[union-attr]
    assert again.content[0].text == "alice@acme.example"  # type: ignore[union-attr]
