"""RedisCache: ``ResponseCache``'s entries in Redis, shared by every worker.

>>> from redis.asyncio import Redis
>>> from mcp_sse_server.middleware import ResponseCache, RedisCache
>>> cache = ResponseCache(ttl=60.0, store=RedisCache(Redis.from_url("redis://127.0.0.1:6379/0")))

Rules, kept here and nowhere else:

1. An entry is a string key ``<prefix>:{c:<family>}:e:<group>:<key>:<generations>`` set with
   ``PX`` (its ttl): Redis forgets it by itself. ``<family>`` is ``resource:`` for every
   resource's group, else the group itself: a group's entries and the generations they name
   share that hash tag, so every script touches one slot (Redis Cluster; one Redis ignores it).
2. Dropping a group is one ``INCR`` of its generation ``<prefix>:{c:<family>}:g:<group>``: the
   entries made under the old generation are never asked for again and expire. A read's entry
   carries two generations, that of every read (``resource:``) and that of its URI, so a
   resource list change drops all reads with one ``INCR`` too. Generation keys do not expire
   (one per group ever dropped: the lists, and each resource updated).
3. A get and a put are one script each (the generations and the entry in one round trip). The
   script names the entry key it computes, which is in the generations' slot (rule 1).
4. Redis out of reach: a get is a miss and a put or drop is skipped, each logged; the cache
   is an optimisation, and every entry has its ttl.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from ..engine.stores import StoreUnavailable
from ..stores.redis import DEFAULT_PREFIX, check_client, milliseconds, redis_unavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisCache"]

logger = logging.getLogger("mcp_sse_server.middleware")

_READS: Final = "resource:"

# KEYS: the group's generation keys; ARGV[1] the entry key without generations. (A shared prelude.)
_ENTRY: Final = """
local entry = ARGV[1]
for i = 1, #KEYS do
  entry = entry .. ':' .. (redis.call('GET', KEYS[i]) or '0')
end
"""
_GET: Final = _ENTRY + "return redis.call('GET', entry)\n"
# ARGV[2] the value, ARGV[3] the ttl in ms.
_PUT: Final = _ENTRY + "redis.call('SET', entry, ARGV[2], 'PX', ARGV[3])\nreturn 1\n"


class RedisCache:
    """Cache entries in Redis (the module's rules); ``redis`` is a ``redis.asyncio.Redis`` with
    ``decode_responses=False``; ``prefix`` starts every key."""

    __slots__ = ("_get", "_put", "_redis", "prefix")

    def __init__(self, redis: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        check_client(redis)
        self.prefix = prefix
        self._redis = redis
        self._get = redis.register_script(_GET)
        self._put = redis.register_script(_PUT)

    def _tag(self, group: str) -> str:
        """The start of every key of ``group``: its family's hash tag (rule 1)."""
        return f"{self.prefix}:{{c:{_READS if group.startswith(_READS) else group}}}:"

    def _generations(self, group: str) -> list[str]:
        tag = self._tag(group)
        own = f"{tag}g:{group}"
        return [f"{tag}g:{_READS}", own] if group.startswith(_READS) and group != _READS else [own]

    async def get(self, group: str, key: str) -> bytes | None:
        try:
            with redis_unavailable("response cache"):
                found = await self._get(keys=self._generations(group), args=[f"{self._tag(group)}e:{group}:{key}"])
        except StoreUnavailable:
            logger.warning("Redis is out of reach: a response cache lookup missed")
            return None
        return found if isinstance(found, bytes) else None

    async def put(self, group: str, key: str, value: bytes, ttl: float) -> None:
        try:
            with redis_unavailable("response cache"):
                await self._put(
                    keys=self._generations(group), args=[f"{self._tag(group)}e:{group}:{key}", value, milliseconds(ttl)]
                )
        except StoreUnavailable:
            logger.warning("Redis is out of reach: a response was not cached")

    async def drop(self, group: str) -> None:
        try:
            with redis_unavailable("response cache"):
                await self._redis.incr(self._generations(group)[-1])
        except StoreUnavailable:
            logger.warning("Redis is out of reach: cached %s entries stay until their ttl", group)
