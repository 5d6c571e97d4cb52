"""Discovery URLs, metadata parsing and the client's checks (the digest's §2, §5 and §7.2)."""

from __future__ import annotations

import base64
import hashlib
import string
from typing import Any

import pytest

from mcp_sse_server.client.oauth.discovery import (
    AuthorizationServer,
    ProtectedResource,
    authorization_code,
    authorization_server_urls,
    check_oauth_url,
    effective_auth_method,
    initial_scope,
    legacy_authorization_server,
    legacy_base,
    legacy_metadata_url,
    new_state,
    parse_authorization_server,
    parse_protected_resource,
    pkce_pair,
    protected_resource_urls,
    requested_auth_method,
    resource_matches,
    step_up_hopeless,
    step_up_scope,
)
from mcp_sse_server.client.oauth.errors import OAuthError

WK_PRM = "/.well-known/oauth-protected-resource"
WK_AS = "/.well-known/oauth-authorization-server"
WK_OIDC = "/.well-known/openid-configuration"

# ------------------------------------------------------------------------------------------
# §2 B: protected resource metadata


@pytest.mark.parametrize(
    ("server_url", "header_url", "expected"),
    [
        ("https://host/path/mcp", None, [f"https://host{WK_PRM}/path/mcp", f"https://host{WK_PRM}"]),
        ("https://host/path/mcp/", None, [f"https://host{WK_PRM}/path/mcp", f"https://host{WK_PRM}"]),
        (
            "https://host/path/mcp",
            "https://host/custom/metadata/location.json",
            ["https://host/custom/metadata/location.json", f"https://host{WK_PRM}/path/mcp", f"https://host{WK_PRM}"],
        ),
        # The header URL is used verbatim, even when it is an unusual spelling of a candidate.
        (
            "https://host/mcp",
            f"https://HOST{WK_PRM}/mcp/",
            [f"https://HOST{WK_PRM}/mcp/", f"https://host{WK_PRM}/mcp", f"https://host{WK_PRM}"],
        ),
        ("https://host/mcp", f"https://host{WK_PRM}/mcp", [f"https://host{WK_PRM}/mcp", f"https://host{WK_PRM}"]),
        ("https://host/mcp", f"https://host{WK_PRM}", [f"https://host{WK_PRM}", f"https://host{WK_PRM}/mcp"]),
        ("https://host/mcp", "", [f"https://host{WK_PRM}/mcp", f"https://host{WK_PRM}"]),
        ("https://host", None, [f"https://host{WK_PRM}"]),
        ("https://host/", None, [f"https://host{WK_PRM}"]),
        ("https://host/", f"https://host{WK_PRM}", [f"https://host{WK_PRM}"]),
        ("https://host/mcp?tenant=a", None, [f"https://host{WK_PRM}/mcp?tenant=a", f"https://host{WK_PRM}"]),
        ("https://host/mcp/?tenant=a", None, [f"https://host{WK_PRM}/mcp?tenant=a", f"https://host{WK_PRM}"]),
        ("https://host/?tenant=a", None, [f"https://host{WK_PRM}?tenant=a", f"https://host{WK_PRM}"]),
        ("https://host/mcp#frag", None, [f"https://host{WK_PRM}/mcp", f"https://host{WK_PRM}"]),
        (
            "http://localhost:44609/mcp",
            None,
            [f"http://localhost:44609{WK_PRM}/mcp", f"http://localhost:44609{WK_PRM}"],
        ),
        ("https://[::1]:8443/a/b", None, [f"https://[::1]:8443{WK_PRM}/a/b", f"https://[::1]:8443{WK_PRM}"]),
    ],
)
def test_protected_resource_urls(server_url: str, header_url: str | None, expected: list[str]) -> None:
    assert protected_resource_urls(server_url, header_url) == expected


@pytest.mark.parametrize("server_url", ["host/mcp", "/mcp", "ftp://host/mcp", "https:///mcp", ""])
def test_protected_resource_urls_need_an_absolute_http_url(server_url: str) -> None:
    with pytest.raises(ValueError, match="absolute http"):
        protected_resource_urls(server_url, None)


# ------------------------------------------------------------------------------------------
# §2 C: authorization server metadata

TENANT = [
    f"https://auth.example{WK_AS}/tenant1",
    f"https://auth.example{WK_OIDC}/tenant1",
    f"https://auth.example/tenant1{WK_OIDC}",
]
ROOT = [f"https://auth.example{WK_AS}", f"https://auth.example{WK_OIDC}"]


@pytest.mark.parametrize(
    ("issuer", "expected"),
    [
        ("https://auth.example/tenant1", TENANT),
        ("https://auth.example/tenant1/", TENANT),
        ("https://auth.example", ROOT),
        ("https://auth.example/", ROOT),
        (
            "http://localhost:38253/tenant1",
            [
                f"http://localhost:38253{WK_AS}/tenant1",
                f"http://localhost:38253{WK_OIDC}/tenant1",
                f"http://localhost:38253/tenant1{WK_OIDC}",
            ],
        ),
        (
            "https://a.example/x/y",
            [f"https://a.example{WK_AS}/x/y", f"https://a.example{WK_OIDC}/x/y", f"https://a.example/x/y{WK_OIDC}"],
        ),
    ],
)
def test_authorization_server_urls(issuer: str, expected: list[str]) -> None:
    urls = authorization_server_urls(issuer)
    assert urls == expected
    if len(expected) == 3:  # the conformance trap of metadata-var2 and var3
        assert not any(url.endswith(WK_AS) for url in urls)


@pytest.mark.parametrize("issuer", ["https://as.example?x=1", "https://as.example/t#f", "as.example", "ftp://as", ""])
def test_authorization_server_urls_refuse_a_bad_issuer(issuer: str) -> None:
    with pytest.raises(OAuthError, match="issuer"):
        authorization_server_urls(issuer)


# ------------------------------------------------------------------------------------------
# §2 D: 2025-03-26


@pytest.mark.parametrize(
    ("server_url", "base"),
    [
        ("https://host/path/mcp", "https://host"),
        ("https://host", "https://host"),
        ("https://Host.Example:443/mcp?x=1#f", "https://host.example"),
        ("http://localhost:3000/mcp", "http://localhost:3000"),
        ("http://localhost:80/mcp", "http://localhost"),
        ("https://user:pw@host:8443/mcp", "https://host:8443"),
        ("http://[::1]:9000/mcp", "http://[::1]:9000"),
    ],
)
def test_legacy_base(server_url: str, base: str) -> None:
    assert legacy_base(server_url) == base
    assert legacy_metadata_url(server_url) == base + WK_AS


def test_legacy_authorization_server() -> None:
    server = legacy_authorization_server("https://host/path/mcp")
    assert (server.issuer, server.authorization_endpoint, server.token_endpoint, server.registration_endpoint) == (
        "https://host",
        "https://host/authorize",
        "https://host/token",
        "https://host/register",
    )
    assert server.supports_pkce() and server.url is None and not server.iss_parameter_supported
    assert server.token_endpoint_auth_methods_supported is None and server.scopes_supported is None


# ------------------------------------------------------------------------------------------
# CL-4: the PRM resource names the server


@pytest.mark.parametrize(
    ("server_url", "resource", "matches"),
    [
        ("https://host/path/mcp", "https://host/path/mcp", True),
        ("https://host/path/mcp", "https://host/path", True),
        ("https://host/path/mcp", "https://host/path/", True),
        ("https://host/path/mcp", "https://host/", True),
        ("https://host/path/mcp", "https://host", True),
        ("https://host/mcp", "https://host/mcp/", True),
        ("https://host/mcp/", "https://host/mcp", True),
        ("https://host/mcp", "https://host/mc", False),
        ("https://host/mcp", "https://host/mcp/sub", False),
        ("https://host/mcp", "https://host/MCP", False),
        ("https://host", "https://host/mcp", False),
        ("https://host/mcp", "https://HOST/mcp", True),
        ("https://Host/mcp", "https://host/mcp", True),
        ("https://host/mcp", "HTTPS://host/mcp", True),
        ("https://host/mcp", "https://host:443/mcp", True),
        ("https://host:443/mcp", "https://host/mcp", True),
        ("http://host/mcp", "http://host:80/mcp", True),
        ("https://host:8443/mcp", "https://host/mcp", False),
        ("https://host/mcp", "https://host:8443/mcp", False),
        ("http://localhost:1234/mcp", "http://localhost:1234", True),
        ("http://localhost:1234/mcp", "http://localhost:1235", False),
        ("https://host/mcp", "http://host/mcp", False),
        ("https://host/mcp", "https://evil.example.com/mcp", False),
        ("https://host/mcp", "https://host.evil/mcp", False),
        ("https://host/mcp", "https://host/mcp#frag", False),
        ("https://host/mcp?t=a", "https://host/mcp", True),
        ("https://host/mcp?t=a", "https://host/mcp?t=a", True),
        ("https://host/mcp?t=a", "https://host/mcp?t=b", False),
        ("https://host/mcp", "https://host:99999/mcp", False),
        ("https://host/mcp", "https://host:abc/mcp", False),
        ("https://host/mcp", "/mcp", False),
        ("https://host/mcp", "", False),
        ("https://host/mcp", "urn:example:mcp", False),
        ("https://[::1]:8443/mcp", "https://[::1]:8443/", True),
    ],
)
def test_resource_matches(server_url: str, resource: str, matches: bool) -> None:
    assert resource_matches(server_url, resource) is matches


def test_resource_matches_needs_an_absolute_server_url() -> None:
    with pytest.raises(ValueError):
        resource_matches("/mcp", "https://host/mcp")


# ------------------------------------------------------------------------------------------
# CL-8: https, or http on loopback


@pytest.mark.parametrize(
    "url",
    [
        "https://as.example/token",
        "https://as.example:8443/t?x=1",
        "http://localhost:3000/callback",
        "http://LOCALHOST/x",
        "http://127.0.0.1:8080/token",
        "http://127.255.0.9/x",
        "http://[::1]:9000/x",
    ],
)
def test_check_oauth_url_accepts(url: str) -> None:
    assert check_oauth_url(url, "the token endpoint") == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://as.example/token", "must be https"),
        ("http://127.evil.example/x", "must be https"),
        ("http://localhost.evil.example/x", "must be https"),
        ("http://localhost@evil.example/x", "must be https"),
        ("http://10.0.0.1/x", "must be https"),
        ("http://[::2]/x", "must be https"),
        ("ftp://as.example/x", "must be https"),
        ("javascript:alert(1)", "must be https"),
        ("file:///etc/passwd", "must be https"),
        ("https:///nohost", "must be https"),
        ("as.example/token", "must be https"),
        ("", "must be https"),
        ("https://as.example:abc/x", "invalid port"),
        ("https://as.example/x#frag", "fragment"),
        ("https://as.example/x#", "fragment"),
    ],
)
def test_check_oauth_url_refuses(url: str, message: str) -> None:
    with pytest.raises(OAuthError, match=message) as caught:
        check_oauth_url(url, "the authorization endpoint")
    assert str(caught.value).startswith("the authorization endpoint ")


def test_check_oauth_url_without_the_loopback_allowance() -> None:
    with pytest.raises(OAuthError, match="http is not allowed"):
        check_oauth_url("http://127.0.0.1/x", "the PRM URL", allow_loopback_http=False)
    assert check_oauth_url("https://h/x", "the PRM URL", allow_loopback_http=False) == "https://h/x"


# ------------------------------------------------------------------------------------------
# Metadata documents: exact strings (CL-9), required fields, the issuer check (CL-6)

PRM_URL = "http://localhost:44609/.well-known/oauth-protected-resource"


def test_parse_protected_resource_keeps_exact_strings() -> None:
    data = {"resource": "http://localhost:1234", "authorization_servers": ["http://localhost:38253/tenant1/", "x"]}
    prm = parse_protected_resource(data, PRM_URL)
    assert prm == ProtectedResource(
        "http://localhost:1234", ("http://localhost:38253/tenant1/", "x"), None, PRM_URL, data
    )


def test_parse_protected_resource_digest_example() -> None:
    data = {
        "resource": "https://host/path/mcp",
        "authorization_servers": ["https://auth.example/tenant1"],
        "scopes_supported": ["mcp:tools"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Example MCP server",
    }
    prm = parse_protected_resource(data, PRM_URL)
    assert prm.scopes_supported == ("mcp:tools",) and prm.raw["resource_name"] == "Example MCP server"
    assert parse_protected_resource({**data, "scopes_supported": []}, PRM_URL).scopes_supported == ()
    assert parse_protected_resource({**data, "scopes_supported": None}, PRM_URL).scopes_supported is None


GOOD_PRM: dict[str, Any] = {"resource": "https://host/mcp", "authorization_servers": ["https://as"]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([GOOD_PRM], "not a JSON object"),
        ("{}", "not a JSON object"),
        (None, "not a JSON object"),
        ({"authorization_servers": ["https://as"]}, "no resource"),
        ({**GOOD_PRM, "resource": ""}, "resource is not a non-empty string"),
        ({**GOOD_PRM, "resource": ["https://host/mcp"]}, "resource is not"),
        ({"resource": "https://host/mcp"}, "no authorization server"),
        ({**GOOD_PRM, "authorization_servers": []}, "no authorization server"),
        ({**GOOD_PRM, "authorization_servers": [""]}, "no authorization server"),
        ({**GOOD_PRM, "authorization_servers": "https://as"}, "authorization_servers is not a list"),
        ({**GOOD_PRM, "authorization_servers": [1]}, "authorization_servers is not a list"),
        ({**GOOD_PRM, "scopes_supported": "mcp"}, "scopes_supported is not a list"),
    ],
)
def test_parse_protected_resource_refuses(data: object, message: str) -> None:
    with pytest.raises(OAuthError, match=message) as caught:
        parse_protected_resource(data, PRM_URL)
    assert PRM_URL in str(caught.value)


AS_URL = f"https://auth.example{WK_AS}/tenant1"
FULL_AS: dict[str, Any] = {
    "issuer": "https://auth.example/tenant1",
    "authorization_endpoint": "https://auth.example/tenant1/authorize",
    "token_endpoint": "https://auth.example/tenant1/token",
    "registration_endpoint": "https://auth.example/tenant1/register",
    "jwks_uri": "https://auth.example/tenant1/jwks",
    "response_types_supported": ["code"],
    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
    "code_challenge_methods_supported": ["S256"],
    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"],
    "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256"],
    "scopes_supported": ["mcp:tools", "files:write", "offline_access"],
    "client_id_metadata_document_supported": True,
    "authorization_response_iss_parameter_supported": True,
    "dpop_signing_alg_values_supported": ["ES256"],
}


def test_parse_authorization_server_digest_example() -> None:
    server = parse_authorization_server(FULL_AS, AS_URL, "https://auth.example/tenant1")
    assert server == AuthorizationServer(
        issuer="https://auth.example/tenant1",
        authorization_endpoint="https://auth.example/tenant1/authorize",
        token_endpoint="https://auth.example/tenant1/token",
        registration_endpoint="https://auth.example/tenant1/register",
        scopes_supported=("mcp:tools", "files:write", "offline_access"),
        code_challenge_methods_supported=("S256",),
        token_endpoint_auth_methods_supported=("none", "client_secret_basic", "client_secret_post", "private_key_jwt"),
        grant_types_supported=("authorization_code", "refresh_token", "client_credentials"),
        iss_parameter_supported=True,
        client_id_metadata_document_supported=True,
        dpop_signing_alg_values_supported=("ES256",),
        token_endpoint_auth_signing_alg_values_supported=("ES256", "RS256"),
        url=AS_URL,
        raw=FULL_AS,
    )
    assert server.supports_pkce()


def test_parse_authorization_server_minimal() -> None:
    data = {"issuer": "http://localhost:1234", "token_endpoint": "http://localhost:1234/token"}
    server = parse_authorization_server(data, "u", "http://localhost:1234")
    assert server.issuer == "http://localhost:1234"  # no trailing slash added
    assert server.authorization_endpoint is None and server.registration_endpoint is None
    assert server.code_challenge_methods_supported == () and not server.supports_pkce()
    assert server.token_endpoint_auth_methods_supported is None and server.grant_types_supported is None
    assert not server.iss_parameter_supported and not server.client_id_metadata_document_supported
    nulls = {**data, "scopes_supported": None, "authorization_response_iss_parameter_supported": None}
    assert parse_authorization_server(nulls, "u", "http://localhost:1234").scopes_supported is None


@pytest.mark.parametrize(
    "methods", [["plain"], [], ["s256"], None], ids=["plain-only", "empty", "lower-case", "absent"]
)
def test_supports_pkce_needs_s256(methods: list[str] | None) -> None:
    data = {**FULL_AS, "code_challenge_methods_supported": methods}
    assert not parse_authorization_server(data, AS_URL, FULL_AS["issuer"]).supports_pkce()


@pytest.mark.parametrize(
    "issuer",
    [
        "https://auth.example/tenant1/",
        "https://AUTH.example/tenant1",
        "https://auth.example:443/tenant1",
        "https://auth.example",
        "https://attacker.example.com",
        "",
        None,
        ["https://auth.example/tenant1"],
    ],
)
def test_parse_authorization_server_issuer_must_be_equal(issuer: object) -> None:
    data = {**FULL_AS, "issuer": issuer}
    with pytest.raises(OAuthError, match=r"names issuer .*, not 'https://auth\.example/tenant1'"):
        parse_authorization_server(data, AS_URL, "https://auth.example/tenant1")


def test_parse_authorization_server_issuer_missing() -> None:
    data = {k: v for k, v in FULL_AS.items() if k != "issuer"}
    with pytest.raises(OAuthError, match="names issuer None"):
        parse_authorization_server(data, AS_URL, "https://auth.example/tenant1")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"token_endpoint": None}, "no token_endpoint"),
        ({"token_endpoint": ""}, "token_endpoint is not a non-empty string"),
        ({"token_endpoint": 5}, "token_endpoint is not"),
        ({"authorization_endpoint": ["x"]}, "authorization_endpoint is not"),
        ({"scopes_supported": "a b"}, "scopes_supported is not a list"),
        ({"code_challenge_methods_supported": "S256"}, "code_challenge_methods_supported is not a list"),
        ({"token_endpoint_auth_methods_supported": [None]}, "token_endpoint_auth_methods_supported is not"),
        ({"authorization_response_iss_parameter_supported": "true"}, "is not a boolean"),
        ({"client_id_metadata_document_supported": 1}, "is not a boolean"),
    ],
)
def test_parse_authorization_server_refuses(change: dict[str, Any], message: str) -> None:
    data = {k: v for k, v in {**FULL_AS, **change}.items() if v is not None}
    with pytest.raises(OAuthError, match=message):
        parse_authorization_server(data, AS_URL, FULL_AS["issuer"])


@pytest.mark.parametrize("data", [[FULL_AS], "x", None, 3])
def test_parse_authorization_server_needs_an_object(data: object) -> None:
    with pytest.raises(OAuthError, match="not a JSON object"):
        parse_authorization_server(data, AS_URL, FULL_AS["issuer"])


# ------------------------------------------------------------------------------------------
# CL-19, CL-20: the first scope


def _prm(scopes: tuple[str, ...] | None) -> ProtectedResource:
    return ProtectedResource("https://host/mcp", ("https://as",), scopes, PRM_URL, {})


def _as(scopes: tuple[str, ...] | None = None, methods: tuple[str, ...] | None = None) -> AuthorizationServer:
    return AuthorizationServer(
        issuer="https://as",
        authorization_endpoint="https://as/authorize",
        token_endpoint="https://as/token",
        registration_endpoint=None,
        scopes_supported=scopes,
        code_challenge_methods_supported=("S256",),
        token_endpoint_auth_methods_supported=methods,
        grant_types_supported=None,
        iss_parameter_supported=False,
        client_id_metadata_document_supported=False,
        dpop_signing_alg_values_supported=None,
        token_endpoint_auth_signing_alg_values_supported=None,
        url=None,
        raw={},
    )


OFFLINE = ("mcp:basic", "offline_access")


@pytest.mark.parametrize(
    ("challenge", "prm_scopes", "as_scopes", "want_refresh", "expected"),
    [
        # scope-from-www-authenticate: the challenge wins over PRM, and over the AS.
        ("mcp:basic", ("mcp:profile",), None, True, "mcp:basic"),
        ("mcp:basic mcp:read", None, None, True, "mcp:basic mcp:read"),
        ("  mcp:a   mcp:a mcp:b ", None, None, True, "mcp:a mcp:b"),
        # The challenge is authoritative: not checked against scopes_supported.
        ("other:scope", ("mcp:basic",), ("mcp:basic",), True, "other:scope"),
        # scope-from-scopes-supported: all of the PRM's.
        (None, ("mcp:basic", "mcp:read", "mcp:write"), None, True, "mcp:basic mcp:read mcp:write"),
        ("", ("mcp:basic",), None, True, "mcp:basic"),
        ("   ", ("mcp:basic",), None, True, "mcp:basic"),
        # scope-omitted-when-undefined; the AS's scopes_supported is no fallback.
        (None, None, None, True, None),
        (None, None, ("mcp:tools", "files:write"), True, None),
        (None, (), None, True, None),
        # offline-access-scope: added only when the AS lists it...
        (None, ("mcp:basic",), OFFLINE, True, "mcp:basic offline_access"),
        ("mcp:basic", None, OFFLINE, True, "mcp:basic offline_access"),
        ("offline_access mcp:basic", None, OFFLINE, True, "offline_access mcp:basic"),
        (None, ("mcp:basic",), OFFLINE, False, "mcp:basic"),
        # ... offline-access-not-supported: never otherwise (the PRM listing it does not count)...
        (None, ("mcp:basic",), ("mcp:basic",), True, "mcp:basic"),
        (None, ("mcp:basic",), None, True, "mcp:basic"),
        # ... and only joining a scope sent anyway.
        (None, None, OFFLINE, True, None),
        (None, (), OFFLINE, True, None),
    ],
)
def test_initial_scope(
    challenge: str | None,
    prm_scopes: tuple[str, ...] | None,
    as_scopes: tuple[str, ...] | None,
    want_refresh: bool,
    expected: str | None,
) -> None:
    assert initial_scope(challenge, _prm(prm_scopes), _as(as_scopes), want_refresh=want_refresh) == expected


def test_initial_scope_without_prm() -> None:
    assert initial_scope("mcp:a", None, _as(OFFLINE)) == "mcp:a offline_access"
    assert initial_scope(None, None, _as(OFFLINE)) is None


# ------------------------------------------------------------------------------------------
# CL-30, CL-31: step-up


@pytest.mark.parametrize(
    ("requested", "granted", "challenged", "expected"),
    [
        # scope-step-up: mcp:basic kept, mcp:write added (sep-2350-scope-union-on-reauth).
        ("mcp:basic", "mcp:basic", "mcp:write", "mcp:basic mcp:write"),
        ("mcp:basic", None, "mcp:write", "mcp:basic mcp:write"),
        ("a b", "c a", "d b e", "a b c d e"),
        ("a", "b", None, "a b"),
        (None, None, "x y x", "x y"),
        (None, None, None, None),
        ("", " ", "", None),
    ],
)
def test_step_up_scope(
    requested: str | None, granted: str | None, challenged: str | None, expected: str | None
) -> None:
    assert step_up_scope(requested, granted, challenged) == expected


@pytest.mark.parametrize(
    ("granted", "challenged", "hopeless"),
    [
        ("mcp:admin", "mcp:admin", True),  # scope-retry-limit: granted what was challenged, still refused
        ("mcp:basic mcp:admin", "mcp:admin", True),
        ("mcp:basic", "mcp:admin", False),
        ("mcp:basic", "mcp:basic mcp:write", False),
        (None, "mcp:write", False),
        ("mcp:basic", None, True),  # nothing new to ask for
        ("mcp:basic", "", True),
        (None, None, True),
    ],
)
def test_step_up_hopeless(granted: str | None, challenged: str | None, hopeless: bool) -> None:
    assert step_up_hopeless(granted, challenged) is hopeless


# ------------------------------------------------------------------------------------------
# CL-15, CL-16: PKCE and state

UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def test_pkce_pair() -> None:
    # RFC 7636 Appendix B's vector, for the helper the check below relies on.
    assert _s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    pairs = [pkce_pair() for _ in range(50)]
    for verifier, challenge in pairs:
        assert 43 <= len(verifier) <= 128 and set(verifier) <= UNRESERVED
        assert challenge == _s256(verifier) and "=" not in challenge and len(challenge) == 43
    assert len({verifier for verifier, _ in pairs}) == 50


def test_new_state() -> None:
    states = {new_state() for _ in range(50)}
    assert len(states) == 50
    assert all(len(state) >= 32 and set(state) <= UNRESERVED for state in states)


# ------------------------------------------------------------------------------------------
# CL-21: the authorization response

ISSUER = "http://localhost:38253/tenant1"


def _code(params: dict[str, str], *, iss_supported: bool, state: str = "st") -> str:
    return authorization_code(params, state=state, issuer=ISSUER, iss_supported=iss_supported)


@pytest.mark.parametrize(
    ("iss_supported", "iss", "ok"),
    [
        (True, ISSUER, True),  # iss-supported
        (True, None, False),  # iss-supported-missing
        (False, ISSUER, True),  # present although not advertised: checked anyway
        (False, None, True),  # iss-not-advertised
        (True, "https://evil.example.com", False),  # iss-wrong-issuer
        (False, "https://evil.example.com", False),  # iss-unexpected
        (True, ISSUER + "/", False),  # iss-normalized
        (False, ISSUER + "/", False),
        (True, "http://LOCALHOST:38253/tenant1", False),
        (True, "", False),
    ],
)
def test_iss_table(iss_supported: bool, iss: str | None, ok: bool) -> None:
    params = {"code": "test-auth-code", "state": "st"}
    if iss is not None:
        params["iss"] = iss
    if ok:
        assert _code(params, iss_supported=iss_supported) == "test-auth-code"
    else:
        with pytest.raises(OAuthError, match="iss"):
            _code(params, iss_supported=iss_supported)


@pytest.mark.parametrize(
    "params",
    [
        {"code": "c", "iss": ISSUER},
        {"code": "c", "iss": ISSUER, "state": "other"},
        {"code": "c", "iss": ISSUER, "state": ""},
        {"code": "c", "iss": ISSUER, "state": "st "},
        {"code": "c", "iss": ISSUER, "state": "sté"},
        # state comes first: a wrong iss or an error is not looked at.
        {"code": "c", "iss": "https://evil", "state": "x"},
        {"error": "access_denied", "state": "x"},
    ],
)
def test_state_missing_or_wrong(params: dict[str, str]) -> None:
    with pytest.raises(OAuthError, match="state is missing or not the one sent") as caught:
        _code(params, iss_supported=True)
    assert "access_denied" not in str(caught.value)


def test_empty_expected_state_is_a_caller_error() -> None:
    with pytest.raises(ValueError):
        authorization_code({"code": "c", "state": ""}, state="", issuer=ISSUER, iss_supported=False)


def test_error_response() -> None:
    params = {"error": "access_denied", "error_description": "The user\nsaid no", "state": "st", "iss": ISSUER}
    with pytest.raises(OAuthError) as caught:
        _code(params, iss_supported=True)
    assert str(caught.value) == "the authorization server refused the authorization: access_denied: The user said no"
    assert caught.value.data == {"error": "access_denied", "error_description": "The user\nsaid no"}
    # An error wins over a code that comes with it.
    with pytest.raises(OAuthError, match=r"refused the authorization: server_error$"):
        _code({"error": "server_error", "code": "c", "state": "st"}, iss_supported=False)


@pytest.mark.parametrize("iss", ["https://evil.example.com", None])
def test_error_from_a_failed_iss_is_never_shown(iss: str | None) -> None:
    params = {"error": "access_denied", "error_description": "visit https://evil.example.com/phish", "state": "st"}
    if iss is not None:
        params["iss"] = iss
    with pytest.raises(OAuthError, match="iss") as caught:
        _code(params, iss_supported=True)
    assert "access_denied" not in str(caught.value) and "phish" not in str(caught.value)
    assert caught.value.data is None


@pytest.mark.parametrize("params", [{"state": "st"}, {"state": "st", "code": ""}])
def test_missing_code(params: dict[str, str]) -> None:
    with pytest.raises(OAuthError, match="no code"):
        _code(params, iss_supported=False)


# ------------------------------------------------------------------------------------------
# CL-14: token-endpoint auth methods (§5.2)


@pytest.mark.parametrize(
    ("supported", "requested"),
    [
        (None, "client_secret_basic"),  # RFC 8414 default
        ((), "client_secret_basic"),
        (("none",), "none"),  # token-endpoint-auth-none
        (("client_secret_basic",), "client_secret_basic"),  # token-endpoint-auth-basic, pre-registration
        (("client_secret_post",), "client_secret_post"),  # token-endpoint-auth-post
        (("client_secret_post", "client_secret_basic", "none"), "none"),
        (("client_secret_post", "client_secret_basic"), "client_secret_basic"),
        (("private_key_jwt",), "client_secret_post"),
    ],
)
def test_requested_auth_method(supported: tuple[str, ...] | None, requested: str) -> None:
    assert requested_auth_method(_as(methods=supported)) == requested


@pytest.mark.parametrize(
    ("registered", "has_secret", "supported", "effective"),
    [
        ("client_secret_post", True, ("client_secret_basic",), "client_secret_post"),  # the registration decides
        ("none", True, ("client_secret_basic",), "none"),
        ("private_key_jwt", False, None, "private_key_jwt"),
        (None, False, ("client_secret_basic",), "none"),
        ("", False, None, "none"),
        # The conformance AS returns a secret but no method, and lists only "none" (§6.6).
        (None, True, ("none",), "none"),
        (None, True, None, "client_secret_basic"),
        (None, True, ("client_secret_post",), "client_secret_post"),
        (None, True, ("none", "client_secret_post", "client_secret_basic"), "client_secret_basic"),
        (None, True, ("private_key_jwt", "client_secret_post"), "client_secret_post"),
    ],
)
def test_effective_auth_method(
    registered: str | None, has_secret: bool, supported: tuple[str, ...] | None, effective: str
) -> None:
    assert effective_auth_method(registered, has_secret, _as(methods=supported)) == effective


def test_effective_auth_method_nothing_usable() -> None:
    with pytest.raises(OAuthError, match=r"supports no token endpoint auth method .*private_key_jwt, tls_client_auth"):
        effective_auth_method(None, True, _as(methods=("private_key_jwt", "tls_client_auth")))
