"""``RedisProxyStore``: the proxy's flow state in Redis (or Valkey), so any worker or host serves
any step of a sign-in (authorize on one, the IdP's callback on another, the token on a third).

The atomic steps are single commands (Redis 6.2+): ``take`` is ``GETDEL`` and ``swap`` is
``SET ... GET``, so two workers redeeming one code, or rotating one refresh token, cannot both
win. Keys are ``prefix`` + the proxy's key; values are the proxy's sealed bytes. A Redis error
is ``ProxyStoreUnavailable``: the endpoint answers 503, never from a partial state.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from .store import ProxyStoreUnavailable

if TYPE_CHECKING:
    import redis.asyncio as redis_asyncio

__all__ = ["RedisProxyStore"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _unavailable(method: Callable[_P, Awaitable[_T]]) -> Callable[_P, Awaitable[_T]]:
    """Redis errors as ``ProxyStoreUnavailable`` (the endpoint answers 503)."""

    @functools.wraps(method)
    async def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        from redis.exceptions import RedisError

        try:
            return await method(*args, **kwargs)
        except (RedisError, OSError) as error:
            raise ProxyStoreUnavailable(f"Redis: {type(error).__name__}") from None

    return call


class RedisProxyStore:
    """A ``ProxyStore`` on ``client`` (a ``redis.asyncio`` client), keys under ``prefix``."""

    __slots__ = ("_client", "_prefix")

    def __init__(self, client: redis_asyncio.Redis, prefix: str = "mcp:auth:") -> None:
        self._client = client
        self._prefix = prefix

    @_unavailable
    async def put(self, key: str, value: bytes, ttl: float) -> None:
        await self._client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)))

    @_unavailable
    async def get(self, key: str) -> bytes | None:
        value = await self._client.get(self._prefix + key)
        return value if isinstance(value, bytes) else None

    @_unavailable
    async def take(self, key: str) -> bytes | None:
        value = await self._client.getdel(self._prefix + key)
        return value if isinstance(value, bytes) else None

    @_unavailable
    async def swap(self, key: str, value: bytes, ttl: float) -> bytes | None:
        old = await self._client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)), get=True)
        return old if isinstance(old, bytes) else None

    @_unavailable
    async def delete(self, key: str) -> None:
        await self._client.delete(self._prefix + key)
