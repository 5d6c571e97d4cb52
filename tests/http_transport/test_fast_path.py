"""HTTP/1.1 behaviour of McpHttpServer.bind on both paths (transport/http/fast_protocol.py): the fast
path for the endpoint (the default) and uvicorn's ASGI cycle (``HttpSettings(fast_path=False)``).

Every test runs on both, over real loopback sockets written by hand, and checks
which cycle served the endpoint's request, so removing the fast path fails the
``[fast]`` ones. Waits are safety nets, never measurements.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle
from uvicorn.server import ServerState

from fixtures.asgi import WAIT
from fixtures.http_app import Gate, build_server
from fixtures.messages import initialize_message, notification, request
from mcp_sse_server.engine.protocol import EAGER
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpApp, McpHttpServer
from mcp_sse_server.transport.http.fast_protocol import FastCycle
from mcp_sse_server.transport.http.server import _protocol_options

pytestmark = pytest.mark.parametrize("fast", [True, False], ids=["fast", "asgi"])

ACCEPT = b"application/json, text/event-stream"


@asynccontextmanager
async def serving(fast: bool, gate: Gate | None = None, **limits: Any) -> AsyncIterator[McpHttpServer]:
    settings = HttpSettings(limits=HttpLimits(**limits), fast_path=fast)
    http = await McpHttpServer.bind(build_server(gate), settings=settings)
    try:
        yield http
    finally:
        await http.close(deadline=2.0)


def post(body: bytes, session: str = "", *, target: bytes = b"/mcp", extra: bytes = b"") -> bytes:
    """The bytes of one POST with a Content-Length."""
    sid = f"mcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\n".encode() if session else b""
    return (
        b"POST "
        + target
        + b" HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: "
        + ACCEPT
        + b"\r\n"
        + sid
        + extra
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


def call(n: int, session: str) -> bytes:
    return post(orjson.dumps(request(n, "tools/call", {"name": "add", "arguments": {"a": n, "b": 1}})), session)


class Raw:
    """A hand-driven HTTP/1.1 connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, http: McpHttpServer) -> Raw:
        return cls(*await asyncio.open_connection("127.0.0.1", http.port))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def head(self) -> tuple[int, dict[str, str]]:
        async with asyncio.timeout(WAIT):
            raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        pairs = (line.split(": ", 1) for line in lines[1:] if line)
        return int(lines[0].split()[1]), {name.lower(): value for name, value in pairs}

    async def response(self) -> tuple[int, dict[str, str], bytes]:
        """One response with a Content-Length: status, headers, body."""
        status, headers = await self.head()
        async with asyncio.timeout(WAIT):
            body = await self.reader.readexactly(int(headers["content-length"]))
        return status, headers, body

    async def closed(self) -> bytes:
        async with asyncio.timeout(WAIT):
            return await self.reader.read()

    def close(self) -> None:
        self.writer.close()


async def session(raw: Raw) -> str:
    await raw.send(post(orjson.dumps(initialize_message())))
    status, headers, _ = await raw.response()
    assert status == 200
    sid = headers["mcp-session-id"]
    await raw.send(post(orjson.dumps(notification("notifications/initialized")), sid))
    assert (await raw.response())[0] == 202
    return sid


def cycle_types(http: McpHttpServer) -> set[type]:
    return {type(c.cycle) for c in http._server.server_state.connections if c.cycle is not None}


def served_by(fast: bool) -> type:
    return FastCycle if fast else RequestResponseCycle


def result_text(body: bytes) -> str:
    data = body.split(b"data: ", 1)[1] if b"data: " in body else body
    return str(orjson.loads(data.strip())["result"]["content"][0]["text"])


async def test_keep_alive_and_the_cycle_that_served(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        for n in range(3):  # one connection for all of them
            await raw.send(call(n, sid))
            status, headers, body = await raw.response()
            assert status == 200 and "connection" not in headers
            assert result_text(body) == str(n + 1)
        assert cycle_types(http) == {served_by(fast)}
        raw.close()


async def test_pipelined_requests_are_answered_in_order(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        await raw.send(b"".join(call(n, sid) for n in range(8)))  # one write: the server reads them at once
        answers = [result_text((await raw.response())[2]) for _ in range(8)]
        assert answers == [str(n + 1) for n in range(8)]
        raw.close()


async def test_a_query_string_takes_uvicorns_cycle_and_is_served_alike(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        body = orjson.dumps(request(7, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))
        await raw.send(post(body, sid, target=b"/mcp?x=1"))
        status, _, reply = await raw.response()
        assert status == 200 and result_text(reply) == "5"
        assert cycle_types(http) == {RequestResponseCycle}
        raw.close()


async def test_content_length_with_transfer_encoding_is_refused(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        smuggled = b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
        await raw.send(
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: "
            + ACCEPT
            + b"\r\ncontent-length: %d\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n" % (5 + len(smuggled))
            + smuggled
        )
        status, headers = await raw.head()
        assert status == 400 and headers["connection"] == "close"
        assert b"HTTP/1.1" not in await raw.closed()  # nothing answered the smuggled request


async def test_a_body_over_the_limit_is_413_before_it_is_sent(fast: bool) -> None:
    async with serving(fast, max_request_bytes=1000) as http:
        raw = await Raw.open(http)
        head = post(b"", extra=b"expect: 100-continue\r\n").replace(b"content-length: 0", b"content-length: 5000")
        await raw.send(head)  # the head alone: the body is never sent
        status, _, body = await raw.response()
        assert status == 413 and b"exceeds the limit of 1000 bytes" in body
        raw.close()


async def test_a_body_over_the_limit_sent_whole_with_its_head_is_413(fast: bool) -> None:
    # (The fast path offers it whole to the endpoint: the limit holds for an offered body too.)
    async with serving(fast, max_request_bytes=1000) as http:
        raw = await Raw.open(http)
        padding = {"padding": "x" * 5000}
        await raw.send(post(orjson.dumps(request(1, "tools/call", {"name": "add", "arguments": padding}))))
        status, _, body = await raw.response()
        assert status == 413 and b"exceeds the limit of 1000 bytes" in body
        raw.close()


async def test_expect_100_continue(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        body = orjson.dumps(initialize_message())
        full = post(body, extra=b"expect: 100-continue\r\n")
        await raw.send(full[: -len(body)])
        async with asyncio.timeout(WAIT):
            assert await raw.reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        await raw.send(body)
        status, headers, _ = await raw.response()
        assert status == 200 and headers["mcp-session-id"]
        assert cycle_types(http) == {served_by(fast)}
        raw.close()


async def test_a_body_sent_with_its_head_is_taken_without_100_continue(fast: bool) -> None:
    # The fast path offers a body that came whole to the endpoint (McpRequest.body): nothing asks
    # for it, so no interim answer is due (RFC 9110 lets a server that has the body omit it);
    # uvicorn's cycle answers 100 at the app's first receive, as it always did.
    async with serving(fast) as http:
        raw = await Raw.open(http)
        await raw.send(post(orjson.dumps(initialize_message()), extra=b"expect: 100-continue\r\n"))
        async with asyncio.timeout(WAIT):
            first = await raw.reader.readuntil(b"\r\n")
        assert first == (b"HTTP/1.1 200 OK\r\n" if fast else b"HTTP/1.1 100 Continue\r\n")
        raw.close()


async def test_a_chunked_request_body(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        body = orjson.dumps(initialize_message())
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:40], body[40:]))
        await raw.send(
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: "
            + ACCEPT
            + b"\r\ntransfer-encoding: chunked\r\n\r\n"
            + chunks
        )
        await asyncio.sleep(0.05)  # the last chunk in a read of its own
        await raw.send(b"0\r\n\r\n")
        status, headers, _ = await raw.response()
        assert status == 200 and headers["mcp-session-id"]
        raw.close()


async def test_a_streamed_reply_is_chunked(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": "p"}}
        await raw.send(post(orjson.dumps(request(3, "tools/call", params)), sid))
        status, headers = await raw.head()
        assert status == 200 and headers["content-type"].startswith("text/event-stream")
        if headers.get("transfer-encoding") == "chunked":
            async with asyncio.timeout(WAIT):
                rest = await raw.reader.readuntil(b"0\r\n\r\n")
            assert b'"text":"3"' in rest
        raw.close()


async def test_a_slowloris_head_is_closed_by_the_header_timeout(fast: bool) -> None:
    async with serving(fast, header_timeout=0.3) as http:
        raw = await Raw.open(http)
        await raw.send(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")  # and nothing more
        status, headers = await raw.head()
        assert status == 408 and headers["connection"] == "close"
        await raw.closed()


async def test_shutdown_lets_a_request_in_flight_finish(fast: bool) -> None:
    gate = Gate()
    async with serving(fast, gate) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        await raw.send(post(orjson.dumps(request(9, "tools/call", {"name": "wait", "arguments": {}})), sid))
        async with asyncio.timeout(WAIT):
            await gate.entered.wait()
        closing = asyncio.create_task(http.close(deadline=WAIT))
        await asyncio.sleep(0.05)
        gate.release.set()
        status, _ = await raw.head()
        assert status == 200
        rest = await raw.closed()  # the reply, then the connection closes
        assert b"released" in rest
        async with asyncio.timeout(WAIT):
            await closing


async def test_connection_close_is_honoured_on_a_whole_reply(fast: bool) -> None:
    # The fast path writes a quick reply whole (asgi.WHOLE_RESPONSE): it must still say and do close.
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        await raw.send(call(4, sid).replace(b"content-length:", b"connection: close\r\ncontent-length:"))
        status, headers, body = await raw.response()
        assert status == 200 and headers["connection"] == "close"
        assert result_text(body) == "5"
        assert await raw.closed() == b""


async def test_a_body_in_a_later_read_than_its_head(fast: bool) -> None:
    # The request starts once the read that completed its head is parsed; the body comes after.
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        whole = call(6, sid)
        split = whole.index(b"\r\n\r\n") + 4
        await raw.send(whole[:split])
        await asyncio.sleep(0.05)
        await raw.send(whole[split:])
        status, _, body = await raw.response()
        assert status == 200 and result_text(body) == "7"
        assert cycle_types(http) == {served_by(fast)}
        raw.close()


async def test_a_quick_request_makes_no_task_where_python_starts_tasks_eagerly(fast: bool) -> None:
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        await raw.send(call(1, sid))
        assert result_text((await raw.response())[2]) == "2"
        [cycle] = [c.cycle for c in http._server.server_state.connections if c.cycle is not None]
        # On 3.12+ the fast path's request ran to its answer in its task's first, eager step, which
        # it returned done, so none was kept (engine.protocol.EAGER); uvicorn's cycle has no such field.
        if fast:
            assert (cycle.task is None) == EAGER
        raw.close()


async def test_a_served_request_leaves_nothing_for_the_garbage_collector(fast: bool) -> None:
    # Each request's cycle must be freed by reference counting as its response completes: a
    # reference cycle through it (the fast path's cycle once was its own message event) leaves every
    # request to the collector, whose pauses hold every request in flight.
    async with serving(fast) as http:
        raw = await Raw.open(http)
        sid = await session(raw)
        gc.collect()
        gc.disable()
        try:
            for n in range(50):
                await raw.send(call(n, sid))
                assert result_text((await raw.response())[2]) == str(n + 1)
            left = sum(1 for thing in gc.get_objects() if type(thing) is served_by(fast))
        finally:
            gc.enable()
        # The connection keeps its last cycle (the next request replaces it), and that is all.
        assert left <= 1, f"{left} request cycles of 50 were not freed by reference counting"
        raw.close()


class _CountingTransport:
    """What a protocol writes, one entry per write (an in-process stand-in for the socket)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closing = False
        self.wrote = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.wrote.set()

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5555)}.get(name, default)

    def set_write_buffer_limits(self, *args: Any, **kwargs: Any) -> None: ...

    def get_write_buffer_size(self) -> int:
        return 0


async def _answered(transport: _CountingTransport, done: bytes) -> None:
    async with asyncio.timeout(WAIT):
        while not b"".join(transport.writes).endswith(done):
            transport.wrote.clear()
            await transport.wrote.wait()


async def test_a_streams_head_goes_out_with_its_first_event(fast: bool) -> None:
    # The protocol bind serves with, fed in process, so its writes can be counted: on the fast path a
    # streamed reply's head shares its first event's write instead of taking a write of its own.
    app = McpHttpApp(build_server(), settings=HttpSettings(path="/mcp", fast_path=fast))
    async with app:
        protocol_class = _protocol_options(app)["http"]
        config = uvicorn.Config(app, http=protocol_class, loop="none", lifespan="off")
        config.load()
        loop = asyncio.get_running_loop()
        protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)
        transport = _CountingTransport()
        protocol.connection_made(transport)
        protocol.data_received(post(orjson.dumps(initialize_message())))
        await _answered(transport, b"}\n\n")
        head = b"".join(transport.writes).split(b"\r\n\r\n", 1)[0].decode("latin-1")
        sid = next(line.split(": ", 1)[1] for line in head.split("\r\n") if line.startswith("mcp-session-id"))
        transport.writes.clear()
        params = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}
        protocol.data_received(post(orjson.dumps(request(5, "tools/call", params)), sid))
        await _answered(transport, b"0\r\n\r\n")
        assert b"chatty done" in transport.writes[-1]
        if fast:  # progress, log, progress, reply: four writes, the first with the head
            assert len(transport.writes) == 4
            assert transport.writes[0].startswith(b"HTTP/1.1 200") and b"notifications/progress" in transport.writes[0]
        protocol.connection_lost(None)
