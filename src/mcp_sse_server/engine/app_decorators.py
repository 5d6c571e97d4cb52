"""``@server.app`` and ``server.add_app``, which ``McpServer`` inherits; they import ``apps.py``
(its rules) with a server's first app, so a server without apps starts without it."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

if TYPE_CHECKING:
    from .apps import App, AppOptions, AppRegistry
    from .context import RequestContext
    from .resources import ResourceRegistry
    from .tools import ToolRegistry
    from .types import Resource

__all__ = ["AppDecorators"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


class AppDecorators:
    """``@server.app`` and ``server.add_app``: ``McpServer`` inherits them (the module's rules)."""

    __slots__ = ()

    if TYPE_CHECKING:  # (McpServer's)
        resource_registry: ResourceRegistry
        tool_registry: ToolRegistry

        def add_resource(self, resource: Resource) -> None: ...

    @property
    def apps(self) -> AppRegistry:
        """The server's apps (made with the first: a server without apps pays nothing)."""
        found: AppRegistry | None = self.__dict__.get("_apps")
        if found is None:
            from .apps import AppRegistry

            found = self.__dict__["_apps"] = AppRegistry()
        return found

    def _link_app(self, tool: str, uri: str) -> None:
        """Rule 4 for a tool registered with ``app=``."""
        self.apps.linked(tool, uri)

    def _check_apps(self) -> bool:
        """Rules 1 and 4 when the server first serves a session or tells its capabilities (only
        for a server with apps or links); True when it has an app."""
        registry: AppRegistry | None = self.__dict__.get("_apps")
        if registry is None:
            return False
        if not registry.served:
            registry.check(self.tool_registry, self.resource_registry)
        return bool(registry)

    def app(self, uri: str, **options: Unpack[AppOptions]) -> Callable[[_Function], _Function]:
        """Serve the HTML a function returns as the app at ``uri`` (rule 1): ``str`` as text,
        ``bytes`` as a blob; sync or async; given the ``RequestContext`` when it takes a
        parameter. ``name`` defaults to the function's, ``description`` to its docstring; the
        options are ``AppOptions``."""

        from .apps import function_reader

        def register(function: _Function) -> _Function:
            if options.get("description") is None:
                options["description"] = inspect.getdoc(function)
            self._add_app(uri, function_reader(function), options.get("name") or function.__name__, options)
            return function

        return register

    def add_app(
        self,
        uri: str,
        *,
        html: str | bytes | None = None,
        path: str | os.PathLike[str] | None = None,
        package: tuple[str, str] | None = None,
        **options: Unpack[AppOptions],
    ) -> App:
        """Serve a fixed HTML document as the app at ``uri`` (rule 1), from exactly one of
        ``html``, a file at ``path`` or package data ``package=("pkg", "dist/index.html")``, read
        now. ``name`` defaults to the URI's last segment; the options are ``AppOptions``.
        Returns the app. ValueError for a wrong scheme or MIME type, or not exactly one source."""
        given = [source for source in (html, path, package) if source is not None]
        if len(given) != 1:
            raise ValueError(f"App {uri}: give exactly one of html=, path= and package=")
        if path is not None:
            with open(path, encoding="utf-8") as file:
                document: str | bytes = file.read()
        elif package is not None:
            import importlib.resources  # (here: a server that reads no package data does not pay for it)

            document = importlib.resources.files(package[0]).joinpath(package[1]).read_text(encoding="utf-8")
        else:
            assert html is not None
            document = html
        return self._add_app(uri, document, options.get("name") or uri.rstrip("/").rsplit("/", 1)[-1] or uri, options)

    def _add_app(
        self, uri: str, source: str | bytes | Callable[[RequestContext], Any], name: str, options: AppOptions
    ) -> App:
        from .apps import register_app  # (the apps module comes with the first app)

        return register_app(self, uri, source, name, options)
