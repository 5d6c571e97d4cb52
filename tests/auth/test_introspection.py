"""``IntrospectionVerifier`` against a real authorization server over HTTP (RFC 7662): active,
inactive, revoked and expired tokens, audience and issuer, client authentication, the short cache,
one call per token at a time, and an authorization server that fails, stalls or refuses
connections: 503 with a backoff, cached tokens served, a recovery seen within the backoff."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator

import pytest

from fixtures.authorization_server import AuthorizationServer
from fixtures.http_app import Clock
from fixtures.messages import initialize_message
from fixtures.verdicts import reason, unavailable
from mcp_sse_server import McpServer
from mcp_sse_server.auth import IntrospectionVerifier, ResourceServer, VerifierUnavailable
from mcp_sse_server.auth.backoff import MAX_DELAY
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp

RESOURCE = "https://mcp.example.test/mcp"


@pytest.fixture
async def issuer() -> AsyncIterator[AuthorizationServer]:
    async with AuthorizationServer() as server:
        yield server


def verifier_for(issuer: AuthorizationServer, **settings: object) -> IntrospectionVerifier:
    client_id, secret = issuer.register_client()
    assert secret is not None
    return IntrospectionVerifier(
        endpoint=issuer.introspection_endpoint,
        client_id=client_id,
        client_secret=secret,
        audience=RESOURCE,
        issuer=issuer.issuer,
        **settings,  # type: ignore[arg-type]
    )


async def test_an_active_token_names_its_principal(issuer: AuthorizationServer) -> None:
    verifier = verifier_for(issuer)
    try:
        token = issuer.issue(audience=RESOURCE, scopes=("mcp:tools", "mcp:admin"), client_id="app")
        verified = await verifier.verify(token)
        assert (verified.issuer, verified.subject, verified.client_id) == (issuer.issuer, "alice", "app")
        assert verified.scopes == {"mcp:tools", "mcp:admin"} and verified.audience == (RESOURCE,)
        assert verified.expires_at is not None and verified.expires_at > time.time()
    finally:
        await verifier.aclose()


async def test_tokens_that_are_not_good_here_are_refused(issuer: AuthorizationServer) -> None:
    verifier = verifier_for(issuer)
    try:
        assert await reason(verifier, "never-issued") == "inactive"
        assert await reason(verifier, issuer.issue(audience=RESOURCE, ttl=-120)) == "inactive"  # the AS says expired
        assert await reason(verifier, issuer.issue(audience="https://other.example/mcp")) == "audience"
        revoked = issuer.issue(audience=RESOURCE)
        issuer.revoke(revoked)
        assert await reason(verifier, revoked) == "inactive"
        assert await reason(verifier, "x" * 20_000) == "too large"
    finally:
        await verifier.aclose()


async def test_an_answer_without_audience_is_refused_unless_told_otherwise(issuer: AuthorizationServer) -> None:
    no_audience = issuer.issue(audience=[])
    strict = verifier_for(issuer)
    lenient = verifier_for(issuer, require_audience=False)
    try:
        assert await reason(strict, no_audience) == "audience"
        assert (await lenient.verify(no_audience)).subject == "alice"
        assert await reason(lenient, issuer.issue(audience="https://other.example/mcp")) == "audience"
    finally:
        await strict.aclose()
        await lenient.aclose()


async def test_client_secret_post_works_and_bad_credentials_are_unavailable_not_invalid(
    issuer: AuthorizationServer,
) -> None:
    token = issuer.issue(audience=RESOURCE)
    posting = verifier_for(issuer, auth_method="client_secret_post")
    wrong = IntrospectionVerifier(
        endpoint=issuer.introspection_endpoint, client_id="nobody", client_secret="wrong", audience=RESOURCE
    )
    try:
        assert (await posting.verify(token)).subject == "alice"
        with pytest.raises(VerifierUnavailable):  # our own credentials refused: no verdict on the token
            await wrong.verify(token)
    finally:
        await posting.aclose()
        await wrong.aclose()


async def test_active_answers_are_cached_briefly_and_one_call_serves_concurrent_requests(
    issuer: AuthorizationServer,
) -> None:
    now = [time.time()]
    verifier = verifier_for(issuer, cache_ttl=60.0, clock=lambda: now[0])
    try:
        token = issuer.issue(audience=RESOURCE)
        issuer.introspection_delay = 0.2
        results = await asyncio.gather(*(verifier.verify(token) for _ in range(20)))
        assert {result.subject for result in results} == {"alice"}
        assert issuer.introspection_calls == 1  # twenty requests, one question
        issuer.introspection_delay = 0.0
        issuer.revoke(token)
        assert (await verifier.verify(token)).subject == "alice"  # cached: up to cache_ttl after revocation
        now[0] += 61
        assert await reason(verifier, token) == "inactive"
        assert await reason(verifier, token) == "inactive"
        assert issuer.introspection_calls == 3  # inactive answers are not cached
    finally:
        await verifier.aclose()


async def test_an_authorization_server_that_fails_or_stalls_is_unavailable_within_the_timeout(
    issuer: AuthorizationServer,
) -> None:
    timer = Clock()
    verifier = verifier_for(issuer, timeout=0.5, timer=timer)
    token = issuer.issue(audience=RESOURCE)
    try:
        issuer.fail_introspection = 503
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(token)
        timer.advance(MAX_DELAY)
        issuer.fail_introspection, issuer.introspection_delay = None, 3.0
        started = time.monotonic()
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(token)
        assert time.monotonic() - started < 2.5  # a bound that only catches a request held by the stall
        issuer.introspection_delay = 0.0
        timer.advance(MAX_DELAY)
        assert (await verifier.verify(token)).subject == "alice"
    finally:
        await verifier.aclose()


@pytest.mark.parametrize("how", ["500", "slow"])
async def test_while_introspection_is_down_requests_are_503_and_cached_tokens_served(
    issuer: AuthorizationServer, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sse_server.auth")
    timer = Clock()
    verifier = verifier_for(issuer, timeout=0.5, timer=timer, jitter=lambda: 1.0)
    known = issuer.issue(audience=RESOURCE, subject="carol")
    tokens = [issuer.issue(audience=RESOURCE, subject=f"user-{n}") for n in range(5)]
    try:
        assert (await verifier.verify(known)).subject == "carol"
        if how == "500":
            issuer.fail_introspection = 500
        else:
            issuer.introspection_delay = 3.0  # beyond the timeout
        calls = issuer.introspection_calls
        assert await unavailable(verifier, tokens[0]) == 1  # never "inactive": it cannot tell
        for token in tokens * 4:  # in the backoff: unavailable at once, the endpoint not asked
            assert await unavailable(verifier, token) == 1
            assert (await verifier.verify(known)).subject == "carol"  # cached: served through the outage
        assert issuer.introspection_calls == calls + 1
        # Once the backoff passed, one call (the probe) for many requests: the others are not held.
        timer.advance(MAX_DELAY)
        outcomes = await asyncio.gather(*(verifier.verify(token) for token in tokens), return_exceptions=True)
        assert [getattr(outcome, "retry_after", outcome) for outcome in outcomes] == [2, 1, 1, 1, 1]
        assert issuer.introspection_calls == calls + 2
        issuer.fail_introspection, issuer.introspection_delay = None, 0.0
        timer.advance(MAX_DELAY)  # the most an endpoint that is back waits to be asked
        assert (await verifier.verify(tokens[0])).subject == "user-0"  # the probe: the outage is over
        served = await asyncio.gather(*(verifier.verify(token) for token in tokens[1:]))
        assert [token.subject for token in served] == [f"user-{n}" for n in range(1, 5)]
        assert await reason(verifier, "never-issued") == "inactive"
    finally:
        await verifier.aclose()
    outage = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(outage) == 2, outage  # once when it started, once when it ended: not per request
    assert "(failed attempts: 2)" in outage[1]


async def test_a_stalled_endpoint_holds_no_request_beyond_the_timeout(issuer: AuthorizationServer) -> None:
    timer = Clock()
    verifier = verifier_for(issuer, timeout=0.5, timer=timer, jitter=lambda: 1.0)
    tokens = [issuer.issue(audience=RESOURCE, subject=f"user-{n}") for n in range(10)]
    try:
        issuer.introspection_delay = 3.0
        started = time.monotonic()
        outcomes = await asyncio.gather(*(verifier.verify(token) for token in tokens * 2), return_exceptions=True)
        assert all(isinstance(outcome, VerifierUnavailable) for outcome in outcomes), outcomes
        assert time.monotonic() - started < 2.5  # a bound that only catches a request held by the stall
        assert issuer.introspection_calls == 10  # one call per token, while it was not known to be down
        # Ten calls failing together are one failure: the backoff is the first one's, not doubled ten times.
        assert await unavailable(verifier, issuer.issue(audience=RESOURCE)) == 1
    finally:
        await verifier.aclose()


async def test_an_endpoint_that_refuses_connections_is_503_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    timer = Clock()
    verifier = IntrospectionVerifier(
        endpoint=f"http://127.0.0.1:{port}/introspect",
        client_id="this-resource",
        client_secret="secret",
        audience=RESOURCE,
        timer=timer,
        jitter=lambda: 1.0,
    )
    try:
        for token in ("a", "b", "c"):
            assert await unavailable(verifier, token) == 1
        timer.advance(0.5)
        assert await unavailable(verifier, "a") == 1  # half the backoff left, rounded up
    finally:
        await verifier.aclose()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "ConnectError" in warnings[0], warnings


async def test_a_caller_that_goes_away_does_not_cancel_the_call_for_the_others(issuer: AuthorizationServer) -> None:
    verifier = verifier_for(issuer)
    try:
        token = issuer.issue(audience=RESOURCE)
        issuer.introspection_delay = 0.3
        first = asyncio.ensure_future(verifier.verify(token))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(verifier.verify(token))
        await asyncio.sleep(0.05)
        first.cancel()  # its client disconnected
        assert (await second).subject == "alice"
        assert issuer.introspection_calls == 1
    finally:
        await verifier.aclose()


async def test_a_protected_endpoint_with_introspection(issuer: AuthorizationServer) -> None:
    from fixtures.asgi import call

    verifier = verifier_for(issuer)
    auth = ResourceServer(RESOURCE, [issuer.issuer], verifier=verifier, required_scopes={"mcp:tools"})
    app = McpHttpApp(McpServer("introspected"), settings=HttpSettings(path="/mcp", auth=auth))
    try:
        token = issuer.issue(audience=RESOURCE)
        reply = await call(app, body=initialize_message(), headers={"authorization": f"Bearer {token}"})
        assert reply.status == 200
        issuer.fail_introspection = 500
        stale = issuer.issue(audience=RESOURCE, subject="bob")
        refused = await call(app, body=initialize_message(), headers={"authorization": f"Bearer {stale}"})
        assert refused.status == 503 and refused.headers["retry-after"] == "1"  # the backoff left
        assert (await call(app, body=initialize_message(), headers={"authorization": f"Bearer {token}"})).status == 200
    finally:
        await verifier.aclose()
