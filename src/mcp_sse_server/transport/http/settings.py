"""``HttpSettings``: how one MCP endpoint is served, in one object, set once in its constructor.

>>> settings = HttpSettings(path="/mcp", limits=HttpLimits(max_sessions=100), json_response=True)
>>> settings.with_changes(legacy_sse=False).legacy_paths is None
True
>>> HttpSettings(max_sessions=100)
Traceback (most recent call last):
...
TypeError: HttpSettings.__init__() got an unexpected keyword argument 'max_sessions'

``McpHttpServer.bind(server, settings=...)``, ``McpHttpApp(server, settings=...)`` and the
``serve`` command (whose options build one) all read it. It is configuration only, plain and
shareable (worker processes inherit it); what the endpoint works with (the stores, the
coordination of workers: a ``Backend``) is given beside it, and so are the listening address and
the TLS context of ``bind``. Every limit, and the Origin and Host allowlists, are the nested
``HttpLimits`` (``limits.py`` documents each).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from ...auth.resource import ResourceServer
from .limits import DEFAULT_LIMITS, HttpLimits

__all__ = ["DEFAULT_SETTINGS", "HttpSettings", "LegacyPaths"]


@dataclass(frozen=True, slots=True)
class LegacyPaths:
    """The paths of the 2024-11-05 transport: its ``stream`` (GET) and its ``messages`` (POST)."""

    stream: str = "/sse"
    messages: str = "/messages/"

    def __post_init__(self) -> None:
        for path in (self.stream, self.messages):
            if not path.startswith("/"):
                raise ValueError(f"a path must start with '/', not {path!r}")
        if self.stream == self.messages:
            raise ValueError("the 2024-11-05 stream and messages paths must differ")


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpSettings:
    """How one MCP endpoint is served (every field by keyword; an unknown one is a TypeError).

    ``path`` (None)
        The endpoint's path, starting with ``/``. None: ``/mcp`` for
        ``McpHttpServer.bind``, and for an ``McpHttpApp`` mounted in another ASGI
        app whatever path it is mounted at.
    ``limits`` (``HttpLimits()``)
        Every limit, and the browser origins and Host names allowed besides
        loopback ones (``HttpLimits`` documents each and its default).
    ``json_response`` (False)
        Answer a request whose reply goes out whole with ``application/json``
        instead of one SSE event, and accept clients whose Accept takes JSON only.
    ``legacy_sse`` (True)
        Also serve the HTTP+SSE transport of revision 2024-11-05
        (``legacy_sse.py``): its stream at ``/sse`` and on a session-less GET of
        the endpoint, its messages at ``/messages/``. A ``LegacyPaths`` moves them;
        False: not served, and a session-less GET is 400.
    ``auth`` (None)
        Make the endpoint a protected resource (an ``auth.ResourceServer``): every
        request needs a bearer token its verifier accepts, and the
        protected-resource metadata is served beside the endpoint. Required (or
        ``limits.allowed_origins``) to listen beyond loopback.
    ``fast_path`` (True)
        ``McpHttpServer.bind`` and ``on_socket`` answer the endpoint's requests
        without uvicorn's per-request ASGI cycle (``fast_protocol.py``); False
        serves every request through uvicorn's cycle. No effect on the app
        mounted elsewhere or run by another ASGI server.
    """

    path: str | None = None
    limits: HttpLimits = DEFAULT_LIMITS
    json_response: bool = False
    legacy_sse: bool | LegacyPaths = True
    auth: ResourceServer | None = None
    fast_path: bool = True

    def __post_init__(self) -> None:
        if self.path is not None and (not isinstance(self.path, str) or not self.path.startswith("/")):
            raise ValueError(f"path must start with '/', not {self.path!r}")
        if not isinstance(self.limits, HttpLimits):
            raise TypeError(f"limits must be an HttpLimits, not {type(self.limits).__name__}")
        if not isinstance(self.json_response, bool):
            raise TypeError(f"json_response must be True or False, not {self.json_response!r}")
        if not isinstance(self.legacy_sse, bool | LegacyPaths):
            raise TypeError(f"legacy_sse must be True, False or a LegacyPaths, not {self.legacy_sse!r}")
        if self.auth is not None and not isinstance(self.auth, ResourceServer):
            raise TypeError(f"auth must be an auth.ResourceServer, not {type(self.auth).__name__}")
        if not isinstance(self.fast_path, bool):
            raise TypeError(f"fast_path must be True or False, not {self.fast_path!r}")
        paths = self.legacy_paths
        if paths is not None and self.path in (paths.stream, paths.messages):
            raise ValueError(f"the endpoint's path {self.path!r} is one of the 2024-11-05 transport's paths")

    @property
    def legacy_paths(self) -> LegacyPaths | None:
        """Where the 2024-11-05 transport is served; None when it is not."""
        if self.legacy_sse is True:
            return _LEGACY_PATHS
        return self.legacy_sse or None

    def with_changes(self, **changes: Any) -> HttpSettings:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)


_LEGACY_PATHS: Final = LegacyPaths()

DEFAULT_SETTINGS: Final = HttpSettings()
