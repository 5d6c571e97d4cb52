"""Sessions: ids, the registry interface with its in-process default, expiry.

A session is created only by a successful ``initialize`` and ends on DELETE,
after ``session_idle_timeout`` of client silence, at ``session_max_lifetime``,
or when the server closes. Only inbound requests refresh ``last_seen``. The
clock is injectable so expiry is tested without sleeping.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .transport import SseTransport

__all__ = ["Clock", "MemorySessionStore", "Session", "SessionStore", "new_session_id"]

Clock: TypeAlias = Callable[[], float]


def new_session_id() -> str:
    """A session id: 192 random bits as 32 URL-safe characters (visible ASCII)."""
    return secrets.token_urlsafe(24)


class Session:
    """One live session: its transport, the McpServer behind it, and its clock readings."""

    __slots__ = ("closing", "created_at", "id", "last_seen", "server", "transport")

    def __init__(self, session_id: str, transport: SseTransport, server: Any, now: float) -> None:
        self.id = session_id
        self.transport = transport
        self.server = server
        self.created_at = now
        self.last_seen = now
        self.closing = False

    def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> bool:
        """True once the client has been silent too long or the session is too old."""
        return now - self.last_seen >= idle_timeout or now - self.created_at >= max_lifetime

    def __repr__(self) -> str:
        return f"Session(id={self.id[:6]}..., created_at={self.created_at}, last_seen={self.last_seen})"


class SessionStore(ABC):
    """Where live sessions are found by id.

    The HTTP rules only use this interface, so a store shared by several
    workers can replace the in-process default without touching them.
    """

    __slots__ = ()

    @abstractmethod
    def get(self, session_id: str) -> Session | None:
        """The live session with this id, or None."""

    @abstractmethod
    def add(self, session: Session) -> None:
        """Register a new session."""

    @abstractmethod
    def remove(self, session_id: str) -> Session | None:
        """Forget a session; returns it when it was there."""

    @abstractmethod
    def __len__(self) -> int:
        """How many sessions are live."""

    @abstractmethod
    def __iter__(self) -> Iterator[Session]:
        """A snapshot of the live sessions (safe to modify the store while iterating)."""


class MemorySessionStore(SessionStore):
    """Sessions in a dict, in this process."""

    __slots__ = ("_sessions", "lookup")

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        # get() as the dict's own method: the app looks a session up on every request.
        self.lookup: Callable[[str], Session | None] = self._sessions.get

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def add(self, session: Session) -> None:
        if session.id in self._sessions:
            raise ValueError("duplicate session id")
        self._sessions[session.id] = session

    def remove(self, session_id: str) -> Session | None:
        return self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._sessions.values()))
