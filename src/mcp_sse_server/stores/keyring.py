"""A key ring for sealing ``requestState`` (2026-07-28) so that any worker can open it.

The client echoes ``requestState`` back on its retry, which may reach another
worker or host: every worker must hold the same keys. ``KeyRing(keys)``: the
first key seals, every key opens (rotation: deploy ``[old, new]``, then
``[new, old]``, then ``[new]`` once the old tokens have expired).

Tokens are AES-256-GCM (a key derived from each secret with HKDF-SHA256):
``v1.`` + base64url(key id (4 bytes) + nonce (12) + ciphertext and tag). The
``v1.`` prefix and the key id are authenticated, so a token cannot move to
another format or key. Expiry, principal and request binding are the caller's
claims inside the payload. Needs the ``cryptography`` package (the ``redis`` extra).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = ["KEYS_ENV", "InvalidToken", "KeyRing"]

KEYS_ENV: Final = "MCP_REQUEST_STATE_KEYS"
"""The environment variable ``KeyRing.from_env`` reads: secrets separated by commas, sealing key first."""

_PREFIX: Final = b"v1."
_KID: Final = 4
_NONCE: Final = 12
_MIN_SECRET: Final = 32


class InvalidToken(ValueError):
    """A token this ring did not seal, or one that was altered (the reason is for logs only)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(raw) != text:
        raise ValueError("non-canonical base64url")
    return raw


class KeyRing:
    """Seal with the first key, open with any (see the module's doc)."""

    __slots__ = ("_keys", "_sealer")

    def __init__(self, keys: Sequence[bytes | str]) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.hashes import SHA256
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        if isinstance(keys, bytes | str) or not keys:
            raise ValueError("KeyRing takes a non-empty list of secrets (the first one seals)")
        self._keys: dict[bytes, AESGCM] = {}
        self._sealer: tuple[bytes, AESGCM] | None = None
        for secret in keys:
            raw = secret.encode() if isinstance(secret, str) else bytes(secret)
            if len(raw) < _MIN_SECRET:
                raise ValueError(f"every requestState secret needs at least {_MIN_SECRET} bytes")
            kid = hashlib.sha256(b"mcp/request-state/v1/kid:" + raw).digest()[:_KID]
            key = HKDF(algorithm=SHA256(), length=32, salt=None, info=b"mcp/request-state/v1/aes-256-gcm").derive(raw)
            aead = AESGCM(key)
            self._keys.setdefault(kid, aead)
            if self._sealer is None:
                self._sealer = (kid, aead)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, name: str = KEYS_ENV) -> KeyRing:
        """The ring from ``$MCP_REQUEST_STATE_KEYS`` (comma-separated; ValueError when unset or empty)."""
        keys = [part.strip() for part in environ.get(name, "").split(",") if part.strip()]
        if not keys:
            raise ValueError(f"{name} is not set: give every worker the same requestState secrets")
        return cls(keys)

    def seal(self, payload: bytes) -> str:
        assert self._sealer is not None
        kid, aead = self._sealer
        nonce = os.urandom(_NONCE)
        return _PREFIX.decode() + _b64(kid + nonce + aead.encrypt(nonce, payload, _PREFIX + kid))

    def open(self, token: str) -> bytes:
        from cryptography.exceptions import InvalidTag

        if not isinstance(token, str) or not token.startswith(_PREFIX.decode()):
            raise InvalidToken("not a v1 token")
        try:
            raw = _unb64(token[len(_PREFIX) :])
        except (ValueError, binascii.Error):
            raise InvalidToken("malformed token") from None
        if len(raw) < _KID + _NONCE + 16:
            raise InvalidToken("token too short")
        kid, nonce, sealed = raw[:_KID], raw[_KID : _KID + _NONCE], raw[_KID + _NONCE :]
        aead = self._keys.get(kid)
        if aead is None:
            raise InvalidToken("unknown key")
        try:
            return aead.decrypt(nonce, sealed, _PREFIX + kid)
        except InvalidTag:
            raise InvalidToken("authentication failed") from None
