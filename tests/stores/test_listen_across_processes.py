"""``subscriptions/listen`` across ``serve --redis-url`` processes: a listener on one process hears
of a list change made on another, through the Redis event bus (two real processes, one Redis)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx

from .serving import ACCEPT, WAIT, RawSession, serving, sse_events

APP = '''
from mcp_sse_server import McpServer, Tool, shared_server


@shared_server
def build() -> McpServer:
    server = McpServer("listen-fanout")

    @server.tool
    async def grow(name: str) -> str:
        """Adds a tool named `name` to this process's server (a tools list change)."""
        server.add_tool(Tool(name, {"type": "object"}, lambda arguments, context: name))
        return f"added {name}"

    return server
'''

STATELESS = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": STATELESS, "io.modelcontextprotocol/clientCapabilities": {}}


def listen(url: str, heard: list[dict[str, Any]], ready: threading.Event, done: threading.Event) -> None:
    """A 2026-07-28 listener for tools list changes, on its own thread; stops at the first change."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"toolsListChanged": True}},
    }
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": STATELESS,
        "mcp-method": "subscriptions/listen",
    }
    with (
        httpx.Client(timeout=httpx.Timeout(WAIT)) as client,
        client.stream("POST", url, content=json.dumps(body), headers=headers) as response,
    ):
        for event in sse_events(response):
            if "data" not in event:
                continue
            message = json.loads(event["data"])
            heard.append(message)
            if message.get("method") == "notifications/subscriptions/acknowledged":
                ready.set()
            elif message.get("method") == "notifications/tools/list_changed":
                done.set()
                return


def test_a_listener_on_one_process_hears_of_a_change_made_on_another(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    target = f"{tmp_path / 'app.py'}:build"
    args = ["--port", "0", "--redis-url", redis_url]
    with serving([target, *args], tmp_path) as first, serving([target, *args], tmp_path) as second:
        heard: list[dict[str, Any]] = []
        ready, done = threading.Event(), threading.Event()
        listener = threading.Thread(target=listen, args=(first.url, heard, ready, done), daemon=True)
        listener.start()
        assert ready.wait(WAIT), heard
        session = RawSession(second.url)
        try:
            session.open()
            answer = session.call(2, "tools/call", {"name": "grow", "arguments": {"name": "late"}})
            assert answer["result"]["content"][0]["text"] == "added late"
        finally:
            session.close()
        assert done.wait(WAIT), heard
        changed = heard[-1]
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 7}
        listener.join(WAIT)
