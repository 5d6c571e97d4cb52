"""The parts the MCP Apps browser tests serve: the MCP server under test, the host origin (the host
page, its bundle and our ``McpHttpApp`` mounted at ``/mcp``) and the sandbox origin (the proxy page
under the view's CSP), each a Starlette app that ``serving`` runs under uvicorn on 127.0.0.1.

Two origins are two ports: the host page and the proxy must not share one (the extension's
security model), and a view whose network is fenced by its CSP needs an origin it did not declare.
``Canary`` counts the requests that reached either server's ``/canary``: a fetch the CSP blocks
never arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from mcp_sse_server import CallToolResult, Csp, McpServer, client_supports_apps, csp_header
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.transport.http import McpHttpApp

HERE = Path(__file__).resolve().parent
VIEWS = {"plain": "ui://browser/plain.html", "app": "ui://browser/app.html"}
FETCH_VIEW = "ui://browser/fetch.html"
START_WAIT = 30.0  # only catches a server that never starts
NO_STORE = {"cache-control": "no-store"}


@dataclass
class Canary:
    """What reached ``/canary`` on either origin, by its ``?which=`` label."""

    hits: list[str] = field(default_factory=list)

    async def endpoint(self, request: Request) -> Response:
        self.hits.append(request.query_params.get("which", ""))
        # Readable from any origin: only the CSP may stop the view's fetch, never CORS.
        return PlainTextResponse("ok", headers={"access-control-allow-origin": "*", **NO_STORE})


@dataclass
class Calls:
    """The tools the server ran, in order, each with whether its request's client declared the
    apps extension (``client_supports_apps``): a refused call must never show up here."""

    seen: list[tuple[str, bool]] = field(default_factory=list)

    def ran(self, name: str, context: RequestContext) -> None:
        self.seen.append((name, client_supports_apps(context)))


def view_html(kind: str, bundle_dir: Path) -> str:
    """The HTML of a view: view.html with the plain script, or the App-class bundle, inlined."""
    if kind == "plain":
        script = (HERE / "view_plain.js").read_text()
        label = "plain JSON-RPC"
    else:
        script = (bundle_dir / "view_app.js").read_text()
        label = "official App class"
    if "</script" in script.lower():  # it would end the inline element early
        raise ValueError(f"the {kind} view's script holds a closing script tag")
    return (HERE / "view.html").read_text().replace("/*SCRIPT*/", script).replace("/*KIND*/", label)


def build_server(bundle_dir: Path, host_origin: str, sandbox_origin: str, calls: Calls) -> McpServer:
    """The server under test: a tool per view (``sum_plain``, ``sum_app``) and ``fetch_probe``,
    each linked to its ``ui://`` app; ``add`` for views only; ``secret`` for the model only."""
    server = McpServer("browser-apps", "1.0.0")

    def summed(name: str, a: float, b: float, context: RequestContext) -> CallToolResult:
        calls.ran(name, context)
        # Text for every client, structured content for the view.
        return CallToolResult.structured({"sum": a + b}, text=f"{a:g} + {b:g} = {a + b:g}")

    @server.tool(app=VIEWS["plain"], run_in_thread=False)
    def sum_plain(a: float, b: float, context: RequestContext) -> CallToolResult:
        """Adds two numbers; rendered by the plain JSON-RPC view."""
        return summed("sum_plain", a, b, context)

    @server.tool(app=VIEWS["app"], run_in_thread=False)
    def sum_app(a: float, b: float, context: RequestContext) -> CallToolResult:
        """Adds two numbers; rendered by the view built on the official App class."""
        return summed("sum_app", a, b, context)

    @server.tool(app=FETCH_VIEW, run_in_thread=False)
    def fetch_probe(a: float, b: float, context: RequestContext) -> CallToolResult:
        """Adds two numbers; its view tries the network."""
        return summed("fetch_probe", a, b, context)

    @server.tool(visibility=["app"], run_in_thread=False)
    def add(a: float, b: float, context: RequestContext) -> CallToolResult:
        """Adds two numbers, for views only."""
        return summed("add", a, b, context)

    @server.tool(visibility=["model"], run_in_thread=False)
    def secret(context: RequestContext) -> str:
        """For the model only: a view must never get this."""
        calls.ran("secret", context)
        return "the model's secret"

    for kind, uri in VIEWS.items():
        server.add_app(uri, html=view_html(kind, bundle_dir))
    # The declared origin is the sandbox's under another name (localhost): same server, and a
    # different origin from the view's own, so the CSP alone decides both fetches.
    declared = "http://localhost:" + sandbox_origin.rsplit(":", 1)[1]
    fetch_html = (
        (HERE / "view_fetch.html")
        .read_text()
        .replace("/*FETCH_DECLARED*/", f"{declared}/canary?which=declared")
        .replace("/*FETCH_UNDECLARED*/", f"{host_origin}/canary?which=undeclared")
    )
    server.add_app(FETCH_VIEW, html=fetch_html, csp=Csp(connect=[declared]))
    return server


def host_app(mcp: McpHttpApp, bundle_dir: Path, canary: Canary, more: Sequence[BaseRoute] = ()) -> Starlette:
    """The host origin: the page, its bundle, the canary, our MCP endpoint and ``more`` routes,
    one origin (so the page's MCP requests need no CORS and pass the endpoint's Origin check)."""
    return Starlette(
        routes=[
            Route("/", lambda request: FileResponse(HERE / "host.html", headers=NO_STORE)),
            Route("/host.bundle.js", lambda request: FileResponse(bundle_dir / "host.bundle.js", headers=NO_STORE)),
            Route("/canary", canary.endpoint),
            Mount("/mcp", app=mcp),
            *more,
        ]
    )


def sandbox_app(canary: Canary) -> Starlette:
    """The sandbox origin: the proxy page under the CSP its ``?csp=`` query declares."""

    async def sandbox(request: Request) -> Response:
        declared = json.loads(request.query_params.get("csp", "null"))
        csp = Csp.from_dict(declared) if declared else None
        headers = {"content-security-policy": csp_header(csp), **NO_STORE}
        return FileResponse(HERE / "sandbox.html", headers=headers)

    return Starlette(routes=[Route("/sandbox.html", sandbox), Route("/canary", canary.endpoint)])


def loopback_socket() -> socket.socket:
    """A listening socket on a free 127.0.0.1 port (bound first: the origins must be known
    before the server under test is built)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def origin_of(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextlib.asynccontextmanager
async def serving(app: Any, sock: socket.socket) -> AsyncIterator[None]:
    """``app`` served by uvicorn on ``sock`` in this event loop until the block ends."""
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(START_WAIT):
            while not server.started:  # uvicorn offers no event for it
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn stopped while starting")
                await asyncio.sleep(0.01)
        yield
    finally:
        server.should_exit = True
        server.force_exit = True  # the page's open streams must not hold the test
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, START_WAIT)
        sock.close()
