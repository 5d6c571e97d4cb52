"""RedisBuckets: ``RateLimit``'s token buckets in Redis, so that every worker spends one budget.

>>> from redis.asyncio import Redis
>>> from mcp_sse_server.middleware import RateLimit, RedisBuckets
>>> limit = RateLimit(rate=5.0, burst=20, store=RedisBuckets(Redis.from_url("redis://127.0.0.1:6379/0")))

Rules, kept here and nowhere else:

1. A bucket is one string ``<prefix>:rl:<caller key>``: the tokens left and the stamp (Redis
   milliseconds), space-separated. One Lua script refills, takes and writes back, so two workers taking at once
   never both get the last token. The clock is Redis's own (``TIME``): workers whose clocks
   disagree still refill alike.
2. Takes are batched: the takes asked for while one script call is on its way go together in
   the next, one script call for all of them, each taken in the order asked. A client library
   spends tens of microseconds of CPU on any command, more than the take itself; a worker under
   load pays that once per batch instead of once per request. An idle worker's batch is one
   take, sent at once (no waiting for company).
3. A bucket expires once idle long enough to be full again (``PX``, set with each take): Redis
   keeps only the callers seen lately.
4. Redis out of reach is ``StoreUnavailable`` (the request gets -32603 with no text), or, with
   ``fail_open=True``, the request goes through and a warning is logged: choose whether an
   outage stops the service or its limit.
5. On one Redis (or Sentinel) a batch is one script call naming all its keys. On a Redis
   Cluster (a ``RedisCluster`` client) a script may name keys of one hash slot only, so a batch
   goes as one script call per slot among its keys, the calls at once: every worker still spends
   one budget per caller, each bucket on its own slot's primary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

from ..engine.background import in_background
from ..engine.stores import StoreUnavailable
from ..stores.redis import DEFAULT_PREFIX, check_client, redis_unavailable
from ..stores.redis_cluster import is_cluster

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["MAX_BATCH", "RedisBuckets"]

logger = logging.getLogger("mcp_sse_server.middleware")

MAX_BATCH: Final = 256
"""The most takes one script call carries."""

# KEYS the buckets; ARGV a rate (tokens a second) and a burst per key. Returns, per key, 0 (taken)
# or the milliseconds until a token is back.
_TAKE: Final = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local waits = {}
for i = 1, #KEYS do
  local rate = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tokens = burst
  local saved = redis.call('GET', KEYS[i])
  if saved then
    local left, stamp = string.match(saved, '^(%S+) (%S+)$')
    tokens = math.min(burst, tonumber(left) + math.max(0, now - tonumber(stamp)) * rate / 1000)
  end
  local wait = 0
  if tokens >= 1 then
    tokens = tokens - 1
  else
    wait = math.max(1, math.ceil((1 - tokens) * 1000 / rate))
  end
  local ttl = math.ceil(burst * 1000 / rate) + 1000
  redis.call('SET', KEYS[i], string.format('%.17g %d', tokens, now), 'PX', ttl)
  waits[i] = wait
end
return waits
"""

_Take = tuple[str, str, int, "asyncio.Future[int]"]


class RedisBuckets:
    """Token buckets in Redis (the module's rules); ``redis`` is a ``redis.asyncio.Redis`` with
    ``decode_responses=False``; ``prefix`` starts every key."""

    __slots__ = ("_pending", "_sending", "_slot_of", "_take", "fail_open", "prefix")

    def __init__(self, redis: Redis, *, prefix: str = DEFAULT_PREFIX, fail_open: bool = False) -> None:
        check_client(redis)
        self.prefix = prefix
        self.fail_open = fail_open
        self._take = redis.register_script(_TAKE)
        # (a cluster: the slot of each key, to split a batch by slot; rule 5)
        self._slot_of: Callable[[str], int] | None = cast(Any, redis).keyslot if is_cluster(redis) else None
        self._pending: list[_Take] = []
        self._sending = False  # a batch is on its way: takes asked meanwhile wait for the next (rule 2)

    async def take(self, key: str, rate: float, burst: int) -> int:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.append((f"{self.prefix}:rl:{key}", repr(rate), burst, future))
        if not self._sending:
            self._sending = True
            in_background(self._send())
        try:
            return await future
        except StoreUnavailable:
            if not self.fail_open:
                raise
            logger.warning("Redis is out of reach: a request went through without its rate limit")
            return 0

    async def _run(self, keys: list[str], args: list[str | int]) -> list[Any]:
        """The waits of one batch: one script call, or on a cluster one per slot (rule 5)."""
        slot_of = self._slot_of
        if slot_of is None:
            return list(await self._take(keys=keys, args=args))
        groups: dict[int, list[int]] = {}
        for index, key in enumerate(keys):
            groups.setdefault(slot_of(key), []).append(index)
        calls = [
            self._take(keys=[keys[i] for i in group], args=[arg for i in group for arg in args[2 * i : 2 * i + 2]])
            for group in groups.values()
        ]
        waits: list[Any] = [0] * len(keys)
        for group, replies in zip(groups.values(), await asyncio.gather(*calls), strict=True):
            for index, wait in zip(group, replies, strict=True):
                waits[index] = wait
        return waits

    async def _send(self) -> None:
        """Send batches until no take waits (rule 2)."""
        try:
            while self._pending:
                batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
                keys = [take[0] for take in batch]
                args: list[str | int] = []
                for _, rate, burst, _ in batch:
                    args += (rate, burst)
                try:
                    with redis_unavailable("rate limit"):
                        waits = await self._run(keys, args)
                except BaseException as error:
                    failure = error if isinstance(error, Exception) else StoreUnavailable("the batch was cancelled")
                    for *_, future in batch:
                        if not future.done():
                            future.set_exception(failure)
                    if failure is not error:
                        raise
                    continue
                for (*_, future), wait in zip(batch, waits, strict=True):
                    if not future.done():  # (a request cancelled meanwhile: its token is spent anyway)
                        future.set_result(int(wait))
        finally:
            self._sending = False
            for *_, future in self._pending:  # (cancelled itself: those waiting fail, none hangs)
                if not future.done():
                    future.set_exception(StoreUnavailable("the rate limit's batch was cancelled"))
            self._pending = []
