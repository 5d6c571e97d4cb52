"""This project's server in the benchmark: one `add` tool, served with
`McpHttpServer.bind(SERVER, host='127.0.0.1', port=PORT)`, the same tool the
peers serve (bench/peers/).

It runs against the working tree and against older checkouts (run.py's
--baseline puts one first on PYTHONPATH), so it reads which API it has from
`bind`'s first parameter: `server` (one McpServer serves every session: it
is built once) or `on_session` (before the one-server refactor, up to
540ab25: a factory called once per session, so each session has its own).

    python bench/ours.py PORT      serve on http://127.0.0.1:PORT/mcp until SIGTERM
    python bench/ours.py --probe   print one JSON line: {"available": bool, "reason": str, "shared": bool,
                                   "json": bool, "json_reason": str, "auth": bool, "auth_reason": str}
                                   (shared: one server for every session; json: bind() takes
                                   json_response, and why not; auth: --jwt can run on this code)
    python bench/ours.py PORT --json
                                   the same with JSON replies: bind(..., json_response=True), which
                                   answers application/json a POST whose request sends nothing before
                                   its result (run.py's JSON point; --probe says whether this code has it)
    python bench/ours.py PORT --decorated
                                   the same `add` written as a typed function with `@server.tool`
                                   (bench/decorated.py's HTTP rows)
    python bench/ours.py PORT --jwt PATH
                                   the same as a protected resource (run.py's `ours-jwt`):
                                   bind(..., auth=ResourceServer(RESOURCE, [ISSUER],
                                   verifier=JwtVerifier(issuer=ISSUER, audience=RESOURCE,
                                   keys={"keys": [jwk]}), required_scopes={"mcp:tools"})), RESOURCE
                                   being http://127.0.0.1:PORT/mcp; an RS256 key pair made at start
                                   (cryptography), and one access token for it (PyJWT) written to
                                   PATH before binding, which every request must carry
                                   (`Authorization: Bearer <token>`)
    python bench/ours.py PORT --redis URL
                                   the same with only the session store and event log in Redis:
                                   a Backend of RedisSessionStore, RedisEventLog and clock=time.time
                                   (older code: bind's keywords of those names), no coordinator, no
                                   shared event bus or tasks (the stores' own cost)
    python bench/ours.py PORT --asgi
                                   the same with the fast path off: HttpSettings(fast_path=False), every
                                   request through uvicorn's ASGI cycle (bench/fast_path.py's ASGI rows,
                                   run.py's `ours-asgi`)
    python bench/ours.py PORT --starlette
                                   the same McpHttpApp mounted in Starlette at /mcp (Mount, the parent's
                                   lifespan=mcp.lifespan, as docs/http.md shows), run by plain uvicorn with
                                   httptools and uvloop, as a user mounting it would: served at /mcp/
                                   (run.py's `ours-starlette`, the ASGI path); working tree only
    mcp-sse-server serve bench/ours.py:build_server ...
                                   the same server through the CLI (run.py's Redis points:
                                   `--redis-url URL --workers N`, and the in-process store beside them)

Where bind() takes `settings=` (an HttpSettings) and `backend=`, the options above go into them
(`app_arguments`); older code takes them as keywords.

BENCH_GC in the environment (for investigations, not used by run.py): `freeze`
(gc.freeze() once bound: what start-up allocated is never scanned again),
`off` (gc.disable()), or `A,B,C` (gc.set_threshold(A, B, C)); with
BENCH_GC_LOG=PATH, every collection's generation and pause are counted and
written to PATH as JSON when the server stops.

The tool handler is async, as in the TypeScript peer: a sync handler would
run in a worker thread, which is a different thing to measure. It reports
one progress notification before answering when the call carries
`params._meta.progressToken` (run.py's streamed points); without a token
`report_progress` returns at once, so the other points measure the plain call.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import os
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
    # The package root's names: the same in every layout the baselines have (engine/ or flat).
    from mcp_sse_server import CallToolResult, McpServer, Tool

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


def takes_settings(call: Callable[..., Any]) -> bool:
    """Whether `call` (bind() or McpHttpApp) takes its configuration as one HttpSettings and its
    stores as one Backend (`settings=`, `backend=`), rather than as keywords of its own."""
    return "settings" in inspect.signature(call).parameters


def app_arguments(call: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    """`call`'s keyword arguments for `options`, given as the keyword-era names (max_sessions,
    path, json_response, auth, and session_store, event_log and clock from redis_options): as
    they are, or as one HttpSettings (and a Backend over those stores) where `call` takes them."""
    if not takes_settings(call):
        return options
    from mcp_sse_server.engine.memory_stores import MemoryEventBus, MemoryTaskStore
    from mcp_sse_server.engine.stores import Backend
    from mcp_sse_server.stores.coordination import LocalCoordinator
    from mcp_sse_server.transport.http import HttpLimits, HttpSettings

    options = dict(options)
    arguments = {name: options.pop(name) for name in ("host", "port") if name in options}
    stores = {name: options.pop(name) for name in ("session_store", "event_log", "clock") if name in options}
    limits = {name: options.pop(name) for name in list(options) if name in HttpLimits.__dataclass_fields__}
    arguments["settings"] = HttpSettings(limits=HttpLimits(**limits), **options)
    if stores:  # the stores alone: no coordinator, no event bus or tasks shared
        arguments["backend"] = Backend(sessions=stores["session_store"], events=stores["event_log"],
                                       coordinator=LocalCoordinator(), tasks=MemoryTaskStore(),
                                       bus=MemoryEventBus(), clock=stores["clock"])
    return arguments


def json_support(bind: Callable[..., Any]) -> str:
    """'' when bind() takes json_response (a parameter, a field of the HttpSettings it takes, or
    a field of HttpLimits, which bind took as keywords), else why not."""
    params = inspect.signature(bind).parameters
    if "json_response" in params or "settings" in params:
        return ""
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        try:
            from mcp_sse_server.transport.http.limits import HttpLimits
        except ImportError:
            return "McpHttpServer.bind takes no json_response in this code"
        if "json_response" in getattr(HttpLimits, "__dataclass_fields__", {}):
            return ""
    return "McpHttpServer.bind takes no json_response in this code"


def auth_support(bind: Callable[..., Any]) -> str:
    """'' when --jwt can run on this code (bind() takes auth=, mcp_sse_server.auth has JwtVerifier
    and ResourceServer, PyJWT and cryptography import), else why not."""
    if "auth" not in inspect.signature(bind).parameters and not takes_settings(bind):
        return "McpHttpServer.bind takes no auth in this code"
    try:
        import cryptography  # noqa: F401
        import jwt  # noqa: F401

        from mcp_sse_server.auth import JwtVerifier, ResourceServer  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


ISSUER = "https://issuer.bench.invalid"  # never fetched: the verifier has its key set in hand
SCOPE = "mcp:tools"
KID = "bench-rs256"


def jwt_options(port: int, token_path: str) -> dict[str, Any]:
    """bind()'s auth= for --jwt: an RS256 key pair made now, its public half as the JwtVerifier's
    key set (keys=, so no JWKS is fetched: what is measured is a request whose token was verified
    before), and one access token signed with its private half, written to `token_path` (whole,
    by a rename) before the server binds. The token's claims are RFC 9068's for an access token:
    iss, aud (the resource), sub, client_id, iat, jti and exp one hour ahead, with scope mcp:tools;
    its header typ at+jwt and the key's kid."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    from mcp_sse_server.auth import JwtVerifier, ResourceServer

    resource = f"http://127.0.0.1:{port}/mcp"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    jwk.update(kid=KID, use="sig", alg="RS256")
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": resource, "sub": "bench-user", "client_id": "bench-client", "iat": now,
              "jti": os.urandom(8).hex(), "exp": now + 3600, "scope": SCOPE}
    token = jwt.encode(claims, key, algorithm="RS256", headers={"typ": "at+jwt", "kid": KID})
    partial = f"{token_path}.{os.getpid()}.tmp"
    with open(partial, "w") as f:
        f.write(token + "\n")
    os.replace(partial, token_path)
    verifier = JwtVerifier(issuer=ISSUER, audience=resource, keys={"keys": [jwk]})
    return {"auth": ResourceServer(resource, [ISSUER], verifier=verifier, required_scopes={SCOPE})}


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
        from mcp_sse_server import RequestContext

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
    """The `add` server for `mcp-sse-server serve bench/ours.py:build_server` (one server, every
    session: marked below, where the version has the mark, as `serve` otherwise calls a
    module:factory once per session, which the idle-session memory of a Redis worker measured)."""
    return make_factory()()


try:
    from mcp_sse_server import shared_server as _shared_mark
except ImportError:  # (a baseline from before the mark)
    pass
else:
    build_server = _shared_mark(build_server)


def bind_options(bind: Callable[..., Any], port: int) -> dict[str, Any]:
    """bind() arguments: loopback, the port, and room for the 10,000-session memory point."""
    options: dict[str, Any] = {"host": "127.0.0.1", "port": port}
    params = inspect.signature(bind).parameters
    open_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if "max_sessions" in params or open_kwargs or "settings" in params:
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


class GcWatch:
    """BENCH_GC and BENCH_GC_LOG (see the module's docstring)."""

    def __init__(self) -> None:
        self.mode = os.environ.get("BENCH_GC", "")
        self.log = os.environ.get("BENCH_GC_LOG", "")
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.t0 = 0.0
        if self.log:
            gc.callbacks.append(self.callback)

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.t0 = time.perf_counter()
        else:
            self.pauses[info["generation"]].append(time.perf_counter() - self.t0)

    def bound(self) -> None:
        """Once the server is bound (start-up done)."""
        if self.mode == "freeze":
            gc.freeze()
        elif self.mode == "off":
            gc.disable()
        elif self.mode:
            gc.set_threshold(*(int(x) for x in self.mode.split(",")))

    def write(self) -> None:
        if not self.log:
            return
        summary: dict[str, Any] = {"mode": self.mode or "default", "threshold": gc.get_threshold()}
        for generation, pauses in self.pauses.items():
            ordered = sorted(pauses)
            summary[f"gen{generation}"] = {"collections": len(ordered), "total_ms": round(sum(ordered) * 1000, 2),
                                           "max_ms": round(ordered[-1] * 1000, 3) if ordered else 0.0}
        with open(self.log, "w") as f:
            json.dump(summary, f)


async def serve(port: int, redis_url: str | None = None, decorated: bool = False, json_replies: bool = False,
                jwt_token: str | None = None, asgi: bool = False) -> None:
    """Bind, print the endpoint, serve until SIGTERM or SIGINT, close. `jwt_token`: --jwt's PATH."""
    McpHttpServer = load_http()
    factory = make_factory(decorated)
    served = factory() if shared_server(McpHttpServer.bind) else factory
    options, client = redis_options(redis_url) if redis_url else ({}, None)
    if json_replies:
        why = json_support(McpHttpServer.bind)
        if why:
            raise SystemExit(f"--json: {why}")
        options["json_response"] = True
    if jwt_token is not None:
        why = auth_support(McpHttpServer.bind)
        if why:
            raise SystemExit(f"--jwt: {why}")
        options.update(jwt_options(port, jwt_token))
    if asgi:
        options["fast_path"] = False
    watch = GcWatch()
    bind = McpHttpServer.bind
    http = await bind(served, **app_arguments(bind, {**bind_options(bind, port), **options}))
    watch.bound()
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
        watch.write()


async def serve_mounted(port: int, json_replies: bool = False) -> None:
    """--starlette: McpHttpApp mounted in a Starlette app, the parent run by uvicorn's own server."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpApp

    settings = HttpSettings(limits=HttpLimits(max_sessions=200_000), json_response=json_replies)
    mcp = McpHttpApp(make_factory()(), settings=settings)
    app = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=mcp.lifespan)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, loop="none", http="httptools", log_level="warning",
                            access_log=False, timeout_graceful_shutdown=1)
    print(f"listening on http://127.0.0.1:{port}/mcp/", flush=True)
    await uvicorn.Server(config).serve()  # (uvicorn's own SIGTERM and SIGINT handling, graceful shutdown)


def main() -> None:
    if sys.argv[1:] == ["--probe"]:
        try:
            load_core()
            bind = load_http().bind
            why, auth_why = json_support(bind), auth_support(bind)
            print(json.dumps({"available": True, "reason": "", "shared": shared_server(bind), "json": not why,
                              "json_reason": why, "auth": not auth_why, "auth_reason": auth_why}))
        except ImportError as exc:
            print(json.dumps({"available": False, "reason": f"{type(exc).__name__}: {exc}"}))
        return
    port, flags = int(sys.argv[1]), sys.argv[2:]
    redis_url = flags[flags.index("--redis") + 1] if "--redis" in flags else None
    jwt_token = flags[flags.index("--jwt") + 1] if "--jwt" in flags else None
    if "--starlette" in flags:
        run = serve_mounted(port, json_replies="--json" in flags)
    else:
        run = serve(port, redis_url, decorated="--decorated" in flags, json_replies="--json" in flags,
                    jwt_token=jwt_token, asgi="--asgi" in flags)
    try:
        import uvloop  # the peers' uvicorn picks uvloop too, so both sides get the same loop
    except ImportError:
        asyncio.run(run)
    else:
        uvloop.run(run)


if __name__ == "__main__":
    main()
