"""The fast path's remembered response heads (fast_protocol._HEADS): a head is rendered once per
header list, and never goes out stale or split."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mcp_sse_server.transport.http import fast_protocol
from mcp_sse_server.transport.http.fast_protocol import FastCycle


class Written:
    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data.append(data)

    def close(self) -> None:
        self.closed = True


def cycle_writing_to(transport: Written, keep_alive: bool) -> FastCycle:
    protocol = SimpleNamespace(transport=transport, flow=None, on_response_complete=lambda: None, tasks=set())
    return FastCycle({}, protocol, keep_alive)  # type: ignore[arg-type]


def whole(headers: Any, body: bytes, *, status: int = 200, keep_alive: bool = True) -> bytes:
    transport = Written()
    cycle = cycle_writing_to(transport, keep_alive)
    cycle._whole(status, headers, body)
    assert cycle.response_complete and len(transport.data) == 1  # one write
    return transport.data[0]


def started(headers: Any, first: bytes, *, keep_alive: bool = True) -> tuple[FastCycle, bytes]:
    """A response started with ``headers`` and its first body chunk: the cycle and what it wrote."""
    transport = Written()
    cycle = cycle_writing_to(transport, keep_alive)
    cycle._start(200, headers)
    cycle._body(first, True)
    return cycle, b"".join(transport.data)


def test_a_header_list_changed_in_place_is_rendered_anew() -> None:
    headers = [(b"content-type", b"text/event-stream")]
    first = whole(headers, b"data: 1\n\n")
    assert first == b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 9\r\n\r\ndata: 1\n\n"
    assert whole(headers, b"{}").endswith(b"content-length: 2\r\n\r\n{}")  # the remembered head, a new length
    headers.append((b"x-extra", b"1"))
    assert b"x-extra: 1\r\ncontent-length: 2\r\n\r\n{}" in whole(headers, b"{}")
    assert whole(headers, b"{}", status=404).startswith(b"HTTP/1.1 404 Not Found\r\n")  # status is part of it


def test_a_closing_response_says_so_after_a_remembered_head() -> None:
    headers = [(b"content-type", b"application/json")]
    whole(headers, b"{}")
    assert whole(headers, b"{}", keep_alive=False) == (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}"
    )


def test_a_header_that_would_split_the_response_is_refused_every_time() -> None:
    headers = [(b"x-bad", b"a\r\nset-cookie: b")]
    for _ in range(2):
        with pytest.raises(RuntimeError, match="CR or LF"):
            whole(headers, b"")


def test_the_remembered_heads_stay_bounded() -> None:
    for n in range(fast_protocol._HEADS_MAX * 3):
        whole([(b"mcp-session-id", b"%d" % n)], b"")
    assert len(fast_protocol._HEADS) <= fast_protocol._HEADS_MAX


async def test_a_stream_head_is_remembered_and_shared_with_whole_responses() -> None:
    headers = [(b"content-type", b"text/event-stream")]
    for _ in range(2):  # rendered, then remembered
        cycle, written = started(headers, b"data: 1\n\n")
        assert cycle.streamed and written == (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            b"9\r\ndata: 1\n\n\r\n"
        )
    assert whole(headers, b"{}").startswith(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 2")
    _, closing = started(headers, b"x", keep_alive=False)
    assert b"connection: close\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n" in closing


async def test_a_start_naming_its_length_or_connection_is_not_remembered() -> None:
    for headers in ([(b"Content-Length", b"2")], [(b"connection", b"close")], [(b"transfer-encoding", b"chunked")]):
        for _ in range(2):
            cycle, written = started(headers, b"{}")
            assert id(headers) not in fast_protocol._HEADS
        if headers[0][0] == b"Content-Length":
            assert not cycle.streamed and written.endswith(b"content-length: 2\r\n\r\n{}")
        elif headers[0][0] == b"connection":
            assert written.count(b"connection: close") == 2  # (its own line, then ours: as before)
            assert not cycle.keep_alive
        else:
            assert written.count(b"transfer-encoding") == 1  # ours only


async def test_a_stream_header_that_would_split_the_response_is_refused() -> None:
    with pytest.raises(RuntimeError, match="CR or LF"):
        started([(b"x-bad", b"a\nb")], b"")
