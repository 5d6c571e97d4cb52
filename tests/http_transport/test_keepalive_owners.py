"""The keep-alive ticker looks after a session's POST streams through its transport:
registered once, not per request, and let go when a round finds no streams."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from mcp_sse_server.transport.http.sse import KEEPALIVE
from mcp_sse_server.transport.http.streams import KeepaliveTicker, SseStream


class Owner:
    def __init__(self) -> None:
        self.keepalive_watched = False
        self.streams: dict[int, SseStream] = {}

    def live_streams(self) -> Collection[SseStream]:
        return self.streams.values()


class Peer:
    def __init__(self) -> None:
        self.body = b""

    async def send(self, message: dict[str, object]) -> None:
        body = message.get("body", b"")
        assert isinstance(body, bytes)
        self.body += body


async def test_a_watched_owner_gets_keepalives_on_its_silent_streams_until_it_has_none() -> None:
    ticker = KeepaliveTicker(3600)
    owner, peer = Owner(), Peer()
    ticker.watch(owner)
    assert owner.keepalive_watched
    owner.streams[1] = SseStream(peer.send)
    assert len(ticker) == 1
    ticker.tick()  # a new stream counts as active once
    ticker.tick()
    await asyncio.sleep(0)
    assert peer.body == KEEPALIVE
    del owner.streams[1]
    ticker.tick()  # nothing left: the owner is let go
    assert not owner.keepalive_watched and len(ticker) == 0
    ticker.close()


async def test_closing_the_ticker_lets_every_owner_go() -> None:
    ticker = KeepaliveTicker(3600)
    owner = Owner()
    owner.streams[1] = SseStream(Peer().send)
    ticker.watch(owner)
    ticker.close()
    assert not owner.keepalive_watched and len(ticker) == 0
