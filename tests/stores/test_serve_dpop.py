"""``serve --auth-dpop required --workers 2``: a DPoP proof replayed to the other worker is refused
when the replay cache is shared through Redis (``--redis-url``: one redis-server, and a Redis
Cluster), and passes once when each worker remembers proofs alone (the control that shows what
the shared cache is for). Every replay opens a new connection, which the kernel spreads over the
workers (SO_REUSEPORT)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.messages import initialize_message
from mcp_sse_server.client.oauth.assertions import DPoPKey

from .serving import serving

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
REPLAYS = 40  # on new connections: all reaching one worker of two has odds of 2**-40


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("workers-dpop-key", "ES256")


@pytest.fixture
def key_set(key: SigningKey) -> Iterator[KeySetServer]:
    server = KeySetServer([key])
    yield server
    server.close()


def replays_passed(url: str, key: SigningKey) -> int:
    """Send one proof, then the same proof ``REPLAYS`` times: how many replays were accepted."""
    proof_key = DPoPKey()
    token = key.sign(cnf={"jkt": proof_key.thumbprint()})
    headers = {
        **HEADERS,
        "authorization": f"DPoP {token}",
        "dpop": proof_key.proof("POST", RESOURCE, access_token=token),
    }
    body = orjson.dumps(initialize_message())
    passed = 0
    with httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        first = client.post(url, content=body, headers=headers)
        assert first.status_code == 200, first.text
        for _ in range(REPLAYS):
            replay = client.post(url, content=body, headers=headers)
            assert replay.status_code in (200, 401), replay.text
            if replay.status_code == 401:
                assert "the proof was used before" in replay.headers["www-authenticate"]
            passed += replay.status_code == 200
    return passed


def args_for(key_set: KeySetServer, redis_url: str, *more: str) -> list[str]:
    return [
        *("--port", "0", "--workers", "2", "--redis-url", redis_url),
        *("--auth-issuer", ISSUER, "--auth-jwks-uri", key_set.url, "--auth-resource", RESOURCE),
        *("--auth-dpop", "required", *more),
    ]


def test_a_proof_replayed_to_another_worker_is_refused_through_redis(
    key: SigningKey, key_set: KeySetServer, redis_url: str, tmp_path: Path
) -> None:
    with serving(args_for(key_set, redis_url), tmp_path) as served:
        assert replays_passed(served.url, key) == 0
    assert "Warning: --auth-dpop-replay" not in "".join(served.stderr)


def test_with_a_replay_cache_per_worker_one_replay_passes_on_the_other(
    key: SigningKey, key_set: KeySetServer, redis_url: str, tmp_path: Path
) -> None:
    with serving(args_for(key_set, redis_url, "--auth-dpop-replay", "memory"), tmp_path) as served:
        assert replays_passed(served.url, key) == 1
    assert "Warning: --auth-dpop-replay memory with --workers 2" in "".join(served.stderr)
