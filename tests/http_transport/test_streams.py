"""SseStream: ordering under back-pressure, headers, ending; the keep-alive ticker."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_sse_server.transport.http.sse import KEEPALIVE
from mcp_sse_server.transport.http.streams import KeepaliveTicker, SseStream


class SlowPeer:
    """An ASGI send whose body writes block until the test lets them through."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def send(self, message: dict[str, Any]) -> None:
        await self.gate.wait()
        self.messages.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")


async def test_a_single_final_frame_goes_out_with_a_content_length() -> None:
    peer = SlowPeer()
    stream = SseStream(peer.send, [(b"content-type", b"text/event-stream"), (b"x-extra", b"1")])
    await stream.write(b"data: {}\n\n", final=True)
    start, body = peer.messages
    assert start["status"] == 200
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"text/event-stream"
    assert headers[b"x-extra"] == b"1"
    assert headers[b"content-length"] == b"10"
    assert body == {"type": "http.response.body", "body": b"data: {}\n\n", "more_body": False}
    await stream.write(b"late")  # ignored after the end
    assert len(peer.messages) == 2


async def test_concurrent_writers_keep_order_under_back_pressure() -> None:
    peer = SlowPeer()
    stream = SseStream(peer.send)
    await stream.write(b"1")
    peer.gate.clear()  # the peer stops reading
    first = asyncio.create_task(stream.write(b"2"))
    await asyncio.sleep(0)
    others = [asyncio.create_task(stream.write(b"%d" % n)) for n in range(3, 7)]
    ending = asyncio.create_task(stream.write(b"7", final=True))
    await asyncio.sleep(0)
    assert all(task.done() for task in [*others, ending])  # queued behind the flusher
    peer.gate.set()
    await first
    assert peer.body == b"1234567"
    assert peer.messages[-1]["more_body"] is False
    # The frames queued during the stall went out together.
    assert len(peer.messages) <= 5


async def test_end_closes_an_open_stream_once() -> None:
    peer = SlowPeer()
    stream = SseStream(peer.send)
    await stream.flush()  # headers only
    assert [m["type"] for m in peer.messages] == ["http.response.start"]
    await stream.end()
    await stream.end()
    assert peer.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert len(peer.messages) == 2


async def test_a_failing_send_marks_the_stream_dead() -> None:
    async def broken(message: dict[str, Any]) -> None:
        raise OSError("connection reset")

    stream = SseStream(broken)
    await stream.write(b"x")
    assert stream.done and stream.ended
    await stream.write(b"y")  # no exception, nothing sent


async def test_keepalive_only_for_silent_streams() -> None:
    quiet_peer, busy_peer = SlowPeer(), SlowPeer()
    quiet, busy = SseStream(quiet_peer.send), SseStream(busy_peer.send)
    ticker = KeepaliveTicker(3600)
    ticker.add(quiet)
    ticker.add(busy)
    ticker.tick()  # both are new: counted as active once
    await busy.write(b"data: x\n\n")
    ticker.tick()
    await asyncio.sleep(0)
    assert quiet_peer.body == KEEPALIVE
    assert busy_peer.body == b"data: x\n\n"
    await quiet.end()
    ticker.tick()
    assert len(ticker) == 1  # ended streams are dropped
    ticker.close()
    assert len(ticker) == 0
