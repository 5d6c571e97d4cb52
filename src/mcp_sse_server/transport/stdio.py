"""Serve one MCP session over this process's stdin and stdout.

Messages are newline-delimited JSON, one per line, as MCP's stdio transport
defines it. Stdout carries nothing else, so log to stderr. The session ends
when stdin reaches end of file.

>>> asyncio.run(serve_stdio(MemoryServerFactory.create_memory_server("math")))  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, BinaryIO, Final, TypeAlias

from ..jsonrpc import (
    INVALID_REQUEST,
    BatchReceived,
    JsonRpcError,
    JsonRpcMessage,
    McpError,
    RequestId,
    encode_message,
    parse_message,
)
from .base import Transport

if TYPE_CHECKING:
    from ..server import McpServer

__all__ = ["StdioServerTransport", "serve_stdio"]

logger = logging.getLogger("mcp_sse_server")

DEFAULT_MAX_LINE_BYTES: Final = 32 * 1024 * 1024
_NO_BATCHES: Final = "Batch requests are not served over stdio (2025-03-26 sessions may send them over Streamable HTTP)"

_LineReader: TypeAlias = Callable[[], Awaitable[bytes]]


class _LineTooLong(Exception):
    pass


class StdioServerTransport(Transport):
    """The server end of a stdio connection: read requests from ``stdin``,
    write replies to ``stdout`` (this process's by default).

    Connect a server, then ``await run()`` until the client closes stdin:

    >>> transport = StdioServerTransport()  # doctest: +SKIP
    >>> await server.connect(transport)  # doctest: +SKIP
    >>> await transport.run()  # doctest: +SKIP
    """

    def __init__(
        self,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._stdin = stdin if stdin is not None else sys.stdin.buffer
        self._stdout = stdout if stdout is not None else sys.stdout.buffer
        self.max_line_bytes = max_line_bytes
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._done: asyncio.Event = asyncio.Event()

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            raise ConnectionError("the stdio connection is closed")
        data = encode_message(message) + b"\n"
        # A worker thread does the blocking write so a slow reader never stalls
        # the event loop; the lock keeps lines whole and in order.
        async with self._write_lock:
            await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes) -> None:
        self._stdout.write(data)
        self._stdout.flush()

    async def run(self) -> None:
        """Read messages until stdin ends (or ``close()``), then close the connection."""
        try:
            reader = await self._open_reader()
            while not self._closed:
                try:
                    line = await reader()
                except _LineTooLong:
                    message = f"Message longer than {self.max_line_bytes} bytes"
                    logger.warning("stdio: %s", message)
                    self._reply(JsonRpcError(None, INVALID_REQUEST, message))
                    continue
                if not line:
                    break
                self._handle_line(line)
        finally:
            await self.close()

    async def _open_reader(self) -> _LineReader:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=self.max_line_bytes)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), self._stdin)
        except (ValueError, OSError):
            # A regular file (``< requests.jsonl``) is not a pipe; reading it never blocks for long.
            return lambda: asyncio.to_thread(self._stdin.readline, self.max_line_bytes + 1)

        async def read_line() -> bytes:
            try:
                return await stream.readline()
            except ValueError:  # over max_line_bytes: the reader has skipped past it
                raise _LineTooLong from None

        return read_line

    def _handle_line(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            message = parse_message(line)
        except BatchReceived:
            # (2025-03-26 allowed batches; no stdio client of that revision sends one)
            self._reply(JsonRpcError(None, INVALID_REQUEST, _NO_BATCHES))
            return
        except McpError as error:
            logger.warning("stdio: %s", error.message)
            self._reply(JsonRpcError(None, error.code, error.message))
            return
        if self.dispatcher is not None:
            self.dispatcher.on_message(message)

    def _reply(self, message: JsonRpcMessage) -> None:
        task = asyncio.get_running_loop().create_task(self.send(message))
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._done.set()
        if self.dispatcher is not None:
            self.dispatcher.on_close()

    async def wait_closed(self) -> None:
        await self._done.wait()


async def serve_stdio(server: McpServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    transport = StdioServerTransport()
    # Some clients re-send initialize on a live process (pydantic-ai through fastmcp): allowed here.
    await server.connect(transport, reinitialize=True)
    await transport.run()


def run_stdio(server: McpServer) -> None:
    """``server.run()``: serve ``server`` over stdio in a new event loop (uvloop when installed)
    until stdin closes."""
    from .loop import run_loop

    run_loop(serve_stdio(server))
