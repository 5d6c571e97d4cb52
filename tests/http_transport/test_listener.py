"""``Listener`` (transport/http/listener.py): every pending connection is taken at each wake-up."""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any

from mcp_sse_server.transport.http import listener as listener_module
from mcp_sse_server.transport.http.listener import Listener


class _Counting(asyncio.Protocol):
    made: list[asyncio.BaseTransport] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        _Counting.made.append(transport)


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


async def test_one_wake_up_takes_every_pending_connection() -> None:
    sock = _listening()
    clients = [socket.create_connection(sock.getsockname()) for _ in range(40)]
    _Counting.made = []
    listener = Listener(sock, _Counting)
    try:
        listener._accept()  # one readiness event (the loop would call it once, the socket being readable)
        for _ in range(20):
            await asyncio.sleep(0)  # the accepted connections' transports are made in tasks
        assert len(_Counting.made) == 40  # uvloop's own server takes one per loop iteration
    finally:
        listener.close()
        for transport in _Counting.made:
            transport.close()
        for client in clients:
            client.close()
        sock.close()


class _OutOfDescriptors(socket.socket):
    """A listening socket whose next accept fails with EMFILE, as a process out of descriptors sees."""

    failures = 1

    def accept(self) -> tuple[socket.socket, Any]:
        if _OutOfDescriptors.failures:
            _OutOfDescriptors.failures -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return super().accept()


async def test_out_of_descriptors_pauses_accepting_then_resumes(monkeypatch: Any) -> None:
    monkeypatch.setattr(listener_module, "PAUSE", 0.05)
    sock = _OutOfDescriptors()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    _Counting.made = []
    listener = Listener(sock, _Counting)
    client = socket.create_connection(sock.getsockname())
    try:
        await asyncio.sleep(0.02)
        assert _Counting.made == [] and listener._paused is not None  # paused, not spinning on a readable socket
        async with asyncio.timeout(5):
            while not _Counting.made:  # noqa: ASYNC110 - the connection is taken once accepting resumes
                await asyncio.sleep(0.01)
        assert listener._paused is None
    finally:
        listener.close()
        for transport in _Counting.made:
            transport.close()
        client.close()
        sock.close()
