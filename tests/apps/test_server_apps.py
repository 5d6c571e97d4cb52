"""MCP Apps, server side (engine/apps.py): what a server with apps says at each revision, checked
against the extension's published JSON Schema (npm @modelcontextprotocol/ext-apps), what a
client without the extension gets, and the registration errors."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from fixtures.sessions import RawClient
from mcp_sse_server import (
    APP_MIME_TYPE,
    APPS_EXTENSION,
    Csp,
    InMemoryClient,
    McpServer,
    MemoryTransport,
    Permissions,
    RequestContext,
    client_supports_apps,
)
from mcp_sse_server.engine import versions
from mcp_sse_server.servers.demo import build_demo_server
from mcp_sse_server.servers.demo_app import CALCULATOR_URI

ROOT = Path(__file__).resolve().parents[2]
MODULES = Path(os.environ.get("MCP_TEST_NODE_MODULES") or ROOT / ".tools/node/node_modules")
SCHEMA = MODULES / "@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"
REVISIONS = [revision.name for revision in versions.SERVED]
DECLARED = {"extensions": {APPS_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}}
VIEW = "ui://calc/view.html"
PAGE = "<!doctype html><html><body><p id=out></p></body></html>"


def build_server() -> McpServer:
    server = McpServer("calc", "1.0.0")
    server.add_app(
        VIEW,
        html=PAGE,
        csp=Csp(connect=["https://api.example.com"], resources=["https://*.cdn.example"]),
        permissions=Permissions(clipboard_write=True),
        prefers_border=True,
    )

    @server.app("ui://calc/live.html", domain="calc.example")
    async def live(context: RequestContext) -> bytes:
        """Says whether this request's client declared the extension."""
        return f"<!doctype html><p>{client_supports_apps(context)}</p>".encode()

    @server.tool(app=VIEW)
    def add(a: int, b: int, context: RequestContext) -> dict[str, Any]:
        """Adds two numbers."""
        return {"sum": a + b, "apps": client_supports_apps(context)}

    @server.tool(app="ui://calc/live.html", visibility=["model"])
    def secret() -> str:
        return "only the model calls this"

    @server.tool(visibility=["app"])
    def refresh() -> str:
        return "refreshed"

    return server


class Peer:
    """A raw client of one revision: a session (initialized with ``capabilities``) or 2026-07-28
    requests, each with the capabilities in its ``_meta``."""

    def __init__(self, raw: RawClient, revision: str, capabilities: dict[str, Any]) -> None:
        self.raw, self.revision, self.capabilities = raw, revision, capabilities

    @property
    def stateless(self) -> bool:
        return self.revision in {revision.name for revision in versions.STATELESS}

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.stateless:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": self.revision,
                "io.modelcontextprotocol/clientInfo": {"name": "apps-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            }
        return await self.raw.result(method, params)

    async def capabilities_of_server(self) -> dict[str, Any]:
        found = (await self.result("server/discover")) if self.stateless else self.initialized
        capabilities: dict[str, Any] = found["capabilities"]
        return capabilities

    initialized: dict[str, Any]


Open = Callable[..., Any]


@pytest.fixture
async def peer() -> AsyncIterator[Open]:
    opened: list[RawClient] = []

    async def open_peer(server: McpServer, revision: str, capabilities: dict[str, Any] | None = None) -> Peer:
        server_side, client_side = MemoryTransport.pair()
        await server.connect(server_side)
        raw = RawClient(server, client_side)
        opened.append(raw)
        made = Peer(raw, revision, capabilities or {})
        if not made.stateless:
            made.initialized = await raw.initialize(capabilities=capabilities, protocol_version=revision)
        return made

    yield open_peer
    for raw in opened:
        await raw.close()


@pytest.fixture(scope="module")
def schema() -> Callable[[str], Any]:
    if not SCHEMA.is_file():
        pytest.skip(f"the ext-apps package is not installed ({SCHEMA}); scripts/setup.sh installs it")
    document = json.loads(SCHEMA.read_text())

    def validator(name: str) -> Any:
        return jsonschema_rs.validator_for(document["$defs"][name])  # (each is self-contained)

    return validator


@pytest.mark.parametrize("revision", REVISIONS)
async def test_the_output_for_apps_validates_against_the_extension_schema(
    revision: str, peer: Open, schema: Callable[[str], Any]
) -> None:
    client = await peer(build_server(), revision, DECLARED)
    assert (await client.capabilities_of_server())["extensions"][APPS_EXTENSION] == {}
    tool_meta, resource_meta = schema("McpUiToolMeta"), schema("McpUiResourceMeta")
    tools = {tool["name"]: tool for tool in (await client.result("tools/list"))["tools"]}
    for tool in tools.values():
        tool_meta.validate(tool["_meta"]["ui"])
    assert tools["add"]["_meta"] == {"ui": {"resourceUri": VIEW}, "ui/resourceUri": VIEW}
    assert tools["secret"]["_meta"]["ui"]["visibility"] == ["model"]
    assert tools["refresh"]["_meta"] == {"ui": {"visibility": ["app"]}}
    listed = {entry["uri"]: entry for entry in (await client.result("resources/list"))["resources"]}
    for uri in (VIEW, "ui://calc/live.html"):
        assert listed[uri]["mimeType"] == APP_MIME_TYPE
        resource_meta.validate(listed[uri]["_meta"]["ui"])
        (item,) = (await client.result("resources/read", {"uri": uri}))["contents"]
        assert item["mimeType"] == APP_MIME_TYPE and item["_meta"] == listed[uri]["_meta"]
        resource_meta.validate(item["_meta"]["ui"])
    (view,) = (await client.result("resources/read", {"uri": VIEW}))["contents"]
    assert view["text"] == PAGE
    assert view["_meta"]["ui"] == {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": True,
    }


@pytest.mark.parametrize("revision", REVISIONS)
async def test_a_client_without_the_extension_sees_the_same_tools_and_gets_text(revision: str, peer: Open) -> None:
    server = build_server()
    plain, declared = await peer(server, revision), await peer(server, revision, DECLARED)
    assert await plain.result("tools/list") == await declared.result("tools/list")
    for name, arguments in (("add", {"a": 20, "b": 22}), ("secret", {}), ("refresh", {})):
        result = await plain.result("tools/call", {"name": name, "arguments": arguments})
        texts = [block["text"] for block in result["content"] if block["type"] == "text"]
        assert texts and all(texts) and not result.get("isError"), (name, result)
    added = await plain.result("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}})
    assert json.loads(added["content"][0]["text"]) == {"sum": 42, "apps": False}
    added = await declared.result("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}})
    assert json.loads(added["content"][0]["text"]) == {"sum": 42, "apps": True}
    (item,) = (await plain.result("resources/read", {"uri": "ui://calc/live.html"}))["contents"]
    assert "blob" in item  # bytes are a blob, for any client


@pytest.mark.parametrize("revision", REVISIONS)
async def test_the_demo_servers_app_validates_and_serves_a_client_without_the_extension(
    revision: str, peer: Open, schema: Callable[[str], Any]
) -> None:
    # What scripts/serve.sh serves: the calculator app (servers/demo_app.py) among the demo's tools.
    server = build_demo_server()
    plain, declared = await peer(server, revision), await peer(server, revision, DECLARED)
    assert (await declared.capabilities_of_server())["extensions"][APPS_EXTENSION] == {}
    listed = await declared.result("tools/list")
    assert await plain.result("tools/list") == listed
    linked = [tool for tool in listed["tools"] if "ui" in tool.get("_meta", {})]
    assert [tool["name"] for tool in linked] == ["calculator"]
    schema("McpUiToolMeta").validate(linked[0]["_meta"]["ui"])
    resources = (await declared.result("resources/list"))["resources"]
    (entry,) = [resource for resource in resources if resource["uri"].startswith("ui://")]
    assert entry["uri"] == CALCULATOR_URI and entry["mimeType"] == APP_MIME_TYPE
    schema("McpUiResourceMeta").validate(entry["_meta"]["ui"])
    for client in (plain, declared):
        (item,) = (await client.result("resources/read", {"uri": CALCULATOR_URI}))["contents"]
        assert item["mimeType"] == APP_MIME_TYPE and "ui/initialize" in item["text"]
        schema("McpUiResourceMeta").validate(item["_meta"]["ui"])
        arguments = {"a": 6, "b": 7, "operation": "multiply"}
        result = await client.result("tools/call", {"name": "calculator", "arguments": arguments})
        assert result["content"] == [{"type": "text", "text": "6 * 7 = 42"}] and not result.get("isError")


async def test_what_our_client_declares_validates_against_the_extension_schema(
    schema: Callable[[str], Any],
) -> None:
    async with InMemoryClient(build_server(), apps=True) as client:
        for capabilities in (client.capabilities, client.stateless_capabilities):
            schema("McpUiClientCapabilities").validate(capabilities["extensions"][APPS_EXTENSION])


async def test_a_server_without_apps_declares_no_extension(peer: Open) -> None:
    server = McpServer("plain")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    for revision in REVISIONS:
        client = await peer(server, revision, DECLARED)
        assert "extensions" not in await client.capabilities_of_server()


def test_registration_errors_name_what_is_wrong(tmp_path: Path) -> None:
    server = McpServer("bad")
    with pytest.raises(ValueError, match="starts with ui://"):
        server.add_app("https://calc/view.html", html=PAGE)
    with pytest.raises(ValueError, match="MIME type of an app"):
        server.add_app(VIEW, html=PAGE, mime_type="text/html")
    with pytest.raises(ValueError, match="exactly one"):
        server.add_app(VIEW, html=PAGE, path=tmp_path / "x.html")
    with pytest.raises(ValueError, match="not an origin"):
        Csp(connect=["example.com"])
    with pytest.raises(TypeError, match="list of origins"):
        Csp(connect="https://example.com")
    with pytest.raises(ValueError, match="starts with ui://"):
        server.tool(app="view.html")(lambda: "x")
    with pytest.raises(ValueError, match="'model' and/or 'app'"):
        server.tool(name="t", app=VIEW, visibility=["user"])(lambda: "x")  # type: ignore[list-item]
    with pytest.raises(ValueError, match="'model' and/or 'app'"):
        server.tool(name="t", app=VIEW, visibility=[])(lambda: "x")
    with pytest.raises(ValueError, match="not both"):
        server.tool(name="t", app=VIEW, meta={"ui": {}})(lambda: "x")
    assert not server.tools


async def test_a_dangling_link_fails_when_the_server_first_serves_and_at_once_after() -> None:
    server = McpServer("dangling")

    @server.tool(app="ui://nowhere/view.html")
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ValueError, match=r"Tool .add. links to app ui://nowhere/view\.html"):
        await server.connect(MemoryTransport.pair()[0])
    with pytest.raises(ValueError, match="Tool 'add' links to app"):
        server.capabilities  # noqa: B018 (server/discover asks it)
    server.add_app("ui://nowhere/view.html", html=PAGE)
    await server.connect(MemoryTransport.pair()[0])  # both sides registered: it serves
    with pytest.raises(ValueError, match=r"Tool .late. links to app ui://else/view\.html"):
        server.tool(name="late", app="ui://else/view.html")(lambda: "x")


async def test_a_ui_resource_registered_another_way_needs_the_app_mime_type() -> None:
    server = McpServer("mime")
    server.add_app(VIEW, html=PAGE)

    @server.resource("ui://calc/other.html", mime_type="text/html")
    def other() -> str:
        return PAGE

    with pytest.raises(ValueError, match=r"ui://calc/other\.html: a ui:// resource has the MIME type"):
        await server.connect(MemoryTransport.pair()[0])


async def test_an_app_from_a_file_and_from_package_data(tmp_path: Path, peer: Open) -> None:
    page = tmp_path / "index.html"
    page.write_text(PAGE)
    server = McpServer("files")
    from_file = server.add_app("ui://files/index.html", path=page)
    server.add_app("ui://files/pkg.html", package=("mcp_sse_server", "py.typed"))
    assert from_file.name == "index.html" and from_file.ui_meta == {}
    client = await peer(server, "2025-11-25")
    (item,) = (await client.result("resources/read", {"uri": "ui://files/index.html"}))["contents"]
    assert item == {"uri": "ui://files/index.html", "text": PAGE, "mimeType": APP_MIME_TYPE}
