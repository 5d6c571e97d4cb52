"""``@server.tool``, ``@server.resource`` and ``@server.prompt``: typed functions registered as
tools, resources and prompts. ``McpServer`` inherits them from ``Decorators``.

Each builds a ``Tool``, ``Resource``/``ResourceTemplate`` or ``Prompt`` from the function (its
schema, description and argument conversion are ``typed.py``'s rules, loaded on first use so a
server that registers none does not import pydantic) and hands it to the server's ``add_*``;
the function stays callable as it was.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Collection, Iterable, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .app_links import Visibility, tool_ui_meta
from .context import RequestContext
from .not_found import NotFound
from .types import (
    Annotations,
    Completer,
    Icon,
    Prompt,
    Resource,
    ResourceTemplate,
    TaskStarts,
    TaskSupport,
    TemplateLister,
    Tool,
    ToolAnnotations,
)
from .uri_template import UriTemplate

if TYPE_CHECKING:
    from .prompts import PromptRegistry
    from .resources import ResourceRegistry
    from .tools import ToolRegistry
    from .visibility import ServerVisibility

__all__ = ["Decorators", "returned_mime_type"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


class Decorators:
    """The registering decorators of a server: each builds an entry and calls the server's ``add_*``."""

    __slots__ = ()

    if TYPE_CHECKING:  # what the decorators register with (McpServer's)

        def add_tool(self, tool: Tool) -> None: ...
        def add_resource(self, resource: Resource) -> None: ...
        def add_resource_template(self, template: ResourceTemplate) -> None: ...
        def add_prompt(self, prompt: Prompt) -> None: ...
        def _link_app(self, tool: str, uri: str) -> None: ...  # (apps.py's AppDecorators)

        tool_registry: ToolRegistry
        resource_registry: ResourceRegistry
        prompt_registry: PromptRegistry

    # --- visibility (visibility.py): rules for every client ---------------------------------

    @property
    def visibility(self) -> ServerVisibility:
        """The server's visibility rules and the principals' (``visibility.py``), made with the
        first rule: until then the registries check nothing (its rule 5)."""
        found: ServerVisibility | None = self.__dict__.get("_visibility")
        if found is None:
            from .visibility import ServerVisibility  # (loaded with the first rule: its cost is theirs)

            found = self.__dict__["_visibility"] = ServerVisibility(self._visibility_changed)
            for registry in (self.tool_registry, self.resource_registry, self.prompt_registry):
                registry.visibility = found
        return found

    def disable(self, *, names: Iterable[str] = (), tags: Iterable[str] = (), kinds: Iterable[str] = ()) -> None:
        """Hide the tools, resources, templates and prompts that match from every client: left out
        of lists and answered as unknown (``visibility.py`` rules 2-4); clients are told."""
        from .visibility import Rule

        self.visibility.add(Rule.of(False, names=names, tags=tags, kinds=kinds))

    def enable(
        self, *, names: Iterable[str] = (), tags: Iterable[str] = (), kinds: Iterable[str] = (), only: bool = False
    ) -> None:
        """Show what matches again (a later rule wins); ``only=True`` also hides the rest of its kinds."""
        from .visibility import Rule

        self.visibility.add(Rule.of(True, names=names, tags=tags, kinds=kinds, only=only))

    def reset_visibility(self) -> None:
        """Drop the server's rules (each session's own stay); clients are told."""
        self.visibility.reset()

    def _visibility_changed(self, method: str) -> None:
        on_change = self.tool_registry.on_change  # (every registry has the server's hook)
        if on_change is not None:
            on_change(method)

    @overload
    def tool(self, function: _Function, /) -> _Function: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: Sequence[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | EllipsisType | None = ...,
        run_in_thread: bool = True,
        scopes: Collection[str] = (),
        task_support: TaskSupport = "forbidden",
        task_starts: TaskStarts = "at_call",
        tags: Collection[str] = (),
        app: str | None = None,
        visibility: Collection[Visibility] | None = None,
    ) -> Callable[[_Function], _Function]: ...

    def tool(
        self,
        function: _Function | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: Sequence[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | EllipsisType | None = ...,
        run_in_thread: bool = True,
        scopes: Collection[str] = (),
        task_support: TaskSupport = "forbidden",
        task_starts: TaskStarts = "at_call",
        tags: Collection[str] = (),
        app: str | None = None,
        visibility: Collection[Visibility] | None = None,
    ) -> _Function | Callable[[_Function], _Function]:
        """Register a typed function as a tool, bare (``@server.tool``) or with overrides
        (``@server.tool(name="sum")``); the function stays callable as it was.

        Its ``inputSchema`` comes from the parameters' type hints, its description from the
        docstring, its ``outputSchema`` from the return annotation (``output_schema=`` overrides,
        None for none); a ``RequestContext`` parameter receives the context; ``scopes`` are what a
        bearer token needs to call it (``Tool.scopes``); ``task_support`` and ``task_starts`` make
        its calls tasks (``Tool.task_support``, ``tasks.py``); ``tags`` are what visibility rules
        match (``McpServer.disable(tags=...)``, ``visibility.py``); ``app`` links it to the MCP
        App at that ``ui://`` URI and ``visibility`` says who may call it, ``["model", "app"]``
        by default (``apps.py`` rule 3). The rules are in
        ``mcp_sse_server.engine.typed``. ValueError (``SignatureError``) for a signature they cannot describe.
        """

        def register(function: _Function) -> _Function:
            from .typed import ToolSignature, tool_handler

            tool_name = name or function.__name__
            tool_meta = meta
            if app is not None or visibility is not None:
                tool_meta = tool_ui_meta(tool_name, meta, app, visibility)
                if app is not None:
                    self._link_app(tool_name, app)
            signature = ToolSignature.of(function, output_schema=output_schema)
            self.add_tool(
                Tool(
                    tool_name,
                    signature.input_schema,
                    tool_handler(function, signature, tool_name),
                    title=title,
                    description=signature.description if description is None else description,
                    output_schema=signature.output_schema,
                    annotations=annotations,
                    meta=tool_meta,
                    run_in_thread=run_in_thread,
                    icons=list(icons) if icons is not None else None,
                    scopes=scopes,
                    task_support=task_support,
                    task_starts=task_starts,
                    tags=tags,
                )
            )
            return function

        return register if function is None else register(function)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | None = None,
        icons: Sequence[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        size: int | None = None,
        lister: TemplateLister | None = None,
        completer: Completer | None = None,
        scopes: Collection[str] = (),
        tags: Collection[str] = (),
    ) -> Callable[[_Function], _Function]:
        """Register a function as the reader of ``uri``: a fixed resource, or a resource template
        when ``uri`` has variables (``"users://{id}"``), each variable a parameter of the same name
        (converted to its annotated type). It returns ``str`` (text), ``bytes`` (a blob), a
        dict, list or model (JSON text, ``application/json``), or a ``ReadResourceResult``;
        the listed ``mimeType`` comes from the return annotation (``returned_mime_type``), and
        ``mime_type=`` overrides both. Returning None, or raising ``NotFound``, says there is no
        such resource (the revision's resource-not-found error, ``not_found.py``). A fixed
        resource takes ``size``; a template takes ``lister`` (its resources in resources/list)
        and ``completer`` (completion of its variables), as ``ResourceTemplate`` does; ``scopes``
        are what a bearer token needs to read it, ``tags`` what visibility rules match.
        ValueError for a variable without a parameter, a parameter that is neither a variable,
        defaulted, nor the context, or an option the kind of resource has not."""

        def register(function: _Function) -> _Function:
            from .typed import ResourceSignature, resource_reader

            template = UriTemplate(uri)
            signature = ResourceSignature.of(function, template.variables)
            mime = mime_type if mime_type is not None else returned_mime_type(function)
            reader = resource_reader(_none_is_not_found(function, signature.is_async), signature, mime)
            about: dict[str, Any] = {
                "title": title,
                "description": signature.description if description is None else description,
                "mime_type": mime,
                "annotations": annotations,
                "meta": meta,
                "icons": list(icons) if icons is not None else None,
                "scopes": scopes,
                "tags": tags,
            }
            if template.variables:
                if size is not None:
                    raise ValueError(f"Resource template {uri!r}: size is a fixed resource's")
                self.add_resource_template(
                    ResourceTemplate(
                        uri, name or function.__name__, reader, lister=lister, completer=completer, **about
                    )
                )
                return function
            if lister is not None or completer is not None:
                raise ValueError(f"Resource {uri!r}: lister and completer are a template's (this URI has no variables)")
            about["size"] = size
            if signature.is_async:

                async def read_async(uri: str, context: RequestContext) -> Any:
                    return await reader(uri, {}, context)

                self.add_resource(Resource(uri, name or function.__name__, read_async, **about))
            else:
                self.add_resource(
                    Resource(uri, name or function.__name__, lambda uri, context: reader(uri, {}, context), **about)
                )
            return function

        return register

    @overload
    def prompt(self, function: _Function, /) -> _Function: ...

    @overload
    def prompt(
        self,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        completer: Completer | None = None,
        scopes: Collection[str] = (),
        tags: Collection[str] = (),
    ) -> Callable[[_Function], _Function]: ...

    def prompt(
        self,
        function: _Function | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        completer: Completer | None = None,
        scopes: Collection[str] = (),
        tags: Collection[str] = (),
    ) -> _Function | Callable[[_Function], _Function]:
        """Register a typed function as a prompt, bare or with overrides: its ``arguments`` come
        from the parameters (required unless defaulted; descriptions as for tools), converted
        from the client's strings to the annotated types. It returns a ``str`` (one user
        message), a list of messages or a ``GetPromptResult``. ``completer`` completes its
        arguments, as ``Prompt``'s does; ``scopes`` are what a bearer token needs to get it,
        ``tags`` what visibility rules match. Raising ``NotFound`` is -32602 naming the prompt."""

        def register(function: _Function) -> _Function:
            from .typed import PromptSignature, prompt_handler

            signature = PromptSignature.of(function)
            self.add_prompt(
                Prompt(
                    name or function.__name__,
                    prompt_handler(function, signature),
                    title=title,
                    description=signature.description if description is None else description,
                    arguments=signature.arguments,
                    completer=completer,
                    meta=meta,
                    icons=list(icons) if icons is not None else None,
                    scopes=scopes,
                    tags=tags,
                )
            )
            return function

        return register if function is None else register(function)


def returned_mime_type(function: Callable[..., Any]) -> str | None:
    """The ``mimeType`` a reader's return annotation implies: ``str`` text/plain, ``bytes``
    application/octet-stream, a dict, list, tuple, pydantic model, dataclass or TypedDict
    application/json (``X | None`` as ``X``); None for anything else (contents, a result, no
    annotation, a union of kinds), which the reader's contents then say for themselves.

    >>> def read() -> dict[str, int]: ...
    >>> returned_mime_type(read)
    'application/json'
    """
    try:
        annotation = typing.get_type_hints(function).get("return")
    except Exception:  # a hint that does not resolve: the contents say it at read time
        return None
    found = {_mime_of(kind) for kind in _kinds(annotation) if kind is not type(None)}
    return found.pop() if len(found) == 1 else None


def _kinds(annotation: Any) -> tuple[Any, ...]:
    """The members of a union annotation (``X | Y``, ``Optional[X]``), else the annotation itself."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _mime_of(kind: Any) -> str | None:
    origin = typing.get_origin(kind) or kind
    if origin is str:
        return "text/plain"
    if origin in (bytes, bytearray, memoryview):
        return "application/octet-stream"
    if not isinstance(origin, type):
        return None
    if (
        issubclass(origin, dict | list | tuple)
        or dataclasses.is_dataclass(origin)
        or typing.is_typeddict(origin)
        or hasattr(origin, "model_dump")  # a pydantic model (pydantic itself not imported here)
    ):
        return "application/json"
    return None


def _none_is_not_found(function: _Function, is_async: bool) -> Callable[..., Any]:
    """``function``, raising ``NotFound`` where it returns None (``not_found.py`` rule 1)."""
    if is_async:

        async def read_async(**arguments: Any) -> Any:
            value = await function(**arguments)
            if value is None:
                raise NotFound()
            return value

        return read_async

    def read(**arguments: Any) -> Any:
        value = function(**arguments)
        if value is None:
            raise NotFound()
        return value

    return read
