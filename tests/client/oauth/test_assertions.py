"""Client assertions (RFC 7523) and DPoP proofs (RFC 9449), checked with PyJWT against the
public keys: claims, audience, lifetime, unique ids, key forms, and the RFC 7638 thumbprint."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from mcp_sse_server.client.oauth.assertions import (
    CLIENT_ASSERTION_TYPE,
    DPoPKey,
    client_assertion,
    jwk_thumbprint,
)

ISSUER = "https://auth.example/tenant1"

EC_KEY = ec.generate_private_key(ec.SECP256R1())
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pkcs8(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# -- client assertions ---------------------------------------------------------------------


def test_assertion_type() -> None:
    assert CLIENT_ASSERTION_TYPE == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def test_assertion_claims() -> None:
    before = int(time.time())
    token = client_assertion("svc-1", ISSUER, EC_KEY)
    after = int(time.time())
    claims = jwt.decode(
        token,
        EC_KEY.public_key(),
        algorithms=["ES256"],
        audience=ISSUER,
        issuer="svc-1",
        options={"require": ["iss", "sub", "aud", "iat", "exp", "jti"]},
    )
    assert claims["sub"] == "svc-1"
    assert claims["aud"] == ISSUER  # the issuer exactly, a string (CL-34)
    assert before <= claims["iat"] <= after
    assert claims["exp"] == claims["iat"] + 300
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 16
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "ES256" and "kid" not in header


def test_assertion_wrong_audience_is_rejected_by_a_verifier() -> None:
    token = client_assertion("svc-1", ISSUER, EC_KEY)
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, EC_KEY.public_key(), algorithms=["ES256"], audience=ISSUER + "/token")


def test_assertion_lifetime_and_key_id() -> None:
    token = client_assertion("svc-1", ISSUER, EC_KEY, lifetime=60.5, key_id="key-7")
    claims = jwt.decode(token, EC_KEY.public_key(), algorithms=["ES256"], audience=ISSUER)
    assert claims["exp"] - claims["iat"] == 61  # rounded up, never shorter than asked
    assert jwt.get_unverified_header(token)["kid"] == "key-7"


def test_assertion_jti_is_unique() -> None:
    ids = {
        jwt.decode(client_assertion("svc-1", ISSUER, EC_KEY), options={"verify_signature": False})["jti"]
        for _ in range(50)
    }
    assert len(ids) == 50


@pytest.mark.parametrize("form", [bytes, str])
def test_assertion_from_pkcs8_pem(form: type) -> None:
    pem = pkcs8(EC_KEY)
    key = pem if form is bytes else pem.decode()
    token = client_assertion("svc-1", ISSUER, key)
    assert jwt.decode(token, EC_KEY.public_key(), algorithms=["ES256"], audience=ISSUER)["iss"] == "svc-1"


@pytest.mark.parametrize("algorithm", ["RS256", "PS256"])
def test_assertion_rsa(algorithm: str) -> None:
    token = client_assertion("svc-2", ISSUER, pkcs8(RSA_KEY), algorithm=algorithm)
    claims = jwt.decode(token, RSA_KEY.public_key(), algorithms=[algorithm], audience=ISSUER)
    assert claims["iss"] == claims["sub"] == "svc-2"
    assert jwt.get_unverified_header(token)["alg"] == algorithm


def test_assertion_eddsa() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    token = client_assertion("svc-3", ISSUER, key, algorithm="EdDSA")
    assert jwt.decode(token, key.public_key(), algorithms=["EdDSA"], audience=ISSUER)["sub"] == "svc-3"


def test_assertion_es384() -> None:
    key = ec.generate_private_key(ec.SECP384R1())
    token = client_assertion("svc-4", ISSUER, key, algorithm="ES384")
    assert jwt.decode(token, key.public_key(), algorithms=["ES384"], audience=ISSUER)["sub"] == "svc-4"


@pytest.mark.parametrize(
    "key, algorithm, message",
    [
        (EC_KEY, "RS256", "needs an RSA key"),
        (RSA_KEY, "ES256", "needs an EC key"),
        (ec.generate_private_key(ec.SECP384R1()), "ES256", "secp256r1"),
        (EC_KEY, "HS256", "unsupported signing algorithm"),
        (EC_KEY, "none", "unsupported signing algorithm"),
        (b"-----BEGIN PRIVATE KEY-----\nSECRETSTUFF\n-----END PRIVATE KEY-----\n", "ES256", "not an unencrypted PEM"),
        ("not a key at all SECRETSTUFF", "ES256", "not an unencrypted PEM"),
        (EC_KEY.public_key(), "ES256", "must be a PEM private key"),
        (12345, "ES256", "must be a PEM private key"),
    ],
)
def test_assertion_bad_keys(key: object, algorithm: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        client_assertion("svc-1", ISSUER, key, algorithm=algorithm)
    assert "SECRETSTUFF" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_assertion_encrypted_pem_is_refused() -> None:
    pem = EC_KEY.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pass"),
    )
    with pytest.raises(ValueError, match="unencrypted"):
        client_assertion("svc-1", ISSUER, pem)


def test_assertion_bad_arguments() -> None:
    with pytest.raises(ValueError, match="client_id"):
        client_assertion("", ISSUER, EC_KEY)
    with pytest.raises(ValueError, match="audience"):
        client_assertion("svc-1", "", EC_KEY)
    with pytest.raises(ValueError, match="lifetime"):
        client_assertion("svc-1", ISSUER, EC_KEY, lifetime=0)


# -- DPoP ----------------------------------------------------------------------------------


def decode_proof(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Verify the proof with the key from its own header, as a DPoP verifier does."""
    header = jwt.get_unverified_header(proof)
    public = jwt.PyJWK(header["jwk"])
    claims = jwt.decode(proof, public.key, algorithms=[header["alg"]], options={"require": ["jti", "iat"]})
    return header, claims


def test_proof_fields() -> None:
    key = DPoPKey()
    before = int(time.time())
    proof = key.proof("post", "https://as.example/token")
    header, claims = decode_proof(proof)
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert header["jwk"] == key.public_jwk
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://as.example/token"
    assert before <= claims["iat"] <= int(time.time())
    assert "ath" not in claims and "nonce" not in claims


def test_public_jwk_has_no_private_members() -> None:
    jwk = DPoPKey().public_jwk
    assert set(jwk) == {"kty", "crv", "x", "y"}
    assert jwk["kty"] == "EC" and jwk["crv"] == "P-256"
    assert len(base64.urlsafe_b64decode(jwk["x"] + "==")) == 32  # fixed length coordinates
    rsa_jwk = DPoPKey(RSA_KEY, "RS256").public_jwk
    assert set(rsa_jwk) == {"kty", "n", "e"} and rsa_jwk["e"] == "AQAB"
    okp = DPoPKey(algorithm="EdDSA").public_jwk
    assert set(okp) == {"kty", "crv", "x"} and okp["crv"] == "Ed25519"
    # A copy: changing it changes nothing in the proofs.
    key = DPoPKey()
    key.public_jwk["d"] = "leak"
    assert "d" not in jwt.get_unverified_header(key.proof("GET", "https://mcp.example/mcp"))["jwk"]


@pytest.mark.parametrize(
    "url, htu",
    [
        ("https://mcp.example/mcp?session=1&x=2", "https://mcp.example/mcp"),
        ("https://mcp.example/mcp#frag", "https://mcp.example/mcp"),
        ("https://mcp.example:8443/a/b?q#f", "https://mcp.example:8443/a/b"),
        ("http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"),
        ("https://mcp.example", "https://mcp.example"),
    ],
)
def test_proof_htu_strips_query_and_fragment(url: str, htu: str) -> None:
    _, claims = decode_proof(DPoPKey().proof("GET", url))
    assert claims["htu"] == htu


def test_proof_ath_and_nonce() -> None:
    key = DPoPKey()
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"  # RFC 9449 §7.1's example token
    _, claims = decode_proof(key.proof("GET", "https://resource.example.org/protectedresource", access_token=token))
    assert claims["ath"] == b64url(hashlib.sha256(token.encode()).digest())
    assert claims["ath"] == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"  # the RFC's value for that token
    _, claims = decode_proof(key.proof("POST", "https://as.example/token", nonce="eyJ7S_zG.eyJH0-Z.HX4w-7v"))
    assert claims["nonce"] == "eyJ7S_zG.eyJH0-Z.HX4w-7v"
    assert "ath" not in claims


def test_proof_jti_is_fresh_and_key_stable() -> None:
    key = DPoPKey()
    proofs = [key.proof("GET", "https://mcp.example/mcp") for _ in range(50)]
    decoded = [decode_proof(proof) for proof in proofs]
    assert len({claims["jti"] for _, claims in decoded}) == 50
    assert all(header["jwk"] == key.public_jwk for header, _ in decoded)  # one key per client


@pytest.mark.parametrize("algorithm", ["ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"])
def test_proof_algorithms(algorithm: str) -> None:
    key = DPoPKey(algorithm=algorithm)
    assert key.algorithm == algorithm
    header, claims = decode_proof(key.proof("DELETE", "https://mcp.example/mcp"))
    assert header["alg"] == algorithm and claims["htm"] == "DELETE"


def test_dpop_key_from_pem_and_object() -> None:
    assert DPoPKey(EC_KEY).public_jwk == DPoPKey(pkcs8(EC_KEY)).public_jwk
    assert DPoPKey(pkcs8(RSA_KEY).decode(), "RS256").thumbprint() == DPoPKey(RSA_KEY, "RS256").thumbprint()


def test_dpop_bad_arguments() -> None:
    with pytest.raises(ValueError, match="needs an EC key"):
        DPoPKey(RSA_KEY)  # ES256 by default
    with pytest.raises(ValueError, match="unsupported"):
        DPoPKey(algorithm="HS256")
    key = DPoPKey()
    with pytest.raises(ValueError, match="method"):
        key.proof("", "https://mcp.example/mcp")
    with pytest.raises(ValueError, match="method"):
        key.proof("GET /x", "https://mcp.example/mcp")
    with pytest.raises(ValueError, match="url"):
        key.proof("GET", "/mcp")
    with pytest.raises(ValueError, match="url"):
        key.proof("GET", "ftp://mcp.example/mcp")
    with pytest.raises(ValueError, match="access_token"):
        key.proof("GET", "https://mcp.example/mcp", access_token="")


def test_repr_shows_no_key() -> None:
    key = DPoPKey()
    assert repr(key) == f"DPoPKey(algorithm='ES256', thumbprint={key.thumbprint()!r})"


# -- thumbprints ---------------------------------------------------------------------------

# RFC 7638 §3.1: the example RSA key and its SHA-256 thumbprint.
RFC7638_N = (
    "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn6"
    "4tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n9"
    "1CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
)
RFC7638_THUMBPRINT = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_rfc7638_example() -> None:
    jwk = {"kty": "RSA", "n": RFC7638_N, "e": "AQAB", "alg": "RS256", "kid": "2011-04-29"}
    assert jwk_thumbprint(jwk) == RFC7638_THUMBPRINT  # alg and kid are not hashed


def test_ec_thumbprint_computed_independently() -> None:
    key = DPoPKey()
    jwk = key.public_jwk
    canonical = f'{{"crv":"P-256","kty":"EC","x":"{jwk["x"]}","y":"{jwk["y"]}"}}'
    assert key.thumbprint() == b64url(hashlib.sha256(canonical.encode()).digest())
    # And the public numbers behind the JWK are those of the key that signs.
    header = jwt.get_unverified_header(key.proof("GET", "https://mcp.example/mcp"))
    assert jwt.PyJWK(header["jwk"]).key.public_numbers() == jwt.PyJWK(jwk).key.public_numbers()


def test_thumbprint_bad_jwk() -> None:
    with pytest.raises(ValueError, match="kty"):
        jwk_thumbprint({"kty": "oct", "k": "abc"})
    with pytest.raises(ValueError, match="lacks y"):
        jwk_thumbprint({"kty": "EC", "crv": "P-256", "x": "abc"})


def test_thumbprint_is_independent_of_member_order() -> None:
    jwk = DPoPKey().public_jwk
    reordered = dict(reversed(list(jwk.items())))
    assert jwk_thumbprint(reordered) == jwk_thumbprint(jwk)
    assert json.dumps(reordered) != json.dumps(jwk)
