"""Connection flood: 20,500 connections that never send a byte, held 12 s, against one server on 127.0.0.1.

    PYTHONPATH=src .venv/bin/python bench/connection_flood.py
    PYTHONPATH=/tmp/base/src .venv/bin/python bench/connection_flood.py   # another checkout's src/

Not a unit test. It starts this script with ``--serve`` in a child process:
``McpHttpServer.bind`` with the default limits (``max_connections`` 4096,
``connection_idle_timeout`` 15 s) but a 1 s SSE keep-alive, serving an
``add`` tool and a ``ticker`` tool that logs into its own stream until
``stop_ticker`` is called. Then, over loopback only:

1. a session, its standalone GET stream and a ``ticker`` call (an SSE
   response in flight) are opened and read in the background;
2. ``--workers`` child processes (this script with ``--attack``) open
   ``--connections`` connections between them, each from its own source
   address (127.0.0.2, 127.0.0.3, ...: no ephemeral-port shortage), send
   nothing, and hold them until released;
3. from the start of the flood until ``--hold`` seconds after every worker
   has its connections open, a probe (``tools/call add`` on a fresh
   connection) goes out every ``--spacing`` seconds, one after another;
4. the workers are released (they count which of their connections the
   server closed, and close them all); ``--after`` more probes follow;
5. the ticker is stopped: the streams survived if the GET stream received a
   keep-alive after the flood and the ticker call got its result;
6. the server is stopped; its log lines about the cap give the shed count.

Every process raises its soft RLIMIT_NOFILE to the hard limit (the server
inherits it); the server must hold 4,096 connections plus its own files,
and one worker at most ``hard limit - 64``. Every phase has a deadline, and
the workers stop by themselves after ``--hold`` + 120 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import math
import os
import re
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
PROBE_TIMEOUT = 5.0
SCRIPT = os.path.abspath(__file__)
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # Linux; a port is picked at connect


def progress(what: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def raise_fd_limit() -> tuple[int, int]:
    """The soft RLIMIT_NOFILE raised to the hard limit; (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


# --- the server (--serve) ------------------------------------------------------------------------


def serve() -> None:
    """Serve ``add``, ``ticker`` and ``stop_ticker`` on a free port; print the port and the cap, then serve."""
    import logging

    from mcp_sse_server import CallToolResult, McpServer, Tool
    from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer
    from mcp_sse_server.transport.http.connections import effective_max_connections
    from mcp_sse_server.transport.loop import run_loop

    soft, hard = raise_fd_limit()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    server = McpServer("flood", "1.0.0")
    stop = asyncio.Event()

    async def add(arguments: dict[str, Any], context: Any) -> Any:
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    async def ticker(arguments: dict[str, Any], context: Any) -> Any:
        ticks = 0
        while not stop.is_set() and ticks < 600:  # bounded: five minutes at most
            ticks += 1
            await context.log("info", {"tick": ticks})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        return CallToolResult.text(f"ticked {ticks}")

    async def stop_ticker(arguments: dict[str, Any], context: Any) -> Any:
        stop.set()
        return CallToolResult.text("stopped")

    number = {"type": "number"}
    schema = {"type": "object", "properties": {"a": number, "b": number}, "required": ["a", "b"]}
    server.add_tool(Tool("add", schema, add))
    server.add_tool(Tool("ticker", {"type": "object"}, ticker))
    server.add_tool(Tool("stop_ticker", {"type": "object"}, stop_ticker))
    limits = HttpLimits(keepalive_interval=1.0, max_sessions=100_000)

    async def main() -> None:
        http = await McpHttpServer.bind(server, settings=HttpSettings(limits=limits))
        cap = effective_max_connections(limits)
        print(f"port {http.port} cap {cap} nofile {soft}/{hard}", flush=True)
        await http.serve_forever()

    run_loop(main())


# --- an attacker (--attack) ------------------------------------------------------------------------


def attack(address: str, count: int, port: int, hold_max: float) -> None:
    """Open ``count`` connections from ``address`` that send nothing; hold them until a line on stdin."""
    raise_fd_limit()
    selector = selectors.DefaultSelector()
    opened: list[socket.socket] = []
    failed = started = pending = 0
    deadline = time.monotonic() + 60.0
    while (started < count or pending) and time.monotonic() < deadline:
        while started < count and pending < 1024:
            started += 1
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
                sock.bind((address, 0))
                code = sock.connect_ex(("127.0.0.1", port))
            except OSError:
                code = -1
            if code == 0:
                opened.append(sock)
            elif code == errno.EINPROGRESS:
                selector.register(sock, selectors.EVENT_WRITE)
                pending += 1
            else:
                failed += 1
                sock.close()
        for key, _ in selector.select(timeout=0.2):
            sock = key.fileobj  # type: ignore[assignment]
            selector.unregister(sock)
            pending -= 1
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                opened.append(sock)
            else:
                failed += 1
                sock.close()
    for key in list(selector.get_map().values()):  # still connecting at the deadline
        key.fileobj.close()  # type: ignore[union-attr]
        failed += 1
    selector.close()
    print(f"open {len(opened)} failed {failed}", flush=True)
    ready = selectors.DefaultSelector()
    ready.register(sys.stdin, selectors.EVENT_READ)
    ready.select(timeout=hold_max)  # released by the parent, or by the clock
    closed = refused = still = 0
    for sock in opened:
        try:
            data = sock.recv(64, socket.MSG_PEEK)
        except BlockingIOError:
            still += 1
        except OSError:
            closed += 1
        else:
            refused += data.startswith(b"HTTP/1.1 503")
            closed += not data or data.startswith(b"HTTP/1.1 503")
        sock.close()
    print(f"closed {closed} refused {refused} open {still}", flush=True)


# --- the client side of the run ---------------------------------------------------------------------


class Target:
    def __init__(self, port: int) -> None:
        self.port = port
        self.session: dict[str, str] = {}

    def request(self, body: bytes, method: str = "POST", close: bool = True) -> bytes:
        lines = [f"{method} /mcp HTTP/1.1", f"host: 127.0.0.1:{self.port}", f"accept: {ACCEPT}"]
        lines += [f"{name}: {value}" for name, value in self.session.items()]
        if close:
            lines.append("connection: close")
        if method == "POST":
            lines += ["content-type: application/json", f"content-length: {len(body)}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    async def exchange(self, data: bytes) -> tuple[int, dict[str, str], bytes]:
        """``data`` on a fresh connection (closed by the server after the answer): status, headers, body."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(data)
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 "):
            return 0, {}, b""
        lines = head.decode("latin-1").split("\r\n")
        fields = (line.split(": ", 1) for line in lines[1:] if ": " in line)
        headers = {name.lower(): value for name, value in fields}
        return int(lines[0].split()[1]), headers, body

    async def open_session(self) -> None:
        initialize = (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s",'
            b'"capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}' % PROTOCOL.encode()
        )
        status, headers, _ = await self.exchange(self.request(initialize))
        assert status == 200, f"initialize answered {status}"
        self.session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
        await self.exchange(self.request(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))

    def call(self, request_id: int, name: str, arguments: bytes = b"{}") -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}' % (
            request_id,
            name.encode(),
            arguments,
        )

    async def probe(self, request_id: int) -> tuple[int, float]:
        """One ``add`` call on a fresh connection: (status, seconds); status 0: closed without an answer, -1:
        no answer in time, -2: a connection error, -3: 200 with a wrong result."""
        started = time.monotonic()
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                status, _, body = await self.exchange(self.request(self.call(request_id, "add", b'{"a":1,"b":2}')))
        except TimeoutError:
            status = -1
        except OSError:
            status = -2
        else:
            if status == 200 and b'"text":"3"' not in body:
                status = -3
        return status, time.monotonic() - started


class Stream:
    """A long response read in the background, with the time of each chunk."""

    def __init__(self, target: Target, data: bytes) -> None:
        self.chunks: list[tuple[float, bytes]] = []
        self.ended: float | None = None
        self.task = asyncio.ensure_future(self._read(target, data))

    async def _read(self, target: Target, data: bytes) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
        try:
            writer.write(data)
            await writer.drain()
            while chunk := await reader.read(65536):
                self.chunks.append((time.monotonic(), chunk))
        except OSError:
            pass
        finally:
            self.ended = time.monotonic()
            writer.close()

    def received_after(self, moment: float, marker: bytes) -> bool:
        return any(marker in chunk for at, chunk in self.chunks if at > moment)

    def text(self) -> bytes:
        return b"".join(chunk for _, chunk in self.chunks)


class Server:
    """This script with ``--serve`` in a child process; ``stop()`` returns what it logged."""

    def __init__(self) -> None:
        # The log goes to a file: a pipe read only at the end would fill and block the server mid-flood.
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - the child writes it until stop() reads it
        self.process = subprocess.Popen(
            [sys.executable, SCRIPT, "--serve"], stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.match(r"port (\d+) cap (\d+) nofile (\d+)/(\d+)", line)
        if found is None:
            self.stop()
            raise SystemExit(f"the server did not start: {line!r}")
        self.port, self.cap = int(found.group(1)), int(found.group(2))
        self.nofile = f"{found.group(3)}/{found.group(4)}"

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        return text


class Outcome:
    """What the client side saw."""

    def __init__(self) -> None:
        self.during: list[tuple[int, float]] = []
        self.after: list[tuple[int, float]] = []
        self.opened: list[list[str]] = []  # per worker: open N failed M
        self.closing: list[list[str]] = []  # per worker: closed N refused M open K
        self.opening_seconds = 0.0
        self.streams_survived = False
        self.detail = ""


async def flood(options: argparse.Namespace, port: int) -> Outcome:
    """Steps 1 to 5 of the module's docstring against the server on ``port``."""
    outcome = Outcome()
    target = Target(port)
    await target.open_session()
    get = Stream(target, target.request(b"", method="GET", close=False))
    ticker = Stream(target, target.request(target.call(2, "ticker")))
    await asyncio.sleep(1.5)  # both streams open and flowing
    streams_before = bool(get.chunks) and bool(ticker.chunks)

    share = math.ceil(options.connections / options.workers)
    hold_max = str(options.hold + 120.0)
    flood_started = time.monotonic()
    workers = []
    for number in range(options.workers):
        count = str(min(share, options.connections - number * share))
        attack = ("--attack", f"127.0.0.{2 + number}", count, str(port), hold_max)
        workers.append(
            await asyncio.create_subprocess_exec(
                sys.executable, SCRIPT, *attack, stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        )
    try:
        opening = [asyncio.ensure_future(worker.stdout.readline()) for worker in workers]  # type: ignore[union-attr]
        all_open: float | None = None
        request_id = 10
        while all_open is None or time.monotonic() < all_open + options.hold:
            started = time.monotonic()
            request_id += 1
            outcome.during.append(await target.probe(request_id))
            if all_open is None and all(done.done() for done in opening):
                all_open = time.monotonic()
                outcome.opening_seconds = all_open - flood_started
                progress(f"every worker has its connections open; {len(outcome.during)} probes so far")
            if all_open is None and started - flood_started > 90.0:
                all_open = time.monotonic() - options.hold  # the workers never finished opening: stop probing
            await asyncio.sleep(max(0.0, options.spacing - (time.monotonic() - started)))
        progress(f"probed {len(outcome.during)} times; releasing the flood")
        outcome.opened = [(await done).decode().split() for done in opening]
        for worker in workers:
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write(b"release\n")
            worker.stdin.close()
        async with asyncio.timeout(60.0):
            outcome.closing = [(await worker.stdout.readline()).decode().split() for worker in workers]  # type: ignore[union-attr]
            for worker in workers:
                await worker.wait()
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()
    flood_ended = time.monotonic()
    progress("the flood is closed; probing again")
    for _ in range(options.after):
        request_id += 1
        outcome.after.append(await target.probe(request_id))
        await asyncio.sleep(0.2)

    await asyncio.sleep(1.5)  # at least one keep-alive on the GET stream after the flood
    stopped = -1
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(10.0):
            stopped, _, _ = await target.exchange(target.request(target.call(3, "stop_ticker")))
            await ticker.task
    get_alive = get.ended is None and get.received_after(flood_ended, b": keepalive")
    call_alive = b"ticked" in ticker.text() and ticker.received_after(flood_ended, b'"tick"')
    get.task.cancel()
    await asyncio.gather(get.task, return_exceptions=True)
    outcome.streams_survived = streams_before and get_alive and call_alive and stopped == 200
    outcome.detail = f"GET {'alive' if get_alive else 'cut'}, call {'completed' if call_alive else 'cut'}"
    return outcome


def report(options: argparse.Namespace, outcome: Outcome, log: str) -> bool:
    """Print the figures; True when the must-hold figures hold."""
    shed = sum(int(count) for count in re.findall(r"shed (\d+) idle", log))
    refused = sum(int(count) for count in re.findall(r"refused (\d+) with 503", log))
    refused += len(re.findall(r"Refused a connection", log))  # before shedding: a line per refusal
    opened = sum(int(words[1]) for words in outcome.opened)
    failed = sum(int(words[3]) for words in outcome.opened)
    closed = sum(int(words[1]) for words in outcome.closing)
    answered_503 = sum(int(words[3]) for words in outcome.closing)
    still_open = sum(int(words[5]) for words in outcome.closing)
    during = sum(status == 200 for status, _ in outcome.during)
    after = sum(status == 200 for status, _ in outcome.after)
    other = sorted({status for status, _ in outcome.during + outcome.after if status != 200})
    slowest = max((seconds for status, seconds in outcome.during if status == 200), default=0.0)
    print(
        f"flood: {opened} connections opened ({failed} failed to connect) in {outcome.opening_seconds:.1f} s, held "
        f"{options.hold:g} s more; at release the server had closed {closed} of them ({answered_503} with a 503 "
        f"answer), {still_open} still open"
    )
    print(
        f"probes answered 200 during the flood: {during}/{len(outcome.during)} (slowest {slowest * 1000:.0f} ms); "
        f"after it: {after}/{len(outcome.after)}" + (f" (other outcomes: {other})" if other else "")
    )
    print(f"SSE streams survived: {'yes' if outcome.streams_survived else 'no'} ({outcome.detail})")
    print(f"server log: shed {shed} idle connections, refused {refused} with 503")
    return during >= 0.9 * len(outcome.during) and after == len(outcome.after) and outcome.streams_survived


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=20_500, help="idle connections of the flood")
    parser.add_argument("--workers", type=int, default=4, help="processes sharing the flood (one source address each)")
    parser.add_argument("--hold", type=float, default=12.0, help="seconds the flood is held once open")
    parser.add_argument("--spacing", type=float, default=0.4, help="seconds between probe starts during the flood")
    parser.add_argument("--after", type=int, default=10, help="probes after the flood")
    parser.add_argument("--server-log", metavar="PATH", help="write the server's log (stderr) to PATH")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--attack", nargs=4, metavar=("ADDRESS", "COUNT", "PORT", "HOLD"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve()
        return 0
    if options.attack:
        address, count, port, hold = options.attack
        attack(address, int(count), int(port), float(hold))
        return 0
    if not 1 <= options.workers <= 200 or not 1 <= options.connections <= 100_000:
        parser.error("--workers takes 1 to 200, --connections 1 to 100000")
    soft, hard = raise_fd_limit()  # the server inherits it
    server = Server()
    print(
        f"fd limit: this process {soft}/{hard}, the server {server.nofile}; server cap {server.cap}; flood of "
        f"{options.connections} connections from {options.workers} processes, held {options.hold:g} s",
        flush=True,
    )
    try:
        outcome = asyncio.run(flood(options, server.port))
    finally:
        log = server.stop()
        if options.server_log:
            with open(options.server_log, "w") as file:
                file.write(log)
    passed = report(options, outcome, log)
    print("PASS" if passed else "FAIL", "(at least 90% of probes 200 during the flood, all after; streams survive)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
