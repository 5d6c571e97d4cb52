"""Redirect URIs: what a client may register, and when an authorization request's URI is one of them.

Registration (``check_registered``; each refusal a ``ValueError`` saying why):

1. An absolute URI without a fragment or userinfo (``http://localhost@evil/cb`` is refused).
2. Never ``javascript:``, ``data:``, ``file:``, ``vbscript:``.
3. ``http`` only to a loopback host (``127.0.0.1``, ``[::1]``, ``localhost``).
4. ``https`` only when it matches an allowed pattern (``allow``: exact URIs, or ending in ``*``
   for a prefix): a hosted client's fixed callback is opted in, never any site.
5. A private-use scheme (RFC 8252 §7.1: a reverse domain name, with a dot) for native apps.

Matching (``matches``): the request's URI equals a registered one, string for string. The one
exception (RFC 8252 §7.3): a registered ``http`` URI on a loopback IP literal (``127.0.0.1`` or
``[::1]``) matches the same URI with another port, since a native app's port is chosen at run
time; ``strict=True`` drops it.

>>> check_registered("http://127.0.0.1:3000/cb", ())
>>> check_registered("https://app.example/cb", ())  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
ValueError: https redirect URI 'https://app.example/cb' is not allowed here: start the server with ...
>>> registered = ["http://127.0.0.1:3000/cb"]
>>> matches("http://127.0.0.1:51000/cb", registered), matches("http://127.0.0.1:3000/cb/", registered)
(True, False)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

__all__ = ["check_registered", "matches"]

_FORBIDDEN: Final = frozenset({"javascript", "data", "file", "vbscript", "about", "blob"})
_LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})
_LOOPBACK_IP: Final = frozenset({"127.0.0.1", "::1"})


def check_registered(uri: str, allow: Iterable[str]) -> None:
    """ValueError unless ``uri`` may be registered (rules 1 to 5); ``allow``: https patterns."""
    if not isinstance(uri, str) or not uri or len(uri) > 2000:
        raise ValueError("a redirect URI must be a string of at most 2000 characters")
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise ValueError(f"redirect URI {uri!r} does not parse") from None
    scheme = parts.scheme.lower()
    if not scheme or scheme in _FORBIDDEN:
        raise ValueError(f"redirect URI {uri!r}: the scheme is not allowed")
    if "#" in uri:
        raise ValueError(f"redirect URI {uri!r} has a fragment")
    if "@" in parts.netloc or any(c.isspace() for c in uri):
        raise ValueError(f"redirect URI {uri!r} has userinfo or spaces")
    if scheme == "http":
        if (parts.hostname or "") not in _LOOPBACK:
            raise ValueError(f"redirect URI {uri!r}: http is allowed to loopback hosts only")
        return
    if scheme == "https":
        if not parts.hostname:
            raise ValueError(f"redirect URI {uri!r} has no host")
        if not any(uri == p or (p.endswith("*") and fnmatch.fnmatchcase(uri, p)) for p in allow):
            raise ValueError(
                f"https redirect URI {uri!r} is not allowed here: start the server with --auth-redirect-allow {uri}"
            )
        return
    if "." not in scheme or parts.netloc:
        raise ValueError(f"redirect URI {uri!r}: a native app's scheme is a reverse domain name (RFC 8252 7.1)")


def matches(uri: str, registered: Iterable[str], *, strict: bool = False) -> bool:
    """True when ``uri`` is one of ``registered`` (module docstring; ``strict``: no port exception)."""
    candidates = list(registered)
    if uri in candidates:
        return True
    if strict or "@" in uri or "#" in uri:
        return False
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK_IP or port is None:
        return False
    for known in candidates:
        other = urlsplit(known)
        if other.scheme != "http" or other.hostname not in _LOOPBACK_IP:
            continue
        host = f"[{parts.hostname}]" if parts.hostname == "::1" else parts.hostname
        if (
            parts.netloc == f"{host}:{port}"
            and other.hostname == parts.hostname
            and (other.path, other.query) == (parts.path, parts.query)
        ):
            return True
    return False
