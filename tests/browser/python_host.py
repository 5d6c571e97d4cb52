"""Our host bridge behind the host page: ``AppHostSession`` (client/app_host.py) speaks the view-host
protocol with a view in Chromium, while the page only owns the frames and carries messages.

The pipe is plain HTTP on the host's origin (no WebSocket library is a test dependency), three
routes the host page (host.js, ``?bridge=python``) uses:

- ``POST /bridge/start?tool=NAME&era=ERA``: connects our ``StreamableHttpClient`` (``apps=True``)
  to the MCP endpoint, reads the tool's app and answers its HTML, CSP and permissions; the tool's
  call starts at once (the session holds tool-input and tool-result until the view initializes);
- ``POST /bridge/in``: one message from the view (the page sends them one at a time, in order);
- ``GET /bridge/out``: the session's messages to the view, as server-sent events.

One bridge serves one rendered app (one test). ``close`` ends the out stream, the call and the
client; ``sent`` and ``events`` record what the session did, for the test to assert.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcp_sse_server.client import AppHostSession, StreamableHttpClient, app_tools, read_app
from mcp_sse_server.client.apps import audience

MODES = {"2025-11-25": "session", "2026-07-28": "2026-07-28"}  # the page's era: our client's mode
NO_STORE = {"cache-control": "no-store"}


class PythonHost:
    """The Python side of ``?bridge=python`` for the MCP endpoint at ``mcp_url``."""

    def __init__(self, mcp_url: str) -> None:
        self.mcp_url = mcp_url
        self.client: StreamableHttpClient | None = None
        self.session: AppHostSession | None = None
        self.sent: list[dict[str, Any]] = []  # every message the session sent the view
        self.events: list[tuple[str, Any]] = []  # sizes and logs the view reported
        self.errors: list[str] = []
        self._out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._call: asyncio.Task[Any] | None = None

    @property
    def routes(self) -> list[Route]:
        return [
            Route("/bridge/start", self._start, methods=["POST"]),
            Route("/bridge/in", self._in, methods=["POST"]),
            Route("/bridge/out", self._stream, methods=["GET"]),
        ]

    async def _send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        await self._out.put(message)

    async def _start(self, request: Request) -> Response:
        if self.session is not None:
            return JSONResponse({"error": "one app per bridge"}, status_code=409)
        tool_name, era = request.query_params["tool"], request.query_params["era"]
        self.client = client = StreamableHttpClient(self.mcp_url, mode=MODES[era], apps=True)
        await client.__aenter__()
        linked = {each.tool.name: each for each in await app_tools(client)}[tool_name]
        view = await read_app(client, linked.resource_uri)
        self.session = AppHostSession(
            client,
            tool_name,
            send=self._send,
            host_info={"name": "browser-test-python-host", "version": "1.0.0"},
            host_context={"theme": "light", "platform": "web", "displayMode": "inline"},
            on_size=lambda params: self.events.append(("size", params)),
            on_log=lambda params: self.events.append(("log", params.get("data"))),
        )
        self._call = asyncio.create_task(self._run({"a": 2, "b": 3}))
        answer = {
            "html": view.html,
            "csp": view.csp.to_dict() if view.csp else None,
            "permissions": view.permissions.to_dict() if view.permissions else None,
            "protocolVersion": client.protocol_version,
            "modelTools": [tool.name for tool in audience(await client.list_tools(), "model")],
        }
        return JSONResponse(answer, headers=NO_STORE)

    async def _run(self, arguments: dict[str, Any]) -> None:
        assert self.session is not None
        try:
            await self.session.run_tool(arguments)
        except Exception as error:  # recorded for the test: a failing call must not pass unseen
            self.errors.append(repr(error))

    async def _in(self, request: Request) -> Response:
        if self.session is None:
            return JSONResponse({"error": "no app started"}, status_code=409)
        await self.session.receive(json.loads(await request.body()))
        return Response(status_code=204)

    async def _stream(self, request: Request) -> Response:
        async def events() -> AsyncIterator[str]:
            while (message := await self._out.get()) is not None:
                yield f"data: {json.dumps(message)}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream", headers=NO_STORE)

    async def close(self) -> None:
        """End the out stream, the call (if still running) and the client."""
        await self._out.put(None)
        if self._call is not None and not self._call.done():
            self._call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._call
        if self.client is not None:
            await self.client.__aexit__(None, None, None)
