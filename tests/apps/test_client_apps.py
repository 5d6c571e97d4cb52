"""MCP Apps, client side (client/apps.py): ``apps=True`` declares the extension in both eras,
app tools and their visibility, an app read with its metadata, the CSP header and ``allow``; and
the demo's app from a real ``serve`` process over HTTP."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from apps.test_server_apps import PAGE, VIEW, build_server
from fixtures.served import Served
from mcp_sse_server import Csp, InMemoryClient, Permissions, TextContent, allow_attribute, csp_header
from mcp_sse_server.client import AppHostSession, StreamableHttpClient
from mcp_sse_server.client.apps import app_tools, audience, read_app

SRC = Path(__file__).resolve().parents[2] / "src"

MODES = ["session", "2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_apps_true_declares_the_extension_in_both_eras(mode: str) -> None:
    for apps in (False, True):
        async with InMemoryClient(build_server(), mode=mode, apps=apps) as client:
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result.structured_content == {"sum": 42, "apps": apps}


@pytest.mark.parametrize("mode", MODES)
async def test_app_tools_and_reading_an_app(mode: str) -> None:
    async with InMemoryClient(build_server(), mode=mode, apps=True) as client:
        linked = {tool.name: tool for tool in await app_tools(client)}
        assert {name: (tool.resource_uri, tool.visibility) for name, tool in linked.items()} == {
            "add": (VIEW, ("model", "app")),
            "secret": ("ui://calc/live.html", ("model",)),
        }
        tools = await client.list_tools()
        assert [tool.name for tool in audience(tools, "model")] == ["add", "secret"]
        assert [tool.name for tool in audience(tools, "app")] == ["add", "refresh"]
        view = await read_app(client, VIEW)
        assert view.html == PAGE and view.prefers_border is True
        assert view.csp == Csp(connect=["https://api.example.com"], resources=["https://*.cdn.example"])
        assert "connect-src https://api.example.com;" in view.csp_header()
        assert view.allow_attribute() == "clipboard-write"
        live = await read_app(client, "ui://calc/live.html")  # a blob, made per read: this client declared it
        assert live.html == "<!doctype html><p>True</p>" and live.domain == "calc.example"
        assert live.csp is None and live.csp_header() == csp_header(None)


async def test_read_app_refuses_a_resource_that_is_not_an_app() -> None:
    server = build_server()

    @server.resource("notes://one")
    def note() -> str:
        return "text"

    async with InMemoryClient(server) as client:
        with pytest.raises(ValueError, match="not an app"):
            await read_app(client, "notes://one")


def test_the_csp_header_allows_only_what_is_declared() -> None:
    default = csp_header(None)
    assert "default-src 'none'" in default and "connect-src 'none'" in default and "object-src 'none'" in default
    assert "frame-src 'none'" in default and "base-uri 'self'" in default
    declared = csp_header(
        Csp(
            connect=["https://api.example.com"],
            resources=["https://*.cdn.example"],
            frames=["https://maps.example"],
            base_uris=["https://base.example"],
        )
    )
    directives = dict(part.split(" ", 1) for part in declared.split("; "))
    assert directives["connect-src"] == "https://api.example.com"
    for name in ("script-src", "style-src", "img-src", "font-src", "media-src"):
        assert directives[name].endswith(" https://*.cdn.example")
    assert directives["frame-src"] == "https://maps.example"
    assert directives["base-uri"] == "https://base.example"
    assert directives["object-src"] == "'none'" and directives["default-src"] == "'none'"
    assert allow_attribute(None) == allow_attribute(Permissions()) == ""
    every = Permissions(camera=True, microphone=True, geolocation=True, clipboard_write=True)
    assert allow_attribute(every) == "camera; microphone; geolocation; clipboard-write"
    assert Permissions.from_dict(every.to_dict()) == every


@pytest.mark.parametrize("mode", MODES)
async def test_the_served_demo_brings_its_app_over_http(mode: str, tmp_path: Path) -> None:
    served = Served(["--port", "0"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        async with StreamableHttpClient(served.url, mode=mode, apps=True) as client:
            (calculator,) = [tool for tool in await app_tools(client) if tool.name == "calculator"]
            view = await read_app(client, calculator.resource_uri)
            assert view.prefers_border is True and view.csp is None and "ui/initialize" in view.html
            sent: list[dict[str, Any]] = []
            host = AppHostSession(client, calculator.tool, send=sent.append, host_info={"name": "t", "version": "1"})
            result = await host.run_tool({"a": 20, "b": 22})
            assert result.content == [TextContent("20 + 22 = 42")] and sent == []  # the view has not initialized
        async with StreamableHttpClient(served.url, mode=mode) as plain:
            assert (await plain.call_tool("calculator", {"a": 6, "b": 7, "operation": "multiply"})).content == [
                TextContent("6 * 7 = 42")
            ]
    finally:
        served.stop()
