"""SSE framing, the event buffer, limits and session ids."""

from __future__ import annotations

import re

import pytest

from mcp_sse_server import SessionRecord
from mcp_sse_server.engine.stores import STANDALONE_STREAM, stream_of
from mcp_sse_server.stores import MemoryEventLog, MemorySessionStore, StoredEvent
from mcp_sse_server.transport.http import HttpLimits
from mcp_sse_server.transport.http.sessions import new_session_id
from mcp_sse_server.transport.http.sse import frame, parse_event_id


def test_frames() -> None:
    assert frame(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert frame(b"{}", "42") == b"id: 42\ndata: {}\n\n"
    assert frame(b"{}", "7/r3") == b"id: 7/r3\ndata: {}\n\n"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("7", "7"),
        (b" 12 ", "12"),
        ("0", "0"),
        ("4/r1", "4/r1"),
        ("", None),
        ("a b", None),
        ("9" * 200, None),
        ("caf\u00e9", None),
        (None, None),
    ],
)
def test_parse_event_id(value: str | bytes | None, parsed: str | None) -> None:
    assert parse_event_id(value) == parsed


def test_event_ids_name_their_stream() -> None:
    assert stream_of("12") == STANDALONE_STREAM
    assert stream_of("12/r7") == "r7"


async def test_the_log_allocates_nothing_for_a_session_until_used() -> None:
    log = MemoryEventLog(4, 4)
    assert await log.take_undelivered("s", STANDALONE_STREAM) == [] and await log.replay_after("s", "0") == []
    assert log._sessions == {}


async def test_backlog_drops_the_oldest_and_reports_it() -> None:
    log = MemoryEventLog(2, 10)
    appended = [
        await log.append("s", STANDALONE_STREAM, b"f%d" % n, 0 if n == 0 else None, delivered=False) for n in range(3)
    ]
    events = [event for event, _ in appended]
    assert [dropped for _, dropped in appended] == [None, None, events[0]]
    assert events[0].request_id == 0 and [e.event_id for e in events] == ["1", "2", "3"]
    assert await log.take_undelivered("s", STANDALONE_STREAM) == events[1:]
    assert log.backlog_size("s") == 0
    # Taken events were delivered: they are replayable now.
    assert await log.replay_after("s", "0") == events[1:]


async def test_replay_window_and_streams_stay_apart() -> None:
    log = MemoryEventLog(10, 3)
    for _ in range(5):
        await log.append("s", STANDALONE_STREAM, b"x", None, delivered=True)
    other, _ = await log.append("s", "r1", b"y", None, delivered=True)
    assert other.event_id == "6/r1"
    assert [e.event_id for e in await log.replay_after("s", "0")] == ["3", "4", "5"]
    assert [e.event_id for e in await log.replay_after("s", "4")] == ["5"]
    assert await log.replay_after("s", "5") == [] and await log.replay_after("s", "99") == []
    assert await log.replay_after("s", "0/r1") == [other]  # only that stream's events
    assert await log.replay_after("t", "0") == []  # nor another session's


async def test_zero_limits_keep_nothing() -> None:
    log = MemoryEventLog(0, 0)
    event, dropped = await log.append("s", STANDALONE_STREAM, b"x", None, delivered=False)
    assert dropped == event
    await log.append("s", STANDALONE_STREAM, b"x", None, delivered=True)
    assert await log.replay_after("s", "0") == []


async def test_forget_returns_the_undelivered_backlog() -> None:
    log = MemoryEventLog(5, 5)
    event, _ = await log.append("s", STANDALONE_STREAM, b"x", 3, delivered=False)
    assert await log.forget("s") == [StoredEvent("1", b"x", 3)] == [event]
    assert await log.take_undelivered("s", STANDALONE_STREAM) == []


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
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", i) for i in ids)  # 256 bits, URL-safe base64


async def test_session_store_and_expiry() -> None:
    store = MemorySessionStore()
    record = SessionRecord("abc", created_at=100.0, last_seen=100.0)
    await store.create(record)
    with pytest.raises(ValueError):
        await store.create(record)
    assert await store.get("abc") is record and await store.count() == 1
    assert not record.expired(159.0, idle_timeout=60, max_lifetime=1000)
    assert await store.expired(160.0, idle_timeout=60, max_lifetime=1000) == ["abc"]
    await store.touch(record, 1050.0)
    assert record.last_seen == 1050.0 and await store.expired(1060.0, 60, 1000) == []
    assert await store.expired(1100.0, idle_timeout=60, max_lifetime=1000) == ["abc"]  # past its lifetime
    assert await store.delete("abc") and not await store.delete("abc")
    assert await store.get("abc") is None


def test_ended_streams_kept_is_a_non_negative_count() -> None:
    assert HttpLimits(ended_streams_kept=0).ended_streams_kept == 0
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="ended_streams_kept"):
            HttpLimits(ended_streams_kept=bad)  # type: ignore[arg-type]
