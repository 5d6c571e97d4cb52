"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension, SEP-1865): tools that bring their own
HTML interface, served as ``ui://`` resources that a host renders in a sandboxed iframe.

>>> from mcp_sse_server import McpServer
>>> server = McpServer("calc")
>>> @server.app("ui://calc/view.html", csp=Csp(connect=["https://api.example.com"]))
... def view() -> str:
...     return "<!doctype html><html><body><p id=out></p></body></html>"
>>> @server.tool(app="ui://calc/view.html")
... def add(a: int, b: int) -> str:
...     return str(a + b)  # the text every client gets; a host also renders the view
>>> server.capabilities["extensions"]
{'io.modelcontextprotocol/ui': {}}

Rules:

1. An app is a resource at a ``ui://`` URI (ValueError for another scheme) with the MIME type
   ``text/html;profile=mcp-app`` (ValueError for another one, also for a ``ui://`` resource
   registered some other way). Its HTML comes from a string, a file or package data read once
   at registration, or a function (sync or async, given the ``RequestContext`` when it takes a
   parameter) called at each read; ``str`` is sent as text, ``bytes`` as a base64 blob.
2. Its ``_meta.ui`` (``csp``, ``permissions``, ``domain``, ``prefersBorder``; camelCase, empty
   parts left out) is on its ``resources/list`` entry and on each ``resources/read`` content
   item: hosts of the stable revision read the item, draft hosts also the entry.
3. ``@server.tool(app=uri, visibility=...)`` links a tool: ``_meta.ui.resourceUri`` (and the
   deprecated flat key ``ui/resourceUri``, which hosts still read), ``_meta.ui.visibility`` only
   when it is not the default (both). A ``meta`` with a ``ui`` key beside ``app=`` is a
   ValueError: ``_meta.ui`` has one owner.
4. A link to an app that is not registered is a ValueError naming the tool: when the server
   first serves a session or tells its capabilities (``initialize``, ``server/discover``), or
   at once for a tool registered after that.
5. The server declares ``capabilities.extensions["io.modelcontextprotocol/ui"] = {}`` while it
   has an app, in the ``initialize`` result of every revision and in ``server/discover``.
6. The tool list does not vary by client (a 2026-07-28 list is shared by every requester):
   app tools return text ``content`` every client can use and may put what the view needs in
   ``structuredContent``; ``client_supports_apps(context)`` says whether this request's client
   declared the extension (its session's ``initialize``, or a 2026-07-28 request's ``_meta``),
   for a tool that wants to shape its result by it.
7. Visibility is advice to the host, not a check on the server: a host proxies a view's call
   with its own identity. Protect side effects with ``scopes=``.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypedDict, TypeVar

from .app_links import (
    APP_MIME_TYPE,
    APPS_EXTENSION,
    LEGACY_RESOURCE_URI_KEY,
    Visibility,
    check_uri,
    client_supports_apps,
    tool_ui_meta,
)
from .types import BlobResourceContents, ReadResourceResult, Resource, TextResourceContents

if TYPE_CHECKING:
    from .context import RequestContext
    from .resources import ResourceRegistry
    from .tools import ToolRegistry

__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "LEGACY_RESOURCE_URI_KEY",
    "App",
    "AppHost",
    "AppOptions",
    "AppRegistry",
    "Csp",
    "Permissions",
    "Visibility",
    "allow_attribute",
    "client_supports_apps",
    "csp_header",
    "register_app",
    "tool_ui_meta",
]

logger = logging.getLogger("mcp_sse_server")

_LARGE_HTML: Final = 5 * 1024 * 1024  # hosts inline the HTML in one postMessage: warn above this
# An origin as CSP source lists take it: scheme://host[:port], ``*.`` only as the leading label.
_ORIGIN: Final = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::\d{1,5})?")

_Function = TypeVar("_Function", bound=Callable[..., Any])
HtmlFunction = Callable[..., "str | bytes | Awaitable[str | bytes]"]


def _origins(what: str, values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        raise TypeError(f"Csp.{what}: expected a list of origins, got the string {values!r}")
    origins = tuple(values)
    for origin in origins:
        if not isinstance(origin, str) or not _ORIGIN.fullmatch(origin):
            raise ValueError(f"Csp.{what}: {origin!r} is not an origin (scheme://host[:port], '*.' first)")
    return origins


@dataclass(frozen=True, slots=True)
class Csp:
    """The origins an app may reach beyond its own document; each empty list allows none.

    ``connect``: fetch/XHR/WebSocket (``connect-src``); ``resources``: scripts, styles, images,
    fonts, media; ``frames``: nested iframes; ``base_uris``: ``<base href>``. Origins are
    ``scheme://host[:port]``, with ``*.`` allowed as the first label. ValueError otherwise.

    >>> Csp(connect=["https://api.example.com"]).to_dict()
    {'connectDomains': ['https://api.example.com']}
    """

    connect: Collection[str] = ()
    resources: Collection[str] = ()
    frames: Collection[str] = ()
    base_uris: Collection[str] = ()

    def __post_init__(self) -> None:
        for name in ("connect", "resources", "frames", "base_uris"):
            object.__setattr__(self, name, _origins(name, getattr(self, name)))

    def to_dict(self) -> dict[str, list[str]]:
        """The wire form (``McpUiResourceCsp``), empty lists left out."""
        pairs = (
            ("connectDomains", self.connect),
            ("resourceDomains", self.resources),
            ("frameDomains", self.frames),
            ("baseUriDomains", self.base_uris),
        )
        return {key: list(values) for key, values in pairs if values}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Csp:
        """From the wire form; ValueError for a member that is not a list of origins."""
        if not isinstance(data, Mapping):
            raise ValueError(f"_meta.ui.csp: expected an object, got {type(data).__name__}")
        return cls(
            connect=data.get("connectDomains") or (),
            resources=data.get("resourceDomains") or (),
            frames=data.get("frameDomains") or (),
            base_uris=data.get("baseUriDomains") or (),
        )


_PERMISSION_KEYS: Final = (
    ("camera", "camera", "camera"),
    ("microphone", "microphone", "microphone"),
    ("geolocation", "geolocation", "geolocation"),
    ("clipboard_write", "clipboardWrite", "clipboard-write"),
)  # (attribute, wire key, Permission Policy feature)


@dataclass(frozen=True, slots=True)
class Permissions:
    """Browser features an app asks for; a host may grant them (the iframe ``allow``
    attribute, ``allow_attribute``) and an app must feature-detect.

    >>> Permissions(clipboard_write=True).to_dict()
    {'clipboardWrite': {}}
    """

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    clipboard_write: bool = False

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The wire form (``McpUiResourcePermissions``): ``{}`` for each one asked for."""
        return {key: {} for attribute, key, _ in _PERMISSION_KEYS if getattr(self, attribute)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Permissions:
        """From the wire form (unknown features ignored)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"_meta.ui.permissions: expected an object, got {type(data).__name__}")
        return cls(**{attribute: key in data for attribute, key, _ in _PERMISSION_KEYS})


def csp_header(csp: Csp | None) -> str:
    """The ``Content-Security-Policy`` a host gives an app's document: the declared origins and
    nothing else; with no ``csp`` declared, the extension's restrictive default. Inline script
    and style are allowed (an app is one HTML document); plugins never.

    >>> csp_header(None)
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; font-src 'self'; media-src 'self' data:; connect-src 'none'; \
frame-src 'none'; base-uri 'self'; object-src 'none'"
    """
    csp = csp or Csp()

    def sources(fixed: str, extra: Collection[str], empty: str | None = None) -> str:
        if not extra and empty is not None:
            return empty
        return " ".join([fixed, *extra] if fixed else extra)

    resources = csp.resources
    directives = (
        ("default-src", "'none'"),
        ("script-src", sources("'self' 'unsafe-inline'", resources)),
        ("style-src", sources("'self' 'unsafe-inline'", resources)),
        ("img-src", sources("'self' data:", resources)),
        ("font-src", sources("'self'", resources)),
        ("media-src", sources("'self' data:", resources)),
        ("connect-src", sources("", csp.connect, "'none'")),
        ("frame-src", sources("", csp.frames, "'none'")),
        ("base-uri", sources("", csp.base_uris, "'self'")),
        ("object-src", "'none'"),
    )
    return "; ".join(f"{name} {value}" for name, value in directives)


def allow_attribute(permissions: Permissions | None) -> str:
    """The iframe ``allow`` attribute (Permission Policy) granting what ``permissions`` asks.

    >>> allow_attribute(Permissions(camera=True, clipboard_write=True))
    'camera; clipboard-write'
    """
    if permissions is None:
        return ""
    return "; ".join(feature for attribute, _, feature in _PERMISSION_KEYS if getattr(permissions, attribute))


@dataclass(frozen=True, slots=True)
class App:
    """A registered app: its ``ui://`` resource and the ``_meta.ui`` it is served with (rule 2)."""

    uri: str
    name: str
    csp: Csp | None = None
    permissions: Permissions | None = None
    domain: str | None = None
    prefers_border: bool | None = None
    ui_meta: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_uri(self.uri, "App")
        ui: dict[str, Any] = {}
        if self.csp is not None:
            ui["csp"] = self.csp.to_dict()
        if self.permissions is not None:
            ui["permissions"] = self.permissions.to_dict()
        if self.domain is not None:
            ui["domain"] = self.domain
        if self.prefers_border is not None:
            ui["prefersBorder"] = self.prefers_border
        object.__setattr__(self, "ui_meta", ui)

    def contents(self, html: str | bytes) -> TextResourceContents | BlobResourceContents:
        """A ``resources/read`` content item of this app's HTML, with its ``_meta.ui``."""
        meta = {"ui": self.ui_meta} if self.ui_meta else None
        if isinstance(html, str):
            return TextResourceContents(self.uri, html, APP_MIME_TYPE, meta)
        if isinstance(html, bytes | bytearray):
            contents = BlobResourceContents.from_bytes(self.uri, bytes(html), APP_MIME_TYPE)
            contents.meta = meta
            return contents
        raise TypeError(f"App {self.uri}: its HTML is str or bytes, got {type(html).__name__}")


class AppOptions(TypedDict, total=False):
    """What ``@server.app`` and ``server.add_app`` take besides the HTML (all optional)."""

    name: str
    """The resource's name (the function's, or the URI's last segment)."""
    title: str | None
    description: str | None
    csp: Csp | None
    """The origins the app may reach (none when absent)."""
    permissions: Permissions | None
    """The browser features it asks for."""
    domain: str | None
    """A dedicated sandbox origin, in the host's own format (passed through)."""
    prefers_border: bool | None
    """Whether the host should draw a border and background (its choice when None)."""
    mime_type: str
    """Only ``text/html;profile=mcp-app`` (ValueError otherwise); for code that says it."""


class AppRegistry:
    """A server's apps, and the check of its tools' links to them (rules 1 and 4)."""

    __slots__ = ("apps", "served")

    def __init__(self) -> None:
        self.apps: dict[str, App] = {}
        self.served = False  # checked once, when the server first serves: links are checked as made after

    def __bool__(self) -> bool:
        return bool(self.apps)

    def __iter__(self) -> Any:
        return iter(self.apps.values())

    def __contains__(self, uri: object) -> bool:
        return uri in self.apps

    def linked(self, tool: str, uri: str) -> None:
        """Tool ``tool`` links to ``uri``: ValueError now when the server already serves and no
        app is there (before that, ``check`` does it when the server first serves)."""
        if self.served and uri not in self.apps:
            raise ValueError(f"Tool {tool!r} links to app {uri}, which is not registered (add_app or @server.app)")

    def check(self, tools: ToolRegistry, resources: ResourceRegistry) -> None:
        """Rules 1 and 4 over everything registered, however it was: ValueError naming the
        tool with a dangling link, or the ``ui://`` resource with another MIME type."""
        for tool in tools:
            ui = (tool.meta or {}).get("ui")
            uri = ui.get("resourceUri") if isinstance(ui, dict) else None
            uri = uri or (tool.meta or {}).get(LEGACY_RESOURCE_URI_KEY)
            if isinstance(uri, str) and uri not in self.apps:
                raise ValueError(
                    f"Tool {tool.name!r} links to app {uri}, which is not registered (add_app or @server.app)"
                )
        for resource in resources:
            if resource.uri.startswith("ui://") and resource.mime_type != APP_MIME_TYPE:
                raise ValueError(f"Resource {resource.uri}: a ui:// resource has the MIME type {APP_MIME_TYPE}")
        self.served = True


class AppHost(Protocol):
    """What ``register_app`` needs of a server (``McpServer``, through ``app_decorators.py``)."""

    @property
    def apps(self) -> AppRegistry: ...

    def add_resource(self, resource: Resource) -> None: ...


def register_app(
    server: AppHost,
    uri: str,
    source: str | bytes | Callable[[RequestContext], Any],
    name: str,
    options: AppOptions,
) -> App:
    """Register the app at ``uri`` on ``server`` (rules 1 and 2): its resource, then its entry."""
    mime_type = options.get("mime_type", APP_MIME_TYPE)
    if mime_type != APP_MIME_TYPE:
        raise ValueError(f"App {uri}: the MIME type of an app is {APP_MIME_TYPE} (got {mime_type!r})")
    app = App(
        uri,
        name,
        options.get("csp"),
        options.get("permissions"),
        options.get("domain"),
        options.get("prefers_border"),
    )
    meta = {"ui": app.ui_meta} if app.ui_meta else None
    about: dict[str, Any] = {
        "title": options.get("title"),
        "description": options.get("description"),
        "mime_type": APP_MIME_TYPE,
        "meta": meta,
    }
    if callable(source):
        resource = Resource(uri, name, _contents_reader(app, source), **about)
    else:
        data = source.encode() if isinstance(source, str) else source
        if len(data) > _LARGE_HTML:
            logger.warning("App %s is %d bytes: hosts send it in one message to the iframe", uri, len(data))
        resource = Resource(uri, name, size=len(data), contents=app.contents(source), **about)
    server.add_resource(resource)
    server.apps.apps[uri] = app
    return app


def function_reader(function: HtmlFunction) -> Callable[[RequestContext], Any]:
    """``function`` as ``reader(context)``: given the context when it takes a parameter."""
    takes_context = bool(inspect.signature(function).parameters)
    return function if takes_context else (lambda context: function())


def _contents_reader(app: App, read: Callable[[RequestContext], Any]) -> Callable[[str, RequestContext], Any]:
    """A ``Resource`` reader answering ``app``'s HTML from ``read`` at each read (rule 2)."""

    async def reader(uri: str, context: RequestContext) -> ReadResourceResult:
        html = read(context)
        if inspect.isawaitable(html):
            html = await html
        return ReadResourceResult([app.contents(html)])

    return reader
