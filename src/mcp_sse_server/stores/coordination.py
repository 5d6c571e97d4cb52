"""Coordination between workers: everything the HTTP app asks of the other workers serving its sessions.

One interface (``Coordinator``), two implementations that are peers:

* ``LocalCoordinator`` (here): one process serves each session, so there is
  nothing to coordinate and every method does nothing. It is the default.
* ``RedisCoordinator`` (``stores/redis_routing.py``): several workers and hosts
  serve the same sessions through Redis. It owns its entry and message
  formats; nothing outside it knows them.

What the app asks, and when (the rules every implementation keeps):

1. ``peers(session_id)`` when it makes the transport of a session it serves:
   the ``SessionPeers`` that transport takes at construction (resumption of
   a stream another worker writes, and its end if that worker died; a
   backlog another worker's GET must take).
2. ``request_ids()`` once per session served here: the ids its server-to-client
   requests take (None: the engine's own counter), so an answer arriving at
   any worker names the worker that awaits it.
3. ``serving(session, request_id)`` around every client request it serves
   (``async with``). It may raise ``DuplicateRequest`` when that id is in
   flight in the session on another worker; it need not look (the transport
   refuses a duplicate within the worker): the steady state of a request asks
   nothing of other workers.
4. ``route_inbound(session_id, message, body)`` for every client notification
   or response: True when the message belongs to other workers and was sent
   there (the app then answers 202 and does nothing else). A cancellation of
   a request this worker does not run may go to every worker.
5. ``holding_standalone(session)`` around a standalone GET stream held here:
   a newer GET on any worker supersedes it.
6. ``session_ended(session_id)`` when a session ends for good (DELETE, expiry,
   the server closing it), not when one worker merely stops serving it.
7. ``start(sessions)`` before the first session is served (``sessions`` finds
   the sessions served here by id, for messages routed to this worker),
   ``stop()`` at shutdown. ``reap_dead_workers()`` fails what workers that
   died were running (the implementation also runs it on its own schedule).

>>> import asyncio
>>> asyncio.run(LocalCoordinator().route_inbound("s", None, b""))  # type: ignore[arg-type]
False
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol

from ..engine.jsonrpc import JsonRpcMessage, RequestId

__all__ = [
    "NO_PEERS",
    "CoordinatedSession",
    "Coordinator",
    "DuplicateRequest",
    "LocalCoordinator",
    "SessionPeers",
]


class DuplicateRequest(Exception):
    """A client request id already in flight in the session (on this worker or another)."""


class CoordinatedSession(Protocol):
    """What a coordinator asks of a session this worker serves (the app's ``LiveSession``)."""

    @property
    def session_id(self) -> str: ...

    def runs(self, request_id: RequestId) -> bool:
        """True while a client request with this id is in flight here."""
        ...

    def on_message(self, message: JsonRpcMessage) -> None:
        """A client's answer or cancellation that reached another worker, for this session's engine."""
        ...

    async def end_cancelled(self, params: dict[str, Any]) -> None:
        """End the stream of the request a routed ``notifications/cancelled`` names."""
        ...

    async def deliver_backlog(self) -> None:
        """Send what other workers logged for the standalone stream, if it is open here."""
        ...

    async def end_standalone(self) -> None:
        """End the standalone stream held here (a newer GET took it elsewhere)."""
        ...


class SessionPeers(Protocol):
    """What a session's transport asks of the other workers serving the session."""

    async def runs_elsewhere(self, stream_id: str) -> bool:
        """True when a log stream belongs to a request another worker runs."""
        ...

    async def end_if_abandoned(self, stream_id: str) -> None:
        """A stream resumed here, written by another worker, has had no news for a while: if
        that worker died, end the stream with the terminal error its request gets."""
        ...

    async def on_backlog(self) -> None:
        """A standalone message went to the backlog: wake the worker holding the GET stream."""
        ...


class Coordinator(Protocol):
    """Everything the HTTP app asks of other workers (rules in the module docstring)."""

    async def start(self, sessions: Callable[[str], CoordinatedSession | None]) -> None: ...

    async def stop(self) -> None: ...

    def peers(self, session_id: str) -> SessionPeers: ...

    def request_ids(self) -> Iterator[RequestId] | None: ...

    def serving(self, session: CoordinatedSession, request_id: RequestId) -> AbstractAsyncContextManager[None]: ...

    async def route_inbound(self, session_id: str, message: JsonRpcMessage, body: bytes) -> bool: ...

    def holding_standalone(self, session: CoordinatedSession) -> AbstractAsyncContextManager[None]: ...

    async def session_ended(self, session_id: str) -> None: ...

    async def reap_dead_workers(self) -> list[str]: ...


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


_NOTHING: Final = contextlib.nullcontext()  # one no-op ``async with`` for every request


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
        return _NOTHING

    async def route_inbound(self, session_id: str, message: JsonRpcMessage, body: bytes) -> bool:
        return False

    def holding_standalone(self, session: CoordinatedSession) -> AbstractAsyncContextManager[None]:
        return _NOTHING

    async def session_ended(self, session_id: str) -> None:
        return None

    async def reap_dead_workers(self) -> list[str]:
        return []
