"""The one-process coordination: ``LocalCoordinator``, the HTTP app's default ``Coordinator``.

The interface (``Coordinator``, with the rules every implementation keeps) is in
``engine/stores.py``, beside the other store interfaces a ``Backend`` bundles. Its two
implementations are peers: ``LocalCoordinator`` (here), where one process serves each
session and every method does nothing, and ``RedisCoordinator`` (``stores/redis_routing.py``),
where several workers and hosts serve the same sessions through Redis.

>>> import asyncio
>>> asyncio.run(LocalCoordinator().route_inbound("s", None, b""))  # type: ignore[arg-type]
False
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Final

from ..engine.jsonrpc import JsonRpcMessage, RequestId
from ..engine.stores import NOT_HELD, CoordinatedSession, SessionPeers

__all__ = ["NO_PEERS", "LocalCoordinator"]


class _NoPeers:
    """The peers of a session no other worker serves."""

    __slots__ = ()

    async def runs_elsewhere(self, stream_id: str) -> bool:
        return False

    async def end_if_abandoned(self, stream_id: str) -> None:
        return None

    async def on_backlog(self) -> None:
        return None


NO_PEERS: SessionPeers = _NoPeers()
"""The ``SessionPeers`` of a session served by one process only."""


_NOTHING: Final = contextlib.nullcontext()  # one no-op ``async with`` for every stream held


class LocalCoordinator:
    """One process serves each of its sessions: nothing to coordinate."""

    __slots__ = ()

    async def start(self, sessions: Callable[[str], CoordinatedSession | None]) -> None:
        return None

    async def stop(self) -> None:
        return None

    def peers(self, session_id: str) -> SessionPeers:
        return NO_PEERS

    def request_ids(self) -> Iterator[RequestId] | None:
        return None

    def serving(self, session: CoordinatedSession, request_id: RequestId) -> AbstractAsyncContextManager[None]:
        # (duplicates within the process are the transport's 409)
        return NOT_HELD

    async def route_inbound(self, session_id: str, message: JsonRpcMessage, body: bytes) -> bool:
        return False

    def holding_standalone(self, session: CoordinatedSession) -> AbstractAsyncContextManager[None]:
        return _NOTHING

    def holding_legacy(
        self, session: CoordinatedSession, on_post: Callable[[bytes], Awaitable[None]]
    ) -> AbstractAsyncContextManager[None]:
        return _NOTHING

    async def route_legacy_post(self, session_id: str, body: bytes) -> bool:
        return False  # (no other worker: a stream not held here is held nowhere)

    async def session_ended(self, session_id: str) -> None:
        return None

    async def reap_dead_workers(self) -> list[str]:
        return []
