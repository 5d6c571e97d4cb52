"""``serve --auth-dpop``: DPoP-bound tokens checked by a served process, with a real key set over
HTTP, real signed tokens and proofs made by our client's ``DPoPKey``; nonces from a secret in the
environment; and the settings it refuses. (Two workers sharing the replay cache through Redis:
tests/stores/test_serve_dpop.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from fixtures.commands import Main
from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.messages import initialize_message
from fixtures.served import Served
from mcp_sse_server.client.oauth.assertions import DPoPKey

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
JWT = ["--auth-issuer", ISSUER, "--auth-jwks-uri", "https://as.example/jwks"]


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("cli-dpop-key", "ES256")


@pytest.fixture
def key_set(key: SigningKey) -> Iterator[KeySetServer]:
    server = KeySetServer([key])
    yield server
    server.close()


def test_serve_requires_dpop_with_nonces(
    key: SigningKey, key_set: KeySetServer, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    args = ["demo", "--port", "0", "--auth-issuer", ISSUER, "--auth-jwks-uri", key_set.url, "--auth-resource", RESOURCE]
    args += ["--auth-dpop", "required", "--auth-dpop-nonce-secret-env", "MCP_TEST_DPOP_NONCE"]
    served = Served(args, tmp_path, {**cli_env, "MCP_TEST_DPOP_NONCE": "n" * 40})
    proof_key = DPoPKey()
    token = key.sign(cnf={"jkt": proof_key.thumbprint()})
    try:
        assert served.next_line() == (
            f"Protected resource {RESOURCE}: DPoP-bound tokens from {ISSUER} "
            "(metadata at https://mcp.example.test/.well-known/oauth-protected-resource/mcp)"
        )
        base = served.url.rsplit("/mcp", 1)[0]
        body = orjson.dumps(initialize_message())
        with httpx.Client(timeout=30) as client:
            metadata = client.get(base + "/.well-known/oauth-protected-resource/mcp").json()
            assert metadata["dpop_bound_access_tokens_required"] is True
            bearer = client.post(served.url, content=body, headers={**HEADERS, "authorization": f"Bearer {key.sign()}"})
            assert bearer.status_code == 401 and bearer.headers["www-authenticate"].startswith("DPoP algs=")
            # The proof names the resource (the configured URL), not the loopback address it reached.
            dpop = {**HEADERS, "authorization": f"DPoP {token}"}
            first = client.post(
                served.url,
                content=body,
                headers={**dpop, "dpop": proof_key.proof("POST", RESOURCE, access_token=token)},
            )
            assert first.status_code == 401 and 'error="use_dpop_nonce"' in first.headers["www-authenticate"]
            nonce = first.headers["dpop-nonce"]
            proof = proof_key.proof("POST", RESOURCE, access_token=token, nonce=nonce)
            opened = client.post(served.url, content=body, headers={**dpop, "dpop": proof})
            assert opened.status_code == 200 and opened.headers["mcp-session-id"], opened.text
            replayed = client.post(served.url, content=body, headers={**dpop, "dpop": proof})
            assert replayed.status_code == 401 and "used before" in replayed.headers["www-authenticate"]
    finally:
        status, stderr = served.stop()
    assert status == 0, stderr
    assert "n" * 40 not in stderr and token not in stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*JWT, "--auth-dpop", "required", "--auth-dpop-replay", "redis"], "needs --backend redis://"),
        (
            [*JWT, "--auth-dpop", "allowed", "--auth-dpop-nonce-secret-env", "MCP_TEST_UNSET"],
            "MCP_TEST_UNSET is not set",
        ),
        ([*JWT, "--auth-dpop-replay", "memory"], "go with --auth-dpop"),
        ([*JWT, "--auth-dpop", "maybe"], "'maybe' is not one of"),
    ],
)
def test_dpop_settings_that_cannot_work_are_usage_errors(main: Main, args: list[str], message: str) -> None:
    status, _, err = main("serve", "demo", *args)
    assert status == 2 and message in err, err
