"""ToolRegistry: a server's tools, their validators, and ``tools/list`` and ``tools/call``.

>>> tools = ToolRegistry()
>>> tools.add(Tool("echo", {"type": "object", "properties": {"s": {"type": "string"}}}, lambda args, ctx: args["s"]))
>>> [tool.name for tool in tools], "echo" in tools
(['echo'], True)

Rules, kept here and nowhere else (the shared ones are ``registry.py``'s):

1. ``add`` compiles a tool's schemas and builds its ``tools/list`` entries once; an invalid
   schema, an ``inputSchema`` that is not of ``"type": "object"``, scopes that are not scope
   tokens, or a handler that cannot be called as ``handler(arguments, context)`` is a
   ValueError naming the tool, and nothing is registered. A name outside SEP-986 (1-128 of
   ``A-Za-z0-9_-.``) is logged as a warning, or refused with ``strict_names``.
2. A tool without a handler is answered by the registry's ``fallback`` (``McpServer``'s
   ``on_tool_call`` when a subclass overrides it); without one, it is refused at ``add``.
3. ``tools/call``: an unknown tool is -32602; arguments that break the input schema are a
   tool error result (``isError``) naming the first problem, and the handler does not run; a
   handler's exception other than ``McpError`` is logged and answered as a tool error;
   ``NotFound`` is a tool error carrying its message (``not_found.py`` rule 3); structured
   content that breaks the output schema is -32603. A tool the request's visibility rules
   hide is unknown, and left out of ``tools/list`` (``visibility.py``).
4. A tool that may run as a task (``task_support``) is handed to the task runtime when
   ``tasks.task_call`` says the call is a task; every other call runs inline.
5. With a ``runner`` (the server's tier-2 middleware, ``middleware.py``) the handler runs
   inside it, inline and in a task job alike; what it returns or raises is then converted as
   rule 3 says. Without one the handler is called directly.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from functools import partial
from typing import Any, Final, Protocol, TypeAlias

from .context import RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, McpError
from .memory_stores import MemoryTaskStore
from .middleware import ToolRunner
from .not_found import NotFound
from .registry import (
    OnChange,
    Pager,
    Registry,
    Scoped,
    call,
    drop_link_icons,
    has_link_icons,
    is_async,
    rules_of,
    shown_items,
    visible,
)
from .schema import SchemaValidator
from .stateless_meta import MirroredHeader, mirrored_headers
from .tasks import TaskRuntime, task_call
from .types import CallToolResult, Tool
from .versions import Revision

__all__ = ["RuntimeHost", "ToolFallback", "ToolRegistry", "check_tool_name"]

logger = logging.getLogger("mcp_sse_server")

ToolFallback: TypeAlias = Callable[[str, dict[str, Any], RequestContext], Awaitable[CallToolResult]]
"""What answers a call to a tool registered without a handler (rule 2)."""

# SEP-986 (revision 2025-11-25): tool names SHOULD be 1-128 of these characters.
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def check_tool_name(name: str) -> str | None:
    """Why ``name`` breaks the SEP-986 tool-name rules, or None when it keeps them.

    >>> check_tool_name("admin.tools.list") is None
    True
    >>> print(check_tool_name("get user"))
    tool name 'get user' should be 1-128 characters of A-Z, a-z, 0-9, _, - and . (SEP-986)
    """
    if _TOOL_NAME.fullmatch(name):
        return None
    return f"tool name {name!r} should be 1-128 characters of A-Z, a-z, 0-9, _, - and . (SEP-986)"


class _Entry:
    """A tool as registered: its validators compiled and its tools/list entries built, once.

    ``wire`` is the entry for sessions before 2025-11-25, ``wire_icons`` the one
    with icons (the same object when the tool has none).
    """

    __slots__ = ("direct", "headers", "in_thread", "input", "is_async", "output", "tasks", "tool", "wire", "wire_icons")

    def __init__(self, tool: Tool) -> None:
        if tool.input_schema.get("type") != "object":
            raise ValueError(f'Tool {tool.name!r}: inputSchema must have "type": "object"')
        try:
            self.input = SchemaValidator(tool.input_schema)
            self.output = SchemaValidator(tool.output_schema) if tool.output_schema is not None else None
        except ValueError as error:
            raise ValueError(f"Tool {tool.name!r}: {error}") from None
        self.tool = tool
        handler = tool.handler
        # What tools/call calls itself: None when the fallback or a runner does (rules 2 and 5).
        self.direct = handler
        self.is_async = handler is not None and is_async(handler)
        # A sync handler declared cheap (run_in_thread=False) is called on the loop, like an async one.
        self.in_thread = handler is not None and not self.is_async and tool.run_in_thread
        self.wire = tool.to_dict(icons=False)
        self.wire_icons = tool.to_dict() if tool.icons else self.wire
        # None for a tool that never runs as a task: the one attribute every call reads for tasks.
        self.tasks = tool.task_support if tool.task_support != "forbidden" else None
        try:
            self.headers = mirrored_headers(tool.input_schema)
        except ValueError as error:
            raise ValueError(f"Tool {tool.name!r}: {error}") from None


class RuntimeHost(Protocol):
    """Where a registry's task calls find their runtime (``McpServer`` is one)."""

    @property
    def tasks(self) -> TaskRuntime:
        """The task runtime (made on first use)."""


class _OwnRuntime:
    """The task runtime of a registry serving without a server."""

    __slots__ = ("tasks",)

    def __init__(self) -> None:
        self.tasks = TaskRuntime(MemoryTaskStore())


class ToolRegistry(Registry):
    """The tools of a server (the module's rules): ``add``, ``remove``, ``get``, iteration over
    the ``Tool``s in registration order, and the handlers of ``tools/list`` and ``tools/call``.

    ``fallback`` answers tools registered without a handler (rule 2); a task call runs on the
    task runtime of ``tasks`` (the server; without it, one in process, made when first needed).
    """

    __slots__ = ("_runner", "_tools", "fallback", "host", "strict_names")

    capability = "tools"

    def __init__(
        self,
        pager: Pager | None = None,
        on_change: OnChange | None = None,
        scoped: Scoped | None = None,
        *,
        strict_names: bool = False,
        fallback: ToolFallback | None = None,
        tasks: RuntimeHost | None = None,
    ) -> None:
        super().__init__(pager, on_change, scoped)
        self.strict_names = strict_names
        self.fallback = fallback
        self._runner: ToolRunner | None = None  # rule 5
        self.host = tasks  # where task calls find their runtime (a mounted server's: its root, mount.py)
        self._tools: dict[str, _Entry] = {}

    # --- the registry ---------------------------------------------------------------------

    @property
    def runner(self) -> ToolRunner | None:
        """The tier-2 middleware every tool's handler runs inside (rule 5); None: called directly."""
        return self._runner

    @runner.setter
    def runner(self, runner: ToolRunner | None) -> None:
        self._runner = runner
        for entry in self._tools.values():
            entry.direct = entry.tool.handler if runner is None else None

    def add(self, tool: Tool) -> None:
        """Register (or replace) ``tool``; ValueError when it is invalid (rule 1)."""
        problem = check_tool_name(tool.name)
        if problem is not None:
            if self.strict_names:
                raise ValueError(f"Tool {tool.name!r}: {problem}")
            logger.warning("%s: clients may refuse or rename it", problem)
        entry = _Entry(tool)  # the schemas first: their errors say the most
        if self.guard is not None:  # (registry.py rule 7)
            self.guard("tool", tool.name)
        if self._runner is not None:
            entry.direct = None
        self._mark_scoped("tool", tool.name, tool.scopes, f"Tool {tool.name!r}")
        if tool.handler is None:
            if self.fallback is None:
                raise ValueError(f"Tool {tool.name!r} has no handler (and this server does not override on_tool_call)")
        else:
            _check_handler(tool.name, tool.handler)
        self._tools[tool.name] = entry
        self._changed("tools", "notifications/tools/list_changed")

    def remove(self, name: str) -> bool:
        """Remove a tool; True when it existed."""
        removed = self._tools.pop(name, None) is not None
        self._scoped.discard(("tool", name))
        if removed:
            self._changed("tools", "notifications/tools/list_changed")
        return removed

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        entry = self._tools.get(name)
        return entry.tool if entry is not None else None

    def __iter__(self) -> Iterator[Tool]:
        return (entry.tool for entry in self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def scopes_of(self, name: str) -> Collection[str]:
        """The scopes a call to tool ``name`` needs (none for an unknown one)."""
        entry = self._tools.get(name)
        return entry.tool.scopes if entry is not None else ()

    def mirrored_headers(self, name: str) -> tuple[MirroredHeader, ...]:
        """The arguments of tool ``name`` that 2026-07-28 clients also send as ``Mcp-Param-*`` headers."""
        entry = self._tools.get(name)
        return entry.headers if entry is not None else ()

    def _runtime(self) -> TaskRuntime:
        """The task runtime: the ``tasks`` host's, else one in process, made on first use."""
        if self.host is None:
            self.host = _OwnRuntime()
        return self.host.tasks

    @property
    def tasks_declared(self) -> bool:
        """True when some tool may run as a task (the server then declares tasks)."""
        return any(entry.tasks is not None for entry in self._tools.values())

    def _entries(self, collection: str, revision: Revision) -> list[dict[str, Any]]:
        icons = revision.icons
        items = [entry.wire_icons if icons else entry.wire for entry in self._tools.values()]
        if revision.core_tasks:  # each task tool says so (the extension has no such field)
            items = [
                {**item, "execution": {"taskSupport": entry.tasks}} if entry.tasks is not None else item
                for item, entry in zip(items, self._tools.values(), strict=True)
            ]
        return items

    # --- the methods ------------------------------------------------------------------------

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve ``tools/list`` and ``tools/call`` from this registry."""
        handlers.register("tools/list", self.handle_list)
        handlers.register("tools/call", self.handle_call)

    async def handle_list(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tools/list``: the tools the request may see, paged."""
        self._require(bool(self._tools))
        items = visible(self._listing("tools", context.session.protocol), "name", self.scopes_of, context)
        if self.visibility is not None:  # (rule 6)
            items = shown_items(items, rules_of(self, context), "tool", self._describe)
        return self.pager.page("tools", "tools", items, params)

    def _describe(self, item: dict[str, Any]) -> tuple[tuple[str], Collection[str]]:
        name = item["name"]
        return (name,), self._tools[name].tool.tags

    async def handle_call(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``tools/call`` (rules 3 and 4)."""
        name = params.get("name")
        if not isinstance(name, str):
            raise McpError(INVALID_PARAMS, 'Missing or invalid "name": expected the tool name as a string')
        entry = self._tools.get(name)
        if entry is None or (
            self.visibility is not None and not self.visibility.shows(context, "tool", (name,), entry.tool.tags)
        ):  # a hidden tool is an unknown one (rule 6)
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise McpError(INVALID_PARAMS, 'Invalid "arguments": expected an object')
        if not entry.input.is_valid(arguments):
            problem = entry.input.first_error(arguments)
            return {
                "content": [{"type": "text", "text": f"Invalid arguments for tool {name}: {problem}"}],
                "isError": True,
            }
        if entry.tasks is not None or "task" in params:  # (a task tool, or a call asking for a task: rule 4)
            task = task_call(name, entry.tasks, params, context, lambda: self.tasks_declared)
            if task is not None:
                return await self._runtime().call(
                    name, entry.tool.task_starts, context, lambda: self.handle_call(params, context), task
                )
        # The handler is awaited right here (no helper coroutines): this is every tool call's path.
        handler = entry.direct
        value: Any
        try:
            if handler is None:
                runner = self._runner
                if runner is not None:
                    value = await runner(context, entry.tool, arguments, partial(self._run, entry, context))
                else:
                    assert self.fallback is not None  # (rule 2: checked at add)
                    value = await self.fallback(name, arguments, context)
            elif entry.is_async:
                value = await handler(arguments, context)  # type: ignore[misc]
            elif entry.in_thread:
                value = await call(handler, False, arguments, context)
            else:
                value = handler(arguments, context)
                if inspect.isawaitable(value):
                    value = await value
        except NotFound as error:  # what the call asked for is not there: the model reads it (rule 3)
            value = CallToolResult.error(error.message if error.given else f"Tool {name}: not found")
        except (McpError, asyncio.CancelledError):
            raise
        except Exception:
            logger.exception("tool %s failed", name)
            value = CallToolResult.error(f"Tool {name} failed with an internal error")
        result = value if type(value) is CallToolResult else _as_tool_result(value)
        if entry.output is not None:
            result = _check_output(entry, result)
        out = result.to_dict()
        if has_link_icons(result.content):
            drop_link_icons(out["content"], context)
        return out

    async def _run(self, entry: _Entry, context: RequestContext, arguments: dict[str, Any]) -> Any:
        """The tool's raw value, as the innermost step of ``runner`` (rule 5)."""
        handler = entry.tool.handler
        if handler is None:
            assert self.fallback is not None  # (rule 2: checked at add)
            return await self.fallback(entry.tool.name, arguments, context)
        if entry.is_async or entry.in_thread:
            return await call(handler, entry.is_async, arguments, context)
        value = handler(arguments, context)
        return await value if inspect.isawaitable(value) else value


def _check_output(entry: _Entry, result: CallToolResult) -> CallToolResult:
    if entry.output is None or result.is_error:
        return result
    name = entry.tool.name
    if result.structured_content is None:
        logger.error("tool %s declares an outputSchema but returned no structuredContent", name)
        raise McpError(INTERNAL_ERROR, f"Tool {name} returned no structured content for its output schema")
    problem = entry.output.first_error(result.structured_content, noun="field")
    if problem is not None:
        logger.error("tool %s returned structuredContent that breaks its outputSchema: %s", name, problem)
        raise McpError(INTERNAL_ERROR, f"Tool {name} returned structured content that does not match its output schema")
    return result


def _as_tool_result(value: Any) -> CallToolResult:
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, str):
        return CallToolResult.text(value)
    if isinstance(value, dict):
        return CallToolResult.structured(value)
    raise TypeError(f"a tool handler must return CallToolResult, str or dict, not {type(value).__name__}")


def _check_handler(name: str, handler: Callable[..., Any]) -> None:
    """ValueError at registration for a handler that cannot be called as ``handler(arguments, context)``:
    most often a typed function (``def add(a: int, b: int)``) meant for a decorator."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return  # a builtin or C callable: nothing to inspect
    try:
        signature.bind(None, None)
    except TypeError:
        raise ValueError(
            f"Tool {name!r}: its handler takes {signature}, but a Tool handler is called as handler(arguments, context)"
        ) from None
    first = next(iter(signature.parameters.values()))
    annotation = first.annotation
    if isinstance(annotation, str):
        annotation = annotation.partition("[")[0].rsplit(".", 1)[-1]
        mapping = annotation in ("", "dict", "Dict", "Mapping", "MutableMapping", "Any", "object")
    else:
        origin = getattr(annotation, "__origin__", annotation)
        mapping = (
            annotation is inspect.Parameter.empty
            or origin in (dict, Any, object)
            or (isinstance(origin, type) and issubclass(origin, Mapping))
        )
    if not mapping:
        raise ValueError(
            f"Tool {name!r}: its handler takes {signature}, but a Tool handler is called as handler(arguments, "
            f"context), arguments a dict; for a typed function, register it with @server.tool()"
        )
