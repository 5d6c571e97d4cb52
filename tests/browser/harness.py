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
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from mcp_sse_server import CallToolResult, McpServer, Resource, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.types import TextResourceContents
from mcp_sse_server.transport.http import McpHttpApp

HERE = Path(__file__).resolve().parent
APP_MIME_TYPE = "text/html;profile=mcp-app"
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
    """The tools the server ran, in order: a refused call must never show up here."""

    names: list[str] = field(default_factory=list)


def _number_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }


def _ui(uri: str | None = None, visibility: list[str] | None = None) -> dict[str, Any]:
    ui: dict[str, Any] = {}
    if uri is not None:
        ui["resourceUri"] = uri
    if visibility is not None:
        ui["visibility"] = visibility
    return {"ui": ui}


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

    def summing(name: str) -> Any:
        def handler(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            calls.names.append(name)
            total = arguments["a"] + arguments["b"]
            return CallToolResult.structured({"sum": total}, text=f"{arguments['a']} + {arguments['b']} = {total}")

        return handler

    def secret(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        calls.names.append("secret")
        return CallToolResult.text("the model's secret")

    for kind, uri in VIEWS.items():
        server.add_tool(
            Tool(f"sum_{kind}", _number_schema(), summing(f"sum_{kind}"), run_in_thread=False, meta=_ui(uri))
        )
    server.add_tool(
        Tool("fetch_probe", _number_schema(), summing("fetch_probe"), run_in_thread=False, meta=_ui(FETCH_VIEW))
    )
    server.add_tool(Tool("add", _number_schema(), summing("add"), run_in_thread=False, meta=_ui(visibility=["app"])))
    server.add_tool(Tool("secret", handler=secret, run_in_thread=False, meta=_ui(visibility=["model"])))

    def app_resource(uri: str, html: str, ui: dict[str, Any]) -> Resource:
        contents = TextResourceContents(uri, html, APP_MIME_TYPE, meta={"ui": ui})
        return Resource(uri, uri.rsplit("/", 1)[-1], mime_type=APP_MIME_TYPE, meta={"ui": ui}, contents=contents)

    for kind, uri in VIEWS.items():
        server.add_resource(app_resource(uri, view_html(kind, bundle_dir), {}))
    # The declared origin is the sandbox's under another name (localhost): same server, and a
    # different origin from the view's own, so the CSP alone decides both fetches.
    declared = "http://localhost:" + sandbox_origin.rsplit(":", 1)[1]
    fetch_html = (
        (HERE / "view_fetch.html")
        .read_text()
        .replace("/*FETCH_DECLARED*/", f"{declared}/canary?which=declared")
        .replace("/*FETCH_UNDECLARED*/", f"{host_origin}/canary?which=undeclared")
    )
    server.add_resource(app_resource(FETCH_VIEW, fetch_html, {"csp": {"connectDomains": [declared]}}))
    return server


def csp_header(csp: dict[str, Any] | None) -> str:
    """The sandbox document's CSP for a view's declared ``_meta.ui.csp`` (the spec's default when
    None): declared origins only, inline script and style allowed, no plugins."""
    csp = csp or {}
    resources = " ".join(csp.get("resourceDomains", []))

    def listed(key: str, empty: str) -> str:
        return " ".join(csp.get(key, [])) or empty

    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline' {resources}".strip(),
            f"style-src 'self' 'unsafe-inline' {resources}".strip(),
            f"img-src 'self' data: {resources}".strip(),
            f"font-src 'self' {resources}".strip(),
            f"media-src 'self' data: {resources}".strip(),
            f"connect-src {listed('connectDomains', chr(39) + 'none' + chr(39))}",
            f"frame-src {listed('frameDomains', chr(39) + 'none' + chr(39))}",
            f"base-uri {listed('baseUriDomains', chr(39) + 'self' + chr(39))}",
            "object-src 'none'",
        ]
    )


def host_app(mcp: McpHttpApp, bundle_dir: Path, canary: Canary) -> Starlette:
    """The host origin: the page, its bundle, the canary and our MCP endpoint, one origin (so the
    page's MCP requests need no CORS and pass the endpoint's Origin check)."""
    return Starlette(
        routes=[
            Route("/", lambda request: FileResponse(HERE / "host.html", headers=NO_STORE)),
            Route("/host.bundle.js", lambda request: FileResponse(bundle_dir / "host.bundle.js", headers=NO_STORE)),
            Route("/canary", canary.endpoint),
            Mount("/mcp", app=mcp),
        ]
    )


def sandbox_app(canary: Canary) -> Starlette:
    """The sandbox origin: the proxy page under the CSP its ``?csp=`` query declares."""

    async def sandbox(request: Request) -> Response:
        declared = json.loads(request.query_params.get("csp", "null"))
        headers = {"content-security-policy": csp_header(declared), **NO_STORE}
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
