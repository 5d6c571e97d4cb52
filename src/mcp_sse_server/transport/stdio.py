"""Serve one MCP session over this process's stdin and stdout.

Messages are newline-delimited JSON, one per line, as MCP's stdio transport
defines it. Stdout carries nothing else: once this process's stdin and stdout
are served, what the process or a child of it writes to stdout comes out on
stderr, and what they read from stdin is the null device (``stdio_fds.py``
states the rules; streams given to ``StdioServerTransport`` are used as they
are). The session ends when stdin reaches end of file, once the requests
read before it are answered or ``EOF_GRACE`` seconds have passed (``echo
REQUEST | server`` gets its answer; a request that waits on the client, who
is gone, does not hold the process). A line holding a
JSON-RPC batch is served when the session's revision has batches (2025-03-26;
``batches.py`` states the rules): its answers go out as one line, a JSON array.

>>> asyncio.run(serve_stdio(MemoryServerFactory.create_memory_server("math")))  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, BinaryIO, Final, TypeAlias

import orjson

from ..engine.batches import DEFAULT_MAX_BATCH_MESSAGES, read_batch, refusal
from ..engine.jsonrpc import (
    INVALID_REQUEST,
    BatchReceived,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
    encode_message,
    message_to_dict,
    parse_message,
)
from ..engine.transport import Transport
from .stdio_fds import protocol_stdio

if TYPE_CHECKING:
    from ..engine.server import McpServer
    from ..engine.session import ServerSession

__all__ = ["StdioServerTransport", "serve_stdio"]

logger = logging.getLogger("mcp_sse_server")

DEFAULT_MAX_LINE_BYTES: Final = 32 * 1024 * 1024
EOF_GRACE: Final = 1.0
"""Seconds the requests read before stdin ended may take to answer before the session closes."""

_LineReader: TypeAlias = Callable[[], Awaitable[bytes]]


class _LineTooLong(Exception):
    pass


class StdioServerTransport(Transport):
    """The server end of a stdio connection: read requests from ``stdin``,
    write replies to ``stdout``. Either not given is this process's, kept to
    the protocol from ``run()`` on (``stdio_fds.py``); nothing is sent before.

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
        revision: Callable[[], str | None] | None = None,
        max_batch_messages: int = DEFAULT_MAX_BATCH_MESSAGES,
    ) -> None:
        self._given = (stdin, stdout)
        self._stdin: BinaryIO | None = stdin
        self._stdout: BinaryIO | None = stdout
        self.max_line_bytes = max_line_bytes
        # The session's negotiated revision (None: not known), which says whether a batch is served.
        self.revision = revision
        self.max_batch_messages = max_batch_messages
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._done: asyncio.Event = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()  # replies and batches being written
        self._unanswered: set[RequestId] = set()  # requests read and not answered yet
        self._answered = asyncio.Event()  # set as each answer (or background write) is done

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            raise ConnectionError("the stdio connection is closed")
        await self._write_line(encode_message(message))
        if self._unanswered and type(message) in (JsonRpcResponse, JsonRpcError):
            self._unanswered.discard(message.id)  # type: ignore[union-attr]
            self._answered.set()

    async def _write_line(self, data: bytes) -> None:
        # A worker thread does the blocking write so a slow reader never stalls
        # the event loop; the lock keeps lines whole and in order.
        async with self._write_lock:
            await asyncio.to_thread(self._write, data + b"\n")

    def _write(self, data: bytes) -> None:
        if self._stdout is None:
            raise ConnectionError("the stdio connection is not running yet: await run() first")
        self._stdout.write(data)
        self._stdout.flush()

    async def run(self) -> None:
        """Read messages until stdin ends (or ``close()``), then close the connection."""
        given_in, given_out = self._given
        if given_in is not None and given_out is not None:
            await self._serve()
            return
        with protocol_stdio() as (stdin, stdout):
            self._stdin, self._stdout = given_in or stdin, given_out or stdout
            await self._serve()

    async def _serve(self) -> None:
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
                    await self._answer_what_was_read()
                    break
                self._handle_line(line)
        finally:
            await self.close()

    async def _answer_what_was_read(self) -> None:
        """stdin ended: wait (``EOF_GRACE`` at most) for the answers to the requests read before it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EOF_GRACE
        while (self._unanswered or self._tasks) and not self._closed:
            left = deadline - loop.time()
            if left <= 0:
                return
            self._answered.clear()
            try:
                await asyncio.wait_for(self._answered.wait(), left)
            except TimeoutError:
                return

    async def _open_reader(self) -> _LineReader:
        assert self._stdin is not None  # (run() set it)
        stdin = self._stdin
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=self.max_line_bytes)
        if not _pollable(stdin):
            # A regular file (``< requests.jsonl``) or a device such as /dev/null is no pipe, and
            # the event loop cannot wait on it (epoll refuses it, and only after connecting, in a
            # callback: the server would hang); reading it never blocks for long.
            return lambda: asyncio.to_thread(stdin.readline, self.max_line_bytes + 1)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
        except (ValueError, OSError):
            return lambda: asyncio.to_thread(stdin.readline, self.max_line_bytes + 1)

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
        except BatchReceived as batch:
            refused = refusal(self.revision() if self.revision is not None else None)
            if refused is not None:
                self._reply(JsonRpcError(None, INVALID_REQUEST, refused))
                return
            self._in_background(self._serve_batch(batch.items))
            return
        except McpError as error:
            logger.warning("stdio: %s", error.message)
            self._reply(JsonRpcError(None, error.code, error.message))
            return
        if self.dispatcher is not None:
            if type(message) is JsonRpcRequest:
                self._unanswered.add(message.id)
            self.dispatcher.on_message(message)

    def _reply(self, message: JsonRpcMessage) -> None:
        self._in_background(self.send(message))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._answered.set()
        error = None if task.cancelled() else task.exception()
        if error is not None and not isinstance(error, ConnectionError):  # (closed: nobody to tell)
            logger.error("stdio: %s", error)

    async def _serve_batch(self, items: list[Any]) -> None:
        """A batch line (``batches.py``): each request served inline, the answers one array line."""
        dispatcher = self.dispatcher
        if dispatcher is None:
            return
        try:
            read = read_batch(items, self.max_batch_messages)
        except McpError as error:
            await self.send(JsonRpcError(None, error.code, error.message))
            return
        for message in read.others:
            dispatcher.on_message(message)

        async def serve(index: int, request: JsonRpcRequest) -> None:
            reply = await dispatcher.dispatch(request)
            if reply is not None:
                read.answers[index] = message_to_dict(reply)

        async with asyncio.TaskGroup() as group:
            for index, request in read.requests:
                group.create_task(serve(index, request))
        answers = read.in_order()
        if answers and not self._closed:
            await self._write_line(orjson.dumps(answers))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._done.set()
        if self.dispatcher is not None:
            self.dispatcher.on_close()

    async def wait_closed(self) -> None:
        await self._done.wait()


def _pollable(file: Any) -> bool:
    """Whether the event loop can wait on ``file``: a pipe, a socket or a terminal."""
    try:
        fd = file.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def serve_stdio(server: McpServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes; from then on
    the process's own stdout leads to stderr and its stdin to the null device (``stdio_fds.py``)."""
    session: ServerSession | None = None
    transport = StdioServerTransport(revision=lambda: session.revision if session is not None else None)
    # Some clients re-send initialize on a live process (pydantic-ai through fastmcp): allowed here.
    session = await server.connect(transport, reinitialize=True)
    await transport.run()


def run_stdio(server: McpServer) -> None:
    """``server.run()``: serve ``server`` over stdio in a new event loop (uvloop when installed)
    until stdin closes."""
    from .loop import run_loop

    run_loop(serve_stdio(server))
