"""StreamableHttpClient against the official Python SDK's Streamable HTTP server
(a subprocess): SSE and JSON replies, sessions, server-to-client requests,
cancellation, resumption, re-initialization, and a server that dies."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from fixtures.peers import WAIT, Peer
from mcp_sse_server.client import McpConnectionError, StreamableHttpClient
from mcp_sse_server.engine.jsonrpc import CONNECTION_CLOSED


def client_for(peer: Peer, **options: Any) -> StreamableHttpClient:
    """A client of the handshake revisions (sessions, GET stream, DELETE, resumption): the SDK
    server also speaks 2026-07-28, which test_stateless_sdk.py covers."""
    options.setdefault("mode", "session")
    return StreamableHttpClient(f"{peer.base}/mcp", reconnect_delay=0.02, **options)


async def wait_for_stderr(peer: Peer, text: str) -> None:
    await asyncio.wait_for(peer.watch(text).wait(), WAIT)


async def test_sse_replies_session_progress_logs_and_delete_on_close(sdk_http: Peer) -> None:
    logs: list[dict[str, Any]] = []
    client = client_for(sdk_http, on_log=logs.append)
    async with client:
        session = client.transport.session_id
        assert session
        assert client.transport.connection is not None and client.transport.connection.protocol_version == "2025-11-25"
        assert {"add", "divide", "slow"} <= {tool.name for tool in await client.list_tools()}
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        progress: list[Any] = []
        result = await client.call_tool("slow", {"steps": 2}, on_progress=lambda *p: progress.append(p))
        assert result.content[0].text == "done 2"  # type: ignore[union-attr]
        assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
        await client.call_tool("chatty")
        assert [entry["data"] for entry in logs] == ["first", {"n": 2}]
    # close() sent DELETE: the server no longer knows the session.
    async with httpx.AsyncClient() as raw:
        response = await raw.post(
            f"{sdk_http.base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"accept": "application/json, text/event-stream", "mcp-session-id": session},
        )
    assert response.status_code == 404


async def test_json_replies(sdk_http_json: Peer) -> None:
    async with client_for(sdk_http_json) as client:
        assert client.transport.session_id
        assert (await client.call_tool("divide", {"a": 7, "b": 2})).structured_content == {"result": 3.5}
        assert (await client.call_tool("divide", {"a": 1, "b": 0})).is_error


async def test_sampling_and_elicitation_are_answered_over_http(sdk_http: Peer) -> None:
    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"colour": "green"}}

    async with client_for(sdk_http, sampling_handler=sample, elicitation_handler=elicit) as client:
        result = await client.call_tool("ask_model", {"question": "?"})
        assert result.content[0].text == "model said: 42"  # type: ignore[union-attr]
        result = await client.call_tool("ask_user")
        assert result.content[0].text == "accept: green"  # type: ignore[union-attr]


async def test_a_deleted_session_is_reinitialized_transparently(sdk_http: Peer) -> None:
    async with client_for(sdk_http) as client:
        old = client.transport.session_id
        assert old
        async with httpx.AsyncClient() as raw:  # end the session behind the client's back
            response = await raw.delete(
                f"{sdk_http.base}/mcp", headers={"mcp-session-id": old, "mcp-protocol-version": "2025-06-18"}
            )
            assert response.status_code == 200
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result.structured_content == {"result": 3}
        assert client.transport.session_id not in (None, old)


async def test_cancelling_a_call_reaches_the_server(sdk_http: Peer) -> None:
    started = asyncio.Event()
    async with client_for(sdk_http) as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 400}, on_progress=lambda *p: started.set()))
        await asyncio.wait_for(started.wait(), WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await wait_for_stderr(sdk_http, "SLOW-CANCELLED")
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_a_timed_out_call_is_cancelled_on_the_server(sdk_http_json: Peer) -> None:
    async with client_for(sdk_http_json) as client:
        with pytest.raises(TimeoutError):
            await client.call_tool("slow", {"steps": 400}, timeout=0.3)
        await wait_for_stderr(sdk_http_json, "SLOW-CANCELLED")


async def test_an_unreachable_server_fails_fast_with_a_clear_error() -> None:
    import socket

    with socket.socket() as sock:  # bound, never listening, held meanwhile: refused, and nobody can take it
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        client = StreamableHttpClient(url)
        with pytest.raises(McpConnectionError) as raised:
            await client.initialize()
    assert raised.value.message.startswith(f"Cannot reach MCP server at {url}")
    assert "\n" not in raised.value.message
    assert raised.value.code == CONNECTION_CLOSED
    assert isinstance(raised.value, ConnectionError)


async def test_a_server_killed_mid_call_fails_the_call(fresh_sdk_http: Peer) -> None:
    started = asyncio.Event()
    async with client_for(fresh_sdk_http, max_reconnect_attempts=2) as client:
        call = asyncio.create_task(client.call_tool("slow", {"steps": 400}, on_progress=lambda *p: started.set()))
        await asyncio.wait_for(started.wait(), WAIT)
        fresh_sdk_http.kill()
        with pytest.raises(McpConnectionError) as raised:
            await asyncio.wait_for(call, WAIT)
        assert fresh_sdk_http.base in raised.value.message
        with pytest.raises(McpConnectionError, match="Cannot reach"):
            await client.ping()


async def test_a_call_survives_the_server_closing_its_stream(sdk_http_resumable: Peer) -> None:
    """The SDK server (event store, ``retry: 100``) closes the tool's POST stream half way
    (``Context.close_sse_stream``); the client waits ``retry`` and resumes with a GET
    carrying Last-Event-ID, and the call completes with every progress notification."""
    progress: list[Any] = []
    async with StreamableHttpClient(f"{sdk_http_resumable.base}/mcp", reconnect_delay=5.0, mode="session") as client:
        assert client.transport.connection is not None and client.transport.connection.protocol_version == "2025-11-25"
        result = await client.call_tool("interrupted", {"steps": 4}, on_progress=lambda *p: progress.append(p))
        assert result.content[0].text == "survived 4"  # type: ignore[union-attr]
        assert client.transport.connection.retry == 100  # the server's retry, not our 5 s default, set the wait
    assert [step for step, _, _ in progress] == [1, 2, 3, 4]
    await wait_for_stderr(sdk_http_resumable, "STREAM-CLOSED")
    await wait_for_stderr(sdk_http_resumable, "REPLAY-AFTER ")
