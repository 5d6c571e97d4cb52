"""The requestState key ring: the first key seals, every key opens, nothing else opens."""

from __future__ import annotations

import pytest

pytest.importorskip("cryptography", reason="the key ring needs cryptography (the redis extra)")

from mcp_sse_server.stores.keyring import KEYS_ENV, InvalidToken, KeyRing

OLD = "o" * 32
NEW = "n" * 32


def test_a_token_sealed_by_one_worker_opens_on_another_with_the_same_ring() -> None:
    token = KeyRing([OLD]).seal(b'{"step":2}')
    assert token.startswith("v1.")
    assert b'"step"' not in token.encode()  # sealed, not merely signed
    assert KeyRing([OLD]).open(token) == b'{"step":2}'


def test_rotation_the_first_key_seals_every_key_opens() -> None:
    before = KeyRing([OLD]).seal(b"before")
    during = KeyRing([NEW, OLD])
    assert during.open(before) == b"before"
    after = KeyRing([NEW])
    assert after.open(during.seal(b"during")) == b"during"
    with pytest.raises(InvalidToken):
        after.open(before)  # the old key left the ring


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-2] + ("A" if t[-2] != "A" else "B") + t[-1],
        lambda t: "v2." + t[3:],
        lambda t: t[:10],
        lambda t: t + "=",
        lambda t: "",
        lambda t: "v1.!!!",
    ],
)
def test_altered_or_foreign_tokens_do_not_open(mangle: object) -> None:
    ring = KeyRing([OLD])
    token = ring.seal(b"payload")
    with pytest.raises(InvalidToken):
        ring.open(mangle(token))  # type: ignore[operator]


def test_configuration() -> None:
    with pytest.raises(ValueError):
        KeyRing([])
    with pytest.raises(ValueError):
        KeyRing(["short"])
    with pytest.raises(ValueError):
        KeyRing(OLD)  # type: ignore[arg-type]  # a string, not a list of them
    ring = KeyRing.from_env({KEYS_ENV: f" {NEW} , {OLD} "})
    assert KeyRing([NEW]).open(ring.seal(b"x")) == b"x"  # the first secret seals
    with pytest.raises(ValueError, match=KEYS_ENV):
        KeyRing.from_env({})
