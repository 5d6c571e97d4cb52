"""Telemetry off costs nothing: serving calls over every transport (in memory, stdio, Streamable
HTTP sessions, stateless 2026-07-28 POSTs, the 2024-11-05 HTTP+SSE transport) imports no
``opentelemetry`` module, in this process or the stdio server's.

A subprocess that imports only this package: the official SDK in this virtualenv depends on
``opentelemetry-api``, and the suite's other modules import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = """
import sys
from mcp_sse_server import McpServer

server = McpServer("probe")


@server.tool()
def loaded() -> list[str]:
    return sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
"""

SCRIPT = """
import asyncio, json, sys
from urllib.parse import urljoin

sys.path.insert(0, {here!r})
from probe import server
from mcp_sse_server import InMemoryClient
from mcp_sse_server.client import SseClient, StdioClient, StreamableHttpClient
from mcp_sse_server.transport.http import McpHttpServer


async def main() -> None:
    seen = {{}}
    async with InMemoryClient(server) as client:
        seen["memory"] = (await client.call_tool("loaded", {{}})).structured_content
    http = await McpHttpServer.bind(server, port=0)
    try:
        async with StreamableHttpClient(http.endpoint, mode="session") as client:
            seen["http-session"] = (await client.call_tool("loaded", {{}})).structured_content
        async with StreamableHttpClient(http.endpoint) as client:
            seen["http-stateless"] = (await client.call_tool("loaded", {{}})).structured_content
        async with SseClient(urljoin(http.endpoint, "/sse")) as client:
            seen["legacy-sse"] = (await client.call_tool("loaded", {{}})).structured_content
    finally:
        await http.close()
    stdio = StdioClient(sys.executable, ["-m", "mcp_sse_server", "serve", {probe!r}, "--stdio"])
    async with stdio as client:
        seen["stdio-server"] = (await client.call_tool("loaded", {{}})).structured_content
    seen["this-process"] = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
    print(json.dumps(seen))


asyncio.run(main())
"""


def test_serving_every_transport_with_telemetry_off_imports_no_opentelemetry(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(PROBE))
    script = SCRIPT.format(here=str(tmp_path), probe=str(probe))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(seen) == {"memory", "http-session", "http-stateless", "legacy-sse", "stdio-server", "this-process"}
    for where, modules in seen.items():
        listed = modules["result"] if isinstance(modules, dict) else modules
        assert listed == [], (where, listed)


def test_the_same_probe_does_see_opentelemetry_once_switched_on(tmp_path: Path) -> None:
    # (the probe can fail: with telemetry on, the modules are there)
    code = (
        "import sys\n"
        "from mcp_sse_server import McpServer\n"
        "from mcp_sse_server.telemetry import Telemetry\n"
        "McpServer('on', telemetry=Telemetry())\n"
        "print('opentelemetry.trace' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout.strip() == "True", done.stderr


DORMANT = """
import asyncio, json
from opentelemetry import trace
from mcp_sse_server import InMemoryClient, McpServer
from mcp_sse_server.telemetry import Telemetry

server = McpServer("dormant", telemetry=Telemetry())  # the API's global proxies: no SDK installed
observer = server.observer


@server.tool()
def where() -> str:
    return format(trace.get_current_span().get_span_context().trace_id, "032x")


async def main() -> None:
    async with InMemoryClient(server) as client:
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        meta = {"traceparent": parent}
        seen = await client.request("tools/call", {"name": "where", "arguments": {}, "_meta": meta})
        plain = await client.request("tools/call", {"name": "where", "arguments": {}})
    print(json.dumps([observer.dormant(), seen["content"][0]["text"], plain["content"][0]["text"]]))


asyncio.run(main())
"""


def test_with_the_api_and_no_sdk_nothing_is_recorded_and_the_callers_context_passes_on() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", DORMANT], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    dormant, seen, plain = json.loads(done.stdout.strip().splitlines()[-1])
    assert dormant is True
    assert seen == "0af7651916cd43dd8448eb211c80319c"  # the handler runs in the caller's trace
    assert plain == "0" * 32
