"""DPoP at the resource server (``ResourceServer(dpop=DPoP(...))``, ``auth/dpop.py``): each check of
RFC 9449 in the digest's order, refused with the right challenge, with real signed tokens and proofs;
the replay cache in one process and shared through a real redis-server; stateless nonces; and a
bound token sent as Bearer refused in every mode."""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import sys
import time
from typing import Any

import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from fixtures.asgi import AsgiCall
from fixtures.keys import ISSUER, RESOURCE, SigningKey
from fixtures.messages import initialize_message
from mcp_sse_server import McpServer, RequestContext, Tool
from mcp_sse_server.auth import DPoP, DPoPNonces, JwtVerifier, MemoryReplay
from mcp_sse_server.auth.dpop import jwk_thumbprint
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp

URL = RESOURCE  # https://mcp.example.test/mcp
SECRET = b"0123456789abcdef0123456789abcdef-dpop-test"


class ProofKey:
    """A client's DPoP key pair, and proofs made with it (any claim or header overridable, a
    None value leaving it out), independent of the code under test."""

    def __init__(self, alg: str = "ES256") -> None:
        self.alg = alg
        self.private: Any = (
            ec.generate_private_key(ec.SECP256R1()) if alg == "ES256" else rsa.generate_private_key(65537, 2048)
        )
        self.jwk: dict[str, str] = json.loads(jwt.get_algorithm_by_name(alg).to_jwk(self.private.public_key()))
        members = ("crv", "kty", "x", "y") if self.jwk["kty"] == "EC" else ("e", "kty", "n")
        canonical = json.dumps({m: self.jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
        self.jkt = jwt.utils.base64url_encode(hashlib.sha256(canonical.encode()).digest()).decode()

    def proof(
        self, token: str, method: str = "POST", url: str = URL, *, header: dict[str, Any] | None = None, **claims: Any
    ) -> str:
        body = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": url,
            "iat": int(time.time()),
            "ath": jwt.utils.base64url_encode(hashlib.sha256(token.encode()).digest()).decode(),
            **claims,
        }
        head = {"typ": "dpop+jwt", "jwk": self.jwk, **(header or {})}
        return jwt.encode(
            {k: v for k, v in body.items() if v is not None},
            self.private,
            algorithm=self.alg,
            headers={k: v for k, v in head.items() if v is not None},
        )


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1", "ES256")


@pytest.fixture(scope="module")
def client_key() -> ProofKey:
    return ProofKey()


def whoami_server() -> McpServer:
    server = McpServer("protected")

    async def whoami(arguments: dict[str, Any], context: RequestContext) -> str:
        auth = context.auth
        return "nobody" if auth is None else f"{auth.subject} {auth.jkt}"

    server.add_tool(Tool("whoami", {"type": "object"}, whoami))
    return server


def app_for(key: SigningKey, dpop: DPoP | None) -> McpHttpApp:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    server = ResourceServer(RESOURCE, [ISSUER], verifier=verifier, required_scopes={"mcp:tools"}, dpop=dpop)
    return McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=server))


class Reply:
    """One request's status, headers (every value of a repeated one) and body."""

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]

    def one(self, name: str) -> str:
        [value] = self.all(name)
        return value


async def send(
    app: McpHttpApp,
    authorization: str | None,
    proofs: list[str] = (),  # type: ignore[assignment]
    *,
    method: str = "POST",
    body: Any = None,
) -> Reply:
    seen: list[tuple[str, str]] = []
    call = AsgiCall(app, method, initialize_message() if body is None else body, {})
    if authorization is not None:
        call.scope["headers"].append((b"authorization", authorization.encode()))
    for proof in proofs:
        call.scope["headers"].append((b"dpop", proof.encode()))
    record = call._send

    async def recording(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            seen.extend((k.decode().lower(), v.decode()) for k, v in message.get("headers", []))
        await record(message)

    call._send = recording  # type: ignore[method-assign]
    await call.start().finish()
    assert call.status is not None
    return Reply(call.status, seen, call.body)


def bound(key: SigningKey, client_key: ProofKey, **claims: Any) -> str:
    return key.sign({"cnf": {"jkt": client_key.jkt}, **claims})


def refused(reply: Reply, error: str, reason: str | None = None) -> None:
    assert reply.status == 401, reply.body
    [challenge] = reply.all("www-authenticate")
    assert challenge.startswith(f'DPoP error="{error}"'), challenge
    assert 'algs="ES256 ES384 ES512 EdDSA RS256 PS256"' in challenge
    assert 'resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"' in challenge
    if reason is not None:
        assert f'error_description="{reason}' in challenge, challenge


# --- accepted -------------------------------------------------------------------------------------


async def test_a_valid_proof_with_its_bound_token_reaches_the_handler(key: SigningKey, client_key: ProofKey) -> None:
    app = app_for(key, DPoP("required"))
    token = bound(key, client_key)
    reply = await send(app, f"DPoP {token}", [client_key.proof(token)])
    assert reply.status == 200, reply.body
    assert "mcp-session-id" in dict(reply.headers)
    # The scheme is case-insensitive; the htu is compared after normalisation (case, default port).
    again = await send(app, f"dpop {token}", [client_key.proof(token, url="HTTPS://MCP.Example.Test:443/mcp")])
    assert again.status == 200, again.body


async def test_the_metadata_announces_dpop(key: SigningKey) -> None:
    for mode, required in (("allowed", None), ("required", True)):
        reply = await send(app_for(key, DPoP(mode)), None, method="GET", body=b"")  # type: ignore[arg-type]
        assert reply.status == 401
        call = AsgiCall(app_for(key, DPoP(mode)), "GET", b"", path="/.well-known/oauth-protected-resource/mcp")  # type: ignore[arg-type]
        await call.start().finish()
        document = orjson.loads(call.body)
        assert document["dpop_signing_alg_values_supported"] == ["ES256", "ES384", "ES512", "EdDSA", "RS256", "PS256"]
        assert document.get("dpop_bound_access_tokens_required") is required


# --- challenges and the downgrade -----------------------------------------------------------------


async def test_without_credentials_allowed_challenges_both_schemes_required_only_dpop(key: SigningKey) -> None:
    allowed = await send(app_for(key, DPoP("allowed")), None)
    assert allowed.status == 401
    schemes = [value.split(" ", 1)[0] for value in allowed.all("www-authenticate")]
    assert schemes == ["Bearer", "DPoP"]
    assert all("error=" not in value for value in allowed.all("www-authenticate"))
    required = await send(app_for(key, DPoP("required")), None)
    assert [value.split(" ", 1)[0] for value in required.all("www-authenticate")] == ["DPoP"]
    off = await send(app_for(key, None), None)
    assert [value.split(" ", 1)[0] for value in off.all("www-authenticate")] == ["Bearer"]


async def test_required_refuses_an_unbound_bearer_token_allowed_takes_it(key: SigningKey) -> None:
    token = key.sign()
    required = await send(app_for(key, DPoP("required")), f"Bearer {token}")
    assert required.status == 401 and required.one("www-authenticate").startswith("DPoP ")
    assert (await send(app_for(key, DPoP("allowed")), f"Bearer {token}")).status == 200


@pytest.mark.parametrize("mode", [None, "allowed", "required"])
async def test_a_bound_token_sent_as_bearer_is_refused_in_every_mode(
    key: SigningKey, client_key: ProofKey, mode: str | None
) -> None:
    app = app_for(key, None if mode is None else DPoP(mode))  # type: ignore[arg-type]
    token = bound(key, client_key)
    for _ in range(2):  # twice: the second finds the token in the verifier's cache (the fast path)
        reply = await send(app, f"Bearer {token}", [client_key.proof(token)])
        assert reply.status == 401, reply.body
        if mode == "required":  # any Bearer request is answered as one without credentials
            assert reply.one("www-authenticate").startswith("DPoP algs=")
        else:
            assert reply.all("www-authenticate")[0].startswith('Bearer error="invalid_token"')


async def test_an_unbound_token_under_the_dpop_scheme_is_refused(key: SigningKey, client_key: ProofKey) -> None:
    token = key.sign()
    reply = await send(app_for(key, DPoP("allowed")), f"DPoP {token}", [client_key.proof(token)])
    refused(reply, "invalid_token", "not bound to a DPoP key")


# --- each check of the proof ------------------------------------------------------------------------


async def test_a_proof_for_another_url_or_method_is_refused(key: SigningKey, client_key: ProofKey) -> None:
    app = app_for(key, DPoP("required"))
    token = bound(key, client_key)
    for url in (
        "https://mcp.example.test/other",
        "https://evil.example.test/mcp",
        "http://mcp.example.test/mcp",
        "https://mcp.example.test:8443/mcp",
        "https://mcp.example.test/mcp?x=1",
        "https://mcp.example.test/mcp#f",
    ):
        refused(
            await send(app, f"DPoP {token}", [client_key.proof(token, url=url)]),
            "invalid_dpop_proof",
            "the proof is for another URL",
        )
    refused(
        await send(app, f"DPoP {token}", [client_key.proof(token, method="GET")]),
        "invalid_dpop_proof",
        "the proof is for another method",
    )
    # The Host header never decides: the configured resource does.
    call_host = await send(app, f"DPoP {token}", [client_key.proof(token, url="https://127.0.0.1:8000/mcp")])
    refused(call_host, "invalid_dpop_proof", "the proof is for another URL")


async def test_a_proof_made_for_another_token_is_refused(key: SigningKey, client_key: ProofKey) -> None:
    app = app_for(key, DPoP("required"))
    token, other = bound(key, client_key), bound(key, client_key, jti="other")
    refused(await send(app, f"DPoP {token}", [client_key.proof(other)]), "invalid_dpop_proof", "the proof's ath")
    refused(
        await send(app, f"DPoP {token}", [client_key.proof(token, ath=None)]), "invalid_dpop_proof", "the proof's ath"
    )


async def test_a_proof_by_another_key_than_the_tokens_is_refused(key: SigningKey, client_key: ProofKey) -> None:
    app = app_for(key, DPoP("required"))
    token = bound(key, client_key)
    thief = ProofKey()
    refused(await send(app, f"DPoP {token}", [thief.proof(token)]), "invalid_token", "bound to another DPoP key")


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda k, t: k.proof(t, header={"typ": "JWT"}), "the proof's typ"),
        (lambda k, t: k.proof(t, header={"typ": None}), "the proof's typ"),
        (lambda k, t: k.proof(t, header={"jwk": None}), "the proof has no EC, OKP or RSA jwk"),
        (lambda k, t: k.proof(t, header={"jwk": {**k.jwk, "d": "AAAA"}}), "the proof's jwk holds private"),
        (lambda k, t: k.proof(t, header={"jwk": ProofKey().jwk}), "the proof's signature"),
        (lambda k, t: k.proof(t, iat=int(time.time()) - 400), "the proof's iat"),
        (lambda k, t: k.proof(t, iat=int(time.time()) + 400), "the proof's iat"),
        (lambda k, t: k.proof(t, jti=None), "the proof's jti"),
        (lambda k, t: k.proof(t, jti="x" * 257), "the proof's jti"),
        (lambda k, t: k.proof(t, htu=None), "the proof lacks htm or htu"),
        (lambda k, t: k.proof(t)[:-4] + "AAAA", "the proof's signature"),
        (lambda k, t: "not.a.jws", "the proof's header"),
        (lambda k, t: "x" * 9000, "the proof is too large"),
    ],
)
async def test_each_malformed_proof_is_refused(key: SigningKey, client_key: ProofKey, make: Any, reason: str) -> None:
    token = bound(key, client_key)
    refused(
        await send(app_for(key, DPoP("required")), f"DPoP {token}", [make(client_key, token)]),
        "invalid_dpop_proof",
        reason,
    )


async def test_symmetric_and_none_algorithms_are_refused(key: SigningKey, client_key: ProofKey) -> None:
    token = bound(key, client_key)
    claims = {"jti": "j", "htm": "POST", "htu": URL, "iat": int(time.time())}
    hs = jwt.encode(
        claims,
        "a-shared-secret-of-32-bytes-at-least!",
        algorithm="HS256",
        headers={"typ": "dpop+jwt", "jwk": client_key.jwk},
    )
    none = jwt.encode(claims, None, algorithm="none", headers={"typ": "dpop+jwt", "jwk": client_key.jwk})
    for proof in (hs, none):
        refused(
            await send(app_for(key, DPoP("required")), f"DPoP {token}", [proof]),
            "invalid_dpop_proof",
            "the proof's algorithm",
        )
    with pytest.raises(ValueError, match="asymmetric"):
        DPoP("required", algorithms=["ES256", "HS256"])


async def test_no_proof_or_two_proofs_are_refused(key: SigningKey, client_key: ProofKey) -> None:
    app = app_for(key, DPoP("required"))
    token = bound(key, client_key)
    refused(await send(app, f"DPoP {token}", []), "invalid_dpop_proof", "send exactly one")
    two = [client_key.proof(token), client_key.proof(token)]
    refused(await send(app, f"DPoP {token}", two), "invalid_dpop_proof", "send exactly one")


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
async def test_a_small_rsa_proof_key_is_refused(key: SigningKey) -> None:
    small = ProofKey("RS256")
    small.private = rsa.generate_private_key(65537, 1024)  # (PyJWT warns when signing with it)
    small.jwk = json.loads(jwt.get_algorithm_by_name("RS256").to_jwk(small.private.public_key()))
    small.jkt = jwk_thumbprint(small.jwk)
    token = bound(key, small)  # type: ignore[arg-type]
    reply = await send(app_for(key, DPoP("required")), f"DPoP {token}", [small.proof(token)])
    refused(reply, "invalid_dpop_proof", "the proof's RSA key is under 2048 bits")


async def test_the_scopes_are_still_checked_with_a_dpop_challenge(key: SigningKey, client_key: ProofKey) -> None:
    token = bound(key, client_key, scope="other")
    reply = await send(app_for(key, DPoP("required")), f"DPoP {token}", [client_key.proof(token)])
    assert reply.status == 403
    assert reply.one("www-authenticate").startswith('DPoP error="insufficient_scope"')
    wrong_audience = bound(key, client_key, aud="https://elsewhere.example/mcp")
    reply = await send(app_for(key, DPoP("required")), f"DPoP {wrong_audience}", [client_key.proof(wrong_audience)])
    refused(reply, "invalid_token", "audience")


# --- replay -----------------------------------------------------------------------------------------


async def test_a_replayed_proof_is_refused(key: SigningKey, client_key: ProofKey) -> None:
    app = app_for(key, DPoP("required"))
    token = bound(key, client_key)
    proof = client_key.proof(token)
    assert (await send(app, f"DPoP {token}", [proof])).status == 200
    refused(await send(app, f"DPoP {token}", [proof]), "invalid_dpop_proof", "the proof was used before")
    # A refused proof is not recorded: replay is judged only once every other check passed.
    late = client_key.proof(token, htu="https://mcp.example.test/other")
    refused(await send(app, f"DPoP {token}", [late]), "invalid_dpop_proof", "the proof is for another URL")


async def test_the_memory_replay_cache_fails_closed_when_full() -> None:
    cache = MemoryReplay(size=2, clock=lambda: 0.0)
    assert await cache.first_use("a", 10) and await cache.first_use("b", 10)
    assert not await cache.first_use("a", 10)
    from mcp_sse_server.engine.tokens import VerifierUnavailable

    with pytest.raises(VerifierUnavailable):
        await cache.first_use("c", 10)
    cache.clock = lambda: 11.0  # both expired: room again
    assert await cache.first_use("c", 10) and await cache.first_use("a", 10)


async def test_a_proof_replayed_on_another_worker_is_refused_through_redis(
    key: SigningKey, client_key: ProofKey, redis_server: Any, redis_prefix: str
) -> None:
    from fixtures.redis_server import client_for
    from mcp_sse_server.auth import RedisReplay

    token = bound(key, client_key)
    proof = client_key.proof(token)
    # Two workers with a cache each: the replay passes the second (what the shared cache is for).
    local_one, local_two = app_for(key, DPoP("required")), app_for(key, DPoP("required"))
    assert (await send(local_one, f"DPoP {token}", [proof])).status == 200
    assert (await send(local_two, f"DPoP {token}", [proof])).status == 200

    proof = client_key.proof(token)
    async with client_for(redis_server, redis_prefix) as first, client_for(redis_server, redis_prefix) as second:
        one = app_for(key, DPoP("required", replay=RedisReplay(first, prefix=f"{redis_prefix}:dpop")))
        two = app_for(key, DPoP("required", replay=RedisReplay(second, prefix=f"{redis_prefix}:dpop")))
        assert (await send(one, f"DPoP {token}", [proof])).status == 200
        refused(await send(two, f"DPoP {token}", [proof]), "invalid_dpop_proof", "the proof was used before")
        refused(await send(one, f"DPoP {token}", [proof]), "invalid_dpop_proof", "the proof was used before")
        [stored] = [k async for k in first.scan_iter(match=f"{redis_prefix}:dpop:*")]
        assert stored.decode().startswith(f"{redis_prefix}:dpop:{client_key.jkt}:")
        ttl = await first.pttl(stored)
        assert 300_000 < ttl <= 306_000  # until the proof's window ends (iat + 300 s + leeway)


async def test_redis_out_of_reach_fails_closed_with_503(key: SigningKey, client_key: ProofKey) -> None:
    from redis.asyncio import Redis

    from fixtures.redis_server import free_port
    from mcp_sse_server.auth import RedisReplay

    client = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=1)
    try:
        app = app_for(key, DPoP("required", replay=RedisReplay(client)))
        token = bound(key, client_key)
        reply = await send(app, f"DPoP {token}", [client_key.proof(token)])
        assert reply.status == 503 and reply.one("retry-after") == "1"
    finally:
        await client.aclose()


# --- nonces -----------------------------------------------------------------------------------------


async def test_a_missing_nonce_is_answered_with_use_dpop_nonce_and_the_retry_passes(
    key: SigningKey, client_key: ProofKey
) -> None:
    app = app_for(key, DPoP("required", nonces=DPoPNonces(SECRET)))
    token = bound(key, client_key)
    first = await send(app, f"DPoP {token}", [client_key.proof(token)])
    refused(first, "use_dpop_nonce")
    nonce = first.one("dpop-nonce")
    # Another worker, given the same secret, takes the nonce with no shared state.
    other = app_for(key, DPoP("required", nonces=DPoPNonces(SECRET)))
    retry = await send(other, f"DPoP {token}", [client_key.proof(token, nonce=nonce)])
    assert retry.status == 200, retry.body
    assert retry.all("dpop-nonce") == []  # fresh enough: no renewal
    foreign = DPoPNonces(b"another secret, also 32 bytes long!!").issue()
    refused(await send(app, f"DPoP {token}", [client_key.proof(token, nonce=foreign)]), "use_dpop_nonce")


async def test_nonces_expire_and_are_renewed_near_their_end(key: SigningKey, client_key: ProofKey) -> None:
    now = [float(int(time.time()))]
    nonces = DPoPNonces(SECRET, clock=lambda: now[0])
    app = app_for(key, DPoP("required", nonces=nonces))
    token = bound(key, client_key)
    nonce = nonces.issue()
    now[0] += 270  # 30 s left: accepted, and a fresh one comes with the reply
    reply = await send(app, f"DPoP {token}", [client_key.proof(token, nonce=nonce)])
    assert reply.status == 200
    assert nonces.remaining(reply.one("dpop-nonce")) == 300
    now[0] += 31  # expired
    refused(await send(app, f"DPoP {token}", [client_key.proof(token, nonce=nonce)]), "use_dpop_nonce")


def test_nonce_secrets_rotate_and_must_be_long() -> None:
    old, new = b"o" * 32, b"n" * 32
    issued = DPoPNonces(old).issue()
    assert DPoPNonces([new, old]).remaining(issued) is not None
    assert DPoPNonces([new]).remaining(issued) is None
    with pytest.raises(ValueError, match="32 bytes"):
        DPoPNonces(b"short")


# --- cost of the unused path ------------------------------------------------------------------------


def test_a_server_without_dpop_never_imports_it() -> None:
    script = """
import asyncio, sys
sys.path.insert(0, "tests")
from fixtures.keys import SigningKey
from fixtures.asgi import call
from fixtures.messages import initialize_message
from mcp_sse_server import McpServer
from mcp_sse_server.auth import JwtVerifier, ResourceServer
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp
key = SigningKey("k", "ES256")
issuer, resource = "https://as.example.test", "https://mcp.example.test/mcp"
verifier = JwtVerifier(issuer=issuer, audience=resource, keys={"keys": [key.jwk()]})
auth = ResourceServer(resource, [issuer], verifier=verifier)
app = McpHttpApp(McpServer("x"), settings=HttpSettings(path="/mcp", auth=auth))
for header in ({"authorization": "Bearer " + key.sign()}, {"authorization": "DPoP x"}, {}):
    asyncio.run(call(app, body=initialize_message(), headers=header))
print("mcp_sse_server.auth.dpop" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr
