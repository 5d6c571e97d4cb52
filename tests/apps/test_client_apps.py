"""MCP Apps, client side (client/apps.py): ``apps=True`` declares the extension in both eras,
app tools and their visibility, an app read with its metadata, the CSP header and ``allow``."""

from __future__ import annotations

import pytest

from apps.test_server_apps import PAGE, VIEW, build_server
from mcp_sse_server import Csp, InMemoryClient, Permissions, allow_attribute, csp_header
from mcp_sse_server.client.apps import app_tools, audience, read_app

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
