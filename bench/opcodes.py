"""Python opcodes one `tools/call add` executes inside our ASGI app: a count that does not move
with the machine's load, to compare code versions where the timed points are too noisy.

    PYTHONPATH=src python bench/opcodes.py [session|stateless] [--by-function] [--jwt] [--factory]
    PYTHONPATH=bench/.baseline/540ab25/src python bench/opcodes.py      (run.py --baseline extracts it)

--jwt: the app as `ours.py --jwt` serves it (auth=ResourceServer(...) with a JwtVerifier and a
local RS256 key), every call with `Authorization: Bearer` and the one token, verified before the
counted calls (a VerifiedTokens hit): what a token verified before adds to a call (run.py's ours-jwt).

--factory: the app builds its servers with a factory (`McpHttpApp(factory)`, as `serve
FILE:factory` does) instead of serving one instance: a stateless call should cost what an
instance's does.

The app is called in process with a minimal ASGI driver (no socket, no uvicorn: their work is
the same for every version); `sys.settrace` counts every opcode of every Python frame during
300 calls after a warm-up. The driver's own frames are left out. --by-function lists the
functions, most opcodes first. Fewer opcodes is less interpreter work; it is not a time (C
calls such as orjson's count as one opcode), so the bench's timed points stay the measure.
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

from ours import app_arguments, jwt_options, make_factory, shared_server

CALLS = 300
HERE = str(Path(__file__).resolve())
HOST = [(b"host", b"127.0.0.1:8000")]
ACCEPT = [(b"accept", b"application/json, text/event-stream"), (b"content-type", b"application/json")]
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def make_app(jwt: bool = False, factory_target: bool = False) -> tuple[Any, list[tuple[bytes, bytes]]]:
    """The app, and the headers every call sends besides HOST and ACCEPT (the bearer token with
    `jwt`); `factory_target`: servers built by a factory, not one instance."""
    from mcp_sse_server.transport.http.app import McpHttpApp

    try:
        from mcp_sse_server.transport.http import McpHttpServer

        shared = shared_server(McpHttpServer.bind) and not factory_target
    except ImportError:
        shared = False
    factory = make_factory()
    served = factory() if shared else factory
    if not jwt:
        return McpHttpApp(served, **app_arguments(McpHttpApp, {"path": "/mcp"})), []
    with tempfile.TemporaryDirectory() as home:
        token = Path(home, "token")
        options = jwt_options(8000, str(token))  # resource http://127.0.0.1:8000/mcp: HOST's
        bearer = [(b"authorization", b"Bearer " + token.read_bytes().strip())]
    return McpHttpApp(served, **app_arguments(McpHttpApp, {"path": "/mcp", **options})), bearer


async def call(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b""}
    await app(scope, receive, send)
    return sent


async def request(app: Any, mode: str, extra: list[tuple[bytes, bytes]]) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and body of the measured call (a session opened first unless stateless); `extra`
    headers go with every request."""
    arguments = {"name": "add", "arguments": {"a": 1, "b": 2}}
    if mode == "stateless":
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**arguments, "_meta": META}})
        routing = [(b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"), (b"mcp-name", b"add")]
        return HOST + ACCEPT + extra + routing, body.encode()
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    opened = await call(app, HOST + ACCEPT + extra, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                                               "params": init}).encode())
    session = [(b"mcp-session-id", dict(opened[0]["headers"])[b"mcp-session-id"]),
               (b"mcp-protocol-version", b"2025-06-18")]
    await call(app, HOST + ACCEPT + extra + session, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": arguments}).encode()
    return HOST + ACCEPT + extra + session, body


async def main(mode: str, by_function: bool, jwt: bool = False, factory_target: bool = False) -> None:
    app, extra = make_app(jwt, factory_target)
    headers, body = await request(app, mode, extra)
    answer = await call(app, headers, body)
    if answer[0]["status"] != 200 or b'"3"' not in answer[-1]["body"]:
        sys.exit(f"the call failed: {answer}")
    for _ in range(200):
        await call(app, headers, body)
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == HERE:
            return None  # the driver's frames are not the app's work
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[f"{code.co_filename.rpartition('/')[2]}:{code.co_name}"] += 1
        return tracer

    sys.settrace(tracer)
    try:
        for _ in range(CALLS):
            await call(app, headers, body)
    finally:
        sys.settrace(None)
    per_call = round(sum(counts.values()) / CALLS)
    flags = (" --jwt" if jwt else "") + (" --factory" if factory_target else "")
    print(json.dumps({"mode": mode + flags, "opcodes_per_call": per_call}))
    if by_function:
        for name, n in counts.most_common(40):
            print(f"{n / CALLS:8.1f}  {name}")


if __name__ == "__main__":
    asyncio.run(main("stateless" if "stateless" in sys.argv[1:] else "session", "--by-function" in sys.argv,
                     "--jwt" in sys.argv, "--factory" in sys.argv))
