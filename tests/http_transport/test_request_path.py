"""One POST goes down the layers once: each module of the request path is entered once, in order.

A profile hook follows the stack of the package's modules while the app serves one ``tools/call``
on a session, and notes a module each time it is entered from outside (a call from a module not
already on the stack). The modules then appear in layering order, and none twice: the app and
the transport used to alternate four times (app -> transport -> app -> transport ...).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from fixtures.asgi import AsgiCall, open_session
from fixtures.messages import request
from mcp_sse_server import McpServer, Tool
from mcp_sse_server.transport.http import McpHttpApp

PACKAGE = Path(sys.modules["mcp_sse_server"].__file__ or "").parent

# Modules the path calls into on the way (values and helpers, not layers): entered from several layers.
HELPERS = {
    "engine.jsonrpc",
    "engine.records",
    "engine.registry",
    "engine.versions",
    "engine.types",
    "stores.memory",
    "stores.coordination",
    "transport.http.errors",
    "transport.http.request",
    "transport.http.replies",
    "transport.http.streams",
}


def _module(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    if PACKAGE not in path.parents:
        return None
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


async def test_a_session_post_enters_each_module_once_in_layer_order() -> None:
    server = McpServer("path")

    async def add(arguments: dict[str, Any], context: Any) -> str:
        return "3"  # async: it runs inline, so the whole POST is one step of the loop

    server.add_tool(Tool("add", {"type": "object"}, add))
    app = McpHttpApp(server)
    session = await open_session(app)
    visits: list[str] = []
    stack: list[str | None] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = _module(frame)
            if module is not None and module not in HELPERS and module not in stack:
                visits.append(module)
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    call = AsgiCall(app, "POST", request(7, "tools/call", {"name": "add", "arguments": {}}), session.headers)
    call.start()
    sys.setprofile(profile)
    try:
        await call.finish()
    finally:
        sys.setprofile(None)
    assert call.status == 200 and call.messages[-1]["result"]["content"][0]["text"] == "3"
    path = visits[visits.index("transport.http.app") :]
    assert path[:9] == [
        "transport.http.app",
        "transport.http.security",
        "transport.http.router",
        "transport.http.session_endpoint",
        "transport.http.directory",
        "transport.http.body",
        "transport.http.transport",
        "engine.protocol",
        "engine.context",
    ], path
    assert len(path) == len(set(path)), f"a module entered twice: {path}"
    assert path[9:] == ["engine.session", "engine.tools"], path  # (tools/call is the tool registry's)


def test_the_app_does_not_know_how_sessions_are_shared() -> None:
    """The app routes and stacks; sharing is the directory's and the coordinator's business."""
    source = (PACKAGE / "transport" / "http" / "app.py").read_text()
    for needle in ("router is None", "router is not None", "sessions.shared", ".shared", "redis", "orjson"):
        assert needle not in source, needle
