"""RedisBuckets: ``RateLimit``'s token buckets in Redis, so that every worker spends one budget.

>>> from redis.asyncio import Redis  # doctest: +SKIP
>>> limit = RateLimit(rate=5.0, burst=20, store=RedisBuckets(Redis.from_url("redis://127.0.0.1:6379/0")))

Rules, kept here and nowhere else:

1. A bucket is one HASH ``<prefix>:rl:<caller key>`` (``t`` tokens, ``s`` the stamp in
   milliseconds); one Lua script refills it, takes a token and writes it back, so two workers
   taking at once never both get the last token. The clock is Redis's own (``TIME``): workers
   whose clocks disagree still refill alike.
2. A bucket idle long enough to be full again expires (``PEXPIRE``): Redis keeps only the
   callers seen lately.
3. Redis out of reach is ``StoreUnavailable`` (the request gets -32603 with no text), or, with
   ``fail_open=True``, the request goes through and a warning is logged: choose whether an
   outage stops the service or its limit.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from ..engine.stores import StoreUnavailable
from ..stores.redis import DEFAULT_PREFIX, check_client, redis_unavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisBuckets"]

logger = logging.getLogger("mcp_sse_server.middleware")

# KEYS[1] the bucket; ARGV rate (tokens a second), burst. Returns 0 (taken) or the wait in ms.
_TAKE: Final = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local saved = redis.call('HMGET', KEYS[1], 't', 's')
local tokens = tonumber(saved[1])
if tokens == nil then
  tokens = burst
else
  tokens = math.min(burst, tokens + math.max(0, now - tonumber(saved[2])) * rate / 1000)
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.max(1, math.ceil((1 - tokens) * 1000 / rate))
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 's', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait
"""


class RedisBuckets:
    """Token buckets in Redis (the module's rules); ``redis`` is a ``redis.asyncio.Redis`` with
    ``decode_responses=False``; ``prefix`` starts every key."""

    __slots__ = ("_take", "fail_open", "prefix")

    def __init__(self, redis: Redis, *, prefix: str = DEFAULT_PREFIX, fail_open: bool = False) -> None:
        check_client(redis)
        self.prefix = prefix
        self.fail_open = fail_open
        self._take = redis.register_script(_TAKE)

    async def take(self, key: str, rate: float, burst: int) -> int:
        try:
            with redis_unavailable("rate limit"):
                wait = await self._take(keys=[f"{self.prefix}:rl:{key}"], args=[repr(rate), burst])
        except StoreUnavailable:
            if not self.fail_open:
                raise
            logger.warning("Redis is out of reach: a request went through without its rate limit")
            return 0
        return int(wait)
