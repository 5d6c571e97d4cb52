"""Where a verifier may fetch from: ``https``, or ``http`` on this machine only.

A key set or an introspection answer fetched over plain HTTP from another host
could be replaced on the way, and with it every token's verdict.

>>> check_fetch_url("jwks_uri", "http://127.0.0.1:9000/jwks")
>>> check_fetch_url("jwks_uri", "http://as.example/jwks")
Traceback (most recent call last):
    ...
ValueError: jwks_uri must be https:// (http:// only on loopback): 'http://as.example/jwks'
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["check_fetch_url", "is_loopback_url"]


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is this machine (``localhost``, ``127.0.0.0/8``, ``::1``; a name
    such as ``127.evil.example`` is not).

    >>> is_loopback_url("http://127.0.0.2:9000/jwks"), is_loopback_url("http://127.evil.example/jwks")
    (True, False)
    """
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_fetch_url(option: str, url: str) -> None:
    """ValueError naming ``option`` unless ``url`` is ``https``, or ``http`` on loopback."""
    if not (url.startswith("https://") or (url.startswith("http://") and is_loopback_url(url))):
        raise ValueError(f"{option} must be https:// (http:// only on loopback): {url!r}")
