"""What the engine needs of MCP Apps whether or not a server has one: the extension's names, a
tool's link to its app (``tool_ui_meta``), whether a request's client supports apps, and the
``AppDecorators`` that ``McpServer`` inherits. The apps themselves (``App``, ``Csp``,
``Permissions``, the registry, reading the HTML) are ``apps.py``'s, and its rules; that module is
imported with a server's first app, so a server without apps starts without it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

if TYPE_CHECKING:
    from .context import RequestContext

__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "LEGACY_RESOURCE_URI_KEY",
    "Visibility",
    "check_uri",
    "client_supports_apps",
    "tool_ui_meta",
]

APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
"""The extension's id, the key under ``capabilities.extensions``."""
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of an app's HTML (the only one the extension defines)."""
LEGACY_RESOURCE_URI_KEY: Final = "ui/resourceUri"
"""The deprecated flat ``_meta`` key for a tool's app, still read by hosts (rule 3)."""

Visibility = Literal["model", "app"]
_VISIBILITIES: Final = ("model", "app")
_Function = TypeVar("_Function", bound=Callable[..., Any])


def client_supports_apps(context: RequestContext) -> bool:
    """True when the client of this request declared the extension with the app MIME type
    (rule 6): in its session's ``initialize``, or in a 2026-07-28 request's ``_meta``."""
    capabilities = getattr(context.session, "client_capabilities", None)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    declared = extensions.get(APPS_EXTENSION) if isinstance(extensions, dict) else None
    mime_types = declared.get("mimeTypes") if isinstance(declared, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def check_uri(uri: str, what: str) -> None:
    """ValueError unless ``uri`` is a ``ui://`` URI (``apps.py`` rule 1)."""
    if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) == len("ui://"):
        raise ValueError(f"{what}: an app's URI starts with ui:// (got {uri!r})")


def tool_ui_meta(
    name: str, meta: Mapping[str, Any] | None, app: str | None, visibility: Collection[Visibility] | None
) -> dict[str, Any] | None:
    """The ``_meta`` of tool ``name`` linked to ``app`` with ``visibility`` (rule 3); ValueError
    for a URI outside ``ui://``, an unknown or empty visibility, or a ``ui`` key in ``meta``."""
    if app is None and visibility is None:
        return dict(meta) if meta is not None else None
    if meta is not None and "ui" in meta:
        raise ValueError(f"Tool {name!r}: give app=/visibility= or meta['ui'], not both")
    ui: dict[str, Any] = {}
    out = dict(meta or {})
    if app is not None:
        check_uri(app, f"Tool {name!r}")
        ui["resourceUri"] = out[LEGACY_RESOURCE_URI_KEY] = app
    if visibility is not None:
        if isinstance(visibility, str):
            raise TypeError(f"Tool {name!r}: visibility is a list, such as ['app'] (got {visibility!r})")
        chosen = [each for each in _VISIBILITIES if each in visibility]
        unknown = [each for each in visibility if each not in _VISIBILITIES]
        if unknown or not chosen:
            raise ValueError(f"Tool {name!r}: visibility takes 'model' and/or 'app' (got {list(visibility)!r})")
        if len(chosen) < len(_VISIBILITIES):  # both is the default: left out
            ui["visibility"] = chosen
    out["ui"] = ui
    return out
