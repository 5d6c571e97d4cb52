"""The SSE parser follows the WHATWG event-stream rules, however the bytes are split."""

from __future__ import annotations

import pytest

from mcp_sse_server.client._sse import SseEvent, SseParser


def parse(stream: bytes, chunk: int | None = None) -> tuple[list[SseEvent], SseParser]:
    parser = SseParser()
    events: list[SseEvent] = []
    if chunk is None:
        events += parser.feed(stream)
    else:
        for start in range(0, len(stream), chunk):
            events += parser.feed(stream[start : start + chunk])
    return events, parser


SAMPLE = (
    "\ufeff: a comment first\r\n"
    "retry: 250\r\n"
    "id: 1\r\n"
    "event: message\r\n"
    'data: {"a":\r\n'
    "data:  1}\r\n"
    "\r\n"
    "data: é unicode ✓\r"
    "\r"
    "id: 2\n"
    "event: endpoint\n"
    "data: /messages?x=1\n"
    "\n"
).encode()


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 7])
def test_any_chunking_gives_the_same_events(chunk: int | None) -> None:
    events, parser = parse(SAMPLE, chunk)
    assert events == [
        SseEvent("message", '{"a":\n 1}', "1"),
        SseEvent("message", "é unicode ✓", "1"),
        SseEvent("endpoint", "/messages?x=1", "2"),
    ]
    assert parser.retry == 250
    assert parser.last_event_id == "2"


def test_one_leading_space_is_stripped_and_no_colon_means_empty_value() -> None:
    events, _ = parse(b"data:  two spaces\ndata\ndata:x\n\n")
    assert events == [SseEvent("message", " two spaces\n\nx", None)]


def test_an_event_without_data_is_not_dispatched_but_its_id_counts() -> None:
    events, parser = parse(b"id: prime\nretry: 10\n\nevent: ping\n\n")
    assert events == []
    assert parser.last_event_id == "prime"
    assert parser.retry == 10


def test_empty_data_line_dispatches_an_empty_event() -> None:
    events, _ = parse(b"data:\n\n")
    assert events == [SseEvent("message", "", None)]


def test_invalid_retry_and_ids_with_nul_are_ignored() -> None:
    events, parser = parse(b"retry: 12a\nretry: \xd9\xa3\nid: 5\n\nid: a\x00b\ndata: x\n\n")
    assert parser.retry is None
    assert events == [SseEvent("message", "x", "5")]


def test_unknown_fields_and_comments_are_skipped() -> None:
    events, _ = parse(b": keepalive\nfoo: bar\ndata: y\n:another\n\n")
    assert events == [SseEvent("message", "y", None)]


def test_event_type_resets_after_dispatch() -> None:
    events, _ = parse(b"event: endpoint\ndata: /m\n\ndata: z\n\n")
    assert [e.event for e in events] == ["endpoint", "message"]


def test_an_unterminated_event_at_the_end_is_not_dispatched() -> None:
    events, _ = parse(b"data: complete\n\ndata: half")
    assert events == [SseEvent("message", "complete", None)]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == [SseEvent("message", "a", None)]
    assert parser.feed(b"\ndata: b\n\n") == [SseEvent("message", "b", None)]


def test_a_long_line_in_many_chunks() -> None:
    payload = b"x" * 200_000
    events, _ = parse(b"data: " + payload + b"\n\n", chunk=4096)
    assert events == [SseEvent("message", payload.decode(), None)]
