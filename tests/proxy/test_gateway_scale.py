"""The worked example of issue 40: an old stdio server (the official SDK 1.2.1, 2024-11-05) served
by ``serve --gateway`` behind bearer tokens on two worker processes sharing a Redis, for the
official SDK 2.3 client at 2026-07-28."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import warnings
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.redis_server import redis_running
from fixtures.served import Served
from proxy.test_gateway_cli import ROOT, processes_naming
from proxy.test_proxy_peers import old_sdk_python


async def sdk_tools(url: str, token: str | None) -> tuple[str, set[str], list[str]]:
    """The revision, tool names and three ``legacy_add`` answers the official client gets."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(streamable_http_client(url, http_client=http), mode="auto") as sdk:
                names = {tool.name for tool in (await sdk.list_tools()).tools}
                sums = []
                for n in range(3):  # stateless: each request may reach either worker
                    added = await sdk.call_tool("legacy_add", {"a": n, "b": 10})
                    sums.append(added.content[0].text)  # type: ignore[union-attr]
                return sdk.protocol_version, names, sums
    finally:
        await http.aclose()


async def test_an_old_stdio_server_behind_auth_on_two_redis_workers(tmp_path: Path) -> None:
    python = old_sdk_python()
    peer = tmp_path / "scaled_legacy_peer.py"  # (its own path: the marker of its processes)
    shutil.copy(ROOT / "tests/client/old_sdk_peer.py", peer)
    config = tmp_path / "servers.json"
    entry = {"command": python, "args": [str(peer), "stdio"], "mode": "session"}
    config.write_text(json.dumps({"mcpServers": {"legacy": entry}}))
    key = SigningKey("gateway-key", "RS256")
    key_set = KeySetServer([key])
    env = {name: value for name, value in os.environ.items() if name != "MCP_SSE_SERVER_DEBUG"}
    try:
        with redis_running(tmp_path) as redis:
            args = ["--gateway", str(config), "--port", "0", "--workers", "2", "--redis-url", redis.url]
            args += ["--auth-issuer", ISSUER, "--auth-jwks-uri", key_set.url, "--auth-resource", RESOURCE]
            served = await asyncio.to_thread(Served, args, tmp_path, env)
            try:
                revision, names, sums = await sdk_tools(served.url, key.sign())
                assert revision == "2026-07-28"
                assert names == {"legacy_add", "legacy_echo"}
                assert sums == ["10", "11", "12"]
                async with httpx.AsyncClient(timeout=30) as raw:
                    refused = await raw.post(
                        served.url,
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                        headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"},
                    )
                assert refused.status_code == 401 and "resource_metadata" in refused.headers["www-authenticate"]
                with pytest.raises(ExceptionGroup) as raised:  # the official client, without a token
                    await sdk_tools(served.url, None)
                assert "Unauthorized: this server needs a bearer token" in repr(raised.value), repr(raised.value)
                assert processes_naming(str(peer))  # the backend runs (in each worker that was asked)
            finally:
                status, errors = await asyncio.to_thread(served.stop, signal.SIGTERM)
            assert status == 0, errors
            assert key.sign() not in errors
            assert processes_naming(str(peer)) == []  # every worker stopped its backend
    finally:
        key_set.close()
