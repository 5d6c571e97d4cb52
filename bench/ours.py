"""This project's server in the benchmark: one `add` tool, served with
`McpHttpServer.bind(SERVER, host='127.0.0.1', port=PORT)`, the same tool the
peers serve (bench/peers/).

It runs against the working tree and against older checkouts (run.py's
--baseline puts one first on PYTHONPATH), so it reads which API it has from
`bind`'s first parameter: `server` (one McpServer serves every session: it
is built once) or `on_session` (before the one-server refactor, up to
540ab25: a factory called once per session, so each session has its own).

    python bench/ours.py PORT      serve on http://127.0.0.1:PORT/mcp until SIGTERM
    python bench/ours.py --probe   print one JSON line: {"available": bool, "reason": str}
    python bench/ours.py PORT --decorated
                                   the same `add` written as a typed function with `@server.tool`
                                   (bench/decorated.py's HTTP rows)
    python bench/ours.py PORT --redis URL
                                   the same with only the session store and event log in Redis:
                                   bind(session_store=RedisSessionStore, event_log=RedisEventLog,
                                   clock=time.time), no router, no event bus (the stores' own cost)
    mcp-sse-server serve bench/ours.py:build_server ...
                                   the same server through the CLI (run.py's Redis points:
                                   `--redis-url URL --workers N`, and the in-process store beside them)

The tool handler is async, as in the TypeScript peer: a sync handler would
run in a worker thread, which is a different thing to measure. It reports
one progress notification before answering when the call carries
`params._meta.progressToken` (run.py's streamed points); without a token
`report_progress` returns at once, so the other points measure the plain call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def load_core() -> tuple[Any, Any, Any]:
    """(McpServer, Tool, CallToolResult); ImportError while the core is missing."""
    from mcp_sse_server.server import McpServer
    from mcp_sse_server.types import CallToolResult, Tool

    return McpServer, Tool, CallToolResult


def load_http() -> Any:
    """McpHttpServer; ImportError while the HTTP transport is missing or its bind() is not one we know."""
    try:
        from mcp_sse_server import McpHttpServer  # type: ignore[attr-defined]
    except ImportError:
        from mcp_sse_server.transport.http import McpHttpServer
    if not callable(getattr(McpHttpServer, "bind", None)):
        raise ImportError("McpHttpServer has no bind()")
    shared_server(McpHttpServer.bind)
    return McpHttpServer


def shared_server(bind: Callable[..., Any]) -> bool:
    """Whether bind() takes one server for every session (first parameter
    `server`) rather than a factory called per session (`on_session`)."""
    first = next(iter(inspect.signature(bind).parameters), None)
    if first not in ("server", "on_session"):
        raise ImportError(f"McpHttpServer.bind's first parameter is {first!r}, not 'server' or 'on_session'")
    return first == "server"


def make_factory(decorated: bool = False) -> Callable[[], Any]:
    """A factory of fresh McpServers with the `add` tool (one handler for all of them); `decorated`:
    the same tool, wire for wire, written as a typed function with `@server.tool`."""
    McpServer, Tool, CallToolResult = load_core()
    if decorated:
        from mcp_sse_server.context import RequestContext

        def decorated_factory() -> Any:
            server = McpServer("bench-add", "1.0.0")

            @server.tool(description="Adds two numbers.")
            async def add(a: float, b: float, context: RequestContext) -> str:
                await context.report_progress(1, 1)
                return str(a + b)

            return server

        return decorated_factory

    async def add(arguments: dict[str, Any], context: Any) -> Any:
        await context.report_progress(1, 1)  # one notifications/progress when the call has a token, else a no-op
        return CallToolResult.text(str(arguments["a"] + arguments["b"]))

    def factory() -> Any:
        server = McpServer("bench-add", "1.0.0")
        server.add_tool(Tool("add", ADD_SCHEMA, add, description="Adds two numbers."))
        return server

    return factory


def build_server() -> Any:
    """The `add` server for `mcp-sse-server serve bench/ours.py:build_server` (one server, every session)."""
    return make_factory()()


def bind_options(bind: Callable[..., Any], port: int) -> dict[str, Any]:
    """bind() arguments: loopback, the port, and room for the 10,000-session memory point."""
    options: dict[str, Any] = {"host": "127.0.0.1", "port": port}
    params = inspect.signature(bind).parameters
    open_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if "max_sessions" in params or open_kwargs:
        options["max_sessions"] = 200_000
    return options


def redis_options(url: str) -> tuple[dict[str, Any], Any]:
    """bind() arguments putting the session store and event log in the Redis at `url` (with the
    app's default limits, as tests/stores build them), and the client to close."""
    from redis.asyncio import Redis

    from mcp_sse_server.stores.redis import RedisEventLog, RedisSessionStore
    from mcp_sse_server.transport.http import HttpLimits

    limits, client = HttpLimits(), Redis.from_url(url)
    return {
        "session_store": RedisSessionStore(client, idle_timeout=limits.session_idle_timeout,
                                           max_lifetime=limits.session_max_lifetime),
        "event_log": RedisEventLog(client, limits.backlog_limit, limits.replay_buffer_size,
                                   ttl=limits.session_max_lifetime + 60.0),
        "clock": time.time,  # a shared store's records carry wall-clock times
    }, client


async def serve(port: int, redis_url: str | None = None, decorated: bool = False) -> None:
    """Bind, print the endpoint, serve until SIGTERM or SIGINT, close."""
    McpHttpServer = load_http()
    factory = make_factory(decorated)
    served = factory() if shared_server(McpHttpServer.bind) else factory
    options, client = redis_options(redis_url) if redis_url else ({}, None)
    http = await McpHttpServer.bind(served, **bind_options(McpHttpServer.bind, port), **options)
    print(f"listening on {http.endpoint}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await http.close()
        if client is not None:
            await client.aclose()


def main() -> None:
    if sys.argv[1:] == ["--probe"]:
        try:
            load_core()
            load_http()
            print(json.dumps({"available": True, "reason": ""}))
        except ImportError as exc:
            print(json.dumps({"available": False, "reason": f"{type(exc).__name__}: {exc}"}))
        return
    port = int(sys.argv[1])
    redis_url = sys.argv[3] if sys.argv[2:3] == ["--redis"] else None
    decorated = sys.argv[2:3] == ["--decorated"]
    try:
        import uvloop  # the peers' uvicorn picks uvloop too, so both sides get the same loop
    except ImportError:
        asyncio.run(serve(port, redis_url, decorated))
    else:
        uvloop.run(serve(port, redis_url, decorated))


if __name__ == "__main__":
    main()
