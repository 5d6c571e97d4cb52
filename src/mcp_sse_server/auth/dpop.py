"""DPoP at the resource server (RFC 9449, MCP SEP-1932): proofs of possession checked before a
token is used, a replay cache (one process, or shared through Redis), and stateless nonces.

``ResourceServer(dpop=DPoP(...))`` turns it on; ``dpop=None`` (the default) is off, and then
nothing here is imported. Modes:

* ``"allowed"``: ``Authorization: Bearer`` (an unbound token) and ``Authorization: DPoP``
  (a token bound to a key, with a proof) are both accepted;
* ``"required"``: only ``DPoP``; a ``Bearer`` request is answered as one without credentials.

In every mode, off included, a token whose claims carry ``cnf.jkt`` sent as ``Bearer`` is refused
(a downgrade, RFC 9449 §7.2): whoever stole it has no key to prove.

The checks of a ``DPoP`` request, in this order (the digest's 1 to 11; each failure is a 401
``DPoP error="invalid_dpop_proof"`` unless said otherwise):

1. the scheme is ``DPoP`` with a token;
2. exactly one ``DPoP`` header, at most ``max_proof_bytes``, three JWS segments;
3. header ``typ`` = ``dpop+jwt``; ``alg`` among ``algorithms`` (asymmetric only: ``none`` and
   ``HS*`` are refused when built); ``jwk`` an EC, OKP or RSA (2048 bits at least) public key,
   with no private member;
4. the signature verifies with that ``jwk``; ``jti`` (a string, 256 characters at most),
   ``htm``, ``htu`` and ``iat`` are present;
5. ``htm`` is the request's method;
6. ``htu`` has no query or fragment and names this endpoint: the resource's origin (from
   configuration, never from ``Host``) and the request's path, compared after RFC 3986 §6.2.2-3
   normalisation (scheme and host lower-cased, default port dropped, percent-encodings
   normalised), one trailing slash either way allowed;
7. ``iat`` within ``window`` seconds of now, either way;
8. with ``nonces``: ``nonce`` is one of theirs and fresh, else 401 ``DPoP error="use_dpop_nonce"``
   with a fresh one in ``DPoP-Nonce``;
9. ``ath`` = base64url(SHA-256(the access token));
10. (the HTTP layer) the token verifies, carries ``cnf.jkt``, and that equals the RFC 7638
    thumbprint of the proof's ``jwk`` (constant-time): else 401 ``DPoP error="invalid_token"``;
    then the scopes, 403 ``insufficient_scope``;
11. replay, only once 1 to 10 passed: the pair (thumbprint, SHA-256 of ``jti``) is recorded
    until the proof's window ends (``iat`` + ``window`` + ``leeway``); seen before: refused
    (``"replayed"``). A cache that cannot answer fails closed: ``VerifierUnavailable`` (503).

Nonces (``DPoPNonces``) need no storage: a nonce is its issue time and an HMAC-SHA256 of it
under a server secret, so every worker given the same secret checks every other's.

>>> nonces = DPoPNonces(b"a secret of at least 32 bytes, really", clock=lambda: 1_000_000.0)
>>> nonces.remaining(nonces.issue())
300.0
>>> nonces.remaining("made-up") is None
True
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import math
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol
from urllib.parse import urlsplit

import jwt
import orjson

from ..engine.tokens import VerifierUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "DEFAULT_DPOP_ALGORITHMS",
    "DPoP",
    "DPoPNonces",
    "DPoPRefused",
    "MemoryReplay",
    "Proof",
    "RedisReplay",
    "ReplayCache",
    "jwk_thumbprint",
    "origin_of",
]

DEFAULT_DPOP_ALGORITHMS: Final = ("ES256", "ES384", "ES512", "EdDSA", "RS256", "PS256")
"""The proof algorithms accepted unless told otherwise (what ``algs`` in the challenge lists)."""

_PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_THUMBPRINT_MEMBERS: Final = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
_RSA_BITS: Final = 2048
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_UNRESERVED: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_NONCE_TAG_BYTES: Final = 16


class DPoPRefused(Exception):
    """A proof refused: ``error`` is ``invalid_dpop_proof`` or ``use_dpop_nonce``; ``reason`` is
    short and safe to send (it never quotes the proof)."""

    def __init__(self, reason: str, error: str = "invalid_dpop_proof") -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


@dataclasses.dataclass(frozen=True, slots=True)
class Proof:
    """A proof that passed checks 2 to 9: its key's thumbprint, what replay is judged by, until
    when it must be remembered (epoch seconds), and how long its nonce has left (None: none)."""

    jkt: str
    replay_key: str
    until: float
    nonce_left: float | None = None


class ReplayCache(Protocol):
    """Where proofs seen are recorded (check 11)."""

    async def first_use(self, key: str, ttl: float) -> bool:
        """True the first time ``key`` is recorded (kept ``ttl`` seconds), False when seen
        before; ``VerifierUnavailable`` when it cannot tell."""


class MemoryReplay:
    """The replay cache of one process: enough for one worker, not for several (a proof replayed
    to another worker passes its own cache: use ``RedisReplay`` then). At most ``size`` proofs are
    kept; when that many are live, new proofs are refused with ``VerifierUnavailable`` (503)
    rather than forgetting one that could then be replayed."""

    __slots__ = ("_seen", "clock", "size")

    def __init__(self, size: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.clock = clock
        self._seen: dict[str, float] = {}

    async def first_use(self, key: str, ttl: float) -> bool:
        now = self.clock()
        until = self._seen.get(key)
        if until is not None and until > now:
            return False
        if len(self._seen) >= self.size:
            self._seen = {seen: end for seen, end in self._seen.items() if end > now}
            if len(self._seen) >= self.size:
                raise VerifierUnavailable("the DPoP replay cache is full", retry_after=1)
        self._seen[key] = now + ttl
        return True

    def __len__(self) -> int:
        return len(self._seen)


class RedisReplay:
    """The replay cache every worker shares: ``SET <prefix>:<key> 1 NX PX <ttl>`` on a
    ``redis.asyncio`` client (``decode_responses`` either way; a ``RedisCluster`` too: one key
    per command). Redis out of reach fails closed."""

    __slots__ = ("_errors", "_url", "client", "prefix")

    def __init__(self, client: Redis | None, prefix: str = "mcp:dpop") -> None:
        from redis import exceptions as redis_errors  # (only a server using Redis loads it)

        self.client = client
        self.prefix = prefix
        self._url: str | None = None
        self._errors = (redis_errors.ConnectionError, redis_errors.TimeoutError, redis_errors.ReadOnlyError)

    @classmethod
    def from_url(cls, url: str, prefix: str = "mcp:dpop") -> RedisReplay:
        """A cache on the Redis ``url`` names (``redis://``, ``rediss://``, ``unix://``,
        ``redis+cluster://``) whose client is made on first use, in the process using it: so it
        can be built before ``serve --workers`` forks (a Redis client is not fork-safe)."""
        replay = cls(None, prefix)
        replay._url = url
        return replay

    def _connect(self) -> Redis:
        assert self._url is not None
        from ..stores.redis_cluster import client_for_url

        self.client = client_for_url(self._url)
        return self.client

    async def first_use(self, key: str, ttl: float) -> bool:
        client = self.client if self.client is not None else self._connect()
        try:
            stored = await client.set(f"{self.prefix}:{key}", b"1", nx=True, px=max(1, math.ceil(ttl * 1000)))
        except self._errors as error:
            raise VerifierUnavailable(
                f"the DPoP replay cache (Redis) is out of reach: {error}", retry_after=1
            ) from None
        return bool(stored)


class DPoPNonces:
    """Stateless nonces (check 8): base64url of the issue time (8 bytes) and the first 16 bytes
    of HMAC-SHA256(secret, b"dpop-nonce" + time). ``secrets``: the first signs, every one verifies
    (rotation: put the new one first, drop the old after ``lifetime``). Each is at least 32 bytes."""

    __slots__ = ("_keys", "clock", "lifetime")

    def __init__(
        self,
        secrets: bytes | str | Sequence[bytes | str],
        *,
        lifetime: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        given = [secrets] if isinstance(secrets, bytes | str) else list(secrets)
        keys = [secret.encode() if isinstance(secret, str) else secret for secret in given]
        if not keys or any(len(key) < 32 for key in keys):
            raise ValueError("DPoP nonce secrets must be at least 32 bytes each")
        self._keys = keys
        self.lifetime = lifetime
        self.clock = clock

    def issue(self) -> str:
        """A fresh nonce."""
        stamp = struct.pack(">Q", int(self.clock()))
        return _b64url(stamp + self._tag(self._keys[0], stamp))

    def remaining(self, nonce: object) -> float | None:
        """Seconds ``nonce`` stays valid, or None when it is not one of ours or has expired."""
        if not isinstance(nonce, str) or len(nonce) > 64:
            return None
        try:
            raw = base64.urlsafe_b64decode(nonce + "=" * (-len(nonce) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(raw) != 8 + _NONCE_TAG_BYTES:
            return None
        stamp, tag = raw[:8], raw[8:]
        if not any(hmac.compare_digest(tag, self._tag(key, stamp)) for key in self._keys):
            return None
        issued = struct.unpack(">Q", stamp)[0]
        left = issued + self.lifetime - self.clock()
        if left <= 0 or left > self.lifetime + 5:  # (a stamp from the future: another clock's, or forged)
            return None
        return float(left)

    @staticmethod
    def _tag(key: bytes, stamp: bytes) -> bytes:
        return hmac.new(key, b"dpop-nonce" + stamp, hashlib.sha256).digest()[:_NONCE_TAG_BYTES]


class DPoP:
    """DPoP settings of a resource server (module docstring): ``mode`` ``"allowed"`` or
    ``"required"``; ``algorithms`` a proof may use; ``replay`` (a ``MemoryReplay`` by default,
    ``RedisReplay`` for several workers, None for none: then a proof can be replayed within its
    window); ``nonces`` (None: nonces are not required); ``window``: how far ``iat`` may be from
    now, seconds; ``leeway``: added to how long a proof is remembered."""

    __slots__ = ("algorithms", "clock", "leeway", "max_proof_bytes", "mode", "nonces", "replay", "window")

    def __init__(
        self,
        mode: Literal["allowed", "required"] = "allowed",
        *,
        algorithms: Iterable[str] = DEFAULT_DPOP_ALGORITHMS,
        replay: ReplayCache | Literal["memory"] | None = "memory",
        nonces: DPoPNonces | None = None,
        window: float = 300.0,
        leeway: float = 5.0,
        max_proof_bytes: int = 8192,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if mode not in ("allowed", "required"):
            raise ValueError(f"DPoP mode is 'allowed' or 'required' (None on the ResourceServer: off), not {mode!r}")
        self.algorithms = tuple(algorithms)
        refused = [alg for alg in self.algorithms if alg == "none" or alg.startswith("HS")]
        if refused or not self.algorithms:
            raise ValueError(f"DPoP proofs need asymmetric algorithms, not {', '.join(refused) or 'none at all'}")
        self.mode = mode
        self.replay: ReplayCache | None = MemoryReplay() if replay == "memory" else replay
        self.nonces = nonces
        self.window = window
        self.leeway = leeway
        self.max_proof_bytes = max_proof_bytes
        self.clock = clock

    @property
    def required(self) -> bool:
        """True when only ``DPoP`` requests are accepted."""
        return self.mode == "required"

    def check(self, proof: bytes, method: str, origin: str, path: str, token: str | None) -> Proof:
        """Checks 2 to 9 of one proof (its ``DPoP`` header, already known to be the only one) for a
        ``method`` request of ``path`` at ``origin`` (the resource's), carrying ``token``; None: a
        proof at an authorization server's token endpoint, where no access token exists yet (so
        no ``ath``, check 9)."""
        if len(proof) > self.max_proof_bytes:
            raise DPoPRefused("the proof is too large")
        try:
            text = proof.decode("ascii")
        except UnicodeDecodeError:
            raise DPoPRefused("the proof is not a JWS") from None
        if text.count(".") != 2:
            raise DPoPRefused("the proof is not a JWS")
        try:
            header = jwt.get_unverified_header(text)
        except jwt.PyJWTError:
            raise DPoPRefused("the proof's header is malformed") from None
        # 3. header
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() != "dpop+jwt":
            raise DPoPRefused("the proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise DPoPRefused("the proof's algorithm is not accepted")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or jwk.get("kty") not in _THUMBPRINT_MEMBERS:
            raise DPoPRefused("the proof has no EC, OKP or RSA jwk")
        if _PRIVATE_MEMBERS.intersection(jwk):
            raise DPoPRefused("the proof's jwk holds private key material")
        try:
            key = jwt.PyJWK(jwk, algorithm=alg)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            raise DPoPRefused("the proof's jwk is not a key for its algorithm") from None
        if jwk["kty"] == "RSA" and getattr(key.key, "key_size", 0) < _RSA_BITS:
            raise DPoPRefused("the proof's RSA key is under 2048 bits")
        # 4. signature, then the claims it covers
        try:
            payload = jwt.PyJWS().decode(text, key.key, algorithms=[alg])
            claims = orjson.loads(payload)
        except (jwt.PyJWTError, orjson.JSONDecodeError):
            raise DPoPRefused("the proof's signature does not verify") from None
        if not isinstance(claims, dict):
            raise DPoPRefused("the proof's claims are not an object")
        jti, htm, htu, iat = claims.get("jti"), claims.get("htm"), claims.get("htu"), claims.get("iat")
        if not isinstance(jti, str) or not jti or len(jti) > 256:
            raise DPoPRefused("the proof's jti is missing or too long")
        if not isinstance(htm, str) or not isinstance(htu, str):
            raise DPoPRefused("the proof lacks htm or htu")
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise DPoPRefused("the proof lacks iat")
        # 5. method, 6. URL
        if htm != method:
            raise DPoPRefused("the proof is for another method")
        if not _same_url(htu, origin, path):
            raise DPoPRefused("the proof is for another URL")
        # 7. time
        now = self.clock()
        if not abs(now - iat) <= self.window:
            raise DPoPRefused("the proof's iat is outside the accepted window")
        # 8. nonce
        nonce_left = None
        if self.nonces is not None:
            nonce_left = self.nonces.remaining(claims.get("nonce"))
            if nonce_left is None:
                raise DPoPRefused("a fresh DPoP nonce is required", "use_dpop_nonce")
        # 9. the token it goes with
        ath = claims.get("ath")
        if token is not None and (
            not isinstance(ath, str) or not hmac.compare_digest(ath.encode(), _ath(token).encode())
        ):
            raise DPoPRefused("the proof's ath is not the hash of this access token")
        jkt = jwk_thumbprint(jwk)
        replay_key = f"{jkt}:{_b64url(hashlib.sha256(jti.encode()).digest())}"
        return Proof(jkt, replay_key, float(iat) + self.window + self.leeway, nonce_left)

    async def first_use(self, proof: Proof) -> bool:
        """Check 11: True unless the proof was seen before (True without a replay cache)."""
        if self.replay is None:
            return True
        return await self.replay.first_use(proof.replay_key, max(1.0, proof.until - self.clock()))


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK, base64url: what ``cnf.jkt`` holds."""
    members = _THUMBPRINT_MEMBERS.get(jwk.get("kty", ""))
    if members is None or not all(isinstance(jwk.get(name), str) for name in members):
        raise DPoPRefused("the proof's jwk lacks a public member")
    canonical = orjson.dumps({name: jwk[name] for name in members}, option=orjson.OPT_SORT_KEYS)
    return _b64url(hashlib.sha256(canonical).digest())


def _ath(token: str) -> str:
    return _b64url(hashlib.sha256(token.encode("ascii", "surrogateescape")).digest())


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _same_url(htu: str, origin: str, path: str) -> bool:
    """Check 6: ``htu`` names ``origin`` + ``path`` (RFC 3986 §6.2.2-3 normalisation)."""
    if "?" in htu or "#" in htu:
        return False
    try:
        parts = urlsplit(htu)
        port = parts.port
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None or parts.password:
        return False
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    if f"{scheme}://{netloc}" != origin:
        return False
    ours, theirs = _path(path), _path(parts.path)
    return ours == theirs or (ours.rstrip("/") == theirs.rstrip("/") and abs(len(ours) - len(theirs)) == 1)


def _path(path: str) -> str:
    """``path`` with percent-encodings of unreserved characters decoded and the others upper-cased."""
    if not path:
        return "/"
    if "%" not in path:
        return path
    out: list[str] = []
    pieces = path.split("%")
    out.append(pieces[0])
    for piece in pieces[1:]:
        code = piece[:2]
        try:
            value = int(code, 16) if len(code) == 2 else -1
        except ValueError:
            value = -1
        if value < 0:
            out.append("%" + piece)
        elif value in _UNRESERVED:
            out.append(chr(value) + piece[2:])
        else:
            out.append("%" + code.upper() + piece[2:])
    return "".join(out)


def origin_of(resource: str) -> str:
    """The normalised origin of the resource's URL: what check 6 compares ``htu``'s with."""
    parts = urlsplit(resource)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return f"{scheme}://{host}" if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{scheme}://{host}:{port}"
