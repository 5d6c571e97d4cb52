"""``serve --auth-provider NAME --auth-issuer URL [--auth-allow RULE]...``: an identity provider's
tokens checked from the command line, against a real OpenID provider (oidc-provider 9.13.3 on
loopback, mounted at a Keycloak-shaped issuer); and each setting it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from fixtures.commands import Main
from fixtures.keys import RESOURCE
from fixtures.messages import initialize_message
from fixtures.oidc_provider import OpenIdProvider, running_oidc_provider
from fixtures.served import Served

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def keycloak() -> Iterator[OpenIdProvider]:
    people = {"kc-admin": {"realm_access": {"roles": ["mcp-admin"]}}, "kc-user": {"realm_access": {"roles": ["user"]}}}
    with running_oidc_provider(people, path="/realms/demo", alg="RS256") as provider:
        yield provider


def test_serve_checks_a_providers_tokens_with_its_allow_policy(
    keycloak: OpenIdProvider, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    args = ["demo", "--port", "0", "--auth-provider", "keycloak", "--auth-issuer", keycloak.issuer]
    args += ["--auth-resource", RESOURCE, "--auth-scope", "mcp:tools", "--auth-allow", "role:mcp-admin"]
    served = Served(args, tmp_path, cli_env)
    try:
        assert (served.next_line() or "").startswith(
            f"Protected resource {RESOURCE}: bearer tokens from {keycloak.issuer}"
        )
        body = orjson.dumps(initialize_message())
        with httpx.Client(timeout=30) as client:

            def initialize(token: str) -> httpx.Response:
                return client.post(served.url, content=body, headers={**HEADERS, "authorization": f"Bearer {token}"})

            opened = initialize(keycloak.token("kc-admin", RESOURCE))
            assert opened.status_code == 200 and opened.headers["mcp-session-id"]
            refused = initialize(keycloak.token("kc-user", RESOURCE))
            assert (
                refused.status_code == 403 and 'error_description="not allowed"' in refused.headers["www-authenticate"]
            )
            elsewhere = initialize(keycloak.token("kc-admin", "https://other.example.test/mcp"))
            assert elsewhere.status_code == 401 and "audience" in elsewhere.headers["www-authenticate"]
    finally:
        status, stderr = served.stop()
    assert status == 0, stderr


def test_a_published_issuer_other_than_the_one_given_stops_serve(main: Main) -> None:
    with running_oidc_provider({}, host="localhost") as provider:
        status, _, err = main(
            "serve", "demo", "--auth-provider", "oidc", "--auth-issuer", provider.url, "--auth-resource", RESOURCE
        )
    assert status == 2 and "names the issuer 'http://localhost:" in err, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth-provider", "nope", "--auth-issuer", "https://idp.example"], "no identity provider preset 'nope'"),
        (["--auth-issuer", "https://a", "--auth-jwks-uri", "https://a/j", "--auth-allow", "user:x"], "--auth-provider"),
        (
            ["--auth-provider", "oidc", "--auth-issuer", "https://a", "--auth-jwks-uri", "https://a/j"],
            "leave out --auth-jwks-uri",
        ),
        (["--auth-provider", "descope", "--auth-issuer", "https://api.descope.com/v1/apps/P2"], "project id"),
        (["--auth-provider", "okta", "--auth-issuer", "https://acme.okta.com"], "custom authorization server"),
        (["--auth-provider", "oidc", "--auth-issuer", "http://idp.example"], "must be https://"),
        (["--auth-provider", "oidc", "--auth-issuer", "https://a", "--auth-allow", "team:x"], "KIND:VALUE"),
        (["--port", "0", "--auth-provider", "oidc", "--auth-issuer", "https://a"], "--auth-resource URL is needed"),
    ],
)
def test_provider_settings_that_cannot_work_are_usage_errors(main: Main, args: list[str], message: str) -> None:
    status, _, err = main("serve", "demo", *args)
    assert status == 2 and message in err, err
