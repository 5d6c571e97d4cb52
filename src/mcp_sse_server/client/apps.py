"""MCP Apps from the client's side: which tools bring an interface, and the app a host renders.

>>> async def show(url: str) -> None:
...     async with StreamableHttpClient(url, apps=True) as client:
...         for linked in await app_tools(client):
...             view = await read_app(client, linked.resource_uri)
...             header, allow = view.csp_header(), view.allow_attribute()

Rules:

1. ``apps=True`` on a client declares the extension (``io.modelcontextprotocol/ui`` with the
   MIME type ``text/html;profile=mcp-app``) in ``initialize`` and in every 2026-07-28
   request's ``_meta``; a server may then shape its tools' results for a host.
2. A tool's app is ``_meta.ui.resourceUri``, else the deprecated flat ``_meta["ui/resourceUri"]``;
   only a ``ui://`` URI counts. Its ``visibility`` is ``_meta.ui.visibility``, both when absent.
3. ``audience(tools, "model")`` is what a host may show its model; ``"app"`` what a view may
   call. A host must filter: the server lists every tool to everyone.
4. ``read_app`` refuses contents with another MIME type (ValueError), decodes a blob as UTF-8
   and takes ``_meta.ui`` from the content item, else from the ``resources/list`` entry (the
   item wins where both have it).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..engine.apps import (
    APP_MIME_TYPE,
    LEGACY_RESOURCE_URI_KEY,
    Csp,
    Permissions,
    Visibility,
    allow_attribute,
    csp_header,
)
from ..engine.types import BlobResourceContents, TextResourceContents, Tool

if TYPE_CHECKING:
    from .base import McpClient

__all__ = ["AppTool", "AppView", "app_tools", "audience", "read_app", "tool_app", "tool_visibility"]

_BOTH: tuple[Visibility, ...] = ("model", "app")


def tool_app(tool: Tool) -> str | None:
    """The ``ui://`` URI of ``tool``'s app, None without one (rule 2)."""
    meta = tool.meta or {}
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    if not isinstance(uri, str):
        uri = meta.get(LEGACY_RESOURCE_URI_KEY)
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None


def tool_visibility(tool: Tool | Mapping[str, Any]) -> tuple[Visibility, ...]:
    """Who may call ``tool`` (a ``Tool`` or its tools/list entry): ``("model", "app")`` unless
    its ``_meta.ui.visibility`` narrows it."""
    meta = tool.get("_meta") if isinstance(tool, Mapping) else tool.meta
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    listed = ui.get("visibility") if isinstance(ui, dict) else None
    if not isinstance(listed, list):
        return _BOTH
    return tuple(each for each in _BOTH if each in listed)


def audience(tools: Iterable[Tool], who: Literal["model", "app"]) -> list[Tool]:
    """The tools ``who`` may see and call (rule 3)."""
    return [tool for tool in tools if who in tool_visibility(tool)]


@dataclass(frozen=True, slots=True)
class AppTool:
    """A tool with an interface: the tool, its app's URI and who may call it."""

    tool: Tool
    resource_uri: str
    visibility: tuple[Visibility, ...]

    @property
    def name(self) -> str:
        return self.tool.name


@dataclass(frozen=True, slots=True)
class AppView:
    """An app as a host renders it: its HTML and the ``_meta.ui`` it came with."""

    uri: str
    html: str
    csp: Csp | None = None
    permissions: Permissions | None = None
    domain: str | None = None
    prefers_border: bool | None = None

    def csp_header(self) -> str:
        """The ``Content-Security-Policy`` for the app's document (``engine.apps.csp_header``)."""
        return csp_header(self.csp)

    def allow_attribute(self) -> str:
        """The iframe ``allow`` attribute for the permissions it asks for."""
        return allow_attribute(self.permissions)

    @classmethod
    def of(cls, uri: str, html: str, *metas: Mapping[str, Any] | None) -> AppView:
        """From ``_meta.ui`` objects, the first that has a member winning (rule 4)."""
        merged: dict[str, Any] = {}
        for meta in reversed(metas):
            ui = (meta or {}).get("ui")
            if isinstance(ui, Mapping):
                merged.update(ui)
        csp, permissions = merged.get("csp"), merged.get("permissions")
        domain, border = merged.get("domain"), merged.get("prefersBorder")
        return cls(
            uri,
            html,
            Csp.from_dict(csp) if csp is not None else None,
            Permissions.from_dict(permissions) if permissions is not None else None,
            domain if isinstance(domain, str) else None,
            border if isinstance(border, bool) else None,
        )


async def app_tools(client: McpClient) -> list[AppTool]:
    """The server's tools that have an app, with its URI and their visibility (rule 2)."""
    found = []
    for tool in await client.list_tools():
        uri = tool_app(tool)
        if uri is not None:
            found.append(AppTool(tool, uri, tool_visibility(tool)))
    return found


async def read_app(client: McpClient, uri: str) -> AppView:
    """Read the app at ``uri`` (rule 4): ValueError for contents that are not an app."""
    result = await client.read_resource(uri)
    for item in result.contents:
        if item.uri != uri:
            continue
        if item.mime_type != APP_MIME_TYPE:
            raise ValueError(f"{uri} is {item.mime_type!r}, not an app ({APP_MIME_TYPE})")
        if isinstance(item, TextResourceContents):
            html = item.text
        else:
            assert isinstance(item, BlobResourceContents)
            html = base64.b64decode(item.blob).decode("utf-8")
        listed = None
        for info in await client.list_resources():
            if info.uri == uri:
                listed = info.meta
                break
        return AppView.of(uri, html, item.meta, listed)
    raise ValueError(f"{uri}: the server's answer has no contents for it")
