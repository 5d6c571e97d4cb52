"""SseStream: ordering under back-pressure, headers, ending; the keep-alive ticker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_sse_server.transport.http.asgi import WHOLE_RESPONSE
from mcp_sse_server.transport.http.sse import KEEPALIVE
from mcp_sse_server.transport.http.streams import QUEUE_LIMIT, KeepaliveTicker, SseStream, send_whole


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


class UnreadPeer:
    """An ASGI send that takes the headers, then never completes a body write (a client that stopped reading)."""

    def __init__(self) -> None:
        self.sent = 0
        self.stuck = asyncio.Event()  # never set

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            self.sent += 1
            await self.stuck.wait()


@pytest.mark.parametrize("writers", [2, 3])
async def test_every_writer_waits_on_the_bound_behind_an_unread_stream(writers: int) -> None:
    peer = UnreadPeer()
    stream = SseStream(peer.send)
    frame = b"data: " + b"x" * 10_000 + b"\n\n"
    written = [0] * writers

    async def writer(index: int) -> None:
        for _ in range(1_000):  # 10 MB each if nothing held them back
            await stream.write(frame)
            written[index] += 1

    tasks = [asyncio.create_task(writer(index)) for index in range(writers)]
    most = 0
    for _ in range(200):
        await asyncio.sleep(0)
        most = max(most, stream.pending_bytes)
    try:
        assert peer.sent == 1  # the flusher is stuck in its first body write
        assert not any(task.done() for task in tasks)  # every writer is blocked, none runs away
        assert most <= QUEUE_LIMIT + writers * len(frame)
        assert sum(written) * len(frame) <= 2 * QUEUE_LIMIT + writers * len(frame)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_writers_waiting_on_the_bound_return_when_the_stream_fails() -> None:
    failing = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            await failing.wait()
            raise OSError("connection reset")

    stream = SseStream(send)
    big = b"x" * (QUEUE_LIMIT + 1)
    flusher = asyncio.create_task(stream.write(b"first"))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(stream.write(big))
    await asyncio.sleep(0)
    assert stream.flushing and not waiter.done()
    failing.set()
    await asyncio.wait_for(asyncio.gather(flusher, waiter), 5.0)
    assert stream.ended and stream.pending_bytes == 0


async def test_a_slow_peer_drains_the_bounded_queue_in_order() -> None:
    peer = SlowPeer()
    stream = SseStream(peer.send)
    await stream.write(b"start")
    peer.gate.clear()
    frames = [b"%05d" % n + b"." * 50_000 for n in range(30)]

    async def writer(part: list[bytes]) -> None:
        for item in part:
            await stream.write(item)

    tasks = [asyncio.create_task(writer(frames[i::3])) for i in range(3)]
    await asyncio.sleep(0)
    assert not all(task.done() for task in tasks)
    peer.gate.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5.0)
    body = peer.body
    assert body.startswith(b"start") and len(body) == 5 + sum(map(len, frames))
    for index in range(3):  # each writer's frames stay in its own order
        positions = [body.index(item[:5] + b".") for item in frames[index::3]]
        assert positions == sorted(positions)


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


async def test_send_whole_is_one_message_to_a_send_that_takes_whole_responses() -> None:
    headers = [(b"content-type", b"text/plain")]
    plain: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        plain.append(message)

    await send_whole(send, headers, b"hi")
    assert [m["type"] for m in plain] == ["http.response.start", "http.response.body"]
    assert plain[0]["headers"] == [*headers, (b"content-length", b"2")] and plain[1]["body"] == b"hi"

    whole: list[dict[str, Any]] = []

    async def takes_whole(message: dict[str, Any]) -> None:
        whole.append(message)

    setattr(takes_whole, WHOLE_RESPONSE, True)
    await send_whole(takes_whole, headers, b"hi")
    assert whole == [{"type": WHOLE_RESPONSE, "status": 200, "headers": headers, "body": b"hi"}]
