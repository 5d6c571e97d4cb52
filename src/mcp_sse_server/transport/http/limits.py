"""Every limit and security default of the HTTP transport, in one place.

``McpHttpServer.bind(limits=HttpLimits(...))`` (or a field name as a keyword
override), the ASGI app, ``SseTransport`` and the ``serve`` command's options
all read them from an ``HttpLimits``; each default is written once, here.
Each field's ``metadata`` carries a one-line ``help`` and the ``unit`` of its
value (``count``, ``bytes``, ``seconds``, ``origins``, ``hosts``) for the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ...engine.batches import DEFAULT_MAX_BATCH_MESSAGES

__all__ = ["DEFAULT_LIMITS", "HttpLimits"]


def _about(unit: str, help: str) -> dict[str, str]:
    """A field's metadata: its unit and one line of help (the CLI builds its options from them)."""
    return {"unit": unit, "help": help}


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
    ``max_batch_messages`` (64)
        Messages in one JSON-RPC batch (2025-03-26 sessions only; see
        ``batch.py``); a longer batch is refused whole with 400. Each request
        in it counts against ``max_request_streams`` too.
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

    Connection limits (enforced by ``McpHttpServer.bind``'s HTTP protocol,
    see ``connections.py``; an ASGI server you mount the app in has its own):

    ``max_header_bytes`` (64 KiB)
        Largest request head: the request line plus the header block. Beyond
        it the connection gets 431 with a JSON-RPC error and is closed, before
        more of the head is buffered.
    ``max_header_count`` (100)
        Most header fields in one request; more get 431 and the connection is
        closed.
    ``header_timeout`` (10 s)
        A request head must arrive completely within this long of its first
        byte; otherwise 408 and the connection is closed.
    ``body_timeout`` (30 s)
        Longest silence while a request body is arriving (time between reads,
        not for the whole body); then 408 (unless a response has started)
        and the connection is closed.
    ``connection_idle_timeout`` (15 s)
        A connection with no request in progress and no response in flight (a
        new one, or a keep-alive one after its response) that receives nothing
        for this long is closed. Longer than common clients' pool expiry (5 s),
        so they drop an idle connection before the server does.
    ``max_connections`` (4096)
        Open connections at once, SSE streams included. A connection beyond it
        makes room by closing an idle one: one that has sent nothing since it
        was accepted (the oldest first), else the longest-idle keep-alive one;
        a request or response under way (an SSE stream) is never closed for it.
        With none idle, it gets 503 with a JSON-RPC error and is closed.
        ``bind`` lowers it to fit the process's file-descriptor limit (leaving
        64 spare), with a warning.

    Resumable streams (2025-11-25 sessions):

    ``retry_interval`` (1 s)
        The reconnection delay sent (SSE ``retry``) on resumable streams
        (2025-11-25 sessions): how long a client waits before resuming a
        stream the server closed.
    ``stream_log_grace`` (30 s)
        How long a request stream's logged events are kept after its
        response, for a client resuming late; each stream keeps at most
        ``replay_buffer_size`` events.
    ``ended_streams_kept`` (64)
        How many of a session's completed request streams are kept for that
        grace at once; beyond it the oldest is dropped first. Bounds a busy
        session's memory: without it, a session answering thousands of
        streamed calls a second would hold every stream of the last 30 s.
    ``stream_reconnect_after`` (5 min)
        A request stream open this long is closed with its ``retry`` hint
        while the request goes on; the client resumes it with GET +
        ``Last-Event-ID``. Keeps one response from outliving the limits of
        proxies on the way (handlers can also call
        ``context.close_sse_stream()``).
    """

    allowed_origins: frozenset[str] = field(
        default_factory=frozenset,
        metadata=_about(
            "origins",
            "A browser origin allowed to connect, e.g. https://app.example.com (repeatable); required to listen "
            "beyond loopback.",
        ),
    )
    allowed_hosts: frozenset[str] = field(
        default_factory=frozenset,
        metadata=_about(
            "hosts", "A Host header accepted besides loopback names and the bound address (repeatable; * for any)."
        ),
    )
    max_sessions: int = field(default=1000, metadata=_about("count", "Most sessions live at once."))
    max_request_bytes: int = field(
        default=4 * 1024 * 1024, metadata=_about("bytes", "Largest POST body; larger ones get 413.")
    )
    session_idle_timeout: float = field(
        default=30 * 60.0, metadata=_about("seconds", "End a session after this much client silence.")
    )
    session_max_lifetime: float = field(
        default=12 * 3600.0, metadata=_about("seconds", "End every session this long after it began.")
    )
    max_request_streams: int = field(default=64, metadata=_about("count", "Most requests in flight per session."))
    max_batch_messages: int = field(
        default=DEFAULT_MAX_BATCH_MESSAGES,
        metadata=_about("count", "Most messages in one JSON-RPC batch (2025-03-26 sessions only)."),
    )
    backlog_limit: int = field(
        default=256, metadata=_about("count", "Server messages kept for a session until its GET stream opens.")
    )
    replay_buffer_size: int = field(
        default=256, metadata=_about("count", "Stream events kept for a reconnect with Last-Event-ID.")
    )
    keepalive_interval: float = field(
        default=15.0, metadata=_about("seconds", "Send an SSE comment on every stream silent this long.")
    )
    shutdown_deadline: float = field(
        default=10.0, metadata=_about("seconds", "How long shutdown waits for requests in flight.")
    )
    reap_interval: float = field(default=30.0, metadata=_about("seconds", "How often expired sessions are swept."))
    max_header_bytes: int = field(
        default=64 * 1024, metadata=_about("bytes", "Largest request line plus headers; larger get 431.")
    )
    max_header_count: int = field(
        default=100, metadata=_about("count", "Most header fields per request; more get 431.")
    )
    header_timeout: float = field(
        default=10.0, metadata=_about("seconds", "Time for a request's headers to arrive; then 408.")
    )
    body_timeout: float = field(
        default=30.0, metadata=_about("seconds", "Longest silence while a request body arrives; then 408.")
    )
    connection_idle_timeout: float = field(
        default=15.0, metadata=_about("seconds", "Close a connection with no request in progress after this long.")
    )
    max_connections: int = field(
        default=4096,
        metadata=_about(
            "count", "Most open connections; beyond it an idle one is closed to make room, else the new one gets 503."
        ),
    )
    retry_interval: float = field(
        default=1.0, metadata=_about("seconds", "Reconnection delay sent on resumable (2025-11-25) streams.")
    )
    stream_log_grace: float = field(
        default=30.0, metadata=_about("seconds", "How long a request stream's events are kept after its response.")
    )
    ended_streams_kept: int = field(
        default=64,
        metadata=_about("count", "Most completed request streams a session keeps for late resumption."),
    )
    stream_reconnect_after: float = field(
        default=300.0,
        metadata=_about("seconds", "Close a resumable request stream open this long; the client resumes it."),
    )

    def __post_init__(self) -> None:
        # Accept any iterable of strings (a set or list from a caller) but store frozensets.
        object.__setattr__(self, "allowed_origins", _normalized_origins(self.allowed_origins))
        object.__setattr__(self, "allowed_hosts", frozenset(h.strip().lower() for h in self.allowed_hosts))
        for name in (
            "max_sessions",
            "max_request_bytes",
            "max_request_streams",
            "max_batch_messages",
            "max_header_bytes",
            "max_header_count",
            "max_connections",
        ):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        for name in ("backlog_limit", "replay_buffer_size", "ended_streams_kept"):
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
            "stream_reconnect_after",
            "header_timeout",
            "body_timeout",
            "connection_idle_timeout",
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
