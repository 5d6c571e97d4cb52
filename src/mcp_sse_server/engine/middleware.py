"""Middleware: hooks around a server's method handlers (tier 1) and its tool functions (tier 2).

>>> from mcp_sse_server import McpServer
>>> class Seen(Middleware):
...     async def on_request(self, context, params, call_next):
...         return await call_next(params)
>>> server = McpServer("s", middleware=[Seen()])

Rules, kept here and nowhere else:

1. A middleware is an instance of a ``Middleware`` subclass that overrides at least one hook;
   anything else (a class, another object, a subclass overriding none) is a TypeError at
   registration. Registration (``McpServer(middleware=[...])``, ``add_middleware``) comes
   before the server first serves: afterwards it is a RuntimeError, because sessions and the
   stateless endpoint keep the tables already built.
2. Tier 1: ``hook(context, params, call_next)`` where ``await call_next(params)`` runs the rest
   of the chain and the handler and returns the result dict. A hook may pass other params,
   return another result, raise ``McpError`` (the request's JSON-RPC error), or answer without
   calling next. Any other exception is -32603 "Internal error" with no text sent
   (``Connection.dispatch``). ``on_request`` sees every method of the table; the per-method
   hooks see theirs (``_METHOD_HOOKS``); within one middleware ``on_request`` is the outer.
3. The first registered middleware is the outermost. The chain is folded once per method when
   a revision's table is built (or a handler registered), before the older revisions' result
   shaping (``handlers.py`` rule 5): hooks read and write the latest result shape.
4. A hook not overridden costs nothing: a method no middleware hooks keeps its handler itself,
   so a server without middleware serves exactly the tables it would without this module.
5. Tier 2: ``on_tool_run(context, tool, arguments, call_next)`` wraps the tool's function
   wherever ``ToolRegistry`` runs it (inline, in a task job), after lookup and input
   validation; it sees the raw return value and raw exceptions, before their conversion to a
   ``CallToolResult``.
6. Lists: with any middleware, the four list methods (``_LISTS``) are paged by the table, not
   by their handlers: a hook sees the params as sent (``cursor`` included) and the full,
   revision-shaped list of what the request may see; the page the cursor asks for is cut from
   what the outermost hook returns. A hook that returns a result without the list is sent as
   it returned it.
7. ``on_notification(context, params, call_next)`` sees each notification the client sends
   (``notifications/initialized``, ``cancelled``, ``progress``, ``roots/list_changed``, ...),
   in a task of its own; ``await call_next(params)`` is the session's own handling and returns
   None; a hook that does not call it drops the notification. Cancellation is applied by the
   engine before any hook runs: no hook can keep a request from being cancelled. The context
   of a notification has no request id; what a hook raises is logged.
8. ``initialize``: a hook may change the requested ``protocolVersion`` (the handler negotiates
   from what it is passed), but the result must name the revision the session started at: the
   session is already served that revision's table. A result naming another one is refused:
   -32603 "Internal error", logged, nothing of it sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Final, TypeAlias

from .context import RequestContext
from .handlers import Handler, NotificationLayer, Notified, NotifyNext
from .jsonrpc import INTERNAL_ERROR, McpError
from .registry import Pager
from .types import Tool

__all__ = [
    "CallNext",
    "Middleware",
    "NotifyNext",
    "RunNext",
    "ToolRunner",
    "check",
    "notification_runner",
    "tool_runner",
    "wrap",
]

logger = logging.getLogger("mcp_sse_server")

CallNext: TypeAlias = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""``await call_next(params)``: the rest of a tier-1 chain, returning the result dict."""

RunNext: TypeAlias = Callable[[dict[str, Any]], Awaitable[Any]]
"""``await call_next(arguments)``: the rest of a tier-2 chain, returning the tool's raw value."""

ToolRunner: TypeAlias = Callable[[RequestContext, Tool, dict[str, Any], RunNext], Awaitable[Any]]
"""The tier-2 hooks of a server folded into one (rule 5)."""

_Hook: TypeAlias = Callable[[RequestContext, dict[str, Any], CallNext], Awaitable[dict[str, Any]]]


class Middleware:
    """Base of a server's middleware: override the hooks you need (the module's rules).

    Each tier-1 hook is ``async hook(context, params, call_next)``; ``on_notification`` is the
    same with ``call_next`` returning None (rule 7); ``on_tool_run`` is
    ``async on_tool_run(context, tool, arguments, call_next)``. ``context.state`` is a dict the
    hooks and the handler share, ``context.rounds`` the MRTR round. The defaults only pass on.
    """

    async def on_request(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        """Every request method of the table."""
        return await call_next(params)

    async def on_call_tool(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        """``tools/call``."""
        return await call_next(params)

    async def on_read_resource(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        """``resources/read``."""
        return await call_next(params)

    async def on_get_prompt(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        """``prompts/get``."""
        return await call_next(params)

    async def on_complete(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        """``completion/complete``."""
        return await call_next(params)

    async def on_initialize(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        """``initialize``."""
        return await call_next(params)

    async def on_list(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        """``tools/list``, ``prompts/list``, ``resources/list`` and ``resources/templates/list``: the
        result holds the full list the request may see; the page is cut after the hooks (rule 6)."""
        return await call_next(params)

    async def on_task(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        """Every ``tasks/*`` method (the call that starts a task is ``tools/call``)."""
        return await call_next(params)

    async def on_notification(self, context: RequestContext, params: dict[str, Any], call_next: NotifyNext) -> None:
        """Every notification the client sends (rule 7)."""
        await call_next(params)

    async def on_tool_run(
        self, context: RequestContext, tool: Tool, arguments: dict[str, Any], call_next: RunNext
    ) -> Any:
        """Tier 2: around the tool's function; returns its raw value (rule 5)."""
        return await call_next(arguments)


# Rule 2: the per-method hooks and the methods each sees (on_task: every "tasks/" method).
_METHOD_HOOKS: Final[dict[str, str]] = {
    "tools/call": "on_call_tool",
    "resources/read": "on_read_resource",
    "prompts/get": "on_get_prompt",
    "completion/complete": "on_complete",
    "initialize": "on_initialize",
    "tools/list": "on_list",
    "prompts/list": "on_list",
    "resources/list": "on_list",
    "resources/templates/list": "on_list",
}
_HOOKS: Final = ("on_request", *dict.fromkeys(_METHOD_HOOKS.values()), "on_task", "on_notification", "on_tool_run")

# Rule 6: each list method's pager collection and result key (the ones its handler pages with).
_LISTS: Final[dict[str, str]] = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


def _overrides(middleware: Middleware, hook: str) -> bool:
    # Rule 4: compared on the class, so a hook left alone is never even looked at per request.
    return getattr(type(middleware), hook) is not getattr(Middleware, hook)


def check(middleware: object) -> Middleware:
    """``middleware`` when it may be registered; TypeError naming why not (rule 1)."""
    if isinstance(middleware, type):
        raise TypeError(f"middleware must be an instance: register {middleware.__name__}(), not the class")
    if not isinstance(middleware, Middleware):
        raise TypeError(f"middleware must be a Middleware instance, not {type(middleware).__name__}")
    if not any(_overrides(middleware, hook) for hook in _HOOKS):
        raise TypeError(f"{type(middleware).__name__} overrides no Middleware hook: it would do nothing")
    return middleware


def _hooks_for(method: str, chain: Sequence[Middleware]) -> list[_Hook]:
    specific = _METHOD_HOOKS.get(method) or ("on_task" if method.startswith("tasks/") else None)
    hooks: list[_Hook] = []
    for middleware in chain:  # outermost first (rule 3)
        if _overrides(middleware, "on_request"):
            hooks.append(middleware.on_request)
        if specific is not None and _overrides(middleware, specific):
            hooks.append(getattr(middleware, specific))
    return hooks


def _link(hook: _Hook, inner: Handler) -> Handler:
    # A plain closure returning the hook's awaitable: no coroutine frame of its own per level.
    def linked(params: dict[str, Any], context: RequestContext) -> Awaitable[dict[str, Any]]:
        return hook(context, params, lambda next_params: inner(next_params, context))

    return linked


def wrap(chain: Sequence[Middleware], pager: Pager, method: str, handler: Handler) -> Handler:
    """``handler`` of ``method`` inside the tier-1 hooks of ``chain`` (rules 2-4); ``handler``
    itself when none of them hooks ``method``. A list method's handler must not page (its
    registry's pager has no page size): ``pager`` pages outside the hooks (rule 6)."""
    hooks = _hooks_for(method, chain)
    key = _LISTS.get(method)
    if key is not None:
        handler = _without_cursor(handler)
    for hook in reversed(hooks):
        handler = _link(hook, handler)
    if key is not None:
        return _paged(pager, key, handler)
    if method == "initialize" and hooks:
        return _same_revision(handler)
    return handler


def _without_cursor(handler: Handler) -> Handler:
    # Rule 6: the handler lists everything; the cursor is for the pager outside the hooks.
    def unpaged(params: dict[str, Any], context: RequestContext) -> Awaitable[dict[str, Any]]:
        if "cursor" in params:
            params = {name: value for name, value in params.items() if name != "cursor"}
        return handler(params, context)

    return unpaged


def _paged(pager: Pager, key: str, handler: Handler) -> Handler:
    async def paged(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        result = await handler(params, context)
        items = result.get(key)
        if type(items) is not list:  # a hook answered with something else: sent as it is
            return result
        return {**result, **pager.page(key, key, items, params)}

    return paged


def _same_revision(handler: Handler) -> Handler:
    # Rule 8: the session already serves the revision the handler negotiated.
    async def initialize(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        result = await handler(params, context)
        started = context.session.revision
        if result.get("protocolVersion") != started:
            logger.error(
                "middleware changed initialize's protocolVersion to %r; the session started at %r",
                result.get("protocolVersion"),
                started,
            )
            raise McpError(INTERNAL_ERROR, "Internal error")
        return result

    return initialize


def notification_runner(chain: Sequence[Middleware]) -> NotificationLayer | None:
    """The ``on_notification`` hooks of ``chain`` folded into one, outermost first, as
    ``HandlerRegistry.notified`` runs them; None without any (rule 7)."""
    runner: Notified | None = None
    for middleware in reversed(chain):
        if _overrides(middleware, "on_notification"):
            runner = _link_notified(middleware.on_notification, runner)
    return None if runner is None else partial(_start_notified, runner)


def _link_notified(hook: Notified, inner: Notified | None) -> Notified:
    if inner is None:
        return hook
    deeper = inner

    def linked(context: RequestContext, params: dict[str, Any], call_next: NotifyNext) -> Awaitable[None]:
        return hook(context, params, lambda next_params: deeper(context, next_params, call_next))

    return linked


_running: set[asyncio.Task[None]] = set()  # the notification hooks under way (a task needs a reference)


def _start_notified(runner: Notified, context: RequestContext, params: dict[str, Any], own: NotifyNext) -> None:
    # Rule 7: the hooks around ``own`` (the session's own handling), in a task of their own.
    task = asyncio.get_running_loop().create_task(_notified(runner, context, params, own))
    _running.add(task)
    task.add_done_callback(_running.discard)


async def _notified(runner: Notified, context: RequestContext, params: dict[str, Any], own: NotifyNext) -> None:
    try:
        await runner(context, params, own)
    except Exception:
        logger.exception("middleware failed on %s", context.method)


def tool_runner(chain: Sequence[Middleware]) -> ToolRunner | None:
    """The ``on_tool_run`` hooks of ``chain`` folded into one, outermost first; None without any."""
    hooks = [middleware.on_tool_run for middleware in chain if _overrides(middleware, "on_tool_run")]
    if not hooks:
        return None
    runner: ToolRunner | None = None
    for hook in reversed(hooks):
        runner = _link_run(hook, runner)
    return runner


def _link_run(hook: ToolRunner, inner: ToolRunner | None) -> ToolRunner:
    if inner is None:
        return hook
    deeper = inner

    def linked(context: RequestContext, tool: Tool, arguments: dict[str, Any], call_next: RunNext) -> Awaitable[Any]:
        return hook(context, tool, arguments, lambda next_arguments: deeper(context, tool, next_arguments, call_next))

    return linked
