"""What a session is, as plain data: the record a session store keeps.

It sits at the bottom of the package (it imports nothing of it) so that the
stores, which hold records, and the session, which lives from one, need not
know each other: the stores import this module, not ``session.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["RecordChange", "SessionRecord"]


@dataclass(slots=True)
class SessionRecord:
    """What a session is, as plain data: nothing here holds a task, a future or a socket.

    ``revision`` is None until ``initialize`` succeeds; ``log_level`` is None
    until the client sets one (everything is sent). Timestamps are the
    store's clock (monotonic seconds in process). ``principal`` is who opened
    the session on a server that checks bearer tokens (issuer, subject, client
    id): only requests with a token of the same principal may use it.
    ``version`` counts the writes a shared store took (it refuses a write of a
    copy older than its record: ``StaleRecord``).
    """

    id: str = ""
    created_at: float = 0.0
    last_seen: float = 0.0
    revision: str | None = None
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    principal: list[str | None] | None = None
    version: int = 0

    def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> bool:
        """True once the client has been silent too long or the session is too old."""
        return now - self.last_seen >= idle_timeout or now - self.created_at >= max_lifetime


RecordChange: TypeAlias = Callable[[SessionRecord], None]
"""One change a session made to its record (a log level set, a subscription), as a function that
makes it: a worker whose copy turned out stale makes it again on the store's newer record."""
