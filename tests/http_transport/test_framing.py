"""SSE framing, the event buffer, limits and session ids."""

from __future__ import annotations

import re

import pytest

from mcp_sse_server.transport.http import HttpLimits, MemoryEventBuffer, MemorySessionStore, Session
from mcp_sse_server.transport.http.events import BufferedEvent
from mcp_sse_server.transport.http.sessions import new_session_id
from mcp_sse_server.transport.http.sse import frame, parse_event_id


def test_frames() -> None:
    assert frame(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert frame(b"{}", 42) == b"id: 42\ndata: {}\n\n"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [("7", 7), (b" 12 ", 12), ("0", 0), ("-1", None), ("p7", None), ("²", None), ("9" * 25, None), (None, None)],
)
def test_parse_event_id(value: str | bytes | None, parsed: int | None) -> None:
    assert parse_event_id(value) == parsed


def test_the_buffer_allocates_nothing_until_used() -> None:
    buffer = MemoryEventBuffer(4, 4)
    assert buffer._backlog is None and buffer._history is None
    assert buffer.take_pending() == [] and buffer.replay_after(0) == []


def test_backlog_drops_the_oldest_and_reports_it() -> None:
    buffer = MemoryEventBuffer(2, 10)
    events = [BufferedEvent(buffer.next_id(), b"f%d" % n, n if n == 0 else None) for n in range(3)]
    assert buffer.add_pending(events[0]) is None
    assert buffer.add_pending(events[1]) is None
    assert buffer.add_pending(events[2]) == events[0]
    assert buffer.take_pending() == events[1:]
    assert buffer.backlog_size == 0
    # Taken events were delivered: they are replayable now.
    assert buffer.replay_after(0) == events[1:]


def test_replay_window() -> None:
    buffer = MemoryEventBuffer(10, 3)
    events = [BufferedEvent(buffer.next_id(), b"x") for _ in range(5)]
    for event in events:
        buffer.record(event)
    assert [e.event_id for e in buffer.replay_after(0)] == [3, 4, 5]
    assert [e.event_id for e in buffer.replay_after(4)] == [5]
    assert buffer.replay_after(5) == []
    assert buffer.replay_after(99) == []


def test_zero_limits_keep_nothing() -> None:
    buffer = MemoryEventBuffer(0, 0)
    event = BufferedEvent(buffer.next_id(), b"x")
    assert buffer.add_pending(event) == event
    buffer.record(event)
    assert buffer.replay_after(0) == []


def test_clear_returns_the_undelivered_backlog() -> None:
    buffer = MemoryEventBuffer(5, 5)
    event = BufferedEvent(buffer.next_id(), b"x")
    buffer.add_pending(event)
    assert buffer.clear() == [event]
    assert buffer.take_pending() == []


def test_limit_defaults_are_documented_values() -> None:
    limits = HttpLimits()
    assert limits.session_idle_timeout == 30 * 60
    assert limits.session_max_lifetime == 12 * 3600
    assert limits.max_request_streams == 64
    assert limits.max_request_bytes == 4 * 1024 * 1024
    assert limits.allowed_origins == frozenset()
    assert "30 min" in (HttpLimits.__doc__ or "") and "12 h" in (HttpLimits.__doc__ or "")


@pytest.mark.parametrize(
    "bad",
    [
        {"max_sessions": 0},
        {"max_request_bytes": -1},
        {"session_idle_timeout": 0},
        {"keepalive_interval": True},
        {"backlog_limit": -1},
        {"allowed_origins": "https://one.example"},
        {"allowed_origins": ["app.example.com"]},
    ],
)
def test_limits_are_validated(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        HttpLimits(**bad)  # type: ignore[arg-type]


def test_origins_are_normalized() -> None:
    limits = HttpLimits(allowed_origins=["https://App.Example.com/"])  # type: ignore[arg-type]
    assert limits.allowed_origins == frozenset({"https://app.example.com"})
    assert limits.with_changes(max_sessions=5).max_sessions == 5


def test_session_ids_are_random_visible_ascii() -> None:
    ids = {new_session_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[\x21-\x7e]{32}", i) for i in ids)


def test_session_store_and_expiry() -> None:
    store = MemorySessionStore()
    session = Session("abc", None, None, now=100.0)  # type: ignore[arg-type]
    store.add(session)
    with pytest.raises(ValueError):
        store.add(session)
    assert store.get("abc") is session and len(store) == 1 and list(store) == [session]
    assert not session.expired(159.0, idle_timeout=60, max_lifetime=1000)
    assert session.expired(160.0, idle_timeout=60, max_lifetime=1000)
    session.last_seen = 1050.0
    assert session.expired(1100.0, idle_timeout=60, max_lifetime=1000)
    assert store.remove("abc") is session and store.remove("abc") is None
