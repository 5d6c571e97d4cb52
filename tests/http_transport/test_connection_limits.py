"""Connection limits of McpHttpServer.bind on real loopback sockets: head size and count, read and idle
timeouts, the connection cap and the shedding of idle connections at it (see transport/http/connections.py).

Timeouts are configured short; every wait below is a safety net many times
longer than the timeout, never a measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
import trustme

from fixtures.asgi import WAIT
from fixtures.http_app import Gate, build_server
from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, request
from mcp_sse_server import McpServer
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer

HEADERS = {"accept": ACCEPT_BOTH}
SHORT = 0.3  # a timeout under test


@asynccontextmanager
async def serving(
    server: McpServer | None = None, /, *, ssl: ssl.SSLContext | None = None, **limits: Any
) -> AsyncIterator[McpHttpServer]:
    """``server`` for every session (a test holding its ``Gate``), else a new ``build_server()`` per session."""
    settings = HttpSettings(limits=HttpLimits(**limits))
    http = await McpHttpServer.bind(server if server is not None else build_server, ssl=ssl, settings=settings)
    try:
        yield http
    finally:
        await http.close(deadline=0.5)


class Raw:
    """A hand-driven HTTP/1.1 connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, http: McpHttpServer) -> Raw:
        reader, writer = await asyncio.open_connection("127.0.0.1", http.port)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def response(self) -> tuple[int, dict[str, str], bytes]:
        """One response with a Content-Length: status, headers, body."""
        async with asyncio.timeout(WAIT):
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines[1:] if line)
            body = await self.reader.readexactly(int(headers["content-length"]))
        return int(lines[0].split()[1]), headers, body

    async def closed(self, within: float = WAIT) -> bytes:
        """Everything the server still sends until it closes the connection (fails if it does not)."""
        async with asyncio.timeout(within):
            return await self.reader.read()

    async def until(self, marker: bytes) -> bytes:
        """What arrives until ``marker`` has (fails if the connection ends or stalls first)."""
        received = b""
        async with asyncio.timeout(WAIT):
            while marker not in received:
                chunk = await self.reader.read(65536)
                assert chunk, f"closed before {marker!r}; got {received!r}"
                received += chunk
        return received

    def close(self) -> None:
        self.writer.close()


def post_head(http: McpHttpServer, extra: str = "", length: int | None = None) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"host: 127.0.0.1:{http.port}",
        f"accept: {ACCEPT_BOTH}",
        "content-type: application/json",
    ]
    if length is not None:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n" + extra).encode()


def initialize_bytes(http: McpHttpServer) -> bytes:
    body = orjson.dumps(initialize_message())
    return post_head(http, length=len(body)) + b"\r\n" + body


def json_rpc_error(body: bytes) -> dict[str, Any]:
    message = orjson.loads(body)
    assert message["jsonrpc"] == "2.0" and message["id"] is None
    error: dict[str, Any] = message["error"]
    assert error["message"] and "Traceback" not in error["message"]
    return error


async def open_session(http: McpHttpServer) -> dict[str, str]:
    """A session's headers, initialized over a connection that is closed again."""
    async with httpx.AsyncClient(timeout=WAIT) as client:
        reply = await client.post(http.endpoint, json=initialize_message(), headers=HEADERS)
        session = {**HEADERS, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        await client.post(http.endpoint, json=notification("notifications/initialized"), headers=session)
    return session


def wait_call_bytes(http: McpHttpServer, session: dict[str, str]) -> bytes:
    """A tools/call of ``wait`` (in flight until its gate opens) on ``session``."""
    body = orjson.dumps(request(2, "tools/call", {"name": "wait", "arguments": {}}))
    extra = "".join(f"{name}: {session[name]}\r\n" for name in ("mcp-session-id", "mcp-protocol-version"))
    return post_head(http, extra, length=len(body)) + b"\r\n" + body


async def initialize_over_http(http: McpHttpServer) -> int:
    async with httpx.AsyncClient(timeout=WAIT) as client:
        reply = await client.post(http.endpoint, json=initialize_message(), headers=HEADERS)
        return reply.status_code


# --- the request head ------------------------------------------------------------------------


async def test_a_huge_header_is_refused_within_the_limit_while_others_are_served() -> None:
    async with serving() as http:
        limit = HttpLimits().max_header_bytes
        attacker = await Raw.open(http)
        try:
            # Just past the limit, and the header line is not even finished: the server must not wait for more.
            await attacker.send(post_head(http, "x-flood: ") + b"a" * limit)
            assert await initialize_over_http(http) == 200  # another connection is served meanwhile
            status, headers, body = await attacker.response()
            assert status == 431 and headers["connection"] == "close"
            assert headers["content-type"] == "application/json"
            assert str(limit) in json_rpc_error(body)["message"]
            assert await attacker.closed() == b""
        finally:
            attacker.close()


async def test_a_streamed_header_flood_is_cut_off_early() -> None:
    async with serving(max_header_bytes=16 * 1024) as http:
        attacker = await Raw.open(http)
        sent = 0
        try:
            await attacker.send(post_head(http, "x-flood: "))
            with pytest.raises(ConnectionError):
                async with asyncio.timeout(4 * WAIT):
                    while sent < 64 * 1024 * 1024:  # far more than the kernel buffers between us
                        await attacker.send(b"a" * 65536)
                        sent += 65536
            assert sent < 64 * 1024 * 1024
            assert await initialize_over_http(http) == 200
        finally:
            attacker.close()


async def test_a_large_head_within_the_limit_is_served() -> None:
    async with serving(max_header_bytes=16 * 1024) as http:
        client = await Raw.open(http)
        try:
            body = orjson.dumps(initialize_message())
            padded = post_head(http, "x-pad: " + "a" * 12_000 + "\r\n", length=len(body)) + b"\r\n" + body
            await client.send(padded + padded)  # pipelined, in one read
            assert (await client.response())[0] == 200
            assert (await client.response())[0] == 200
        finally:
            client.close()


async def test_too_many_headers_are_refused() -> None:
    async with serving(max_header_count=20) as http:
        fine = await Raw.open(http)
        crowded = await Raw.open(http)
        try:
            body = orjson.dumps(initialize_message())
            extra = "".join(f"x-h{n}: {n}\r\n" for n in range(16))  # 20 with the four of post_head
            await fine.send(post_head(http, extra, length=len(body)) + b"\r\n" + body)
            assert (await fine.response())[0] == 200
            extra = "".join(f"x-h{n}: {n}\r\n" for n in range(17))
            await crowded.send(post_head(http, extra, length=len(body)) + b"\r\n" + body)
            status, _, reply = await crowded.response()
            assert status == 431
            assert "20" in json_rpc_error(reply)["message"]
            assert await crowded.closed() == b""
        finally:
            fine.close()
            crowded.close()


async def test_an_unparseable_request_gets_a_json_rpc_400() -> None:
    async with serving() as http:
        client = await Raw.open(http)
        try:
            await client.send(b"NOT HTTP AT ALL\x00\r\n\r\n")
            status, _, body = await client.response()
            assert status == 400
            json_rpc_error(body)
            assert await client.closed() == b""
        finally:
            client.close()


# --- timeouts --------------------------------------------------------------------------------


async def test_a_new_connection_that_sends_nothing_is_closed_after_the_idle_timeout() -> None:
    async with serving(connection_idle_timeout=SHORT) as http:
        silent = await Raw.open(http)
        try:
            assert await silent.closed() == b""  # closed without an answer
        finally:
            silent.close()


async def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() -> None:
    async with serving(connection_idle_timeout=SHORT) as http:
        client = await Raw.open(http)
        try:
            await client.send(initialize_bytes(http))
            status, headers, _ = await client.response()
            assert status == 200 and headers.get("connection") != "close"
            assert await client.closed(within=3.0) == b""  # uvicorn's own timer would take 5 s
        finally:
            client.close()


async def test_a_half_sent_head_gets_408_after_the_header_timeout() -> None:
    async with serving(header_timeout=SHORT) as http:
        slow = await Raw.open(http)
        try:
            await slow.send(post_head(http, "x-partial: never fini"))
            status, headers, body = await slow.response()
            assert status == 408 and headers["connection"] == "close"
            json_rpc_error(body)
            assert await slow.closed() == b""
        finally:
            slow.close()


async def test_a_trickled_head_does_not_reset_the_header_timeout() -> None:
    async with serving(header_timeout=SHORT, connection_idle_timeout=60.0) as http:
        slow = await Raw.open(http)

        async def trickle() -> None:
            await slow.send(b"POST /mcp HTTP/1.1\r\n")
            for n in range(1000):
                await slow.send(b"x-%d: 1\r\n" % n)
                await asyncio.sleep(0.05)

        trickling = asyncio.create_task(trickle())
        try:
            assert (await slow.response())[0] == 408  # although a header line arrives every 50 ms
        finally:
            trickling.cancel()
            await asyncio.gather(trickling, return_exceptions=True)
            slow.close()


async def test_a_stalled_body_gets_408_after_the_body_timeout() -> None:
    async with serving(body_timeout=SHORT) as http:
        stalled = await Raw.open(http)
        try:
            await stalled.send(post_head(http, length=1000) + b"\r\n" + b'{"jsonrpc": "2.0", ')
            status, headers, body = await stalled.response()
            assert status == 408 and headers["connection"] == "close"
            json_rpc_error(body)
            assert await stalled.closed() == b""
            assert await initialize_over_http(http) == 200
        finally:
            stalled.close()


async def test_a_slow_body_that_keeps_arriving_is_served() -> None:
    async with serving(body_timeout=1.0) as http:
        client = await Raw.open(http)
        try:
            body = orjson.dumps(initialize_message())
            await client.send(post_head(http, length=len(body)) + b"\r\n")
            for start in range(0, len(body), 20):  # the body takes longer than the timeout, never silent that long
                await client.send(body[start : start + 20])
                await asyncio.sleep(0.2)
            assert (await client.response())[0] == 200
        finally:
            client.close()


async def test_an_open_sse_stream_outlives_every_timeout() -> None:
    short = {"connection_idle_timeout": 0.1, "header_timeout": 0.1, "body_timeout": 0.1}
    async with serving(keepalive_interval=60.0, **short) as http, httpx.AsyncClient(timeout=WAIT) as client:
        reply = await client.post(http.endpoint, json=initialize_message(), headers=HEADERS)
        session = {**HEADERS, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        await client.post(http.endpoint, json=notification("notifications/initialized"), headers=session)
        async with client.stream("GET", http.endpoint, headers=session) as stream:
            assert stream.status_code == 200
            await asyncio.sleep(1.0)  # ten idle timeouts without a byte either way
            # Ending the session ends the stream cleanly; a connection cut meanwhile would fail the read.
            assert (await client.delete(http.endpoint, headers=session)).status_code == 204
            async with asyncio.timeout(WAIT):
                assert b"".join([chunk async for chunk in stream.aiter_bytes()]) == b""


# --- the connection cap ----------------------------------------------------------------------


def test_the_cap_is_lowered_to_fit_the_file_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    from mcp_sse_server.transport.http.connections import effective_max_connections

    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 4096))
    assert effective_max_connections(HttpLimits()) == 1024 - 64
    assert effective_max_connections(HttpLimits(max_connections=500)) == 500


async def test_a_cap_full_of_busy_connections_refuses_one_more_then_serves_again(
    gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(build_server(gate), max_connections=3, connection_idle_timeout=60.0) as http:
        session = await open_session(http)
        calling, heading, sending = [await Raw.open(http) for _ in range(3)]
        try:
            await calling.send(wait_call_bytes(http, session))  # a request in flight, its SSE response started
            await calling.until(b"waiting")
            await heading.send(post_head(http, "x-partial: never fini"))  # reading a head
            await sending.send(post_head(http, length=1000) + b"\r\n" + b'{"jsonrpc": "2.0", ')  # reading a body
            extra = await Raw.open(http)
            status, headers, body = await extra.response()
            assert status == 503 and headers["connection"] == "close" and headers["retry-after"] == "1"
            assert json_rpc_error(body)["code"] == -32000
            assert await extra.closed() == b""
            extra.close()
            gate.release.set()
            assert b"released" in await calling.until(b"released")  # none of the busy ones was shed for it
        finally:
            for holder in (calling, heading, sending):
                holder.close()
        async with asyncio.timeout(WAIT):
            while (status := await initialize_over_http(http)) == 503:  # noqa: ASYNC110 - the refused linger
                await asyncio.sleep(0.05)
        assert status == 200
        async with asyncio.timeout(WAIT):
            while "refused 1 with 503" not in caplog.text:  # noqa: ASYNC110 - the log line comes within a second
                await asyncio.sleep(0.05)


async def test_at_the_cap_the_oldest_silent_connection_is_shed_for_a_new_one() -> None:
    async with serving(max_connections=16, connection_idle_timeout=60.0) as http:
        silent = [await Raw.open(http) for _ in range(16)]  # the cap, full of connections that sent nothing
        try:
            assert await initialize_over_http(http) == 200
            assert await silent[0].closed() == b""  # the oldest, closed without an answer
            for raw in silent[1:]:  # the others are still served
                await raw.send(initialize_bytes(http))
                assert (await raw.response())[0] == 200
        finally:
            for raw in silent:
                raw.close()


async def test_a_flood_of_silent_connections_sheds_its_own_never_a_stream_or_a_call_in_flight(gate: Gate) -> None:
    limits = {"max_connections": 8, "connection_idle_timeout": 60.0, "keepalive_interval": 0.2}
    async with serving(build_server(gate), **limits) as http, httpx.AsyncClient(timeout=WAIT) as client:
        session = await open_session(http)
        call = request(2, "tools/call", {"name": "wait", "arguments": {}})
        async with (
            client.stream("GET", http.endpoint, headers=session) as stream,
            client.stream("POST", http.endpoint, json=call, headers=session) as calling,
        ):
            assert stream.status_code == 200 and calling.status_code == 200
            events = stream.aiter_bytes()
            async with asyncio.timeout(WAIT):
                await gate.entered.wait()
                assert await anext(events) == b": keepalive\n\n"
            silent = [await Raw.open(http) for _ in range(40)]  # five times the cap
            try:
                for raw in silent[:30]:  # the oldest, shed for the newer
                    assert await raw.closed() == b""
                await silent[-1].send(initialize_bytes(http))  # the newest was let in
                assert (await silent[-1].response())[0] == 200
                gate.release.set()
                async with asyncio.timeout(WAIT):
                    result = b"".join([chunk async for chunk in calling.aiter_bytes()])
                assert b"released" in result  # the call in flight was not cut
                # Ending the session ends the stream cleanly; a connection cut by shedding would fail the read.
                async with asyncio.timeout(WAIT):
                    assert await anext(events) == b": keepalive\n\n"  # the stream still receives events
                assert (await client.delete(http.endpoint, headers=session)).status_code == 204
                async with asyncio.timeout(WAIT):
                    rest = b"".join([chunk async for chunk in events])
                assert rest.replace(b": keepalive\n\n", b"") == b""  # and ended cleanly, never cut
            finally:
                for raw in silent:
                    raw.close()


async def test_keep_alive_connections_are_shed_after_silent_ones_the_longest_idle_first() -> None:
    # Short head and body timeouts only make the watchdog look often (a tick of 50 ms): it measures idleness.
    limits = {"max_connections": 4, "connection_idle_timeout": 60.0, "header_timeout": 0.2, "body_timeout": 0.2}
    async with serving(**limits) as http:
        opened: list[Raw] = []

        async def served() -> Raw:
            raw = await Raw.open(http)
            opened.append(raw)
            await raw.send(initialize_bytes(http))
            assert (await raw.response())[0] == 200  # and kept alive
            return raw

        try:
            longest = await served()
            await asyncio.sleep(1.0)  # twenty looks of the watchdog
            recent = await served()
            first_silent, second_silent = await Raw.open(http), await Raw.open(http)
            opened += [first_silent, second_silent]
            await served()  # the cap was full: the oldest silent one made room
            assert await first_silent.closed() == b""
            await served()
            assert await second_silent.closed() == b""
            await served()  # no silent one left: the longest idle keep-alive one goes
            assert await longest.closed() == b""
            await recent.send(initialize_bytes(http))
            assert (await recent.response())[0] == 200
        finally:
            for raw in opened:
                raw.close()


async def test_shedding_is_logged_at_most_once_a_second_with_counts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="mcp_sse_server.http")
    async with serving(max_connections=4, connection_idle_timeout=60.0) as http:
        opened: list[Raw] = []
        started = time.monotonic()
        try:
            for burst in (24, 20):  # 4 fill the cap, each later one sheds one: 40 in two seconds at least
                opened += [await Raw.open(http) for _ in range(burst)]
                await asyncio.sleep(1.2)

            def counted() -> list[int]:
                found = re.findall(r"shed (\d+) idle connections", caplog.text)
                return [int(count) for count in found]

            async with asyncio.timeout(WAIT):
                while sum(counted()) < 40:  # noqa: ASYNC110 - a line comes within a second of a shed
                    await asyncio.sleep(0.05)
            elapsed = time.monotonic() - started
            assert sum(counted()) == 40
            assert 2 <= len(counted()) <= elapsed + 1  # not a line per shed
        finally:
            for raw in opened:
                raw.close()


async def test_silent_tls_connections_are_shed_too() -> None:
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    async with serving(max_connections=4, connection_idle_timeout=60.0, ssl=server_context) as http:
        # Each completes its handshake (the server counts a TLS connection from then on), then sends nothing.
        silent = [await asyncio.open_connection("127.0.0.1", http.port, ssl=client_context) for _ in range(4)]
        try:
            async with httpx.AsyncClient(timeout=WAIT, verify=client_context) as client:
                reply = await client.post(http.endpoint, json=initialize_message(), headers=HEADERS)
                assert reply.status_code == 200

            async def ended(reader: asyncio.StreamReader) -> None:
                with contextlib.suppress(ConnectionError, ssl.SSLError):  # aborted, without a TLS close_notify
                    assert await reader.read() == b""

            reads = [asyncio.create_task(ended(reader)) for reader, _ in silent]
            done, waiting = await asyncio.wait(reads, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            assert len(done) == 1  # one of them was shed to let the request in
            await done.pop()
        finally:
            for _, writer in silent:
                writer.close()
