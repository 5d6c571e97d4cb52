"""Red-team checks against a real server on 127.0.0.1: one summary line per check.

    python bench/redteam.py                  # every check, about 2 minutes
    python bench/redteam.py --idle 20000     # more idle connections (needs the fd limit)
    python bench/redteam.py --only idle --idle 3000 --cap 2000   # beyond the connection cap
    python bench/redteam.py --only header_flood slow
    python bench/redteam.py --asgi           # the same server with the fast path off

Not a unit test: it starts ``mcp-sse-server serve bench/redteam.py:build_server``
in a child process (short timeouts so the slow checks fit), attacks it from
this process over loopback only, and prints PASS or FAIL per check with the
figures behind it. Every check is bounded in count and time (each ~20 s at
most, apart from opening many idle connections). Run it with ``src/`` first
on ``PYTHONPATH`` to test the working tree.

Checks: header_flood, idle, slow, fuzz, churn, writers (see each function).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
IDLE_TIMEOUT = 3.0
MAX_HEADER_BYTES = 64 * 1024
PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
EXCEPTION_TEXT = re.compile(rb"Traceback|Exception|Error\(|File \"|\.py\b|line \d+", re.IGNORECASE)


# --- the server under attack (imported by the child process) ---------------------------------


def build_server() -> Any:
    """The server the child serves: ``add``, and ``flood`` (several tasks logging into one request's stream)."""
    from mcp_sse_server import CallToolResult, McpServer, Tool

    server = McpServer("redteam", "1.0.0")

    async def add(arguments: dict[str, Any], context: Any) -> Any:
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    async def flood(arguments: dict[str, Any], context: Any) -> Any:
        pad = "x" * int(arguments["size"])

        async def writer(number: int) -> None:
            for index in range(int(arguments["frames"])):
                await context.log("info", {"writer": number, "index": index, "pad": pad})

        await asyncio.gather(*(writer(n) for n in range(int(arguments["writers"]))))
        return CallToolResult.text("done")

    number = {"type": "number"}
    server.add_tool(
        Tool("add", {"type": "object", "properties": {"a": number, "b": number}, "required": ["a", "b"]}, add)
    )
    server.add_tool(
        Tool(
            "flood",
            {
                "type": "object",
                "properties": {"writers": number, "frames": number, "size": number},
                "required": ["writers", "frames", "size"],
            },
            flood,
        )
    )
    return server


# --asgi: `serve` has no switch for the fast path, so the child gives bind and on_socket the limited
# protocol of connections.py, which is what HttpSettings(fast_path=False) gives them (server.py).
ASGI_CHILD = """import sys
from mcp_sse_server.transport.http import connections, fast_protocol
fast_protocol.fast_protocol_class = lambda limits, app, path, observer=None: connections.protocol_class(
    limits, observer)
from mcp_sse_server.cli import main
sys.exit(main())
"""


class Server:
    """``mcp-sse-server serve`` in a child process (``asgi``: with the fast path off)."""

    def __init__(self, max_connections: int, asgi: bool = False) -> None:
        command = [
            sys.executable,
            *(["-c", ASGI_CHILD] if asgi else ["-m", "mcp_sse_server"]),
            "serve",
            f"{os.path.abspath(__file__)}:build_server",
            "--port",
            "0",
            "--max-sessions",
            "100000",
            "--header-timeout",
            f"{HEADER_TIMEOUT}s",
            "--body-timeout",
            f"{BODY_TIMEOUT}s",
            "--connection-idle-timeout",
            f"{IDLE_TIMEOUT}s",
            "--max-connections",
            str(max_connections),
            "--log-level",
            "error",
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)(/\S*)", line)
        if found is None:
            self.process.kill()
            raise SystemExit(f"the server did not start: {line!r}")
        self.port = int(found.group(1))
        self.path = found.group(2)
        self.endpoint = f"http://127.0.0.1:{self.port}{self.path}"

    def rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()


# --- raw HTTP over loopback ------------------------------------------------------------------


def head(server: Server, method: str = "POST", extra: dict[str, str] | None = None, length: int | None = None) -> bytes:
    lines = [f"{method} {server.path} HTTP/1.1", f"host: 127.0.0.1:{server.port}", f"accept: {ACCEPT}"]
    lines.append("content-type: application/json")
    if length is not None:
        lines.append(f"content-length: {length}")
    lines += [f"{name}: {value}" for name, value in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n").encode()


def initialize_body(request_id: int = 1) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"%s",'
        b'"capabilities":{},"clientInfo":{"name":"redteam","version":"1"}}}' % (request_id, PROTOCOL.encode())
    )


def initialize_request(server: Server) -> bytes:
    body = initialize_body()
    return head(server, length=len(body)) + b"\r\n" + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one response (Content-Length or read to EOF); status 0 if closed first."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
        while raw.startswith(b"HTTP/1.1 1"):  # an interim answer (100 Continue): the real one follows
            raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return 0, {}, b""
    lines = raw.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
    try:
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        else:
            body = await reader.read()
    except (asyncio.IncompleteReadError, ConnectionError) as error:
        body = getattr(error, "partial", b"")
    return int(lines[0].split()[1]), headers, body


async def exchange(server: Server, data: bytes, timeout: float = 5.0) -> tuple[int, bytes, float]:
    """Send ``data`` on a new connection; (status, body, seconds). Status 0: closed without an answer; -1: no
    answer within ``timeout``."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            try:
                writer.write(data)
                await writer.drain()
                status, _, body = await read_response(reader)
            finally:
                writer.close()
    except TimeoutError:
        return -1, b"", time.perf_counter() - started
    except ConnectionError:
        return 0, b"", time.perf_counter() - started
    return status, body, time.perf_counter() - started


async def normal_requests(server: Server, count: int, pause: float = 0.0) -> list[tuple[int, float]]:
    """``count`` initialize requests on fresh connections, one after another: (status, seconds)."""
    results = []
    for _ in range(count):
        status, _, seconds = await exchange(server, initialize_request(server))
        results.append((status, seconds))
        if pause:
            await asyncio.sleep(pause)
    return results


def latency(results: list[tuple[int, float]]) -> str:
    ok = [seconds for status, seconds in results if status == 200]
    if not ok:
        return f"0/{len(results)} ok"
    return f"{len(ok)}/{len(results)} ok, p50 {statistics.median(ok) * 1000:.1f} ms, max {max(ok) * 1000:.1f} ms"


async def open_session(server: Server) -> dict[str, str]:
    import httpx

    async with httpx.AsyncClient() as client:
        reply = await client.post(
            server.endpoint, content=initialize_body(), headers={"accept": ACCEPT, "content-type": "application/json"}
        )
        session = {
            "accept": ACCEPT,
            "content-type": "application/json",
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": PROTOCOL,
        }
        await client.post(
            server.endpoint, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=session
        )
    return session


# --- the checks --------------------------------------------------------------------------------


async def header_flood(server: Server, options: argparse.Namespace) -> tuple[bool, str]:
    """One connection streams an endless header line while another client times normal requests."""
    rss_before = server.rss_mb()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(head(server, extra={}) + b"x-flood: " + b"a" * (MAX_HEADER_BYTES + 1))
    await writer.drain()

    async def answer() -> int:
        async with asyncio.timeout(5.0):
            status, _, _ = await read_response(reader)
        return status

    answering = asyncio.create_task(answer())

    async def stream_on() -> int:
        """Keep streaming the header (up to 200 MB or 10 s) until the server cuts the connection."""
        sent = 0
        chunk = b"a" * 65536
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(10.0):
                while sent < 200 * 1024 * 1024:
                    writer.write(chunk)
                    await writer.drain()
                    sent += len(chunk)
        return sent

    others = asyncio.create_task(normal_requests(server, 24, pause=0.02))
    try:
        status = await answering
    except TimeoutError:
        status = -1
    after = await stream_on()
    results = await others
    writer.close()
    rss_after = server.rss_mb()
    slowest = max((seconds for code, seconds in results if code == 200), default=99.0)
    ok = status == 431 and all(code == 200 for code, _ in results) and slowest < 0.1 and after < 64 * 1024 * 1024
    return ok, (
        f"answered {status} to a header of {MAX_HEADER_BYTES + 1} bytes (before its end); cut off after "
        f"{after / 2**20:.1f} MiB more (socket buffers included); others: {latency(results)}; "
        f"RSS {rss_before:.0f} -> {rss_after:.0f} MB"
    )


async def idle(server: Server, options: argparse.Namespace) -> tuple[bool, str]:
    """Many connections that never send a byte; new clients must still be served, the idle ones closed."""
    count = options.idle
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    gate = asyncio.Semaphore(256)
    started = time.perf_counter()
    failed = 0

    async def connect() -> None:
        nonlocal failed
        async with gate:
            try:
                opened.append(await asyncio.open_connection("127.0.0.1", server.port))
            except OSError:
                failed += 1

    await asyncio.gather(*(connect() for _ in range(count)))
    opening = time.perf_counter() - started
    rss = server.rss_mb()
    during = await normal_requests(server, 20)
    await asyncio.sleep(IDLE_TIMEOUT + HEADER_TIMEOUT)
    closed = refused = still_open = 0
    for reader, _ in opened:
        try:
            async with asyncio.timeout(0.05):
                data = await reader.read()
        except TimeoutError:
            still_open += 1
        except ConnectionError:
            closed += 1
        else:
            refused += data.startswith(b"HTTP/1.1 503")
            closed += not data
    for _, writer in opened:
        writer.close()
    after = await normal_requests(server, 20)
    over_cap = len(opened) + 20 > options.cap
    allowed = (200, 503) if over_cap else (200,)
    ok = still_open == 0 and all(code in allowed for code, _ in during) and all(code == 200 for code, _ in after)
    return ok, (
        f"{len(opened)} open ({failed} failed to connect) in {opening:.1f} s, cap {options.cap}, server RSS "
        f"{rss:.0f} MB; new clients meanwhile: {latency(during)}"
        + (f" ({sum(code == 503 for code, _ in during)} got 503)" if over_cap else "")
        + f"; after the idle timeout ({IDLE_TIMEOUT:g} s): {closed} closed, {refused} had been refused with 503, "
        f"{still_open} still open; new clients then: {latency(after)}"
    )


async def slow(server: Server, options: argparse.Namespace) -> tuple[bool, str]:
    """Half-sent heads and stalled bodies must be answered 408 and closed after their timeouts."""
    count = 100

    async def stall(data: bytes) -> tuple[int, float]:
        started = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(data)
        await writer.drain()
        try:
            async with asyncio.timeout(max(HEADER_TIMEOUT, BODY_TIMEOUT) + 5.0):
                status, _, _ = await read_response(reader)
                await reader.read()
        except TimeoutError:
            status = -1
        except ConnectionError:
            pass
        writer.close()
        return status, time.perf_counter() - started

    half = head(server) + b"x-half: never"
    body = b'{"jsonrpc":"2.0","id":1,'
    stalled = head(server, length=1000) + b"\r\n" + body
    heads, bodies = await asyncio.gather(
        asyncio.gather(*(stall(half) for _ in range(count))),
        asyncio.gather(*(stall(stalled) for _ in range(count))),
    )
    results = await normal_requests(server, 5)

    def summary(what: list[tuple[int, float]], timeout: float) -> str:
        codes = Counter(code for code, _ in what)
        times = [seconds for _, seconds in what]
        return (
            f"{codes.get(408, 0)}/{len(what)} got 408 and were closed after {min(times):.1f}-{max(times):.1f} s "
            f"(timeout {timeout:g} s)"
        )

    ok = all(code == 408 for code, _ in heads + bodies) and all(code == 200 for code, _ in results)
    return ok, f"half heads: {summary(heads, HEADER_TIMEOUT)}; stalled bodies: {summary(bodies, BODY_TIMEOUT)}"


def mutations(server: Server, rng: random.Random) -> list[tuple[str, bytes]]:
    """A few hundred malformed requests derived from a valid initialize POST."""
    base = initialize_request(server)
    body = initialize_body()
    out: list[tuple[str, bytes]] = []

    def flip(data: bytes) -> bytes:
        data = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)

    def insert(data: bytes) -> bytes:
        at = rng.randrange(len(data))
        junk = bytes(rng.choice(b'\x00\r\n\t :\x7f\xff{}[]"\\%') for _ in range(rng.randint(1, 8)))
        return data[:at] + junk + data[at:]

    def framed(extra: dict[str, str], payload: bytes, length: int | None = None) -> bytes:
        return head(server, extra=extra, length=len(payload) if length is None else length) + b"\r\n" + payload

    fixed = [
        ("bad method", base.replace(b"POST", b"P\x00ST", 1)),
        ("unknown method", base.replace(b"POST", b"BREW", 1)),
        ("http/0.9", b"GET /mcp\r\n\r\n"),
        ("bad version", base.replace(b"HTTP/1.1", b"HTTP/9.9", 1)),
        ("no host", base.replace(b"host:", b"x-nohost:", 1)),
        ("two lengths", head(server, extra={"content-length": "5"}, length=len(body)) + b"\r\n" + body),
        ("negative length", framed({}, body, -1)),
        ("huge length", framed({}, body, 10**30)),
        ("text length", head(server, extra={"content-length": "abc"}) + b"\r\n" + body),
        ("bad chunk", head(server, extra={"transfer-encoding": "chunked"}) + b"\r\nzz\r\n" + body + b"\r\n0\r\n\r\n"),
        ("chunked and length", framed({"transfer-encoding": "chunked"}, body)),
        ("header without colon", head(server, extra={}, length=len(body)) + b"broken header\r\n\r\n" + body),
        ("obs-fold", head(server, extra={"x-a": "1\r\n folded"}, length=len(body)) + b"\r\n" + body),
        ("nul in header", framed({"x-nul": "a\x00b"}, body)),
        ("bad json", framed({}, b'{"jsonrpc": "2.0", "id": 1, "method": ')),
        ("deep json", framed({}, b"[" * 100_000 + b"]" * 100_000)),
        ("huge number", framed({}, b'{"jsonrpc":"2.0","id":1e999999,"method":"ping"}')),
        ("batch", framed({}, b"[" + body + b"," + body + b"]")),
        ("wrong type", framed({"content-type": "text/plain"}, body)),
        ("bad accept", framed({"accept": "image/png"}, body)),
        ("bad session", framed({"mcp-session-id": "\x01\x02"}, body)),
        ("bad protocol header", framed({"mcp-protocol-version": "1999-01-01"}, body)),
        ("non-utf8 body", framed({}, b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}')),
        ("percent path", base.replace(b"/mcp", b"/%ff%00%", 1)),
        ("absolute uri", base.replace(b"/mcp", f"http://127.0.0.1:{server.port}/mcp".encode(), 1)),
        ("upgrade", framed({"connection": "upgrade", "upgrade": "websocket"}, body)),
        ("expect", framed({"expect": "100-continue"}, body)),
        ("many headers", framed({f"x-{n}": "1" for n in range(150)}, body)),
    ]
    out.extend(fixed)
    for _ in range(300 - len(fixed)):
        kind = rng.choice(["flip", "insert", "truncate", "json"])
        if kind == "flip":
            out.append(("flip", flip(base)))
        elif kind == "insert":
            out.append(("insert", insert(base)))
        elif kind == "truncate":
            out.append(("truncate", base[: rng.randrange(1, len(base))]))
        else:
            out.append(("json", framed({}, flip(body))))
    return out


async def fuzz(server: Server, options: argparse.Namespace) -> tuple[bool, str]:
    """A few hundred malformed requests: no 5xx, no exception text in any body, the server still serves."""
    cases = mutations(server, random.Random(options.seed))
    gate = asyncio.Semaphore(64)
    bad: list[str] = []
    statuses: Counter[int] = Counter()

    async def one(name: str, data: bytes) -> None:
        async with gate:
            status, body, _ = await exchange(server, data, timeout=max(HEADER_TIMEOUT, BODY_TIMEOUT) + 4.0)
        statuses[status] += 1
        if status >= 500 or status == -1 or EXCEPTION_TEXT.search(body):
            bad.append(f"{name}: {status} {body[:80]!r}")

    started = time.perf_counter()
    await asyncio.gather(*(one(name, data) for name, data in cases))
    results = await normal_requests(server, 5)
    shown = ", ".join(f"{code or 'closed'}: {n}" for code, n in sorted(statuses.items()))
    ok = not bad and server.alive() and all(code == 200 for code, _ in results)
    detail = f"; problems: {'; '.join(bad[:3])}" if bad else ""
    return ok, f"{len(cases)} mutated requests in {time.perf_counter() - started:.1f} s, answers {{{shown}}}{detail}"


async def churn(server: Server, options: argparse.Namespace) -> tuple[bool, str]:
    """Open a session, call a tool, delete it, over and over: memory must level off."""
    import httpx

    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}'
    done = 0
    marks: list[float] = [server.rss_mb()]
    deadline = time.perf_counter() + 16.0
    async with httpx.AsyncClient() as client:
        for _round in range(2):
            for _ in range(options.churn // 2):
                if time.perf_counter() > deadline:
                    break
                plain = {"accept": ACCEPT, "content-type": "application/json"}
                reply = await client.post(server.endpoint, content=initialize_body(), headers=plain)
                session = {**plain, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
                await client.post(
                    server.endpoint, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=session
                )
                await client.post(server.endpoint, content=call, headers=session)
                await client.delete(server.endpoint, headers=session)
                done += 1
            marks.append(server.rss_mb())
    second_half = marks[2] - marks[1]
    ok = second_half < 10.0
    return ok, (
        f"{done} sessions opened, used and deleted; RSS {marks[0]:.0f} -> {marks[1]:.0f} (half way) -> "
        f"{marks[2]:.0f} MB; second half grew {second_half:+.1f} MB"
    )


async def writers(server: Server, options: argparse.Namespace) -> tuple[bool, str]:
    """Two and three server tasks write into one request's SSE stream that the client never reads."""
    lines = []
    ok = True
    for count in (2, 3):
        session = await open_session(server)
        call = (
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"flood",'
            b'"arguments":{"writers":%d,"frames":4000,"size":100000}}}' % count
        )
        extra = {name: value for name, value in session.items() if name.startswith("mcp-")}
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(head(server, extra=extra, length=len(call)) + b"\r\n" + call)  # and never read
        before = server.rss_mb()
        peak = before
        for _ in range(16):
            await asyncio.sleep(0.5)
            peak = max(peak, server.rss_mb())
        sock.close()
        grew = peak - before
        ok = ok and grew < 50.0
        lines.append(f"{count} writers x 4000 frames of 100 kB unread for 8 s: RSS {before:.0f} -> peak {peak:.0f} MB")
    return ok, "; ".join(lines) + " (unbounded would be hundreds of MB)"


CHECKS: dict[str, Callable[[Server, argparse.Namespace], Awaitable[tuple[bool, str]]]] = {
    "header_flood": header_flood,
    "idle": idle,
    "slow": slow,
    "fuzz": fuzz,
    "churn": churn,
    "writers": writers,
}


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft fd limit (the server inherits it) towards ``wanted``; the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--idle", type=int, default=2000, help="idle connections to open (up to 20000)")
    parser.add_argument("--cap", type=int, help="the server's max_connections (default: idle + 512, at least 4096)")
    parser.add_argument("--churn", type=int, default=1000, help="sessions to open and delete")
    parser.add_argument("--seed", type=int, default=1, help="seed of the fuzz mutations")
    parser.add_argument("--only", nargs="*", choices=sorted(CHECKS), help="run only these checks")
    parser.add_argument("--asgi", action="store_true", help="every request through uvicorn's cycle (no fast path)")
    options = parser.parse_args()
    options.idle = max(1, min(options.idle, 20_000))
    limit = raise_fd_limit(options.idle + 1024)
    if options.idle + 256 > limit:
        options.idle = max(1, limit - 256)
        print(f"(fd limit {limit}: opening {options.idle} idle connections)")
    options.cap = options.cap or max(4096, options.idle + 512)
    server = Server(max_connections=options.cap, asgi=options.asgi)
    failures = 0
    try:
        for name, check in CHECKS.items():
            if options.only and name not in options.only:
                continue
            started = time.perf_counter()
            try:
                async with asyncio.timeout(120.0):
                    ok, line = await check(server, options)
            except Exception as error:  # a check that breaks is a failed check, and the run goes on
                ok, line = False, f"the check itself failed: {type(error).__name__}: {error}"
            failures += not ok
            alive = "" if server.alive() else " (server died)"
            print(
                f"{'PASS' if ok else 'FAIL'} {name} ({time.perf_counter() - started:.0f} s): {line}{alive}", flush=True
            )
            if not server.alive():
                return 1
    finally:
        server.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
