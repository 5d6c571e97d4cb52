"""``@server.tool``, ``@server.resource`` and ``@server.prompt``: typed functions registered as
tools, resources and prompts. ``McpServer`` inherits them from ``Decorators``.

Each builds a ``Tool``, ``Resource``/``ResourceTemplate`` or ``Prompt`` from the function (its
schema, description and argument conversion are ``typed.py``'s rules, loaded on first use so a
server that registers none does not import pydantic) and hands it to the server's ``add_*``;
the function stays callable as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .context import RequestContext
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

__all__ = ["Decorators"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


class Decorators:
    """The registering decorators of a server: each builds an entry and calls the server's ``add_*``."""

    __slots__ = ()

    if TYPE_CHECKING:  # what the decorators register with (McpServer's)

        def add_tool(self, tool: Tool) -> None: ...
        def add_resource(self, resource: Resource) -> None: ...
        def add_resource_template(self, template: ResourceTemplate) -> None: ...
        def add_prompt(self, prompt: Prompt) -> None: ...

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
    ) -> _Function | Callable[[_Function], _Function]:
        """Register a typed function as a tool, bare (``@server.tool``) or with overrides
        (``@server.tool(name="sum")``); the function stays callable as it was.

        Its ``inputSchema`` comes from the parameters' type hints, its description from the
        docstring, its ``outputSchema`` from the return annotation (``output_schema=`` overrides,
        None for none); a ``RequestContext`` parameter receives the context; ``scopes`` are what a
        bearer token needs to call it (``Tool.scopes``); ``task_support`` and ``task_starts`` make
        its calls tasks (``Tool.task_support``, ``tasks.py``). The rules are in
        ``mcp_sse_server.engine.typed``. ValueError (``SignatureError``) for a signature they cannot describe.
        """

        def register(function: _Function) -> _Function:
            from .typed import ToolSignature, tool_handler

            tool_name = name or function.__name__
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
                    meta=meta,
                    run_in_thread=run_in_thread,
                    icons=list(icons) if icons is not None else None,
                    scopes=scopes,
                    task_support=task_support,
                    task_starts=task_starts,
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
    ) -> Callable[[_Function], _Function]:
        """Register a function as the reader of ``uri``: a fixed resource, or a resource template
        when ``uri`` has variables (``"users://{id}"``), each variable a parameter of the same name
        (converted to its annotated type). It returns ``str`` (text), ``bytes`` (a blob), a
        dict, list or model (JSON text, ``application/json``), or a ``ReadResourceResult``;
        ``mime_type=`` overrides. A fixed resource takes ``size``; a template takes ``lister`` (its
        resources in resources/list) and ``completer`` (completion of its variables), as
        ``ResourceTemplate`` does; ``scopes`` are what a bearer token needs to read it. ValueError
        for a variable without a parameter, a parameter that is neither a variable, defaulted, nor
        the context, or an option the kind of resource has not."""

        def register(function: _Function) -> _Function:
            from .typed import ResourceSignature, resource_reader

            template = UriTemplate(uri)
            signature = ResourceSignature.of(function, template.variables)
            reader = resource_reader(function, signature, mime_type)
            about: dict[str, Any] = {
                "title": title,
                "description": signature.description if description is None else description,
                "mime_type": mime_type,
                "annotations": annotations,
                "meta": meta,
                "icons": list(icons) if icons is not None else None,
                "scopes": scopes,
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
    ) -> _Function | Callable[[_Function], _Function]:
        """Register a typed function as a prompt, bare or with overrides: its ``arguments`` come
        from the parameters (required unless defaulted; descriptions as for tools), converted
        from the client's strings to the annotated types. It returns a ``str`` (one user
        message), a list of messages or a ``GetPromptResult``. ``completer`` completes its
        arguments, as ``Prompt``'s does; ``scopes`` are what a bearer token needs to get it."""

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
                )
            )
            return function

        return register if function is None else register(function)
