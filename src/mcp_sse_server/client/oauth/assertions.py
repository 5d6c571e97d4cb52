"""Signed JWTs the client makes: ``private_key_jwt`` client assertions (RFC 7523) and DPoP
proofs (RFC 9449).

Rules (the digest's CL-33 to CL-35):

1. A client assertion has ``iss`` = ``sub`` = the client id, ``aud`` = the authorization
   server's issuer exactly (not its token endpoint: CL-34), ``iat``, ``exp`` = ``iat`` +
   ``lifetime`` (five minutes by default) and a ``jti`` never used before. It goes in the
   token request as ``client_assertion`` with ``client_assertion_type`` =
   ``CLIENT_ASSERTION_TYPE``.
2. Keys are asymmetric: a PEM private key (PKCS#8, or the traditional forms
   ``cryptography`` reads) or a ``cryptography`` private key object, used with an algorithm
   of its type (``ES256`` a P-256 key, ``RS256`` an RSA key, ``EdDSA`` an Ed25519 key...).
   Anything else is a ValueError, whose message never shows the key.
3. A ``DPoPKey`` is made once per client and signs every proof with the same key, whose
   public JWK (no private members) is in each proof's header. A proof has header ``typ`` =
   ``dpop+jwt``, ``alg`` and ``jwk``; claims ``jti`` (fresh for every proof), ``htm`` (the
   method, upper-case), ``htu`` (the URL without query and fragment), ``iat``, ``ath`` =
   base64url(SHA-256(access token)) when a token goes with the request, and ``nonce`` when
   the server gave one.
4. ``thumbprint()`` is the RFC 7638 SHA-256 thumbprint of the public JWK (its required
   members only), base64url without padding: what ``dpop_jkt`` and a token's ``cnf.jkt`` hold.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final, TypeAlias
from urllib.parse import urlsplit, urlunsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

__all__ = ["CLIENT_ASSERTION_TYPE", "DPoPKey", "client_assertion", "jwk_thumbprint"]

CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

_PrivateKey: TypeAlias = (
    rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey
)
_PRIVATE_KEY_TYPES: Final = (
    rsa.RSAPrivateKey,
    ec.EllipticCurvePrivateKey,
    ed25519.Ed25519PrivateKey,
    ed448.Ed448PrivateKey,
)

# The curve each ECDSA algorithm signs with (RFC 7518 §3.4).
_EC_CURVES: Final[Mapping[str, type[ec.EllipticCurve]]] = {
    "ES256": ec.SECP256R1,
    "ES384": ec.SECP384R1,
    "ES512": ec.SECP521R1,
}
_RSA_ALGORITHMS: Final = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_JWK_CURVES: Final[Mapping[str, str]] = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
_RSA_BITS: Final = 2048
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP method is a token (RFC 9110 §5.6.2)
# The members RFC 7638 §3.2 hashes, per key type.
_THUMBPRINT_MEMBERS: Final[Mapping[str, tuple[str, ...]]] = {
    "EC": ("crv", "kty", "x", "y"),
    "RSA": ("e", "kty", "n"),
    "OKP": ("crv", "kty", "x"),
}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _private_key(key: object) -> _PrivateKey:
    """``key`` as a ``cryptography`` private key (rule 2)."""
    if isinstance(key, str):
        key = key.encode()
    if isinstance(key, bytes):
        try:
            loaded = serialization.load_pem_private_key(key, password=None)
        except (ValueError, TypeError):
            # from None: the parse error could quote the key material.
            raise ValueError("key is not an unencrypted PEM private key") from None
        key = loaded
    if isinstance(key, _PRIVATE_KEY_TYPES):
        return key
    raise ValueError("key must be a PEM private key or a cryptography RSA, EC or EdDSA private key")


def _check_algorithm(key: _PrivateKey, algorithm: str) -> None:
    """Refuse an algorithm the key cannot sign with (rule 2)."""
    if algorithm in _EC_CURVES:
        if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, _EC_CURVES[algorithm]):
            return
        raise ValueError(f"{algorithm} needs an EC key on curve {_EC_CURVES[algorithm].name}")
    if algorithm in _RSA_ALGORITHMS:
        if isinstance(key, rsa.RSAPrivateKey):
            if key.key_size < _RSA_BITS:
                raise ValueError(f"an RSA key for {algorithm} needs at least {_RSA_BITS} bits")
            return
        raise ValueError(f"{algorithm} needs an RSA key")
    if algorithm == "EdDSA":
        if isinstance(key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey):
            return
        raise ValueError("EdDSA needs an Ed25519 or Ed448 key")
    raise ValueError(f"unsupported signing algorithm {algorithm!r}: use ES256, ES384, ES512, RS*, PS* or EdDSA")


def client_assertion(
    client_id: str,
    audience: str,
    key: str | bytes | object,
    *,
    algorithm: str = "ES256",
    lifetime: float = 300.0,
    key_id: str | None = None,
) -> str:
    """RFC 7523 §2.2 ``private_key_jwt`` assertion (rule 1): ``iss`` = ``sub`` = ``client_id``,
    ``aud`` = ``audience`` (the authorization server's issuer, CL-34), ``iat``, ``exp`` = ``iat``
    + ``lifetime``, a unique ``jti``; ``key`` a PEM (PKCS#8) string or bytes or a
    ``cryptography`` private key; ``key_id`` goes in the header as ``kid``."""
    if not client_id:
        raise ValueError("client_id must not be empty")
    if not audience:
        raise ValueError("audience must not be empty")
    if not lifetime > 0:
        raise ValueError("lifetime must be positive")
    private_key = _private_key(key)
    _check_algorithm(private_key, algorithm)
    issued_at = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued_at,
        # Rounded up: an assertion never lives shorter than asked.
        "exp": issued_at + math.ceil(lifetime),
        "jti": secrets.token_urlsafe(24),
    }
    headers = {"kid": key_id} if key_id is not None else None
    return jwt.encode(claims, private_key, algorithm=algorithm, headers=headers)


def jwk_thumbprint(jwk: Mapping[str, str]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (rule 4), base64url without padding."""
    members = _THUMBPRINT_MEMBERS.get(jwk.get("kty", ""))
    if members is None:
        raise ValueError("jwk must have kty EC, RSA or OKP")
    missing = [name for name in members if not jwk.get(name)]
    if missing:
        raise ValueError(f"jwk lacks {', '.join(missing)}")
    # Required members only, in lexicographic order, no whitespace (RFC 7638 §3.3).
    canonical = json.dumps({name: jwk[name] for name in members}, separators=(",", ":"), sort_keys=True)
    return _b64url(hashlib.sha256(canonical.encode()).digest())


def _public_jwk(key: _PrivateKey) -> dict[str, str]:
    public = key.public_key()
    if isinstance(public, ec.EllipticCurvePublicKey):
        numbers = public.public_numbers()
        size = (public.curve.key_size + 7) // 8  # coordinates are fixed-length (RFC 7518 §6.2.1.2)
        return {
            "kty": "EC",
            "crv": _JWK_CURVES[public.curve.name],
            "x": _b64url(numbers.x.to_bytes(size, "big")),
            "y": _b64url(numbers.y.to_bytes(size, "big")),
        }
    if isinstance(public, rsa.RSAPublicKey):
        rsa_numbers = public.public_numbers()
        return {
            "kty": "RSA",
            "n": _b64url(rsa_numbers.n.to_bytes((rsa_numbers.n.bit_length() + 7) // 8, "big")),
            "e": _b64url(rsa_numbers.e.to_bytes((rsa_numbers.e.bit_length() + 7) // 8, "big")),
        }
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    curve = "Ed25519" if isinstance(public, ed25519.Ed25519PublicKey) else "Ed448"
    return {"kty": "OKP", "crv": curve, "x": _b64url(raw)}


def _generate(algorithm: str) -> _PrivateKey:
    if algorithm in _EC_CURVES:
        return ec.generate_private_key(_EC_CURVES[algorithm]())
    if algorithm in _RSA_ALGORITHMS:
        return rsa.generate_private_key(public_exponent=65537, key_size=_RSA_BITS)
    if algorithm == "EdDSA":
        return ed25519.Ed25519PrivateKey.generate()
    raise ValueError(f"unsupported signing algorithm {algorithm!r}: use ES256, ES384, ES512, RS*, PS* or EdDSA")


class DPoPKey:
    """A DPoP key pair (RFC 9449), EC P-256 by default, made once per client (rules 3, 4).

    ``private_key`` is a ``cryptography`` private key or a PEM one; without it a new key is
    generated for ``algorithm``.
    """

    __slots__ = ("_algorithm", "_jwk", "_key")

    def __init__(self, private_key: object | None = None, algorithm: str = "ES256") -> None:
        key = _generate(algorithm) if private_key is None else _private_key(private_key)
        _check_algorithm(key, algorithm)
        self._key = key
        self._algorithm = algorithm
        self._jwk = _public_jwk(key)

    def __repr__(self) -> str:
        return f"DPoPKey(algorithm={self._algorithm!r}, thumbprint={self.thumbprint()!r})"

    @property
    def algorithm(self) -> str:
        """The JWS algorithm of every proof (for ``dpop_signing_alg_values_supported``)."""
        return self._algorithm

    @property
    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK: ``kty`` and the public members only (a copy)."""
        return dict(self._jwk)

    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 thumbprint of ``public_jwk``, base64url."""
        return jwk_thumbprint(self._jwk)

    def proof(self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None) -> str:
        """A DPoP proof for one request (rule 3): header ``typ`` ``dpop+jwt``, ``alg``, ``jwk``
        (public); claims ``jti`` (fresh each call), ``htm`` (upper-case method), ``htu`` (``url``
        without query and fragment), ``iat``; ``ath`` = base64url(SHA-256(``access_token``))
        when given; ``nonce`` when given."""
        if not _TOKEN.fullmatch(method):
            raise ValueError("method must be an HTTP method name")
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise ValueError("url must be an absolute http(s) URL")
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
            "iat": int(time.time()),
        }
        if access_token is not None:
            if not access_token:
                raise ValueError("access_token must not be empty")
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode()).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": dict(self._jwk)}
        return jwt.encode(claims, self._key, algorithm=self._algorithm, headers=headers)
