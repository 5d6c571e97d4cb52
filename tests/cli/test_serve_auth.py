"""``serve --auth-*``: the endpoint served as a protected resource from the command line, with a
real key set over HTTP and real signed tokens; what it prints; and each setting it refuses."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from fixtures.commands import Main
from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.messages import initialize_message
from fixtures.served import Served

INTROSPECTION = ["--auth-issuer", ISSUER, "--auth-introspection-url", "https://a/i", "--auth-client-id", "mcp"]
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("cli-key", "RS256")


@pytest.fixture
def key_set(key: SigningKey) -> Iterator[KeySetServer]:
    server = KeySetServer([key])
    yield server
    server.close()


def test_serve_checks_jwt_bearer_tokens(
    key: SigningKey, key_set: KeySetServer, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    args = ["demo", "--port", "0", "--auth-issuer", ISSUER, "--auth-jwks-uri", key_set.url]
    args += ["--auth-resource", RESOURCE, "--auth-scope", "mcp:tools"]
    served = Served(args, tmp_path, cli_env)
    try:
        protected = served.next_line()
        assert protected == (
            f"Protected resource {RESOURCE}: bearer tokens from {ISSUER} "
            "(metadata at https://mcp.example.test/.well-known/oauth-protected-resource/mcp)"
        )
        base = served.url.rsplit("/mcp", 1)[0]
        with httpx.Client(timeout=30) as client:
            metadata = client.get(base + "/.well-known/oauth-protected-resource/mcp").json()
            assert metadata["resource"] == RESOURCE and metadata["authorization_servers"] == [ISSUER]
            body = orjson.dumps(initialize_message())
            refused = client.post(served.url, content=body, headers=HEADERS)
            assert refused.status_code == 401 and 'scope="mcp:tools"' in refused.headers["www-authenticate"]
            narrow = client.post(
                served.url, content=body, headers={**HEADERS, "authorization": f"Bearer {key.sign(scope='x')}"}
            )
            assert narrow.status_code == 403
            opened = client.post(served.url, content=body, headers={**HEADERS, "authorization": f"Bearer {key.sign()}"})
            assert opened.status_code == 200 and opened.headers["mcp-session-id"]
    finally:
        status, stderr = served.stop()
    assert status == 0, stderr
    assert key.sign() not in stderr  # tokens never reach the log


def test_listening_on_every_interface_says_so(key_set: KeySetServer, tmp_path: Path, cli_env: dict[str, str]) -> None:
    args = ["demo", "--host", "0.0.0.0", "--port", "0", "--auth-issuer", ISSUER, "--auth-jwks-uri", key_set.url]
    served = Served([*args, "--auth-resource", RESOURCE], tmp_path, cli_env)
    try:
        assert served.url.startswith("http://127.0.0.1:")  # a URL that works from this machine
        assert (
            served.next_line() == f"Listening on every interface (0.0.0.0 port {served.port}), not only this machine's"
        )
        assert (served.next_line() or "").startswith(f"Protected resource {RESOURCE}")
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth-jwks-uri", "https://as.example/jwks"], "need --auth-issuer"),
        (["--auth-issuer", ISSUER], "check tokens one way"),
        (
            ["--auth-issuer", ISSUER, "--auth-jwks-uri", "https://a/j", "--auth-introspection-url", "https://a/i"],
            "check tokens one way",
        ),
        (["--auth-issuer", ISSUER, "--auth-jwks-uri", "http://as.example/jwks"], "--auth-jwks-uri must be https://"),
        (["--auth-issuer", ISSUER, "--auth-introspection-url", "https://a/i"], "needs --auth-client-id"),
        (INTROSPECTION, "needs --auth-client-secret-env"),
        ([*INTROSPECTION, "--auth-client-secret-env", "MCP_TEST_UNSET_SECRET"], "MCP_TEST_UNSET_SECRET is not set"),
        (["--auth-issuer", ISSUER, "--auth-jwks-uri", "https://a/j", "--auth-client-id", "x"], "go with introspection"),
        (["--port", "0", "--auth-issuer", ISSUER, "--auth-jwks-uri", "https://a/j"], "--auth-resource URL is needed"),
        (
            ["--host", "0.0.0.0", "--auth-issuer", ISSUER, "--auth-jwks-uri", "https://a/j"],
            "--auth-resource URL is needed",
        ),
        (["--stdio", "--auth-issuer", ISSUER], "does not go with --stdio"),
    ],
)
def test_settings_that_cannot_work_are_usage_errors(main: Main, args: list[str], message: str) -> None:
    status, _, err = main("serve", "demo", *args)
    assert status == 2 and message in err, err


def test_without_auth_beyond_loopback_the_message_names_the_options(main: Main) -> None:
    status, _, err = main("serve", "demo", "--host", "0.0.0.0", "--port", "0")
    assert status == 2 and re.search(r"auth=|--auth-issuer", err) and "allowed" in err, err
