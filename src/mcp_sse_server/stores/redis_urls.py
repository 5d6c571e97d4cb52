"""The ``host:port`` list of a Redis URL that names several servers (``redis+cluster://`` seeds,
``redis+sentinel://`` sentinels): one reading for both schemes."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["seed_addresses"]


def seed_addresses(url: str, default_port: int, what: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` pairs of ``url``'s comma-separated netloc (credentials left out; a
    bracketed IPv6 host unbracketed; ``default_port`` where a pair has none). ValueError naming
    ``what`` (``seed``, ``sentinel``) for a pair that is not ``host:port``."""
    addresses: list[tuple[str, int]] = []
    for seed in urlsplit(url).netloc.rpartition("@")[2].split(","):
        host, colon, port = seed.rpartition(":")
        if not colon:
            host, port = seed, str(default_port)
        host = host.strip("[]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{url!r}: each {what} is host:port, not {seed!r}")
        addresses.append((host, int(port)))
    return addresses
