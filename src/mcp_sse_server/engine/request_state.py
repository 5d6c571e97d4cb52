"""Sealed ``requestState`` for the stateless revision's input_required rounds (MRTR).

A handler that asks the client something (elicitation, sampling, roots) on a
2026-07-28 request cannot wait for the answer: the server answers
``input_required`` and the client retries the request with the answers. What
the server must remember between rounds travels in ``requestState``, which the
client echoes and must not be able to read or forge.

Rules:

1. The state is sealed with AES-256-GCM (``cryptography``) under a key derived
   (HKDF-SHA256) from the first secret of a key ring; every secret of the ring
   opens it, so secrets rotate by putting a new one first. All workers that
   serve the same clients must share the ring.
2. Sealed claims: a format version, an expiry (``ttl`` seconds), and the
   request it belongs to: method, target (tool, prompt or URI) and a digest of
   its arguments. A state presented with another request, after its expiry,
   altered in any byte or sealed with a key the ring lacks is refused.
3. The ring belongs to the deployment, not to a server object: every server
   of a process seals with ``deployment_sealer()`` unless given a sealer of
   its own. That ring is ``MCP_REQUEST_STATE_KEYS`` (comma-separated secrets,
   newest first) when it is set, so every worker and host given the same
   variable opens what any of them sealed; without it, a random secret made
   once per process, so a retry that lands on another process is refused
   (as an unknown key) rather than misread. Servers built per session by a
   factory therefore open each other's states.

>>> sealer = RequestStateSealer([b"a secret of at least 32 bytes...."])
>>> state = sealer.seal({"answers": {}}, method="tools/call", target="t", arguments={"a": 1})
>>> sealer.open(state, method="tools/call", target="t", arguments={"a": 1})
{'answers': {}}
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "DEFAULT_TTL",
    "KEYS_VARIABLE",
    "InvalidRequestState",
    "RequestStateSealer",
    "deployment_sealer",
    "ring_from",
]

DEFAULT_TTL: Final = 600.0
KEYS_VARIABLE: Final = "MCP_REQUEST_STATE_KEYS"
"""The environment variable holding the deployment's key ring (rule 3)."""
_PREFIX: Final = "v1."
_NONCE: Final = 12
_KID: Final = 4
_MAX_STATE: Final = 256 * 1024  # characters: a bigger requestState is refused unread


class InvalidRequestState(ValueError):
    """A requestState that is malformed, tampered with, expired, or for another request."""


def _derive(secret: bytes) -> tuple[bytes, AESGCM]:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"mcp-sse-server requestState v1").derive(secret)
    return hashlib.sha256(key).digest()[:_KID], AESGCM(key)


def _digest(arguments: Any) -> str:
    try:
        canonical = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        canonical = repr(arguments).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()[:16]).decode("ascii")


class RequestStateSealer:
    """Seals and opens ``requestState`` under a key ring (see the module's rules).

    ``secrets``: the ring, newest first (bytes or str, at least 16 bytes each);
    None makes a random per-process secret. ``ttl``: seconds a state stays valid.
    """

    __slots__ = ("_keys", "_seal_with", "clock", "ttl")

    def __init__(
        self,
        secrets: Sequence[bytes | str] | None = None,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if secrets is None:
            secrets = [os.urandom(32)]
        if not secrets:
            raise ValueError("the requestState key ring needs at least one secret")
        keys: list[tuple[bytes, AESGCM]] = []
        for secret in secrets:
            raw = secret.encode() if isinstance(secret, str) else bytes(secret)
            if len(raw) < 16:
                raise ValueError("a requestState secret must have at least 16 bytes")
            keys.append(_derive(raw))
        if ttl <= 0:
            raise ValueError("the requestState ttl must be positive")
        self._seal_with = keys[0]
        self._keys = dict(keys)
        self.ttl = ttl
        self.clock = clock

    def seal(self, payload: dict[str, Any], *, method: str, target: str | None, arguments: Any) -> str:
        """The sealed state carrying ``payload`` for this request."""
        claims = {
            "v": 1,
            "exp": self.clock() + self.ttl,
            "m": method,
            "t": target,
            "d": _digest(arguments),
            "p": payload,
        }
        kid, aead = self._seal_with
        nonce = os.urandom(_NONCE)
        sealed = aead.encrypt(nonce, orjson.dumps(claims), kid)
        return _PREFIX + base64.urlsafe_b64encode(kid + nonce + sealed).decode("ascii").rstrip("=")

    def open(self, state: Any, *, method: str, target: str | None, arguments: Any) -> dict[str, Any]:
        """The payload of a state sealed for this request; InvalidRequestState otherwise."""
        if not isinstance(state, str) or not state.startswith(_PREFIX) or len(state) > _MAX_STATE:
            raise InvalidRequestState("malformed")
        try:
            body = state[len(_PREFIX) :]
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (ValueError, TypeError):
            raise InvalidRequestState("malformed") from None
        kid, nonce, sealed = raw[:_KID], raw[_KID : _KID + _NONCE], raw[_KID + _NONCE :]
        aead = self._keys.get(kid)
        if aead is None or len(nonce) != _NONCE:
            raise InvalidRequestState("unknown key")
        try:
            claims = orjson.loads(aead.decrypt(nonce, sealed, kid))
        except (InvalidTag, orjson.JSONDecodeError):
            raise InvalidRequestState("tampered") from None
        if not isinstance(claims, dict) or claims.get("v") != 1:
            raise InvalidRequestState("malformed")
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] < self.clock():
            raise InvalidRequestState("expired")
        if claims.get("m") != method or claims.get("t") != target or claims.get("d") != _digest(arguments):
            raise InvalidRequestState("for another request")
        payload = claims.get("p")
        if not isinstance(payload, dict):
            raise InvalidRequestState("malformed")
        return payload


def ring_from(environ: Mapping[str, str]) -> list[str] | None:
    """The key ring ``environ`` sets in ``KEYS_VARIABLE`` (None when unset); ValueError for a
    ring ``RequestStateSealer`` refuses (empty, or a secret under 16 bytes)."""
    raw = environ.get(KEYS_VARIABLE)
    if raw is None:
        return None
    secrets = [part.strip() for part in raw.split(",") if part.strip()]
    RequestStateSealer(secrets)  # refused here, with the sealer's own message
    return secrets


_deployment: RequestStateSealer | None = None


def deployment_sealer() -> RequestStateSealer:
    """The sealer of this process's servers (rule 3): the ring of ``MCP_REQUEST_STATE_KEYS``,
    else a random secret, made on first use and kept for the life of the process."""
    global _deployment
    if _deployment is None:
        _deployment = RequestStateSealer(ring_from(os.environ))
    return _deployment
