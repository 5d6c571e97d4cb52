"""McpHttpServer.bind on a real loopback socket: endpoint, TLS, refusal to expose, graceful close."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from fixtures.http_app import Gate, build_server
from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, parse_sse, request
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer, server_ssl_context

HEADERS = {"accept": ACCEPT_BOTH}


async def open_session(client: httpx.AsyncClient, endpoint: str) -> dict[str, str]:
    reply = await client.post(endpoint, json=initialize_message(), headers=HEADERS)
    assert reply.status_code == 200, reply.text
    headers = {**HEADERS, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (
        await client.post(endpoint, json=notification("notifications/initialized"), headers=headers)
    ).status_code == 202
    return headers


async def test_bind_serves_the_endpoint(bound: McpHttpServer) -> None:
    assert bound.endpoint == f"http://127.0.0.1:{bound.port}/mcp"
    assert bound.port > 0 and bound.app.path == "/mcp"
    async with httpx.AsyncClient() as client:
        headers = await open_session(client, bound.endpoint)
        reply = await client.post(
            bound.endpoint,
            json=request(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
            headers=headers,
        )
        assert reply.status_code == 200
        assert parse_sse(reply.content)[-1]["data"]["result"]["content"][0]["text"] == "5"
        assert "server" not in reply.headers and "date" not in reply.headers
        wrong_path = await client.post(bound.endpoint.replace("/mcp", "/other"), json={}, headers=headers)
        assert wrong_path.status_code == 404 and wrong_path.json()["error"]["message"]
        deleted = await client.delete(bound.endpoint, headers=headers)
        assert deleted.status_code == 204
        gone = await client.post(bound.endpoint, json=request(3, "ping"), headers=headers)
        assert gone.status_code == 404


async def test_the_host_header_is_checked_on_the_wire(bound: McpHttpServer) -> None:
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            bound.endpoint, json=initialize_message(), headers={**HEADERS, "host": f"evil.example.com:{bound.port}"}
        )
        assert reply.status_code == 403
        assert len(bound.app.live_sessions) == 0


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", ""])
async def test_binding_beyond_loopback_needs_allowed_origins(host: str) -> None:
    with pytest.raises(ValueError, match="allowed_origins"):
        await McpHttpServer.bind(build_server, host=host)


async def test_bad_arguments_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="path"):
        await McpHttpServer.bind(build_server, settings=HttpSettings(path="mcp"))
    with pytest.raises(ValueError):
        await McpHttpServer.bind(build_server, settings=HttpSettings(limits=HttpLimits(max_sessions=0)))
    with pytest.raises(TypeError, match="SSLContext"):
        await McpHttpServer.bind(build_server, ssl=str(tmp_path / "c.pem"))  # type: ignore[arg-type]


async def test_bind_takes_one_settings_object_with_its_limits() -> None:
    limits = HttpLimits(max_sessions=7, max_request_streams=3)
    http = await McpHttpServer.bind(build_server, settings=HttpSettings(limits=limits.with_changes(max_sessions=5)))
    try:
        assert http.app.limits == limits.with_changes(max_sessions=5)
    finally:
        await http.close()
    with pytest.raises(TypeError, match=r"'max_sesions'"):
        HttpSettings(max_sesions=5)  # type: ignore[call-arg]


async def test_a_taken_port_is_an_oserror() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        with pytest.raises(OSError):
            await McpHttpServer.bind(build_server, port=taken.getsockname()[1])


@pytest.mark.parametrize(("host", "prefix"), [("localhost", "http://localhost:"), ("::1", "http://[::1]:")])
async def test_other_loopback_names(host: str, prefix: str) -> None:
    try:
        http = await McpHttpServer.bind(build_server, host=host)
    except OSError:
        pytest.skip(f"cannot listen on {host} here")
    try:
        assert http.endpoint.startswith(prefix)
        async with httpx.AsyncClient() as client:
            reply = await client.post(http.endpoint, json=initialize_message(), headers=HEADERS)
            assert reply.status_code == 200
    finally:
        await http.close()


@pytest.fixture(scope="module")
def certificate_authority() -> trustme.CA:
    return trustme.CA()


async def _tls_round_trip(http: McpHttpServer, ca: trustme.CA) -> None:
    assert http.endpoint.startswith("https://127.0.0.1:")
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    async with httpx.AsyncClient(verify=client_context) as client:
        headers = await open_session(client, http.endpoint)
        reply = await client.post(http.endpoint, json=request(2, "ping"), headers=headers)
        assert parse_sse(reply.content)[0]["data"] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    async with httpx.AsyncClient(verify=ssl.create_default_context()) as untrusting:
        with pytest.raises(httpx.ConnectError):
            await untrusting.post(http.endpoint, json=initialize_message(), headers=HEADERS)


async def test_tls_with_an_ssl_context(certificate_authority: trustme.CA) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate_authority.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    http = await McpHttpServer.bind(build_server, ssl=context)
    try:
        await _tls_round_trip(http, certificate_authority)
    finally:
        await http.close()


async def test_tls_with_certificate_files(certificate_authority: trustme.CA, tmp_path: Path) -> None:
    cert = certificate_authority.issue_cert("127.0.0.1")
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(certfile))
    cert.private_key_pem.write_to_path(str(keyfile))
    http = await McpHttpServer.bind(build_server, ssl=server_ssl_context(str(certfile), str(keyfile)))
    try:
        await _tls_round_trip(http, certificate_authority)
    finally:
        await http.close()


async def test_close_lets_the_call_in_flight_finish_then_ends_everything(gate: Gate) -> None:
    http = await McpHttpServer.bind(
        lambda: build_server(gate), settings=HttpSettings(limits=HttpLimits(shutdown_deadline=5))
    )
    async with httpx.AsyncClient(timeout=5) as client:
        headers = await open_session(client, http.endpoint)
        standalone_done = asyncio.Event()

        async def hold_stream() -> None:
            async with client.stream("GET", http.endpoint, headers={**headers, "accept": "text/event-stream"}) as r:
                assert r.status_code == 200
                async for _ in r.aiter_bytes():
                    pass
            standalone_done.set()

        stream_task = asyncio.create_task(hold_stream())
        call = asyncio.create_task(
            client.post(
                http.endpoint, json=request(9, "tools/call", {"name": "wait", "arguments": {}}), headers=headers
            )
        )
        await asyncio.wait_for(gate.entered.wait(), 5)
        closing = asyncio.create_task(http.close())
        await asyncio.sleep(0.02)
        assert not closing.done()  # waiting for the call in flight
        gate.release.set()
        reply = await asyncio.wait_for(call, 5)
        assert parse_sse(reply.content)[-1]["data"]["result"]["content"][0]["text"] == "released"
        await asyncio.wait_for(closing, 5)
        await asyncio.wait_for(standalone_done.wait(), 5)
        await stream_task
        assert len(http.app.live_sessions) == 0
        with pytest.raises(httpx.ConnectError):
            await client.post(http.endpoint, json=initialize_message(), headers=HEADERS)
    await http.close()  # idempotent


async def test_close_gives_up_on_calls_past_the_deadline(gate: Gate) -> None:
    http = await McpHttpServer.bind(lambda: build_server(gate))
    async with httpx.AsyncClient(timeout=5) as client:
        headers = await open_session(client, http.endpoint)
        call: asyncio.Task[Any] = asyncio.create_task(
            client.post(
                http.endpoint, json=request(9, "tools/call", {"name": "wait", "arguments": {}}), headers=headers
            )
        )
        await asyncio.wait_for(gate.entered.wait(), 5)
        await asyncio.wait_for(http.close(deadline=0.05), 5)
        reply = await asyncio.wait_for(call, 5)
        assert parse_sse(reply.content)[-1]["data"]["error"]["code"] == -32000
        await asyncio.wait_for(gate.cancelled.wait(), 5)
