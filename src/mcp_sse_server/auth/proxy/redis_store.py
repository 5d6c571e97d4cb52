"""``RedisProxyStore``: the proxy's flow state in Redis (or Valkey), so any worker or host serves
any step of a sign-in (authorize on one, the IdP's callback on another, the token on a third).

The atomic steps are single commands (Redis 6.2+): ``take`` is ``GETDEL`` and ``swap`` is
``SET ... GET``, so two workers redeeming one code, or rotating one refresh token, cannot both
win. Keys are ``prefix`` + the proxy's key; values are the proxy's sealed bytes. A Redis error
propagates: the endpoint fails, never answers from a partial state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis.asyncio as redis_asyncio

__all__ = ["RedisProxyStore"]


class RedisProxyStore:
    """A ``ProxyStore`` on ``client`` (a ``redis.asyncio`` client), keys under ``prefix``."""

    __slots__ = ("_client", "_prefix")

    def __init__(self, client: redis_asyncio.Redis, prefix: str = "mcp:auth:") -> None:
        self._client = client
        self._prefix = prefix

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        await self._client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)))

    async def get(self, key: str) -> bytes | None:
        value = await self._client.get(self._prefix + key)
        return value if isinstance(value, bytes) else None

    async def take(self, key: str) -> bytes | None:
        value = await self._client.getdel(self._prefix + key)
        return value if isinstance(value, bytes) else None

    async def swap(self, key: str, value: bytes, ttl: float) -> bytes | None:
        old = await self._client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)), get=True)
        return old if isinstance(old, bytes) else None

    async def delete(self, key: str) -> None:
        await self._client.delete(self._prefix + key)
