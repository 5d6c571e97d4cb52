"""Server-Sent Events framing for JSON-RPC messages.

Every message is one ``message`` event whose data is the compact JSON
encoding (orjson never emits a raw newline, so one ``data:`` line suffices).
Events on the standalone stream carry an ``id:`` from the session's event
log (``stores``), unique across the session; replies on a POST's own stream
carry none, because they cannot be replayed.

>>> frame(b'{"jsonrpc":"2.0","method":"x"}')
b'data: {"jsonrpc":"2.0","method":"x"}\\n\\n'
>>> frame(b"{}", "7")
b'id: 7\\ndata: {}\\n\\n'
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "KEEPALIVE",
    "POST_SSE_HEADERS",
    "SSE_HEADERS",
    "STATELESS_SSE_HEADERS",
    "frame",
    "parse_event_id",
    "priming",
    "status_for",
]

KEEPALIVE: Final = b": keepalive\n\n"

# Response headers of the standalone stream, built once.
SSE_HEADERS: Final[list[tuple[bytes, bytes]]] = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
]
# A POST's reply stream: responses to POST are not cached without explicit
# freshness (RFC 9111), so one header does, and every header costs on each reply.
POST_SSE_HEADERS: Final[list[tuple[bytes, bytes]]] = [(b"content-type", b"text/event-stream")]
# A 2026-07-28 request's stream: proxies must pass events on as they come (no buffering).
STATELESS_SSE_HEADERS: Final[list[tuple[bytes, bytes]]] = [*POST_SSE_HEADERS, (b"x-accel-buffering", b"no")]

# The HTTP status of a 2026-07-28 error answered before anything was streamed (others are 200).
_ERROR_STATUS: Final = {
    -32700: 400,
    -32600: 400,
    -32601: 404,
    -32602: 400,
    -32020: 400,
    -32021: 400,
    -32022: 400,
}


def status_for(code: int) -> int:
    """The HTTP status of a 2026-07-28 JSON-RPC error (the specification's table; 200 otherwise)."""
    return _ERROR_STATUS.get(code, 200)


def frame(data: bytes, event_id: str | None = None) -> bytes:
    """One SSE event carrying ``data`` (which must contain no newline)."""
    if event_id is None:
        return b"data: " + data + b"\n\n"
    return b"id: %b\ndata: %b\n\n" % (event_id.encode("ascii"), data)


def priming(event_id: str, retry_interval: float) -> bytes:
    """A priming event: an id the client may resume from, the reconnection delay, empty data.

    >>> priming("0/r1", 1.5)
    b'id: 0/r1\\nretry: 1500\\ndata: \\n\\n'
    """
    return b"id: %b\nretry: %d\ndata: \n\n" % (event_id.encode("ascii"), round(retry_interval * 1000))


def parse_event_id(value: bytes | str | None) -> str | None:
    """A ``Last-Event-ID`` as an event id we could have issued; None for anything else
    (empty, too long, or not visible ASCII)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = value.strip()
    if not value or len(value) > 128 or not value.isascii() or not value.isprintable() or " " in value:
        return None
    return value
