"""Session ids and the clock that drives expiry, for the HTTP app.

A session is created only by a successful ``initialize`` and ends on DELETE,
after ``session_idle_timeout`` of client silence, at ``session_max_lifetime``,
or when the server closes. Only inbound requests refresh ``last_seen``. The
records live in a ``SessionStore`` (``mcp_sse_server.stores``); the clock is
injectable so expiry is tested without sleeping.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Clock", "new_session_id"]

Clock: TypeAlias = Callable[[], float]

SESSION_ID_BYTES = 32


def new_session_id() -> str:
    """A session id: 256 random bits as 43 URL-safe characters (visible ASCII)."""
    return secrets.token_urlsafe(SESSION_ID_BYTES)
