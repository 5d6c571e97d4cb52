"""``RedisProxyStore``: the proxy's flow state in Redis (or Valkey), so any worker or host serves
any step of a sign-in (authorize on one, the IdP's callback on another, the token on a third).

The atomic steps are single commands (Redis 6.2+): ``take`` is ``GETDEL``, ``swap`` is
``SET ... GET`` and ``add`` is ``SET ... NX``, so two workers redeeming one code, or rotating one
refresh token, cannot both win. Keys are ``prefix`` + the proxy's key; values are the proxy's
sealed bytes. A Redis error is ``ProxyStoreUnavailable``: the endpoint answers 503, never from a
partial state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .store import ProxyStoreUnavailable

if TYPE_CHECKING:
    import redis.asyncio as redis_asyncio

__all__ = ["RedisProxyStore"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _unavailable(method: Callable[_P, Coroutine[Any, Any, _T]]) -> Callable[_P, Coroutine[Any, Any, _T]]:
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

    __slots__ = ("_client", "_prefix", "_url")

    def __init__(self, client: redis_asyncio.Redis | None, prefix: str = "mcp:auth:") -> None:
        self._client = client
        self._prefix = prefix
        self._url: str | None = None

    @classmethod
    def from_url(cls, url: str, prefix: str = "mcp:auth:") -> RedisProxyStore:
        """A store on the Redis ``url`` names (``redis://``, ``rediss://``, ``unix://``,
        ``redis+cluster://``) whose client is made on first use, in the process using it: so it
        can be built before ``serve --workers`` forks (a Redis client is not fork-safe)."""
        store = cls(None, prefix)
        store._url = url
        return store

    @property
    def client(self) -> redis_asyncio.Redis:
        """The Redis client (made now when the store was built from a URL)."""
        if self._client is None:
            assert self._url is not None
            from ...stores.redis_cluster import client_for_url

            self._client = client_for_url(self._url)
        return self._client

    @_unavailable
    async def put(self, key: str, value: bytes, ttl: float) -> None:
        await self.client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)))

    @_unavailable
    async def get(self, key: str) -> bytes | None:
        value = await self.client.get(self._prefix + key)
        return value if isinstance(value, bytes) else None

    @_unavailable
    async def take(self, key: str) -> bytes | None:
        value = await self.client.getdel(self._prefix + key)
        return value if isinstance(value, bytes) else None

    @_unavailable
    async def swap(self, key: str, value: bytes, ttl: float) -> bytes | None:
        old = await self.client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)), get=True)
        return old if isinstance(old, bytes) else None

    @_unavailable
    async def delete(self, key: str) -> None:
        await self.client.delete(self._prefix + key)

    @_unavailable
    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        return bool(await self.client.set(self._prefix + key, value, px=max(1, int(ttl * 1000)), nx=True))
