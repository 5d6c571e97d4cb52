"""``mcp-sse-server serve --gateway FILE``: one endpoint for every entry of the file, for the
official SDK client at 2026-07-28 and ours; shutdown leaves no backend process behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import warnings
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fixtures.served import Served
from mcp_sse_server.client import StreamableHttpClient
from proxy.test_proxy_peers import old_sdk_python

ROOT = Path(__file__).resolve().parents[2]


def processes_naming(marker: str) -> list[int]:
    """The pids of this machine's processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue  # (gone meanwhile)
            if marker in command:
                found.append(int(entry.name))
    return found


async def test_serve_gateway_serves_every_entry_and_stops_them(tmp_path: Path) -> None:
    python = old_sdk_python()
    peer = tmp_path / "legacy_peer.py"  # (its own path: the marker of its processes)
    shutil.copy(ROOT / "tests/client/old_sdk_peer.py", peer)
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "legacy": {"command": python, "args": [str(peer), "stdio"], "mode": "session"},
                    "Math": {"type": "inmemory", "command": "math"},
                    "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
                }
            }
        )
    )
    env = {key: value for key, value in os.environ.items() if key != "MCP_SSE_SERVER_DEBUG"}
    served = Served(["--gateway", str(config), "--port", "0"], tmp_path, env)
    try:
        assert served.label == f"gateway:{config}"
        http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=60.0))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                async with Client(streamable_http_client(served.url, http_client=http), mode="auto") as sdk:
                    assert sdk.protocol_version == "2026-07-28"
                    names = {tool.name for tool in (await sdk.list_tools()).tools}
                    assert {"legacy_add", "legacy_echo", "math_add"} <= names
                    added = await sdk.call_tool("legacy_add", {"a": 2, "b": 3})
                    assert added.content[0].text == "5"  # type: ignore[union-attr]
        finally:
            await http.aclose()
        async with StreamableHttpClient(served.url, mode="session") as ours:
            listed = await ours.request("tools/list", {})
            assert listed["_meta"] == {"degraded": True, "failedBackends": ["broken"]}
            broken = await ours.call_tool("broken_anything", {})
            assert broken.is_error and "Backend broken" in broken.content[0].text  # type: ignore[union-attr]
        assert processes_naming(str(peer))  # the backend is running...
    finally:
        status, errors = served.stop(signal.SIGTERM)
    assert status == 0, errors
    assert processes_naming(str(peer)) == []  # ...and stopped with the gateway


async def test_serve_gateway_over_stdio(tmp_path: Path) -> None:
    from mcp_sse_server.client import StdioClient

    config = tmp_path / "servers.json"
    entry = {
        "command": old_sdk_python(),
        "args": [str(ROOT / "tests/client/old_sdk_peer.py"), "stdio"],
        "mode": "session",
    }
    config.write_text(json.dumps({"mcpServers": {"legacy": entry, "Math": {"type": "inmemory", "command": "math"}}}))
    command = ["-m", "mcp_sse_server", "serve", "--gateway", str(config), "--stdio"]
    for mode in ("session", "2026-07-28"):
        async with StdioClient(sys.executable, args=command, mode=mode, cwd=str(tmp_path)) as client:
            assert {"legacy_add", "legacy_echo", "math_add"} <= {tool.name for tool in await client.list_tools()}
            added = await client.call_tool("legacy_add", {"a": 2, "b": 3})
            assert added.content[0].text == "5"  # type: ignore[union-attr]
            assert (await client.call_tool("math_add", {"a": 2, "b": 3})).structured_content == {"result": 5}
