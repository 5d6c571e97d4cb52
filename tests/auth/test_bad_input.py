"""Bad bearer input against a protected server on a real socket: each gets a clear refusal with a
JSON-RPC body, no token shows up in a response or a log line, and another client's session keeps
being served between them."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from fixtures.http_app import Clock
from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.messages import initialize_message, notification, request
from mcp_sse_server import McpServer, RequestContext
from mcp_sse_server.auth import JwtVerifier, ResourceServer
from mcp_sse_server.auth.backoff import MAX_DELAY
from mcp_sse_server.transport.http import HttpSettings, McpHttpServer

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("good", "RS256")


class Protected:
    def __init__(self, http: McpHttpServer, key_set: KeySetServer, client: httpx.AsyncClient, timer: Clock) -> None:
        self.http = http
        self.key_set = key_set
        self.client = client
        self.timer = timer  # the verifier's: when it may fetch the key set again

    async def post(self, body: Any, headers: dict[str, str]) -> httpx.Response:
        return await self.client.post(self.http.endpoint, content=orjson.dumps(body), headers={**HEADERS, **headers})


@pytest.fixture
async def protected(key: SigningKey) -> AsyncIterator[Protected]:
    key_set = KeySetServer([key])
    timer = Clock()
    verifier = JwtVerifier(
        issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timeout=1.0, refresh_interval=0, timer=timer
    )
    server = McpServer("guarded")

    @server.tool
    def whoami(context: RequestContext) -> str:
        return context.auth.subject if context.auth is not None else "nobody"

    auth = ResourceServer(RESOURCE, [ISSUER], verifier=verifier, required_scopes={"mcp:tools"})
    http = await McpHttpServer.bind(server, settings=HttpSettings(auth=auth))
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            yield Protected(http, key_set, client, timer)
    finally:
        await http.close()
        await verifier.aclose()
        key_set.close()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims: dict[str, Any]) -> str:
    return f"{b64(json.dumps({'alg': 'none', 'typ': 'at+jwt'}).encode())}.{b64(json.dumps(claims).encode())}."


def hmac_with_public_key(key: SigningKey, claims: dict[str, Any]) -> str:
    """HS256 keyed with the RSA public key's PEM: the key-confusion forgery (made by hand, as
    PyJWT refuses to make it)."""
    from cryptography.hazmat.primitives import serialization

    pem = key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "at+jwt", "kid": key.kid}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{b64(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())}"


async def test_every_bad_input_is_refused_clearly_and_others_keep_being_served(
    protected: Protected, key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("mcp_sse_server", "uvicorn"):  # the server side: the test client logs its own requests
        caplog.set_level(logging.DEBUG, logger=name)
    good = {"authorization": f"Bearer {key.sign()}"}
    opened = await protected.post(initialize_message(), good)
    session = {**good, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (await protected.post(notification("notifications/initialized"), session)).status_code == 202
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "mallory", "exp": int(time.time()) + 600, "scope": "mcp:tools"}
    huge = key.sign(padding="x" * 100_000)
    cases: list[tuple[str, str, int, str | None]] = [
        ("no credentials", "Bearer", 400, "invalid_request"),
        ("another scheme", "Basic bWFsbG9yeTpwdw==", 401, None),
        ("two words", "Bearer abc def", 401, "invalid_token"),
        ("not a JWT", "Bearer not-a-token", 401, "invalid_token"),
        ("100 KB token", f"Bearer {huge}", 431, None),
        ("unknown kid", f"Bearer {SigningKey('made-up', 'ES256').sign()}", 401, "invalid_token"),
        ("alg none", f"Bearer {unsigned(claims)}", 401, "invalid_token"),
        ("HMAC with the RSA key", f"Bearer {hmac_with_public_key(key, claims)}", 401, "invalid_token"),
    ]
    seen: list[tuple[str, int]] = []
    for number, (label, header, status, error) in enumerate(cases, start=10):
        reply = await protected.post(initialize_message(), {"authorization": header})
        seen.append((label, reply.status_code))
        assert reply.status_code == status, (label, reply.status_code, reply.text)
        body = reply.json()
        assert body["jsonrpc"] == "2.0" and body["error"]["message"], label
        token = header.partition(" ")[2]
        if len(token) > 8:
            assert token not in reply.text and token not in reply.headers.get("www-authenticate", ""), label
        if status in (401, 403) or error is not None:
            challenge = reply.headers["www-authenticate"]
            assert "resource_metadata=" in challenge, label
            assert (f'error="{error}"' in challenge) if error else ("error=" not in challenge), label
        # ...and the good client's session is served right after.
        call = await protected.post(request(number, "tools/call", {"name": "whoami", "arguments": {}}), session)
        assert call.status_code == 200 and '"alice"' in call.text, label
    for label, header, _, _ in cases:
        token = header.partition(" ")[2]
        if len(token) > 8:
            assert token not in caplog.text, f"{label}: the token reached a log line"
    assert key.sign() not in caplog.text


async def test_a_key_set_outage_is_a_bounded_503_known_keys_are_served_and_it_ends_within_the_backoff(
    protected: Protected, key: SigningKey
) -> None:
    good = {"authorization": f"Bearer {key.sign()}"}
    opened = await protected.post(initialize_message(), good)
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (await protected.post(notification("notifications/initialized"), {**good, **session})).status_code == 202
    for number, how in enumerate(("refused", "500", "slow"), start=10):
        newcomer = SigningKey(f"rotated-{how}", "ES256")  # a kid the server has not seen: it must fetch the set
        protected.key_set.keys.append(newcomer)
        protected.key_set.fail(how)
        for _ in range(3):  # every request that needs the set: 503, never 401 (the client keeps its token)
            started = time.monotonic()
            reply = await protected.post(initialize_message(), {"authorization": f"Bearer {newcomer.sign()}"})
            assert reply.status_code == 503, (how, reply.status_code, reply.headers)
            assert 1 <= int(reply.headers["retry-after"]) <= MAX_DELAY
            assert reply.json()["error"]["message"].startswith("Service unavailable")
            assert time.monotonic() - started < 4.5  # bounded by the verifier's timeout (1 s), not the delay
        # A token of a key the server knows is served through the outage (a new token: not from the cache).
        fresh = {"authorization": f"Bearer {key.sign()}", **session}
        call = await protected.post(request(number, "tools/call", {"name": "whoami", "arguments": {}}), fresh)
        assert call.status_code == 200 and '"alice"' in call.text, how
        protected.key_set.mend()
        protected.timer.advance(MAX_DELAY)  # the most a key set that is back waits to be fetched
        served = await protected.post(initialize_message(), {"authorization": f"Bearer {newcomer.sign()}"})
        assert served.status_code == 200, how


async def test_a_key_set_of_a_thousand_keys_leaves_the_server_serving(protected: Protected, key: SigningKey) -> None:
    filler = key.jwk()
    protected.key_set.extra = [{**filler, "kid": f"k{n}"} for n in range(1000)]
    beyond = await protected.post(
        initialize_message(), {"authorization": f"Bearer {key.sign(headers={'kid': 'k999'})}"}
    )
    assert beyond.status_code == 401 and 'error_description="unknown key"' in beyond.headers["www-authenticate"]
    calls = [protected.post(initialize_message(), {"authorization": f"Bearer {key.sign()}"}) for _ in range(5)]
    assert [reply.status_code for reply in await asyncio.gather(*calls)] == [200] * 5
