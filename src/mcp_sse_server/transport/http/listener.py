"""``Listener``: accept every pending connection each time the listening socket is readable.

Why not the event loop's own server: uvloop's (libuv 1.45 and later) accepts one
connection per loop iteration. Under load, every iteration also serves the
connections already open, so N clients connecting at once wait N iterations for
the last of them to be accepted, its first request with it: hundreds of
milliseconds for 100 clients (bench/README.md, "Fairness at point 4").

Rules:

1. Each time the socket is readable, up to ``ACCEPT_BATCH`` connections are
   accepted; the loop serves the open ones between batches.
2. Out of file descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM),
   accepting pauses ``PAUSE`` seconds: the socket stays readable, and retrying
   at once would spin. A connection the client aborted before it was taken is
   skipped.
3. Each connection gets TCP_NODELAY (as the loop's own servers set) and a
   protocol from the factory, over TLS when the server has a context.
4. ``close`` stops accepting; connections already taken go on until their
   server closes them.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any, Final

__all__ = ["ACCEPT_BATCH", "PAUSE", "Listener"]

logger = logging.getLogger("mcp_sse_server.http")

ACCEPT_BATCH: Final = 256
"""Connections accepted per readiness event at most."""

PAUSE: Final = 0.1
"""Seconds accepting pauses when the process is out of file descriptors or memory."""

_RESOURCE_ERRORS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class Listener:
    """Accepts connections on a listening ``sock`` for ``protocol_factory`` (rules above)."""

    __slots__ = ("_closed", "_loop", "_opening", "_paused", "protocol_factory", "sock", "ssl_context")

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.sock = sock
        self.protocol_factory = protocol_factory
        self.ssl_context = ssl_context
        self._loop = asyncio.get_running_loop()
        self._opening: set[asyncio.Task[Any]] = set()  # TLS handshakes and transport set-up under way
        self._paused: asyncio.TimerHandle | None = None
        self._closed = False
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as error:
                if error.errno in _RESOURCE_ERRORS:
                    logger.warning("accepting paused for %.1f s: %s", PAUSE, error)
                    self._loop.remove_reader(self.sock.fileno())
                    self._paused = self._loop.call_later(PAUSE, self._resume)
                else:
                    logger.warning("accept failed: %s", error)
                return
            conn.setblocking(False)
            if conn.family in (socket.AF_INET, socket.AF_INET6):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self._loop.create_task(self._open(conn))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)

    async def _open(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self.protocol_factory, conn, ssl=self.ssl_context)
        except (OSError, ssl.SSLError) as error:  # a failed TLS handshake, a client gone meanwhile
            logger.debug("could not open an accepted connection: %s", error)
            conn.close()

    def _resume(self) -> None:
        self._paused = None
        if not self._closed:
            self._loop.add_reader(self.sock.fileno(), self._accept)

    def close(self) -> None:
        """Stop accepting (the socket itself belongs to the caller)."""
        if self._closed:
            return
        self._closed = True
        if self._paused is not None:
            self._paused.cancel()
        else:
            self._loop.remove_reader(self.sock.fileno())
