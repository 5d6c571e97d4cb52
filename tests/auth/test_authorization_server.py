"""The test authorization server itself (``fixtures.authorization_server``): its metadata and keys,
dynamic registration, the authorization-code grant with PKCE, refresh rotation, client
credentials, introspection and the errors of each, over real HTTP on loopback.

The other authorization tests trust this server to behave as a real one would; these tests are
what that trust rests on. Its tokens are checked with this project's ``JwtVerifier`` against
its published key set, as a resource server would check them.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from fixtures.authorization_server import AuthorizationServer
from mcp_sse_server.auth import InvalidToken, JwtVerifier

RESOURCE = "http://127.0.0.1:9/mcp"  # an audience; nothing needs to listen there
REDIRECT = "http://127.0.0.1/callback"


@pytest.fixture
async def auth_server() -> AsyncIterator[AuthorizationServer]:
    async with AuthorizationServer() as server:  # starting and stopping are bounded
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0) as client:
        yield client


def confidential(auth_server: AuthorizationServer, **settings: Any) -> tuple[str, str]:
    """A confidential client's (client_id, client_secret), as httpx's Basic ``auth=`` takes them."""
    client_id, secret = auth_server.register_client(**settings)
    assert secret is not None
    return client_id, secret


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


async def authorize(
    http: httpx.AsyncClient, auth_server: AuthorizationServer, client_id: str, challenge: str, **more: str
) -> dict[str, str]:
    """The parameters the authorize endpoint redirected back with (it must redirect to REDIRECT)."""
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "xyz",
        **more,
    }
    reply = await http.get(auth_server.authorization_endpoint, params=params)
    assert reply.status_code == 302, reply.text
    location = reply.headers["location"]
    assert location.startswith(REDIRECT + "?")
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


async def verified(auth_server: AuthorizationServer, token: str, audience: str = RESOURCE) -> dict[str, Any]:
    """The token's claims once this project's verifier accepted it against the published keys."""
    verifier = JwtVerifier(issuer=auth_server.issuer, audience=audience, jwks_uri=auth_server.jwks_uri)
    try:
        return dict((await verifier.verify(token)).claims)
    finally:
        await verifier.aclose()


async def test_metadata_and_key_set(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    assert auth_server.issuer == f"http://127.0.0.1:{auth_server.port}"
    document = (await http.get(auth_server.metadata_url)).json()
    assert document == (await http.get(auth_server.issuer + "/.well-known/openid-configuration")).json()
    assert document["issuer"] == auth_server.issuer
    assert document["authorization_endpoint"] == auth_server.authorization_endpoint
    assert document["token_endpoint"] == auth_server.token_endpoint
    assert document["registration_endpoint"] == auth_server.registration_endpoint
    assert document["introspection_endpoint"] == auth_server.introspection_endpoint
    assert document["jwks_uri"] == auth_server.jwks_uri
    assert document["scopes_supported"] == ["mcp:tools", "mcp:admin"]
    assert document["response_types_supported"] == ["code"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert set(document["grant_types_supported"]) == {"authorization_code", "refresh_token", "client_credentials"}
    assert set(document["token_endpoint_auth_methods_supported"]) == {
        "client_secret_basic",
        "client_secret_post",
        "none",
    }
    keys = (await http.get(auth_server.jwks_uri)).json()["keys"]
    assert [(key["kty"], key["alg"], key["use"]) for key in keys] == [("EC", "ES256", "sig")]
    assert "d" not in keys[0]  # the public half only

    token = auth_server.issue(audience=RESOURCE, scopes=("mcp:tools", "mcp:admin"), claims={"extra": 1})
    header = jwt.get_unverified_header(token)
    assert header["typ"] == "at+jwt" and header["kid"] == keys[0]["kid"]
    claims = await verified(auth_server, token)
    assert claims["iss"] == auth_server.issuer and claims["aud"] == RESOURCE and claims["sub"] == "alice"
    assert claims["scope"] == "mcp:tools mcp:admin" and claims["client_id"] == "test-client" and claims["extra"] == 1
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"] and claims["jti"]
    assert auth_server.requests[:3] == [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/openid-configuration"),
        ("GET", "/jwks"),
    ]

    auth_server.rotate_key()
    rotated = auth_server.issue(audience=RESOURCE)
    assert len((await http.get(auth_server.jwks_uri)).json()["keys"]) == 2
    assert (await verified(auth_server, rotated))["sub"] == "alice"


async def test_rsa_signing() -> None:
    async with asyncio.timeout(30), AuthorizationServer(alg="RS256", token_ttl=60) as auth_server:
        token = auth_server.issue(audience=[RESOURCE, "https://other.example/mcp"], ttl=120)
        assert jwt.get_unverified_header(token)["alg"] == "RS256"
        claims = await verified(auth_server, token)
        assert claims["aud"] == [RESOURCE, "https://other.example/mcp"] and claims["exp"] - claims["iat"] == 120
    with pytest.raises(ValueError, match="alg"):
        AuthorizationServer(alg="HS256")


async def test_dynamic_client_registration(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    reply = await http.post(
        auth_server.registration_endpoint,
        json={"redirect_uris": [REDIRECT], "client_name": "an app", "grant_types": ["authorization_code"]},
    )
    assert reply.status_code == 201 and reply.headers["cache-control"] == "no-store"
    info = reply.json()
    assert info["client_id"] in auth_server.clients and auth_server.clients[info["client_id"]].dynamic
    assert info["client_secret"] and info["client_secret_expires_at"] == 0
    assert info["token_endpoint_auth_method"] == "client_secret_basic"  # RFC 7591's default
    assert info["redirect_uris"] == [REDIRECT] and info["client_name"] == "an app"
    assert info["response_types"] == ["code"] and info["grant_types"] == ["authorization_code"]

    public = await http.post(
        auth_server.registration_endpoint, json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
    )
    assert public.status_code == 201 and "client_secret" not in public.json()

    for body, error in [
        ({"client_name": "no redirect"}, "invalid_redirect_uri"),
        ({"redirect_uris": ["/relative"]}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT + "#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["implicit"]}, "invalid_client_metadata"),
        ({"redirect_uris": [REDIRECT], "scope": "mcp:tools root"}, "invalid_client_metadata"),
        ({"grant_types": ["client_credentials"], "token_endpoint_auth_method": "none"}, "invalid_client_metadata"),
    ]:
        refused = await http.post(auth_server.registration_endpoint, json=body)
        assert (refused.status_code, refused.json()["error"]) == (400, error), body
    not_json = await http.post(auth_server.registration_endpoint, content=b"{", headers={"content-type": "text/plain"})
    assert not_json.status_code == 400 and not_json.json()["error"] == "invalid_client_metadata"


async def test_authorization_code_with_pkce_and_refresh(
    auth_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    client_id, secret = confidential(auth_server, redirect_uris=[REDIRECT])
    verifier, challenge = pkce()
    answer = await authorize(http, auth_server, client_id, challenge, scope="mcp:tools mcp:admin", resource=RESOURCE)
    assert answer["state"] == "xyz" and answer["iss"] == auth_server.issuer
    exchange = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
        "resource": RESOURCE,
    }
    wrong_verifier = {**exchange, "code_verifier": pkce()[0]}
    spent = await http.post(auth_server.token_endpoint, data=wrong_verifier, auth=(client_id, secret))
    assert (spent.status_code, spent.json()["error"]) == (400, "invalid_grant")
    # A failed redemption spends the code too (single use); start over.
    answer = await authorize(http, auth_server, client_id, challenge, scope="mcp:tools mcp:admin", resource=RESOURCE)
    exchange["code"] = answer["code"]
    reply = await http.post(auth_server.token_endpoint, data=exchange, auth=(client_id, secret))
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    tokens = reply.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["scope"] == "mcp:tools mcp:admin" and tokens["refresh_token"]
    claims = await verified(auth_server, tokens["access_token"])
    assert (claims["sub"], claims["client_id"], claims["aud"]) == ("alice", client_id, RESOURCE)

    again = await http.post(auth_server.token_endpoint, data=exchange, auth=(client_id, secret))
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    # Redeeming a code twice revokes what it bought (RFC 6749 §4.1.2).
    introspector = confidential(auth_server, grant_types=["client_credentials"])
    check = await http.post(
        auth_server.introspection_endpoint, data={"token": tokens["access_token"]}, auth=introspector
    )
    assert check.json() == {"active": False}

    # Start over for the refresh: rotation, narrowing, audience kept.
    answer = await authorize(http, auth_server, client_id, challenge, scope="mcp:tools mcp:admin", resource=RESOURCE)
    tokens = (
        await http.post(auth_server.token_endpoint, data={**exchange, "code": answer["code"]}, auth=(client_id, secret))
    ).json()
    first_refresh = tokens["refresh_token"]
    refreshed = await http.post(
        auth_server.token_endpoint,
        data={"grant_type": "refresh_token", "refresh_token": first_refresh, "scope": "mcp:tools"},
        auth=(client_id, secret),
    )
    assert refreshed.status_code == 200, refreshed.text
    narrowed = refreshed.json()
    assert narrowed["scope"] == "mcp:tools" and narrowed["refresh_token"] != first_refresh
    claims = await verified(auth_server, narrowed["access_token"])
    assert (claims["aud"], claims["scope"]) == (RESOURCE, "mcp:tools")
    replayed = await http.post(
        auth_server.token_endpoint,
        data={"grant_type": "refresh_token", "refresh_token": first_refresh},
        auth=(client_id, secret),
    )
    assert (replayed.status_code, replayed.json()["error"]) == (400, "invalid_grant")
    # The rotated refresh token keeps the original grant: both scopes again, not wider.
    widened = await http.post(
        auth_server.token_endpoint,
        data={"grant_type": "refresh_token", "refresh_token": narrowed["refresh_token"], "scope": "mcp:tools other"},
        auth=(client_id, secret),
    )
    assert (widened.status_code, widened.json()["error"]) == (400, "invalid_scope")
    full = await http.post(
        auth_server.token_endpoint,
        data={"grant_type": "refresh_token", "refresh_token": narrowed["refresh_token"]},
        auth=(client_id, secret),
    )
    assert full.json()["scope"] == "mcp:tools mcp:admin"
    assert [grant for grant, _ in auth_server.grants] == ["authorization_code"] * 2 + ["refresh_token"] * 2


async def test_a_public_client_and_client_secret_post(
    auth_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    public_id, no_secret = auth_server.register_client(redirect_uris=[REDIRECT], confidential=False)
    assert no_secret is None
    verifier, challenge = pkce()
    answer = await authorize(http, auth_server, public_id, challenge)
    exchange = {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": REDIRECT}
    no_verifier = await http.post(auth_server.token_endpoint, data={**exchange, "client_id": public_id})
    assert (no_verifier.status_code, no_verifier.json()["error"]) == (400, "invalid_request")
    answer = await authorize(http, auth_server, public_id, challenge)
    exchange = {**exchange, "code": answer["code"], "client_id": public_id, "code_verifier": verifier}
    reply = await http.post(auth_server.token_endpoint, data=exchange)
    assert reply.status_code == 200, reply.text
    tokens = reply.json()
    # No resource asked for and no default audience: the token names no audience, so it is no
    # good at a resource server that checks audiences.
    assert "aud" not in jwt.decode(tokens["access_token"], options={"verify_signature": False})
    with pytest.raises(InvalidToken):
        await verified(auth_server, tokens["access_token"])

    client_id, secret = confidential(auth_server, redirect_uris=[REDIRECT])
    answer = await authorize(http, auth_server, client_id, challenge, scope="mcp:tools")
    posted = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
        "client_id": client_id,
        "client_secret": secret,
    }
    assert (await http.post(auth_server.token_endpoint, data=posted)).status_code == 200
    assert auth_server.grants == [("authorization_code", "none"), ("authorization_code", "client_secret_post")]


async def test_authorize_errors(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    client_id, _ = auth_server.register_client(redirect_uris=[REDIRECT])
    _, challenge = pkce()
    base = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    # Never a redirect to a URI the client did not register, nor for a client nobody registered.
    for wrong in ({"client_id": "nobody"}, {"redirect_uri": "http://127.0.0.1/elsewhere"}):
        reply = await http.get(auth_server.authorization_endpoint, params={**base, **wrong})
        assert reply.status_code == 400 and "location" not in reply.headers and reply.json()["error"]
    changes: list[tuple[dict[str, str | None], str]] = [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge": None}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),
        ({"scope": "mcp:tools mcp:root"}, "invalid_scope"),
        ({"resource": "not-a-uri"}, "invalid_target"),
    ]
    for change, error in changes:
        params = {name: value for name, value in {**base, **change, "state": "s1"}.items() if value is not None}
        reply = await http.get(auth_server.authorization_endpoint, params=params)
        assert reply.status_code == 302, change
        answer = parse_qs(urlsplit(reply.headers["location"]).query)
        assert (answer["error"], answer["state"]) == ([error], ["s1"]), change
        assert "code" not in answer
    auth_server.auto_approve_scopes = False
    reply = await http.get(auth_server.authorization_endpoint, params=base)
    assert parse_qs(urlsplit(reply.headers["location"]).query)["error"] == ["access_denied"]


async def test_token_errors(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    client_id, secret = confidential(auth_server, redirect_uris=[REDIRECT])
    verifier, challenge = pkce()

    async def code(**more: str) -> str:
        return (await authorize(http, auth_server, client_id, challenge, **more))["code"]

    def exchange(value: str, **more: str) -> dict[str, str]:
        return {
            "grant_type": "authorization_code",
            "code": value,
            "redirect_uri": REDIRECT,
            "code_verifier": verifier,
            **more,
        }

    token = auth_server.token_endpoint
    bad_secret = await http.post(token, data=exchange(await code()), auth=(client_id, "wrong"))
    assert (bad_secret.status_code, bad_secret.json()["error"]) == (401, "invalid_client")
    assert bad_secret.headers["www-authenticate"].startswith("Basic")
    no_auth = await http.post(token, data=exchange(await code(), client_id=client_id))
    assert (no_auth.status_code, no_auth.json()["error"]) == (401, "invalid_client")
    both = await http.post(token, data=exchange(await code(), client_secret=secret), auth=(client_id, secret))
    assert (both.status_code, both.json()["error"]) == (400, "invalid_request")
    moved = await http.post(token, data=exchange(await code(), redirect_uri=REDIRECT + "2"), auth=(client_id, secret))
    assert (moved.status_code, moved.json()["error"]) == (400, "invalid_grant")
    elsewhere = exchange(await code(resource=RESOURCE), resource="https://other.example/mcp")
    retargeted = await http.post(token, data=elsewhere, auth=(client_id, secret))
    assert (retargeted.status_code, retargeted.json()["error"]) == (400, "invalid_target")
    unknown = await http.post(token, data={"grant_type": "password"}, auth=(client_id, secret))
    assert (unknown.status_code, unknown.json()["error"]) == (400, "unsupported_grant_type")
    missing = await http.post(token, data={}, auth=(client_id, secret))
    assert (missing.status_code, missing.json()["error"]) == (400, "invalid_request")
    as_json = await http.post(token, json=exchange(await code()), auth=(client_id, secret))
    assert (as_json.status_code, as_json.json()["error"]) == (400, "invalid_request")
    not_granted = await http.post(token, data={"grant_type": "client_credentials"}, auth=(client_id, secret))
    assert (not_granted.status_code, not_granted.json()["error"]) == (400, "unauthorized_client")
    # The resource of the authorization request is the token's audience when the token request names none.
    kept = await http.post(token, data=exchange(await code(resource=RESOURCE)), auth=(client_id, secret))
    assert (await verified(auth_server, kept.json()["access_token"]))["aud"] == RESOURCE


async def test_client_credentials(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    client_id, secret = confidential(auth_server, grant_types=["client_credentials"], scope="mcp:tools")
    reply = await http.post(
        auth_server.token_endpoint,
        data={"grant_type": "client_credentials", "resource": RESOURCE},
        auth=(client_id, secret),
    )
    assert reply.status_code == 200, reply.text
    tokens = reply.json()
    assert "refresh_token" not in tokens and tokens["scope"] == "mcp:tools"  # the registered scope
    claims = await verified(auth_server, tokens["access_token"])
    assert (claims["sub"], claims["client_id"], claims["aud"]) == (client_id, client_id, RESOURCE)
    posted = await http.post(
        auth_server.token_endpoint,
        data={
            "grant_type": "client_credentials",
            "scope": "mcp:admin",
            "client_id": client_id,
            "client_secret": secret,
        },
    )
    assert posted.json()["scope"] == "mcp:admin"
    bad_scope = await http.post(
        auth_server.token_endpoint,
        data={"grant_type": "client_credentials", "scope": "everything"},
        auth=(client_id, secret),
    )
    assert (bad_scope.status_code, bad_scope.json()["error"]) == (400, "invalid_scope")


async def test_default_audience() -> None:
    async with asyncio.timeout(30), AuthorizationServer(default_audience=RESOURCE) as auth_server:
        credentials = confidential(auth_server, grant_types=["client_credentials"])
        async with httpx.AsyncClient() as http:
            reply = await http.post(
                auth_server.token_endpoint, data={"grant_type": "client_credentials"}, auth=credentials
            )
        assert (await verified(auth_server, reply.json()["access_token"]))["aud"] == RESOURCE


async def test_introspection(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    client_id, secret = confidential(auth_server)
    token = auth_server.issue(audience=RESOURCE, subject="bob", scopes=("mcp:tools", "mcp:admin"))
    endpoint = auth_server.introspection_endpoint

    anonymous = await http.post(endpoint, data={"token": token})
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Basic")
    wrong = await http.post(endpoint, data={"token": token}, auth=(client_id, "nope"))
    assert wrong.status_code == 401
    public_id, _ = auth_server.register_client(redirect_uris=[REDIRECT], confidential=False)
    assert (await http.post(endpoint, data={"token": token, "client_id": public_id})).status_code == 401

    live = await http.post(endpoint, data={"token": token}, auth=(client_id, secret))
    assert live.status_code == 200 and live.headers["cache-control"] == "no-store"
    answer = live.json()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert answer["active"] is True and answer["token_type"] == "Bearer"
    assert {name: answer[name] for name in ("scope", "client_id", "sub", "exp", "iat", "iss", "aud")} == {
        "scope": "mcp:tools mcp:admin",
        "client_id": "test-client",
        "sub": "bob",
        "exp": claims["exp"],
        "iat": claims["iat"],
        "iss": auth_server.issuer,
        "aud": RESOURCE,
    }
    posted = await http.post(endpoint, data={"token": token, "client_id": client_id, "client_secret": secret})
    assert posted.json()["active"] is True

    expired = auth_server.issue(audience=RESOURCE, ttl=-10)
    forged = jwt.encode({"sub": "mallory", "exp": 2**40}, "secret-that-is-long-enough-for-hs256", algorithm="HS256")
    for inactive in (expired, forged, "opaque-garbage"):
        reply = await http.post(endpoint, data={"token": inactive}, auth=(client_id, secret))
        assert reply.json() == {"active": False}
    auth_server.revoke(token)
    assert (await http.post(endpoint, data={"token": token}, auth=(client_id, secret))).json() == {"active": False}
    missing = await http.post(endpoint, data={}, auth=(client_id, secret))
    assert (missing.status_code, missing.json()["error"]) == (400, "invalid_request")
    assert auth_server.introspection_calls == 10


async def test_introspection_faults(auth_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    credentials = confidential(auth_server)
    token = auth_server.issue(audience=RESOURCE)
    auth_server.fail_introspection = 503
    failed = await http.post(auth_server.introspection_endpoint, data={"token": token}, auth=credentials)
    assert failed.status_code == 503
    auth_server.fail_introspection = None
    auth_server.introspection_delay = 0.3
    loop = asyncio.get_running_loop()
    started = loop.time()
    slow = await http.post(auth_server.introspection_endpoint, data={"token": token}, auth=credentials)
    assert slow.json()["active"] is True and loop.time() - started >= 0.3
    auth_server.introspection_delay = 5.0
    with pytest.raises(httpx.ReadTimeout):
        await http.post(auth_server.introspection_endpoint, data={"token": token}, auth=credentials, timeout=0.2)
    assert auth_server.introspection_calls == 3
