"""Redis with Sentinel for the Redis stores: the URL that names one, and its client.

>>> sentinel_parts("redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster/2")
([('10.0.0.1', 26379), ('10.0.0.2', 26379)], 'mymaster', 2)

Rules, kept here:

1. A Sentinel deployment is named, never guessed: ``redis+sentinel://host:port[,host:port...]/
   <master name>[/<db>]`` (TLS to the primary: ``rediss+sentinel://``); the hosts are sentinels
   (port 26379 unless given), credentials in the URL are the primary's.
2. The client is redis-py's asyncio ``Redis`` over a ``SentinelConnectionPool``: each new
   connection asks the sentinels where the primary is now, so after a failover the workers
   reconnect to the promoted replica without restarting. Until the sentinels promote one, a
   command fails as Redis out of reach does (``StoreUnavailable``: a 503 with Retry-After).
3. Everything else is one Redis: the stores' keys and scripts are as on ``redis://``.
"""

from __future__ import annotations

from typing import Any, Final, cast
from urllib.parse import unquote, urlsplit

from redis.asyncio import Redis

from .redis_urls import seed_addresses

__all__ = ["SENTINEL_SCHEMES", "sentinel_client", "sentinel_parts", "sentinel_probe"]

SENTINEL_SCHEMES: Final = ("redis+sentinel", "rediss+sentinel")
_DEFAULT_PORT: Final = 26379


def sentinel_parts(url: str) -> tuple[list[tuple[str, int]], str, int]:
    """The sentinels, the master name and the database of a ``redis+sentinel://`` URL (ValueError
    for a bad one)."""
    parts = urlsplit(url)
    if parts.scheme not in SENTINEL_SCHEMES:
        raise ValueError(f"a Sentinel URL starts with redis+sentinel:// or rediss+sentinel://, not {url!r}")
    sentinels = seed_addresses(url, _DEFAULT_PORT, "sentinel")
    name, _, db = parts.path.strip("/").partition("/")
    if not name or (db and not db.isdigit()):
        raise ValueError(f"{url!r}: the path is /<master name>[/<db>]")
    return sentinels, unquote(name), int(db or 0)


def _options(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    options: dict[str, Any] = {}
    if parts.username:
        options["username"] = unquote(parts.username)
    if parts.password:
        options["password"] = unquote(parts.password)
    if parts.scheme == "rediss+sentinel":
        options["ssl"] = True
    return options


def sentinel_client(url: str) -> Redis:
    """The primary of the deployment ``url`` names, found through its sentinels (rule 2).
    Connects nothing yet."""
    from redis.asyncio.sentinel import Sentinel

    sentinels, name, db = sentinel_parts(url)
    return cast(Redis, Sentinel(sentinels).master_for(name, db=db, **_options(url)))


def sentinel_probe(url: str, timeout: float) -> Any:
    """A blocking client of the primary ``url`` names, for a check before anything starts
    (``serve`` pings it, then closes it)."""
    import redis.sentinel

    sentinels, name, db = sentinel_parts(url)
    probe = redis.sentinel.Sentinel(sentinels, socket_timeout=timeout, sentinel_kwargs={"socket_timeout": timeout})
    return probe.master_for(name, db=db, socket_connect_timeout=timeout, socket_timeout=timeout, **_options(url))
