"""``JwtVerifier`` against real signed tokens and a key set served over real HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from fixtures.http_app import Clock
from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.verdicts import reason, unavailable
from mcp_sse_server.auth import AccessToken, JwtVerifier, VerifiedTokens, VerifierUnavailable
from mcp_sse_server.auth.backoff import MAX_DELAY


@pytest.fixture(scope="module")
def rsa_key() -> SigningKey:
    return SigningKey("rsa-1")


@pytest.fixture(scope="module")
def ec_key() -> SigningKey:
    return SigningKey("ec-1", "ES256")


@pytest.fixture
def key_set(rsa_key: SigningKey, ec_key: SigningKey) -> Iterator[KeySetServer]:
    server = KeySetServer([rsa_key, ec_key])
    yield server
    server.close()


@pytest.fixture
async def verifier(key_set: KeySetServer) -> AsyncIterator[JwtVerifier]:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timeout=2.0)
    yield verifier
    await verifier.aclose()


async def test_a_good_token_names_its_principal_and_scopes(verifier: JwtVerifier, rsa_key: SigningKey) -> None:
    token = await verifier.verify(rsa_key.sign(scope="mcp:tools mcp:read", azp="client-7"))
    assert isinstance(token, AccessToken)
    assert (token.issuer, token.subject, token.client_id) == (ISSUER, "alice", "client-7")
    assert token.scopes == {"mcp:tools", "mcp:read"} and token.audience == (RESOURCE,)
    assert token.expires_at is not None and token.expires_at > time.time()


async def test_ec_keys_and_scp_lists(verifier: JwtVerifier, ec_key: SigningKey) -> None:
    token = await verifier.verify(ec_key.sign(scope=None, scp=["a", "b"], client_id="c-1"))
    assert token.scopes == {"a", "b"} and token.client_id == "c-1"


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"nbf": int(time.time()) + 3600}, "not yet valid"),
        ({"aud": "https://other.example/mcp"}, "audience"),
        ({"aud": "client-7"}, "audience"),  # an ID token: its audience is its client
        ({"iss": "https://as.example.test/"}, "issuer"),  # issuers compare exactly
        ({"exp": None}, "missing claim"),
        ({"aud": None}, "missing claim"),
    ],
)
async def test_claims_that_do_not_fit_this_resource_are_refused(
    verifier: JwtVerifier, rsa_key: SigningKey, claims: dict[str, Any], expected: str
) -> None:
    assert await reason(verifier, rsa_key.sign(claims)) == expected


async def test_a_token_signed_by_another_key_with_a_known_kid_is_refused(verifier: JwtVerifier) -> None:
    impostor = SigningKey("rsa-1")  # the same kid, another private key
    assert await reason(verifier, impostor.sign()) == "signature"


async def test_alg_none_and_hmac_with_the_public_key_are_refused(verifier: JwtVerifier, rsa_key: SigningKey) -> None:
    body = base64.urlsafe_b64encode(json.dumps({"iss": ISSUER, "aud": RESOURCE, "exp": 2**40}).encode()).rstrip(b"=")
    unsigned = b"eyJhbGciOiJub25lIn0." + body + b"."
    assert await reason(verifier, unsigned.decode()) == "algorithm"
    public_pem = rsa_key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # Key confusion: HS256 keyed with the RSA public key's bytes.
    forged = jwt.api_jws.PyJWS().encode(
        json.dumps({"iss": ISSUER, "aud": RESOURCE, "exp": 2**40}).encode(),
        b"x" * 32,
        algorithm="HS256",
        headers={"kid": "rsa-1"},
    )
    assert public_pem and await reason(verifier, forged) == "algorithm"


async def test_malformed_huge_and_wrongly_typed_tokens_are_refused_unfetched(
    verifier: JwtVerifier, key_set: KeySetServer, rsa_key: SigningKey
) -> None:
    assert await reason(verifier, "not a token") == "malformed"
    assert await reason(verifier, "a" * 100_000) == "too large"
    assert await reason(verifier, rsa_key.sign(headers={"typ": "JWS"})) == "type"
    assert key_set.fetches == 0


async def test_unknown_kids_fetch_the_key_set_at_most_once_per_interval(
    verifier: JwtVerifier, key_set: KeySetServer, rsa_key: SigningKey
) -> None:
    assert (await verifier.verify(rsa_key.sign())).subject == "alice"
    assert key_set.fetches == 1
    for n in range(20):
        assert await reason(verifier, SigningKey(f"made-up-{n}", "ES256").sign()) == "unknown key"
    assert key_set.fetches == 1  # a flood of made-up ids is not a flood of fetches


async def test_a_rotated_key_is_fetched_once_the_interval_passed(key_set: KeySetServer, rsa_key: SigningKey) -> None:
    timer = Clock()  # the verifier's fetch timing (its refresh interval); the tokens' times are real
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timer=timer)
    try:
        assert (await verifier.verify(rsa_key.sign())).subject == "alice"
        new = SigningKey("rsa-2")
        key_set.keys.append(new)  # the authorization server rotates its keys
        assert await reason(verifier, new.sign()) == "unknown key"  # the set was fetched a moment ago
        timer.advance(61)
        assert (await verifier.verify(new.sign(sub="bob"))).subject == "bob"
        assert key_set.fetches == 2
    finally:
        await verifier.aclose()


@pytest.mark.parametrize("how", ["refused", "500", "slow"])
async def test_while_the_key_set_is_down_new_kids_are_unavailable_and_known_ones_served(
    key_set: KeySetServer, rsa_key: SigningKey, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sse_server.auth")
    timer = Clock()
    verifier = JwtVerifier(
        issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timeout=0.5, timer=timer, jitter=lambda: 1.0
    )
    rotated = SigningKey("rsa-2")
    try:
        assert (await verifier.verify(rsa_key.sign())).subject == "alice"
        key_set.fail(how)
        key_set.keys.append(rotated)  # rotated while out of reach
        timer.advance(61)  # past the refresh interval: the next unknown kid fetches
        fetches = key_set.fetches
        assert await unavailable(verifier, rotated.sign()) == 1  # never "unknown key": it cannot tell
        for n in range(20):  # every request in the backoff: unavailable at once, without a fetch
            assert await unavailable(verifier, SigningKey(f"made-up-{n}", "ES256").sign()) == 1
            assert (await verifier.verify(rsa_key.sign(sub=f"user-{n}"))).subject == f"user-{n}"  # known: served
        assert key_set.fetches <= fetches + 1
        # Each failed attempt doubles the backoff, up to MAX_DELAY: the Retry-After says how long is left.
        for expected in (2, 4, 4):
            timer.advance(MAX_DELAY)
            assert await unavailable(verifier, rotated.sign()) == expected
        assert key_set.fetches <= fetches + 4
        key_set.mend()
        timer.advance(MAX_DELAY)  # the most a set that is back waits to be seen
        assert (await verifier.verify(rotated.sign(sub="bob"))).subject == "bob"
        assert await reason(verifier, SigningKey("made-up", "ES256").sign()) == "unknown key"  # the set was just seen
    finally:
        await verifier.aclose()
    outage = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(outage) == 2, outage  # once when it started, once when it ended: not per request
    assert "until it answers" in outage[0] and "(failed attempts: 4)" in outage[1]


async def test_before_the_first_fetch_every_token_is_unavailable_until_the_set_comes(
    key_set: KeySetServer, rsa_key: SigningKey
) -> None:
    key_set.down()
    timer = Clock()
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timer=timer, jitter=lambda: 0.0)
    try:
        for _ in range(5):
            assert await unavailable(verifier, rsa_key.sign()) == 1  # backoff 0.5 s (no jitter): rounded up
        key_set.up()
        assert await unavailable(verifier, rsa_key.sign()) == 1  # still in the backoff: not asked yet
        assert key_set.fetches == 0
        timer.advance(0.5)
        assert (await verifier.verify(rsa_key.sign())).subject == "alice"
        assert key_set.fetches == 1
    finally:
        await verifier.aclose()


async def test_a_slow_key_set_holds_no_request_beyond_the_timeout(key_set: KeySetServer, rsa_key: SigningKey) -> None:
    key_set.delay = 10.0
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timeout=0.5)
    try:
        started = time.monotonic()
        outcomes = await asyncio.gather(*(verifier.verify(rsa_key.sign()) for _ in range(10)), return_exceptions=True)
        assert time.monotonic() - started < 5.0  # a bound that only catches a request held by the slow set
        assert all(isinstance(outcome, VerifierUnavailable) for outcome in outcomes), outcomes
        assert key_set.fetches == 1  # one fetch, the others waited for it
    finally:
        await verifier.aclose()


async def test_a_request_joining_a_fetch_under_way_waits_no_longer_than_the_timeout_in_all(
    key_set: KeySetServer, rsa_key: SigningKey
) -> None:
    key_set.delay = 10.0
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timeout=1.0)
    try:
        first = asyncio.ensure_future(verifier.verify(rsa_key.sign()))
        await asyncio.sleep(0.3)
        first.cancel()  # its client went away: the fetch goes on for the others
        started = time.monotonic()
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(rsa_key.sign())
        assert time.monotonic() - started < 5.0
        assert key_set.fetches == 1
    finally:
        await verifier.aclose()


async def test_a_body_that_is_not_a_key_set_is_an_outage_that_keeps_the_keys(
    key_set: KeySetServer, rsa_key: SigningKey, ec_key: SigningKey
) -> None:
    timer = Clock()
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url, timer=timer, refresh_interval=0)
    try:
        assert (await verifier.verify(rsa_key.sign())).subject == "alice"
        key_set.body = b'{"error": "maintenance"}'
        await unavailable(verifier, SigningKey("rsa-2").sign())
        assert (await verifier.verify(ec_key.sign())).subject == "alice"  # known: kept, not cleared
    finally:
        await verifier.aclose()


async def test_a_key_set_of_a_thousand_keys_is_read_up_to_its_first_keys(
    key_set: KeySetServer, rsa_key: SigningKey
) -> None:
    filler = rsa_key.jwk()
    key_set.extra = [{**filler, "kid": f"k{n}"} for n in range(1000)]
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url)
    try:
        assert (await verifier.verify(rsa_key.sign())).subject == "alice"
        assert await reason(verifier, rsa_key.sign(headers={"kid": "k999"})) == "unknown key"  # beyond MAX_KEYS
    finally:
        await verifier.aclose()


async def test_a_verified_token_is_answered_from_the_cache_until_its_time_is_up(rsa_key: SigningKey) -> None:
    now = [time.time()]
    cache = VerifiedTokens(size=2, clock=lambda: now[0])
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [rsa_key.jwk()]}, cache=cache)
    token = rsa_key.sign(exp=int(now[0]) + 100)
    first = await verifier.verify(token)
    assert await verifier.verify(token) is first and len(cache) == 1  # no second verification
    for n in range(3):
        await verifier.verify(rsa_key.sign(sub=f"user-{n}"))
    assert len(cache) == 2  # bounded: the least recently used went
    token_b = rsa_key.sign(sub="bob", exp=int(now[0]) + 100)
    cached = await verifier.verify(token_b)
    assert await verifier.verify(token_b) is cached
    now[0] += 101  # past the token's expiry, on the cache's clock: verified again, not answered from it
    again = await verifier.verify(token_b)
    assert again is not cached and again == cached


def test_the_verifier_refuses_to_be_built_without_an_audience_or_over_plain_http() -> None:
    with pytest.raises(ValueError, match="audience"):
        JwtVerifier(issuer=ISSUER, audience="", keys={"keys": []})
    with pytest.raises(ValueError, match="https"):
        JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri="http://as.example.test/jwks")
    with pytest.raises(ValueError, match="algorithm"):
        JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": []}, algorithms=["HS256"])
    JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri="http://127.0.0.1:9/jwks")  # loopback is fine
