"""What a session and a task are, as plain data: the records the stores keep.

It sits at the bottom of the package (it imports nothing of it) so that the
stores, which hold records, and the session and the task runtime, which live
from them, need not know each other: the stores import this module, not
``session.py`` or ``tasks.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

__all__ = ["TASK_INTERRUPTED", "TASK_STATUSES", "TERMINAL_STATUSES", "RecordChange", "SessionRecord", "TaskRecord"]


@dataclass(slots=True)
class SessionRecord:
    """What a session is, as plain data: nothing here holds a task, a future or a socket.

    ``revision`` is None until ``initialize`` succeeds; ``log_level`` is None
    until the client sets one (everything is sent). Timestamps are the
    store's clock (monotonic seconds in process). ``principal`` is who opened
    the session on a server that checks bearer tokens (issuer, subject, client
    id): only requests with a token of the same principal may use it.
    ``version`` counts the writes a shared store took (it refuses a write of a
    copy older than its record: ``StaleRecord``). ``visibility`` is the
    session's own visibility rules, as plain dicts (``visibility.py``), None
    until it has some. ``subscriptions`` (the resource URIs subscribed to) is
    replaced, never changed in place: a session that subscribes to nothing
    shares one empty tuple instead of holding an empty list (56 bytes of every
    idle session).
    """

    id: str = ""
    created_at: float = 0.0
    last_seen: float = 0.0
    revision: str | None = None
    client_info: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: Sequence[str] = ()
    principal: list[str | None] | None = None
    visibility: list[dict[str, Any]] | None = None
    version: int = 0

    def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> bool:
        """True once the client has been silent too long or the session is too old."""
        return now - self.last_seen >= idle_timeout or now - self.created_at >= max_lifetime


RecordChange: TypeAlias = Callable[[SessionRecord], None]
"""One change a session made to its record (a log level set, a subscription), as a function that
makes it: a worker whose copy turned out stale makes it again on the store's newer record."""


# A task's statuses (both task generations name them alike); the last three never change again.
TASK_STATUSES: Final = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})

# The status message (and -32603 error message) of a task whose server stopped or died under it.
TASK_INTERRUPTED: Final = "Task interrupted: the server instance running it stopped"


@dataclass(slots=True)
class TaskRecord:
    """A task (a long tool call that outlives its request), as plain data: what any worker sharing
    the task store can read, answer and cancel.

    ``revision`` is the revision of the request that made it (a task is served only by the
    methods of that revision's task generation). Timestamps are wall-clock seconds, as every
    worker agrees on them; ``ttl_ms`` counts from ``created_at`` (None: kept until swept by
    another rule). ``input_requests`` are the questions outstanding, by key, ``answers`` the
    responses the handler has not taken yet; keys are never reused (``asked`` counts them).
    ``outcome`` is ``{"result": ...}`` or ``{"error": {code, message, data?}}`` once terminal.
    ``principal`` (on a server that checks tokens) and ``session_id`` (2025-11-25 tasks) scope who
    may see it; ``worker_id`` runs it. ``version`` counts the changes the store made.
    """

    id: str
    revision: str
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int
    tool: str = ""
    status: str = "working"
    status_message: str | None = None
    principal: list[str | None] | None = None
    session_id: str | None = None
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    asked: int = 0
    outcome: dict[str, Any] | None = None
    cancel_requested: bool = False
    worker_id: str | None = None
    version: int = 0

    @property
    def terminal(self) -> bool:
        """True once completed, failed or cancelled (for good)."""
        return self.status in TERMINAL_STATUSES

    def expired(self, now: float) -> bool:
        """True once its ttl (from creation) has passed."""
        return self.ttl_ms is not None and now >= self.created_at + self.ttl_ms / 1000
