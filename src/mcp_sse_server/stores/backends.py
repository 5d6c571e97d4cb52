"""The one place a backend is chosen: by the scheme of a URL.

>>> backend_from_url("memory:")
MemoryBackend(shared=False, worker_id=None)
>>> backend_scheme("rediss://cache.example.com:6380/0")
'rediss'

The schemes known from the start (``register_backend`` adds others):

=================================  ==========================================================
``memory:``                        every store in this process (``MemoryBackend``), the default
``redis://``, ``rediss://`` (TLS),  Redis, shared by every worker and host given the same URL
``unix://`` (a socket path)        (``RedisBackend``; the ``redis`` extra)
``redis+cluster://h:p,h:p``,       a Redis (or Valkey) Cluster, any of its nodes as seeds
``rediss+cluster://`` (TLS)        (``RedisBackend`` on a ``RedisCluster``)
``redis+sentinel://h:p,h:p/name``  a Redis primary found by its sentinels (``RedisBackend``;
``rediss+sentinel://`` (TLS)       a failover reaches the promoted replica)
=================================  ==========================================================

A factory takes the URL and the endpoint's limits (``limits=``, sizes its stores: an
``HttpLimits``), and the keyword options its scheme knows (Redis: ``prefix``, ``worker_ttl``,
``worker_id``); one it does not know is a TypeError. Another backend registers its scheme
once, at import (``register_backend("mystore", MyBackend.from_url)``); then
``backend_from_url("mystore://...")``, and ``serve --backend mystore://...`` when the module
serving the target registers it, build it. A factory builds; it connects nothing
(``Backend.start`` does, in the app that receives the backend).
"""

from __future__ import annotations

import re
from typing import Any, Final, Protocol

from ..engine.stores import DEFAULT_SIZES, Backend, StoreSizes
from .memory import MemoryBackend

__all__ = ["BackendFactory", "backend_from_url", "backend_scheme", "register_backend"]


class BackendFactory(Protocol):
    """Builds the backend a URL of its scheme names."""

    def __call__(self, url: str, /, *, limits: StoreSizes, **options: Any) -> Backend: ...


def _memory(url: str, /, *, limits: StoreSizes, **options: Any) -> Backend:
    if url.partition(":")[2] not in ("", "//"):
        raise ValueError(f"memory: names nothing after its scheme, not {url!r}")
    return MemoryBackend(limits, **options)


def _redis(url: str, /, *, limits: StoreSizes, **options: Any) -> Backend:
    try:
        from .redis_setup import RedisBackend
    except ImportError as error:
        raise ImportError(f"{backend_scheme(url)}:// needs redis-py: pip install 'mcp-sse-server[redis]'") from error
    return RedisBackend.from_url(url, limits=limits, **options)


# Each scheme's factory: the table itself is private, so that every scheme added is checked.
_FACTORIES: Final[dict[str, BackendFactory]] = {
    "memory": _memory,
    "redis": _redis,
    "rediss": _redis,
    "unix": _redis,
    "redis+cluster": _redis,
    "rediss+cluster": _redis,
    "redis+sentinel": _redis,
    "rediss+sentinel": _redis,
}
_SCHEME: Final = re.compile(r"[a-z][a-z0-9+.-]*")  # RFC 3986, section 3.1 (lowercase: schemes are case-blind)


def backend_scheme(url: str) -> str:
    """The scheme of ``url``, lowercase; ValueError when it has none."""
    scheme, colon, _ = url.partition(":")
    scheme = scheme.lower()
    if not colon or not _SCHEME.fullmatch(scheme):
        raise ValueError(f"a backend URL starts with its scheme (memory:, redis://...), not {url!r}")
    return scheme


def backend_from_url(url: str = "memory:", *, limits: StoreSizes = DEFAULT_SIZES, **options: Any) -> Backend:
    """The backend ``url`` names, built by its scheme's factory with ``limits`` (an ``HttpLimits``:
    the endpoint's) and ``options``. ValueError for a scheme nobody registered."""
    scheme = backend_scheme(url)
    factory = _FACTORIES.get(scheme)
    if factory is None:
        known = ", ".join(f"{name}:" for name in sorted(_FACTORIES))
        raise ValueError(f"no backend for {scheme}: (known: {known}; register_backend adds one)")
    return factory(url, limits=limits, **options)


def register_backend(scheme: str, factory: BackendFactory) -> None:
    """Build the backends of URLs of ``scheme`` with ``factory`` (see the module docstring).
    ValueError for a malformed scheme, or one another factory has."""
    if not _SCHEME.fullmatch(scheme):
        raise ValueError(f"a scheme is lowercase letters, digits, '+', '-' and '.', not {scheme!r}")
    taken = _FACTORIES.get(scheme)
    if taken is not None and taken != factory:  # (== : a bound method is made anew at each access)
        raise ValueError(f"the {scheme}: scheme has a backend already")
    _FACTORIES[scheme] = factory
