"""Where the proxy keeps its flow state: clients, transactions, codes, grants, refresh tokens.

Every operation a step needs to be race-free is one call of the store, so two requests (or two
workers, with a shared store) can never both win: ``take`` (read and delete: a transaction or a
code is consumed once), ``swap`` (write and return what was there: a refresh token rotates once)
and ``add`` (write only if absent: a lock one worker holds). Values are opaque bytes (sealed by
the proxy); each has a time to live in seconds.

``MemoryProxyStore`` serves one process: its operations do not await, so on one event loop each
is atomic. A store shared by workers implements the same protocol (``GETDEL``, ``SET ... GET``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["MemoryProxyStore", "ProxyStore", "ProxyStoreUnavailable"]


class ProxyStoreUnavailable(Exception):
    """The store cannot be reached: the step is refused with 503, never half done."""


class ProxyStore(Protocol):
    """Keyed bytes with a time to live; ``take`` and ``swap`` are atomic."""

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None."""
        ...

    async def take(self, key: str) -> bytes | None:
        """The value under ``key``, deleted in the same step; None when there was none."""
        ...

    async def swap(self, key: str, value: bytes, ttl: float) -> bytes | None:
        """Store ``value`` under ``key`` and return the value it replaced (None: there was none)."""
        ...

    async def delete(self, key: str) -> None:
        """Forget ``key``."""
        ...

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        """Store ``value`` under ``key`` only if it holds nothing; True when stored (a lock taken)."""
        ...


class MemoryProxyStore:
    """A ``ProxyStore`` in this process's memory (module docstring); ``clock``: seconds."""

    __slots__ = ("_clock", "_items", "_writes")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._items: dict[str, tuple[float, bytes]] = {}
        self._writes = 0

    def _live(self, key: str) -> bytes | None:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self._clock():
            del self._items[key]
            return None
        return item[1]

    def _set(self, key: str, value: bytes, ttl: float) -> None:
        self._items[key] = (self._clock() + ttl, value)
        self._writes += 1
        if self._writes % 1024 == 0:  # expired records go, now and then, so memory stays bounded
            now = self._clock()
            for stale in [k for k, (until, _) in self._items.items() if until <= now]:
                del self._items[stale]

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        self._set(key, value, ttl)

    async def get(self, key: str) -> bytes | None:
        return self._live(key)

    async def take(self, key: str) -> bytes | None:
        value = self._live(key)
        self._items.pop(key, None)
        return value

    async def swap(self, key: str, value: bytes, ttl: float) -> bytes | None:
        old = self._live(key)
        self._set(key, value, ttl)
        return old

    async def delete(self, key: str) -> None:
        self._items.pop(key, None)

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        if self._live(key) is not None:
            return False
        self._set(key, value, ttl)
        return True
