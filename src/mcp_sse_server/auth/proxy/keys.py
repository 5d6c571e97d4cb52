"""The proxy's two key rings, kept apart so either can rotate alone (PrefectHQ/fastmcp#4117 is what
one shared or derived key costs):

- ``SigningKeys``: ES256 private keys that sign our access tokens (``kid`` in every header), newest
  first; ``jwks()`` publishes the public halves (the current key and the retiring ones, so a token
  signed before a rotation verifies until it expires). From a JWKS file of private keys
  (``MCP_AUTH_SIGNING_KEYS``) or generated for one process (tokens then die with it).
- ``Sealer``: AES-256-GCM for everything the proxy stores (transactions, codes, grants with the
  upstream tokens). A key per purpose, HKDF-SHA256 from secrets of 32 bytes or more
  (``MCP_AUTH_SECRETS``, comma-separated, newest first); the associated data is the record's
  store key, so a sealed record moved under another key does not open. Never a key derived from
  the upstream client secret, never the signing key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Final

import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["SECRETS_ENV", "SIGNING_KEYS_ENV", "Sealer", "SigningKeys"]

SIGNING_KEYS_ENV: Final = "MCP_AUTH_SIGNING_KEYS"
SECRETS_ENV: Final = "MCP_AUTH_SECRETS"
_NONCE: Final = 12


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SigningKeys:
    """ES256 signing keys, newest first (module docstring); ``keys``: (kid, private key) pairs."""

    __slots__ = ("_jwks", "keys")

    def __init__(self, keys: Sequence[tuple[str, ec.EllipticCurvePrivateKey]]) -> None:
        if not keys:
            raise ValueError("SigningKeys needs at least one key")
        for kid, key in keys:
            if not kid or not isinstance(key.curve, ec.SECP256R1):
                raise ValueError(f"signing key {kid!r}: an ES256 (P-256) key with a kid is needed")
        self.keys = tuple(keys)
        published = []
        for kid, key in self.keys:
            jwk = orjson.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
            published.append({**jwk, "kid": kid, "use": "sig", "alg": "ES256"})
        self._jwks: dict[str, Any] = {"keys": published}

    @classmethod
    def generate(cls) -> SigningKeys:
        """One fresh key, for a single process (tokens it signs die with the process)."""
        return cls([(_b64(secrets.token_bytes(9)), ec.generate_private_key(ec.SECP256R1()))])

    @classmethod
    def from_jwks(cls, document: Mapping[str, Any]) -> SigningKeys:
        """The keys of a JWKS of private EC P-256 keys (``d`` present), in its order."""
        keys = []
        for jwk in document.get("keys", ()):
            key = jwt.algorithms.ECAlgorithm.from_jwk(dict(jwk))
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise ValueError(f"signing key {jwk.get('kid')!r} has no private part")
            keys.append((str(jwk.get("kid", "")), key))
        return cls(keys)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> SigningKeys | None:
        """The keys of the JWKS file ``MCP_AUTH_SIGNING_KEYS`` names, or None when it is unset."""
        path = environ.get(SIGNING_KEYS_ENV)
        if not path:
            return None
        with open(path, "rb") as file:
            return cls.from_jwks(orjson.loads(file.read()))

    def jwks(self) -> dict[str, Any]:
        """The public key set (what ``/oauth/jwks`` serves and our verifier reads)."""
        return self._jwks

    def sign(self, claims: Mapping[str, Any]) -> str:
        """``claims`` as an RFC 9068 access token signed by the newest key."""
        kid, key = self.keys[0]
        return jwt.encode(dict(claims), key, algorithm="ES256", headers={"kid": kid, "typ": "at+jwt"})


class Sealer:
    """AES-GCM sealing under per-purpose keys from a ring of secrets (module docstring)."""

    __slots__ = ("_keys", "_mac_key")

    def __init__(self, ring: Sequence[bytes], purpose: str = "store") -> None:
        if not ring:
            raise ValueError("Sealer needs at least one secret")
        for secret in ring:
            if len(secret) < 32:
                raise ValueError("each sealing secret must be 32 bytes or more")
        info = b"mcp-sse-server auth proxy " + purpose.encode()
        self._keys = tuple(AESGCM(_derive(secret, info)) for secret in ring)
        self._mac_key = _derive(ring[0], info + b" mac")

    @classmethod
    def generate(cls, purpose: str = "store") -> Sealer:
        """A sealer with a fresh secret, for a single process."""
        return cls([secrets.token_bytes(32)], purpose)

    @classmethod
    def from_env(cls, purpose: str = "store", environ: Mapping[str, str] = os.environ) -> Sealer | None:
        """The sealer of ``MCP_AUTH_SECRETS`` (comma-separated, newest first), or None when unset."""
        value = environ.get(SECRETS_ENV)
        if not value:
            return None
        return cls([part.strip().encode() for part in value.split(",") if part.strip()], purpose)

    def seal(self, data: bytes, context: bytes) -> bytes:
        """``data`` sealed with the newest key, bound to ``context`` (the store key)."""
        nonce = secrets.token_bytes(_NONCE)
        return nonce + self._keys[0].encrypt(nonce, data, context)

    def open(self, sealed: bytes, context: bytes) -> bytes | None:
        """The data of ``sealed`` under any key of the ring, or None (tampered, other context, old key)."""
        from cryptography.exceptions import InvalidTag

        if len(sealed) <= _NONCE:
            return None
        for key in self._keys:
            try:
                return key.decrypt(sealed[:_NONCE], sealed[_NONCE:], context)
            except InvalidTag:
                continue
        return None

    def mac(self, data: bytes) -> str:
        """A keyed tag of ``data`` (cookies): HMAC-SHA256 under a key derived from the newest secret."""
        return _b64(hmac.new(self._mac_key, data, hashlib.sha256).digest())


def _derive(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=SHA256(), length=32, salt=None, info=info).derive(secret)
