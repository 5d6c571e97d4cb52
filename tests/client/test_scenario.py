"""The shared scenario through all four client types gives the same results.

InMemoryClient and StdioClient (over StdioServerTransport) talk to our math
server; StreamableHttpClient talks to our HTTP server serving the math server
and to the official SDK's Streamable HTTP server; SseClient talks to the SDK's
legacy server. The SDK servers carry add and divide tools that answer like
ours.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.node import node_peer
from fixtures.peers import MATH_STDIO, PYTHON, TS_PEER, Peer, python_env
from mcp_sse_server.client import InMemoryClient, SseClient, StdioClient, StreamableHttpClient
from mcp_sse_server.engine import versions
from mcp_sse_server.servers.factory import MemoryServerFactory
from mcp_sse_server.transport.http import McpHttpServer

from .scenario import run_scenario

# The official SDKs serve 2025-11-25, the revision our clients offer in a handshake, and the
# Python SDK 2026-07-28 too, which our clients prefer; our own server answers what it serves.
SDK_REVISION = "2025-11-25"
MODERN_REVISION = "2026-07-28"
OURS = versions.STATELESS[-1].name  # our clients prefer the stateless revision, and our servers serve it


async def reference() -> dict[str, Any]:
    return await run_scenario(InMemoryClient(MemoryServerFactory.create_memory_server("math")))


def same_as_reference(record: dict[str, Any], expected: dict[str, Any], revision: str) -> bool:
    """``record`` equals ``expected`` except for the negotiated revision, which is ``revision``."""
    assert record["protocolVersion"] == revision
    return {**record, "protocolVersion": None} == {**expected, "protocolVersion": None}


async def test_in_memory_reference_is_what_we_expect() -> None:
    record = await reference()
    assert record["protocolVersion"] == OURS
    assert record["add[('a', 2), ('b', 3)]"] == {"text": ["5"], "structured": {"result": 5}, "isError": False}
    assert record["divide[('a', 1), ('b', 0)]"] == {
        "text": ["Cannot divide by zero: 'b' must not be 0"],
        "structured": None,
        "isError": True,
    }


async def test_stdio_client_over_our_stdio_transport() -> None:
    assert await run_scenario(StdioClient(PYTHON, [MATH_STDIO], env=python_env())) == await reference()


async def test_streamable_http_client_against_the_sdk_server(sdk_http: Peer) -> None:
    record = await run_scenario(StreamableHttpClient(f"{sdk_http.base}/mcp"))
    assert same_as_reference(record, await reference(), MODERN_REVISION)


async def test_streamable_http_client_against_the_sdk_server_by_handshake(sdk_http: Peer) -> None:
    record = await run_scenario(StreamableHttpClient(f"{sdk_http.base}/mcp", mode="session"))
    assert same_as_reference(record, await reference(), SDK_REVISION)


async def test_sse_client_against_the_sdk_legacy_server(sdk_sse: Peer) -> None:
    record = await run_scenario(SseClient(f"{sdk_sse.base}/sse"))
    assert same_as_reference(record, await reference(), SDK_REVISION)


async def test_streamable_http_client_against_our_http_server() -> None:
    http = await McpHttpServer.bind(lambda: MemoryServerFactory.create_memory_server("math"), port=0)
    try:
        assert await run_scenario(StreamableHttpClient(http.endpoint)) == await reference()
    finally:
        await http.close()


@pytest.mark.skipif(node_peer() is None, reason="node is not set up: source scripts/setup.sh && setup_node")
async def test_stdio_client_against_the_typescript_sdk_server() -> None:
    node, env = node_peer()  # type: ignore[misc]
    client = StdioClient(node, [TS_PEER], env=env, on_stderr=lambda line: None)
    assert same_as_reference(await run_scenario(client), await reference(), SDK_REVISION)
