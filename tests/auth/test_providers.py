"""Identity-provider presets without a provider: each preset's issuer shape, audience and claim rules
with tokens shaped like its vendor's (signed by a test key, its key set over loopback HTTP), the
discovery checks, and the allow policy's grammar. ``test_providers_op.py`` runs the same code
against a real OpenID provider; the vendors themselves cannot be reached here, so the presets for
Auth0, Okta, WorkOS, Descope, Scalekit and Supabase are checked only as shapes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from fixtures.keys import RESOURCE, KeySetServer, SigningKey
from mcp_sse_server.auth.providers import (
    PRESETS,
    AllowPolicy,
    DiscoveryError,
    ProviderVerifier,
    fetch_discovery,
    resource_server,
)
from mcp_sse_server.auth.providers.policy import KINDS
from mcp_sse_server.engine.tokens import InvalidToken, NotAllowed, token_key

ISSUERS = {
    "oidc": "https://idp.example.test",
    "keycloak": "https://sso.example.test/auth/realms/acme",
    "auth0": "https://acme.us.auth0.com/",
    "okta": "https://acme.okta.com/oauth2/default",
    "workos": "https://acme.authkit.app",
    "descope": "https://api.descope.com/v1/apps/P2abc",
    "scalekit": "https://acme.scalekit.com",
    "supabase": "https://abcd.supabase.co/auth/v1",
}
WRONG = {
    "keycloak": "https://sso.example.test/acme",
    "auth0": "https://acme.us.auth0.com",
    "okta": "https://acme.okta.com",  # the org authorization server is not for our API
    "descope": "https://api.descope.com/P2abc",
    "supabase": "https://abcd.supabase.co",
}


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("vendor", "RS256")


@pytest.fixture(scope="module")
def key_set(key: SigningKey) -> Iterator[KeySetServer]:
    server = KeySetServer([key])
    yield server
    server.close()


def document(issuer: str, jwks_uri: str, **more: Any) -> dict[str, Any]:
    return {"issuer": issuer, "jwks_uri": jwks_uri, **more}


def verifier_of(name: str, key_set: KeySetServer, **settings: Any) -> ProviderVerifier:
    issuer = ISSUERS[name]
    auth = resource_server(name, issuer=issuer, resource=RESOURCE, discovery=document(issuer, key_set.url), **settings)
    assert isinstance(auth.verifier, ProviderVerifier) and auth.authorization_servers == (issuer,)
    return auth.verifier


def test_there_is_a_preset_for_each_provider_of_the_issue() -> None:
    assert set(PRESETS) == set(ISSUERS)
    for name, issuer in ISSUERS.items():
        assert PRESETS[name].issuer_problem(issuer) is None, name


@pytest.mark.parametrize("name", sorted(WRONG))
def test_an_issuer_of_the_wrong_shape_is_refused_before_any_fetch(name: str) -> None:
    with pytest.raises(DiscoveryError) as refused:
        fetch_discovery(PRESETS[name], WRONG[name])
    assert name in str(refused.value)


def test_an_issuer_over_plain_http_is_refused_beyond_loopback() -> None:
    with pytest.raises(DiscoveryError, match="https://"):
        fetch_discovery(PRESETS["oidc"], "http://idp.example.test")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"issuer": "https://idp.example.test/"}, "names the issuer 'https://idp.example.test/'"),
        ({"issuer": "https://idp.example.test"}, "has no jwks_uri"),
        ({"issuer": "https://idp.example.test", "jwks_uri": "http://idp.example.test/jwks"}, "must be https"),
    ],
)
def test_the_discovery_document_must_match(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(DiscoveryError, match=message):
        resource_server("oidc", issuer="https://idp.example.test", resource=RESOURCE, discovery=doc)


def test_discovery_tries_the_presets_documents_in_order(key_set: KeySetServer) -> None:
    # An authorization server that publishes RFC 8414 metadata only (path-inserted), on loopback.
    seen: list[str] = []
    issuer = ""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            found = self.path == "/.well-known/oauth-authorization-server/tenant"
            body = json.dumps(document(issuer, key_set.url)).encode() if found else b"{}"
            self.send_response(200 if found else 404)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, args=(0.02,), daemon=True).start()
    try:
        issuer = f"http://127.0.0.1:{http.server_address[1]}/tenant"
        assert fetch_discovery(PRESETS["oidc"], issuer)["issuer"] == issuer
    finally:
        http.shutdown()
        http.server_close()
    assert seen == ["/tenant/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/tenant"]


async def test_auth0_permissions_count_as_scopes(key: SigningKey, key_set: KeySetServer) -> None:
    verifier = verifier_of("auth0", key_set)
    token = key.sign(iss=ISSUERS["auth0"], scope="openid", permissions=["mcp:tools", "mcp:admin"], org_id="org_1")
    assert (await verifier.verify(token)).scopes == {"openid", "mcp:tools", "mcp:admin"}
    await verifier.aclose()


async def test_okta_scp_lists_and_groups(key: SigningKey, key_set: KeySetServer) -> None:
    verifier = verifier_of("okta", key_set, allow=["group:Everyone-MCP", "user:00u1"])
    base = {"iss": ISSUERS["okta"], "scope": None, "scp": ["mcp:tools"], "sub": "ann@acme.example"}
    admitted = await verifier.verify(key.sign(base, groups=["Everyone-MCP"]))
    assert admitted.scopes == {"mcp:tools"}
    assert (await verifier.verify(key.sign(base, uid="00u1"))).subject == "ann@acme.example"
    with pytest.raises(NotAllowed):
        await verifier.verify(key.sign(base, uid="00u2", groups=["Other"]))
    await verifier.aclose()


async def test_workos_organizations_and_roles(key: SigningKey, key_set: KeySetServer) -> None:
    verifier = verifier_of("workos", key_set, allow=["org:org_01ACME"])
    base = {"iss": ISSUERS["workos"], "sub": "user_01"}
    assert (await verifier.verify(key.sign(base, org_id="org_01ACME", role="member"))).subject == "user_01"
    with pytest.raises(NotAllowed):
        await verifier.verify(key.sign(base, org_id="org_01OTHER"))
    with pytest.raises(InvalidToken, match="audience"):
        await verifier.verify(key.sign(base, aud="client_01"))  # the client id, as AuthKit used to name
    await verifier.aclose()


async def test_descope_needs_its_project_as_audience_and_reads_tenants(key: SigningKey, key_set: KeySetServer) -> None:
    with pytest.raises(ValueError, match="project id"):
        verifier_of("descope", key_set)
    verifier = verifier_of("descope", key_set, audience="P2abc", allow=["tenant:T1"])
    base = {"iss": ISSUERS["descope"], "aud": "P2abc"}
    assert (await verifier.verify(key.sign(base, tenants={"T1": {"roles": ["admin"]}}))).audience == ("P2abc",)
    with pytest.raises(NotAllowed):
        await verifier.verify(key.sign(base, tenants={"T2": {}}))
    with pytest.raises(InvalidToken, match="audience"):
        await verifier.verify(key.sign(base, aud=RESOURCE, tenants={"T1": {}}))
    await verifier.aclose()


async def test_scalekit_accepts_both_issuer_forms(key: SigningKey, key_set: KeySetServer) -> None:
    verifier = verifier_of("scalekit", key_set, audience="res_42")
    for issuer in (ISSUERS["scalekit"], ISSUERS["scalekit"] + "/resources/res_42"):
        assert (await verifier.verify(key.sign(iss=issuer, aud="res_42"))).issuer == issuer
    with pytest.raises(InvalidToken, match="issuer"):
        await verifier.verify(key.sign(iss=ISSUERS["scalekit"] + "/resources/res_43", aud="res_42"))
    await verifier.aclose()


async def test_supabase_names_one_audience_for_every_server_and_says_so(key: SigningKey, key_set: KeySetServer) -> None:
    warnings: list[str] = []
    verifier = verifier_of("supabase", key_set, warn=warnings.append, allow=["domain:acme.example"])
    assert warnings and "authenticated" in warnings[0]
    token = key.sign(iss=ISSUERS["supabase"], aud="authenticated", email="ann@acme.example", role="authenticated")
    assert (await verifier.verify(token)).subject == "alice"
    with pytest.raises(ValueError, match="always name the audience"):
        verifier_of("supabase", key_set, audience=RESOURCE)
    await verifier.aclose()


async def test_a_refused_token_is_never_cached_as_admitted(key: SigningKey, key_set: KeySetServer) -> None:
    # The bearer layer answers a token found in the verifier's cache without asking it again.
    verifier = verifier_of("keycloak", key_set, allow=["role:mcp"])
    base = {"iss": ISSUERS["keycloak"], "typ": "Bearer"}
    refused = key.sign(base, realm_access={"roles": ["other"]})
    with pytest.raises(NotAllowed) as raised:
        await verifier.verify(refused)
    assert raised.value.reason == "not allowed" and isinstance(raised.value, InvalidToken)
    assert verifier.cache.get(token_key(refused)) is None
    admitted = key.sign(base, realm_access={"roles": ["mcp"]}, headers={"typ": "JWT"})
    await verifier.verify(admitted)
    assert verifier.cache.get(token_key(admitted)) is not None
    await verifier.aclose()


def test_opaque_tokens_only_where_the_preset_has_them(key_set: KeySetServer) -> None:
    with pytest.raises(ValueError, match="jwt, not opaque"):
        verifier_of("keycloak", key_set, token_format="opaque")
    issuer = ISSUERS["oidc"]
    with pytest.raises(DiscoveryError, match="no introspection_endpoint"):
        resource_server(
            "oidc", issuer=issuer, resource=RESOURCE, token_format="opaque", discovery=document(issuer, key_set.url)
        )
    with pytest.raises(ValueError, match="client_id and client_secret"):
        resource_server(
            "oidc",
            issuer=issuer,
            resource=RESOURCE,
            token_format="opaque",
            discovery=document(issuer, key_set.url, introspection_endpoint="https://idp.example.test/introspect"),
        )


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="one of oidc, keycloak"):
        resource_server("github", issuer="https://github.com", resource=RESOURCE)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("acme", "expected KIND:VALUE"),
        ("company:acme", "expected KIND:VALUE"),
        ("group:", "expected KIND:VALUE"),
        ("claim:groups", "claim:NAME=VALUE"),
        ("org:acme", "no org claim known here"),
    ],
)
def test_allow_rules_that_do_not_parse_are_refused(rule: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AllowPolicy([rule], claims=PRESETS["oidc"].claims)


def test_allow_rules_match_strings_lists_objects_and_json_values() -> None:
    policy = AllowPolicy(
        ["claim:realm_access.roles=admin", "claim:tenants=T1", "claim:level=3", "claim:staff=true", "claim:a.b=c"]
    )
    assert str(policy.rules[0]) == "claim:realm_access.roles=admin"
    assert policy.admits({"realm_access": {"roles": ["user", "admin"]}})
    assert policy.admits({"tenants": {"T1": {}}}) and policy.admits({"level": 3}) and policy.admits({"staff": True})
    assert policy.admits({"a.b": "c"})  # a claim named with a dot, found whole
    assert not policy.admits({"realm_access": {"roles": [["admin"]]}, "level": "4", "staff": False, "tenants": ["T2"]})
    assert AllowPolicy([]).admits({}) and not AllowPolicy([])  # no rule: everyone, and falsy
    assert set(KINDS) >= {"user", "email", "domain", "group", "role", "org", "tenant", "claim"}
