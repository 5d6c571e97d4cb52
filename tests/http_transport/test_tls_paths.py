"""HTTPS on both HTTP paths (the ``http_path`` fixture: ``[fast]`` and ``[asgi]``): a server bound
with ``ssl=server_ssl_context(cert, key)`` answers httpx and a hand-written TLS connection as it
does in clear text, and each test checks which cycle served the endpoint, so a fast path that
fell back to uvicorn's cycle under TLS fails the ``[fast]`` ones."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trustme
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from fixtures.asgi import WAIT
from fixtures.http_app import build_server
from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, parse_sse, request
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer, server_ssl_context
from mcp_sse_server.transport.http.fast_protocol import FastCycle

from .test_fast_path import Raw, call, cycle_types, post, result_text, session

HEADERS = {"accept": ACCEPT_BOTH}
LIMIT = 1000  # the served body limit (bytes)


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trusting(authority: trustme.CA) -> ssl.SSLContext:
    """A client's TLS context that trusts the test's authority (and checks the name, 127.0.0.1)."""
    context = ssl.create_default_context()
    authority.configure_trust(context)
    return context


@pytest.fixture
async def tls_bound(authority: trustme.CA, tmp_path: Path) -> AsyncIterator[McpHttpServer]:
    """A server on HTTPS, its certificate for 127.0.0.1 loaded from PEM files, bodies up to ``LIMIT``."""
    issued = authority.issue_cert("127.0.0.1")
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    issued.cert_chain_pems[0].write_to_path(str(certfile))
    issued.private_key_pem.write_to_path(str(keyfile))
    context = server_ssl_context(str(certfile), str(keyfile))
    settings = HttpSettings(limits=HttpLimits(max_request_bytes=LIMIT))
    http = await McpHttpServer.bind(build_server(), ssl=context, settings=settings)
    try:
        yield http
    finally:
        await http.close(deadline=2.0)


def served_by(http_path: str) -> type:
    return FastCycle if http_path == "fast" else RequestResponseCycle


async def open_session(client: httpx.AsyncClient, endpoint: str) -> dict[str, str]:
    reply = await client.post(endpoint, json=initialize_message(), headers=HEADERS)
    assert reply.status_code == 200, reply.text
    assert parse_sse(reply.content)[0]["data"]["result"]["serverInfo"]["name"] == "http-test"
    headers = {**HEADERS, "mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    initialized = await client.post(endpoint, json=notification("notifications/initialized"), headers=headers)
    assert initialized.status_code == 202
    return headers


async def test_calls_over_one_kept_alive_tls_connection(
    tls_bound: McpHttpServer, trusting: ssl.SSLContext, http_path: str
) -> None:
    http = tls_bound
    assert http.endpoint.startswith("https://127.0.0.1:")
    async with httpx.AsyncClient(verify=trusting, timeout=WAIT) as client:
        headers = await open_session(client, http.endpoint)
        for n in range(5):
            reply = await client.post(
                http.endpoint,
                json=request(10 + n, "tools/call", {"name": "add", "arguments": {"a": n, "b": 1}}),
                headers=headers,
            )
            assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
            assert parse_sse(reply.content)[-1]["data"]["result"]["content"][0]["text"] == str(n + 1)
        # Seven exchanges (initialize, initialized, five calls) on one TLS connection, on the path under test.
        connections = http._server.server_state.connections
        assert len(connections) == 1
        assert http._server.server_state.total_requests == 7
        assert cycle_types(http) == {served_by(http_path)}
        assert next(iter(connections)).scheme == "https"


async def test_a_streamed_reply_over_tls(tls_bound: McpHttpServer, trusting: ssl.SSLContext, http_path: str) -> None:
    http = tls_bound
    async with httpx.AsyncClient(verify=trusting, timeout=WAIT) as client:
        headers = await open_session(client, http.endpoint)
        params = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}
        async with client.stream("POST", http.endpoint, json=request(3, "tools/call", params), headers=headers) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            assert r.headers["transfer-encoding"] == "chunked"  # streamed: no length known at its start
            body = b"".join([chunk async for chunk in r.aiter_bytes()])
        events = [event["data"] for event in parse_sse(body)]
        progress = [e["params"] for e in events if e.get("method") == "notifications/progress"]
        assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [("p", 1, 2), ("p", 2, 2)]
        # The progress (and the log between) came before the result, which ends the stream.
        assert events[-1] == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"content": [{"type": "text", "text": "chatty done"}]},
        }
        assert all("id" not in e for e in events[:-1]) and len(events) == 4
        assert cycle_types(http) == {served_by(http_path)}


async def test_pipelined_requests_over_one_raw_tls_socket(
    tls_bound: McpHttpServer, trusting: ssl.SSLContext, http_path: str
) -> None:
    http = tls_bound
    raw = Raw(*await asyncio.open_connection("127.0.0.1", http.port, ssl=trusting, server_hostname="127.0.0.1"))
    sid = await session(raw)
    await raw.send(call(1, sid) + call(2, sid))  # one TLS write: the pair arrives in one read
    answers = [await raw.response() for _ in range(2)]
    assert [status for status, _, _ in answers] == [200, 200]
    assert [result_text(body) for _, _, body in answers] == ["2", "3"]
    assert cycle_types(http) == {served_by(http_path)}
    raw.close()


async def test_a_body_over_the_limit_is_413_before_it_is_read_over_tls(
    tls_bound: McpHttpServer, trusting: ssl.SSLContext, http_path: str
) -> None:
    http = tls_bound
    raw = Raw(*await asyncio.open_connection("127.0.0.1", http.port, ssl=trusting, server_hostname="127.0.0.1"))
    head = post(b"", extra=b"expect: 100-continue\r\n").replace(b"content-length: 0", b"content-length: 5000")
    await raw.send(head)  # the head alone: the body is never sent, so only an answer before it ends this
    status, _, body = await raw.response()
    assert status == 413 and f"exceeds the limit of {LIMIT} bytes".encode() in body
    assert cycle_types(http) == {served_by(http_path)}
    raw.close()
    # The same with httpx sending the body: refused, and the server goes on serving over TLS.
    async with httpx.AsyncClient(verify=trusting, timeout=WAIT) as client:
        over = {**HEADERS, "content-type": "application/json"}
        reply = await client.post(http.endpoint, content=b"x" * (LIMIT + 1), headers=over)
        assert reply.status_code == 413
        await open_session(client, http.endpoint)
