"""Identity-provider presets in resource mode against a real OpenID provider: oidc-provider 9.13.3 on
loopback (``fixtures.oidc_provider``) issues the access tokens, our ``ResourceServer`` built by
``auth.providers.resource_server`` fetches its discovery document and key set and verifies them.
The generic ``oidc`` preset and the Keycloak-, Auth0- and Okta-shaped ones (issuers
``/realms/demo``, ``/`` and ``/oauth2/default``; realm roles, ``permissions``, groups), the allow
policy's refusals, a wrong issuer refused at start-up, a token for
another audience refused, and opaque tokens introspected."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from fixtures.asgi import call
from fixtures.keys import RESOURCE
from fixtures.messages import initialize_message, notification, request
from fixtures.oidc_provider import OpenIdProvider, running_oidc_provider
from fixtures.protected import whoami_server
from mcp_sse_server.auth import IntrospectionVerifier
from mcp_sse_server.auth.providers import PRESETS, AllowPolicy, DiscoveryError, ProviderVerifier, resource_server
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.engine.tokens import InvalidToken
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp

OTHER = "https://other.example.test/mcp"
# A token the allow policy refuses: 403 access_denied (not 401: signing in again would not help).
NOT_ALLOWED = 403

PEOPLE: dict[str, dict[str, Any]] = {
    "alice": {"email": "alice@acme.example", "email_verified": True, "groups": ["ops"]},
    "bob": {"email": "bob@other.example", "groups": ["dev"], "org_id": 7},
    "eve": {"email": "eve@acme.example", "email_verified": False},
}
KEYCLOAK_PEOPLE: dict[str, dict[str, Any]] = {
    # What Keycloak puts in its access tokens (typ Bearer, azp, realm roles), plus the organization
    # claim of Keycloak 26's organizations.
    "kc-admin": {"typ": "Bearer", "azp": "kc-admin", "realm_access": {"roles": ["mcp-admin"]}, "organization": ["a"]},
    "kc-user": {"typ": "Bearer", "azp": "kc-user", "realm_access": {"roles": ["user"]}, "organization": ["globex"]},
}


@pytest.fixture(scope="module")
def op() -> Iterator[OpenIdProvider]:
    with running_oidc_provider(PEOPLE) as provider:
        yield provider


@pytest.fixture(scope="module")
def keycloak() -> Iterator[OpenIdProvider]:
    with running_oidc_provider(KEYCLOAK_PEOPLE, path="/realms/demo", alg="RS256") as provider:
        yield provider


def app_of(auth: ResourceServer) -> McpHttpApp:
    return McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=auth))


async def whoami(app: McpHttpApp, token: str) -> Any:
    """Opens a session with ``token`` and calls whoami: what the tool saw."""
    bearer = {"authorization": f"Bearer {token}"}
    opened = await call(app, body=initialize_message(), headers=bearer)
    assert opened.status == 200, opened.body
    headers = {**bearer, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (await call(app, body=notification("notifications/initialized"), headers=headers)).status == 202
    reply = await call(app, body=request(2, "tools/call", {"name": "whoami", "arguments": {}}), headers=headers)
    assert reply.status == 200, reply.body
    return orjson.loads(reply.messages[-1]["result"]["content"][0]["text"])


async def status_of(app: McpHttpApp, token: str) -> tuple[int, str]:
    reply = await call(app, body=initialize_message(), headers={"authorization": f"Bearer {token}"})
    return reply.status, reply.headers.get("www-authenticate", "")


async def test_the_oidc_preset_verifies_a_real_providers_tokens(op: OpenIdProvider) -> None:
    auth = resource_server("oidc", issuer=op.issuer, resource=RESOURCE, required_scopes=["mcp:tools"])
    assert auth.authorization_servers == (op.issuer,)  # clients are sent to the IdP itself
    assert isinstance(auth.verifier, ProviderVerifier)
    app = app_of(auth)
    seen = await whoami(app, op.token("alice", RESOURCE))
    assert seen["subject"] == "alice" and seen["issuer"] == op.issuer
    assert seen["audience"] == [RESOURCE] and seen["client_id"] == "alice" and seen["scopes"] == ["mcp:tools"]
    await auth.verifier.aclose()


async def test_a_token_for_another_audience_is_refused(op: OpenIdProvider) -> None:
    auth = resource_server("oidc", issuer=op.issuer, resource=RESOURCE)
    app = app_of(auth)
    status, challenge = await status_of(app, op.token("alice", OTHER))
    assert status == 401 and 'error="invalid_token"' in challenge and 'error_description="audience"' in challenge
    assert (await status_of(app, op.token("alice", RESOURCE)))[0] == 200
    assert auth.verifier is not None
    await auth.verifier.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rules", "admitted"),
    [
        ([], {"alice", "bob", "eve"}),
        (["domain:ACME.example"], {"alice"}),  # eve's address is not verified
        (["email:bob@other.example"], {"bob"}),
        (["group:ops"], {"alice"}),
        (["user:eve", "group:dev"], {"bob", "eve"}),
        (["claim:org_id=7"], {"bob"}),
    ],
)
async def test_the_allow_policy_admits_whom_a_rule_matches(
    op: OpenIdProvider, rules: list[str], admitted: set[str]
) -> None:
    auth = resource_server("oidc", issuer=op.issuer, resource=RESOURCE, allow=rules)
    app = app_of(auth)
    for person in PEOPLE:
        token = op.token(person, RESOURCE)
        for _ in range(2):  # the second time from the cache: a refused token must not be in it
            status, challenge = await status_of(app, token)
            if person in admitted:
                assert status == 200, (person, rules)
            else:
                assert status == NOT_ALLOWED, (person, rules)
                assert 'error="access_denied", error_description="not allowed"' in challenge
    assert auth.verifier is not None
    await auth.verifier.aclose()  # type: ignore[attr-defined]


async def test_the_keycloak_preset_reads_realm_roles_and_organizations(keycloak: OpenIdProvider) -> None:
    assert keycloak.issuer.endswith("/realms/demo")
    auth = resource_server("keycloak", issuer=keycloak.issuer, resource=RESOURCE, allow=["role:mcp-admin"])
    app = app_of(auth)
    seen = await whoami(app, keycloak.token("kc-admin", RESOURCE))
    assert seen["subject"] == "kc-admin" and seen["issuer"] == keycloak.issuer
    assert (await status_of(app, keycloak.token("kc-user", RESOURCE)))[0] == NOT_ALLOWED
    assert (await status_of(app, keycloak.token("kc-admin", OTHER)))[0] == 401
    by_org = app_of(resource_server("keycloak", issuer=keycloak.issuer, resource=RESOURCE, allow=["org:globex"]))
    assert (await status_of(by_org, keycloak.token("kc-user", RESOURCE)))[0] == 200
    assert (await status_of(by_org, keycloak.token("kc-admin", RESOURCE)))[0] == NOT_ALLOWED


async def test_the_auth0_preset_keeps_the_trailing_slash_and_reads_permissions() -> None:
    people = {"m2m": {"permissions": ["mcp:admin"], "org_id": "org_acme"}, "other": {"org_id": "org_globex"}}
    with running_oidc_provider(people, path="/", alg="RS256") as provider:
        assert provider.issuer.endswith("/")  # as Auth0 publishes its issuers
        with pytest.raises(DiscoveryError, match="ends with '/'"):
            resource_server("auth0", issuer=provider.issuer.rstrip("/"), resource=RESOURCE)
        auth = resource_server("auth0", issuer=provider.issuer, resource=RESOURCE, allow=["org:org_acme"])
        app = app_of(auth)
        seen = await whoami(app, provider.token("m2m", RESOURCE))
        assert seen["issuer"] == provider.issuer and seen["scopes"] == ["mcp:admin", "mcp:tools"]
        assert (await status_of(app, provider.token("other", RESOURCE)))[0] == NOT_ALLOWED
        assert auth.verifier is not None
        await auth.verifier.aclose()  # type: ignore[attr-defined]


async def test_the_okta_preset_takes_a_custom_authorization_server() -> None:
    people = {"svc": {"groups": ["mcp-users"], "uid": "00u1"}, "other": {"groups": ["Everyone"], "uid": "00u2"}}
    with running_oidc_provider(people, path="/oauth2/default") as provider:
        with pytest.raises(DiscoveryError, match="custom authorization server"):
            resource_server("okta", issuer=provider.issuer.removesuffix("/oauth2/default"), resource=RESOURCE)
        auth = resource_server("okta", issuer=provider.issuer, resource=RESOURCE, allow=["group:mcp-users"])
        app = app_of(auth)
        assert (await whoami(app, provider.token("svc", RESOURCE)))["issuer"] == provider.issuer
        assert (await status_of(app, provider.token("other", RESOURCE)))[0] == NOT_ALLOWED
        by_uid = app_of(resource_server("okta", issuer=provider.issuer, resource=RESOURCE, allow=["user:00u2"]))
        assert (await status_of(by_uid, provider.token("other", RESOURCE)))[0] == 200
        assert auth.verifier is not None
        await auth.verifier.aclose()  # type: ignore[attr-defined]


def test_the_keycloak_preset_refuses_an_issuer_without_a_realm(op: OpenIdProvider) -> None:
    with pytest.raises(DiscoveryError, match=r"looks like \{base\}/realms/\{realm\}"):
        resource_server("keycloak", issuer=op.issuer, resource=RESOURCE)


def test_an_issuer_other_than_the_published_one_is_refused_at_start_up() -> None:
    # The provider publishes http://localhost:P; the server is told http://127.0.0.1:P, the same
    # machine and document: a classic misconfiguration clients would trip on (issuers are strings).
    with running_oidc_provider({}, host="localhost") as provider:
        assert provider.issuer != provider.url
        with pytest.raises(DiscoveryError, match="names the issuer 'http://localhost:"):
            resource_server("oidc", issuer=provider.url, resource=RESOURCE)
        assert resource_server("oidc", issuer=provider.issuer, resource=RESOURCE).authorization_servers == (
            provider.issuer,
        )


def test_a_trailing_slash_the_provider_does_not_publish_is_refused(op: OpenIdProvider) -> None:
    with pytest.raises(DiscoveryError, match="names the issuer"):
        resource_server("oidc", issuer=op.issuer + "/", resource=RESOURCE)


async def test_opaque_tokens_are_introspected_at_the_discovered_endpoint() -> None:
    with running_oidc_provider({**PEOPLE, "this-server": {}}, format="opaque") as provider:
        auth = resource_server(
            "oidc",
            issuer=provider.issuer,
            resource=RESOURCE,
            token_format="opaque",
            client_id="this-server",
            client_secret=provider.secrets["this-server"],
            allow=["group:ops"],
        )
        app = app_of(auth)
        token = provider.token("alice", RESOURCE)
        assert token.count(".") == 0  # opaque indeed
        seen = await whoami(app, token)
        # (oidc-provider's introspection of a client_credentials token names no subject, only the client)
        assert seen["client_id"] == "alice" and seen["subject"] is None and seen["audience"] == [RESOURCE]
        assert (await status_of(app, provider.token("bob", RESOURCE)))[0] == NOT_ALLOWED
        status, challenge = await status_of(app, provider.token("alice", OTHER))
        assert status == 401 and 'error_description="audience"' in challenge
        assert auth.verifier is not None
        await auth.verifier.aclose()  # type: ignore[attr-defined]


async def test_a_revoked_opaque_token_is_refused_as_soon_as_the_inner_verifier_would() -> None:
    # The preset's cache of admitted tokens lives no longer than the introspection cache: with
    # that at 0, a token revoked at the provider is refused on the next request.
    with running_oidc_provider({"alice": {}, "this-server": {}}, format="opaque") as provider:
        inner = IntrospectionVerifier(
            endpoint=provider.url + "/token/introspection",
            client_id="this-server",
            client_secret=provider.secrets["this-server"],
            audience=RESOURCE,
            issuer=provider.issuer,
            cache_ttl=0,
        )
        verifier = ProviderVerifier(inner, preset=PRESETS["oidc"], policy=AllowPolicy([]))
        token = provider.token("alice", RESOURCE)
        assert (await verifier.verify(token)).client_id == "alice"
        async with httpx.AsyncClient(timeout=30) as http:
            revoked = await http.post(
                provider.url + "/token/revocation", data={"token": token}, auth=("alice", provider.secrets["alice"])
            )
        assert revoked.status_code == 200
        with pytest.raises(InvalidToken, match="inactive"):
            await verifier.verify(token)
        await verifier.aclose()
