"""RFC 9110 Accept evaluation."""

from __future__ import annotations

import pytest

from mcp_sse_server.transport.http import accept
from mcp_sse_server.transport.http.accept import accepts_json_and_sse, parse_accept, quality


@pytest.mark.parametrize(
    ("header", "json_ok", "sse_ok"),
    [
        ("application/json, text/event-stream", True, True),
        ("text/event-stream, application/json", True, True),
        ("*/*", True, True),
        ("application/*;q=0.5, text/*", True, True),
        ("text/*;q=0, */*", True, False),
        ("*/*, text/event-stream;q=0", True, False),
        ("application/json;q=0, */*", False, True),
        ("application/json;q=0.001, text/event-stream;q=1.000", True, True),
        ("application/json;charset=utf-8, text/event-stream", True, True),
        ("APPLICATION/JSON, Text/Event-Stream", True, True),
        ("application/json", True, False),
        ("", False, False),
        ("garbage", False, False),
        ("*/json, text/event-stream", False, True),  # */subtype is not a valid range
        ("application/json;q=2, text/event-stream", False, True),  # an invalid q makes the range unusable
        ("application/json;q=abc, text/event-stream", False, True),
        ('text/event-stream;foo="a,b";q=0, */*', True, False),  # commas inside quotes
        ("text/event-stream;q=0;ext=1, */*", True, False),  # accept-ext after q
    ],
)
def test_accepts(header: str, json_ok: bool, sse_ok: bool) -> None:
    assert accepts_json_and_sse(header.encode()) == (json_ok, sse_ok)


def test_no_header_accepts_anything() -> None:
    assert accepts_json_and_sse(None) == (True, True)


def test_the_most_specific_range_wins_whatever_the_order() -> None:
    ranges = parse_accept("text/event-stream;q=0.2, text/*;q=0.9, */*;q=0.1")
    assert quality(ranges, "text", "event-stream") == 0.2
    assert quality(ranges, "text", "plain") == 0.9
    assert quality(ranges, "image", "png") == 0.1
    assert quality(parse_accept("text/html"), "image", "png") == 0


def test_a_range_with_parameters_is_more_specific() -> None:
    ranges = parse_accept("application/json;q=0, application/json;charset=utf-8")
    assert quality(ranges, "application", "json") == 1.0


def test_results_are_cached_and_bounded() -> None:
    accept._cache.clear()
    accepts_json_and_sse(b"application/json, text/event-stream")
    assert b"application/json, text/event-stream" in accept._cache
    for n in range(accept._CACHE_SIZE + 10):
        accepts_json_and_sse(b"text/x-%d" % n)
    assert len(accept._cache) <= accept._CACHE_SIZE
