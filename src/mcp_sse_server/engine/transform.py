"""Tool transforms: a tool derived from another, with other names, texts and arguments.

>>> from mcp_sse_server import McpServer, Tool
>>> base = Tool("search", {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
...                        "required": ["q", "limit"]}, lambda args, ctx: f"{args['q']}:{args['limit']}")
>>> server = McpServer("s")
>>> server.add_tool(transform(base, name="find", args={"q": Arg(name="query"), "limit": Arg(hide=True, value=5)}))
>>> sorted(server.tools[0].input_schema["properties"])
['query']

Rules, kept here and nowhere else:

1. ``transform(base, ...)`` returns a new ``Tool``; ``base`` is not changed, and whatever is not
   given (title, description, output schema, annotations, icons, meta, tags, scopes, task
   support, ``run_in_thread``) is ``base``'s.
2. The front schema is derived once, here: each ``Arg`` may rename a property (its schema,
   ``x-mcp-header`` included, follows it, so the HTTP layer checks the header the client
   sends), describe it, give it a default (then it is no longer required), make it required,
   or hide it (removed from ``properties`` and ``required``; its ``x-mcp-header`` goes with it).
   ``$defs``, ``additionalProperties`` and every other keyword are kept. The registry compiles
   that schema once and validates the client's (front) arguments against it, so its errors
   name front arguments.
3. Refused with ValueError at ``transform``: an ``Arg`` for a property the base does not have, a
   rename onto another front property, a hidden argument the base requires with neither
   ``value``, ``factory`` nor ``default``, both ``value`` and ``factory``, a ``value`` or
   ``factory`` on an argument that is not hidden, ``required=False`` on a required argument
   without a default, and a base without a handler.
4. Per call, the front arguments are mapped back: renamed keys to the base's names, a missing
   argument with a default gets it, a hidden one gets ``value`` or ``factory()`` (sync or
   async). A factory runs once per logical call: an MRTR round at 2026-07-28 reruns the tool,
   so its value is kept in the request's sealed answers (it must be JSON data) and later rounds
   reuse it; a task runs its tool once, in its job.
5. ``wrap(arguments, context, forward)``, when given, runs in place of the base: ``arguments``
   are the front arguments, and ``await forward(**front_arguments)`` maps them (rule 4) and runs
   the base's handler, returning its raw value. The transformed tool's own middleware
   (``on_tool_run``) sees the front tool and arguments once; the base's handler is called
   directly.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, Final, Literal

from .context import RequestContext
from .registry import call, is_async
from .types import Tool, ToolAnnotations

__all__ = ["MISSING", "Arg", "Forward", "transform"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()
"""The default of ``Arg``'s ``default`` and ``value``: none given."""

_CARRIED: Final = "io.github.mcp-sse-server/transform:"  # (the key prefix of factory values in sealed answers)

Forward = Callable[..., Awaitable[Any]]
"""``await forward(**front_arguments)``: the base tool run with those arguments mapped (rule 5)."""

Wrapper = Callable[[dict[str, Any], RequestContext, Forward], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Arg:
    """How one argument of the base tool appears on the front (the module's rule 2).

    ``name``: its front name; ``description``: its new description; ``default``: the value sent
    to the base when the client leaves it out (shown in the schema); ``required``: force it
    required (True) or optional (False, needs a default when the base requires it); ``hide``:
    removed from the front, filled with ``value`` or ``factory()`` (or ``default``).
    """

    name: str | None = None
    description: str | None = None
    default: Any = MISSING
    required: bool | None = None
    hide: bool = False
    value: Any = MISSING
    factory: Callable[[], Any] | None = None


class _Plan:
    """The argument map of a transformed tool, decided once (rules 2-4)."""

    __slots__ = ("back", "defaults", "factories", "fixed", "tool")

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.back: dict[str, str] = {}  # front name -> base name (renamed ones only)
        self.defaults: dict[str, Any] = {}  # front name -> default
        self.fixed: dict[str, Any] = {}  # base name -> hidden value
        self.factories: dict[str, Callable[[], Any]] = {}  # base name -> factory of a hidden value

    async def arguments(self, front: Mapping[str, Any], context: RequestContext) -> dict[str, Any]:
        """The base's arguments for the client's ``front`` ones (rule 4)."""
        back = self.back
        arguments = {back.get(name, name): value for name, value in front.items()}
        for name, default in self.defaults.items():
            if name not in front:
                arguments[back.get(name, name)] = copy.deepcopy(default)
        if self.fixed:
            arguments.update(copy.deepcopy(self.fixed))
        for name, factory in self.factories.items():
            arguments[name] = await self._made(name, factory, context)
        return arguments

    async def _made(self, name: str, factory: Callable[[], Any], context: RequestContext) -> Any:
        # Rule 4: once per logical call, kept across MRTR rounds in the sealed answers.
        answers = getattr(context.session, "answers", None)
        key = f"{_CARRIED}{self.tool}/{name}"
        if isinstance(answers, dict) and key in answers:
            return answers[key]
        value = await call(factory, is_async(factory))
        if inspect.isawaitable(value):
            value = await value
        if isinstance(answers, dict):
            answers[key] = value
        return value


def transform(
    base: Tool,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | None = None,
    meta: dict[str, Any] | None = None,
    tags: Collection[str] | None = None,
    scopes: Collection[str] | None = None,
    task_support: Literal["forbidden", "optional", "required"] | None = None,
    args: Mapping[str, Arg] | None = None,
    wrap: Wrapper | None = None,
) -> Tool:
    """A new tool derived from ``base`` (the module's rules); register it with ``add_tool``.
    ValueError for an argument map that cannot work (rule 3)."""
    handler = base.handler
    if handler is None:
        raise ValueError(f"Tool {base.name!r} has no handler to transform")
    front_name = name if name is not None else base.name
    plan = _Plan(front_name)
    schema = _front_schema(base, dict(args or {}), plan)
    base_async = is_async(handler)
    on_loop = base_async or not base.run_in_thread  # (a sync base declared cheap runs on the loop, as registered)

    async def run_base(arguments: dict[str, Any], context: RequestContext) -> Any:
        if on_loop:
            value = handler(arguments, context)
        else:
            value = await call(handler, False, arguments, context)
        return await value if inspect.isawaitable(value) else value

    if wrap is None:

        async def transformed(arguments: dict[str, Any], context: RequestContext) -> Any:
            return await run_base(await plan.arguments(arguments, context), context)

    else:
        wrapper = wrap

        async def transformed(arguments: dict[str, Any], context: RequestContext) -> Any:
            async def forward(**front: Any) -> Any:
                return await run_base(await plan.arguments(front, context), context)

            value = wrapper(arguments, context, forward)
            return await value if inspect.isawaitable(value) else value

    changes: dict[str, Any] = {"name": front_name, "input_schema": schema, "handler": transformed}
    given = {
        "title": title,
        "description": description,
        "annotations": annotations,
        "meta": meta,
        "task_support": task_support,
    }
    changes.update({key: value for key, value in given.items() if value is not None})
    if tags is not None:
        changes["tags"] = frozenset(tags)
    if scopes is not None:
        changes["scopes"] = tuple(scopes)
    changes["run_in_thread"] = False  # (the handler above is a coroutine function: the base's runs as it would)
    return dataclasses.replace(base, **changes)


def _front_schema(base: Tool, args: dict[str, Arg], plan: _Plan) -> dict[str, Any]:
    """The front input schema (rule 2), filling ``plan``; ValueError by rule 3."""
    schema = copy.deepcopy(base.input_schema)
    properties: dict[str, Any] = schema.get("properties") or {}
    required: list[str] = list(schema.get("required") or [])
    where = f"transform of tool {base.name!r}"
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise ValueError(f"{where}: the base tool has no argument {', '.join(map(repr, unknown))}")
    front_properties: dict[str, Any] = {}
    front_required: list[str] = []
    for original, prop in properties.items():
        arg = args.get(original, Arg())
        is_required = original in required
        if arg.value is not MISSING and arg.factory is not None:
            raise ValueError(f"{where}: argument {original!r} has both a value and a factory")
        if arg.hide:
            if arg.value is not MISSING:
                plan.fixed[original] = arg.value
            elif arg.factory is not None:
                plan.factories[original] = arg.factory
            elif arg.default is not MISSING:
                plan.fixed[original] = arg.default
            elif is_required:
                raise ValueError(f"{where}: hidden argument {original!r} is required: give it a value or a factory")
            continue
        if arg.value is not MISSING or arg.factory is not None:
            raise ValueError(f"{where}: argument {original!r} takes a value or factory only when hidden")
        front = arg.name if arg.name is not None else original
        if front in front_properties:
            raise ValueError(f"{where}: argument {original!r} renamed onto {front!r}, which is already an argument")
        prop = dict(prop) if isinstance(prop, dict) else prop
        if isinstance(prop, dict):
            if arg.description is not None:
                prop["description"] = arg.description
            if arg.default is not MISSING:
                prop["default"] = arg.default
        if front != original:
            plan.back[front] = original
        if arg.default is not MISSING:
            plan.defaults[front] = arg.default
        if arg.required is False and is_required and arg.default is MISSING:
            raise ValueError(f"{where}: argument {original!r} is required by the base: give it a default")
        if arg.required is True or (is_required and arg.required is None and arg.default is MISSING):
            front_required.append(front)
        front_properties[front] = prop
    schema["properties"] = front_properties
    if front_required:
        schema["required"] = front_required
    else:
        schema.pop("required", None)
    return schema
