"""Embedding: the ASGI app mounted in Starlette, and SseTransport driven by a Starlette route."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from fixtures.asgi import AsgiCall
from fixtures.http_app import Gate, build_server
from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, request
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification, JsonRpcRequest
from mcp_sse_server.transport.http import (
    ClientDisconnected,
    HttpError,
    McpHttpApp,
    SseTransport,
    read_json_rpc_post,
    write_json_rpc_error,
)
from mcp_sse_server.transport.http.asgi import Receive, Scope, Send


async def test_the_app_mounts_in_starlette(gate: Gate) -> None:
    mcp = McpHttpApp(lambda: build_server(gate))

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/health", health), Mount("/mcp", app=mcp)])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/health")).json() == {"ok": True}
        reply = await client.post("/mcp/", json=initialize_message(), headers={"accept": ACCEPT_BOTH})
        assert reply.status_code == 200
        headers = {"accept": ACCEPT_BOTH, "mcp-session-id": reply.headers["mcp-session-id"]}
        reply = await client.post("/mcp/", json=notification("notifications/initialized"), headers=headers)
        assert reply.status_code == 202
        reply = await client.post(
            "/mcp/", json=request(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}), headers=headers
        )
        assert '"text":"2"' in reply.text
        # The mounted app still applies its own rules.
        refused = await client.post(
            "/mcp/", json=request(3, "ping"), headers={**headers, "origin": "https://evil.example"}
        )
        assert refused.status_code == 403
    await mcp.shutdown(deadline=0)


class RouteMyself:
    """What an embedder writes: session lookup and the initialize gate around SseTransport."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.transports: dict[str, SseTransport] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        session_id = request.headers.get("mcp-session-id")
        if request.method == "GET":
            transport = self.transports.get(session_id or "")
            if transport is None:
                await write_json_rpc_error(send, 404, message="No such session")
                return
            await transport.handle_get(scope, receive, send)
            return
        if session_id is not None:
            transport = self.transports.get(session_id)
            if transport is None:
                await write_json_rpc_error(send, 404, message="No such session")
                return
            await transport.handle_post(scope, receive, send)  # the transport reads the body
            return
        try:
            message = await read_json_rpc_post(scope, receive, max_request_bytes=10_000)
        except HttpError as error:
            await error.write(send)
            return
        except ClientDisconnected:
            return
        if not (isinstance(message, JsonRpcRequest) and message.method == "initialize"):
            await write_json_rpc_error(send, 400, message="Initialize first")
            return
        session_id = f"embedded-{len(self.transports) + 1}"
        transport = SseTransport(session_id=session_id)
        await build_server(self.gate).connect(transport)
        self.transports[session_id] = transport
        await transport.handle_post(scope, receive, send, message)


async def test_sse_transport_inside_a_starlette_route(gate: Gate) -> None:
    router = RouteMyself(gate)
    app = Starlette(routes=[Route("/mcp", router, methods=["GET", "POST"])])

    async def post(body: Any, **headers: str) -> AsgiCall:
        return await AsgiCall(app, "POST", body, headers).start().finish()

    refused = await post(request(1, "ping"))
    assert refused.status == 400 and refused.json["error"]["message"] == "Initialize first"
    too_big = await post(b"x" * 20_000)
    assert too_big.status == 413 and "10000 bytes" in too_big.json["error"]["message"]
    not_json = await AsgiCall(app, "POST", b"{}", {"content-type": "text/plain"}).start().finish()
    assert not_json.status == 415

    opened = await post(initialize_message())
    assert opened.status == 200 and opened.headers["mcp-session-id"] == "embedded-1"
    headers = {"mcp-session-id": "embedded-1"}
    assert (await post(notification("notifications/initialized"), **headers)).status == 202
    batch = await post([request(1, "ping")], **headers)
    assert batch.status == 400 and batch.json["error"]["code"] == -32600

    stream = AsgiCall(app, "GET", b"", headers).start()
    assert await stream.started() == 200
    transport = router.transports["embedded-1"]
    server_side = transport.dispatcher
    assert server_side is not None
    reply = await post(request(5, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}), **headers)
    assert reply.messages[-1]["result"]["content"][0]["text"] == "4"
    await transport.send(JsonRpcNotification("notifications/message", {"level": "info", "data": "hi"}))
    events = await stream.events(1)
    assert events[-1]["data"]["params"]["data"] == "hi"
    await transport.close()
    await stream.finish()
    gone = await post(request(6, "ping"), **headers)
    assert gone.status == 404
