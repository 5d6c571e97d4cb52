"""Every limit and security default of the HTTP transport, in one place.

``McpHttpServer.bind`` takes each field as a keyword argument with the same
name and default, and the ASGI app and ``SseTransport`` read them from an
``HttpLimits``, so the documented defaults cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final

__all__ = ["DEFAULT_LIMITS", "HttpLimits"]


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Limits and security settings of one MCP endpoint (durations in seconds).

    ``allowed_origins``
        Browser origins (``https://app.example.com``) allowed besides loopback
        ones. Empty (the default): only loopback origins may send an ``Origin``
        header. When set, a request without ``Origin`` is refused too, and it is
        required to listen on a non-loopback address.
    ``allowed_hosts``
        ``Host`` header values (hostnames, optionally ``host:port``) accepted
        besides loopback names, the allowlisted origins' hosts and the bound
        address. ``"*"`` accepts any Host (behind a proxy that checks it).
    ``max_sessions`` (1000)
        Live sessions at once; beyond it initialize gets 503 after expired
        sessions are reclaimed.
    ``max_request_bytes`` (4 MiB)
        Largest POST body; larger ones get 413.
    ``session_idle_timeout`` (30 min)
        A session ends after this much client silence. Only inbound requests
        count: an open stream is not liveness.
    ``session_max_lifetime`` (12 h)
        A session ends this long after initialize, active or not.
    ``max_request_streams`` (64)
        Requests in flight per session; more get 429. A request whose client
        disconnected still counts until its handler finishes (a disconnect is
        not a cancellation).
    ``backlog_limit`` (256)
        Server-initiated messages kept for a session with no standalone GET
        stream; when full the oldest is dropped (a dropped request fails its
        caller).
    ``replay_buffer_size`` (256)
        Standalone-stream events kept for a GET with ``Last-Event-ID``.
    ``keepalive_interval`` (15 s)
        An SSE comment goes to every stream silent for this long.
    ``shutdown_deadline`` (10 s)
        How long ``close()`` lets in-flight requests finish before ending them.
    ``reap_interval`` (30 s)
        How often expired sessions are looked for (they are also refused as
        soon as a request finds them expired).
    ``retry_interval`` (1 s)
        The reconnection delay sent (SSE ``retry``) on resumable streams
        (2025-11-25 sessions): how long a client waits before resuming a
        stream the server closed.
    ``stream_log_grace`` (30 s)
        How long a request stream's logged events are kept after its
        response, for a client resuming late; each stream keeps at most
        ``replay_buffer_size`` events.
    """

    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    max_sessions: int = 1000
    max_request_bytes: int = 4 * 1024 * 1024
    session_idle_timeout: float = 30 * 60.0
    session_max_lifetime: float = 12 * 3600.0
    max_request_streams: int = 64
    backlog_limit: int = 256
    replay_buffer_size: int = 256
    keepalive_interval: float = 15.0
    shutdown_deadline: float = 10.0
    reap_interval: float = 30.0
    retry_interval: float = 1.0
    stream_log_grace: float = 30.0

    def __post_init__(self) -> None:
        # Accept any iterable of strings (a set or list from a caller) but store frozensets.
        object.__setattr__(self, "allowed_origins", _normalized_origins(self.allowed_origins))
        object.__setattr__(self, "allowed_hosts", frozenset(h.strip().lower() for h in self.allowed_hosts))
        for name in ("max_sessions", "max_request_bytes", "max_request_streams"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        for name in ("backlog_limit", "replay_buffer_size"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        for name in (
            "session_idle_timeout",
            "session_max_lifetime",
            "keepalive_interval",
            "shutdown_deadline",
            "reap_interval",
            "retry_interval",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")

        value = self.stream_log_grace
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"stream_log_grace must be a non-negative number of seconds, not {value!r}")

    def with_changes(self, **changes: Any) -> HttpLimits:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)


def _normalized_origins(origins: Iterable[str]) -> frozenset[str]:
    if isinstance(origins, str):
        raise ValueError("allowed_origins must be a collection of origins, not a single string")
    result = set()
    for origin in origins:
        if not isinstance(origin, str) or "://" not in origin:
            raise ValueError(f"allowed_origins entries look like https://app.example.com, not {origin!r}")
        result.add(origin.strip().rstrip("/").lower())
    return frozenset(result)


DEFAULT_LIMITS: Final = HttpLimits()
