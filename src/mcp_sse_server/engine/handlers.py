"""The handler registry: which function answers each JSON-RPC method, and each revision's table.

A handler is ``async handler(params, context) -> result``: ``params`` is the request's params
(``{}`` when it sent none), ``context`` its ``RequestContext``; it returns the result object or
raises ``McpError``. ``McpServer.handlers`` is a server's registry. The server's own methods
register into it when the server is built: its registries' (``tools.py``, ``resources.py``,
``prompts.py``, ``completion.py``), the lifecycle's (``lifecycle.py``) and the extensions'
(``tasks.py``, ``skills.py``). An application adds a method, or replaces the handler of one,
the same way:

>>> handlers = HandlerRegistry()
>>> @handlers.register("example/echo")
... async def echo(params, context):
...     return {"echo": params.get("text")}
>>> "example/echo" in handlers, "example/echo" in handlers.table(versions.REVISION_2025_06_18)
(True, True)

Rules, kept here and nowhere else:

1. A method that some served revision lists (``versions.Revision.methods``) is a protocol
   method: it is served to the revisions that list it, and a request of another revision gets
   -32601 (``tasks/result`` on a 2025-06-18 session, ``initialize`` on a stateless request).
2. A method that no served revision lists is an extension's (``skills/list``, or one an
   application adds): it is served at every revision, to a session after ``initialize`` and
   to a stateless request alike. Its handler decides whether the request may use it (the
   skills extension answers -32601 on a server without skills).
3. A method without a handler is -32601; the session and the stateless endpoint say so.
4. Each revision's table is built on first use and shared by every session of that revision;
   ``register`` and ``remove`` change the tables already built in place, so a live session
   is served the new handler from its next request on.
5. For a revision older than the latest (``downlevel.current`` is false), the results of
   ``tools/call`` and ``prompts/get`` pass through ``downlevel``'s shaping whichever handler
   serves them: a handler always returns the latest wire form. The table of the latest
   revisions holds the handler itself: its request path pays for nothing here.
6. With ``layer`` set (the server's middleware, ``middleware.py``), every table holds each
   handler as ``layer(method, handler)`` returns it, applied before rule 5's shaping; the
   table before ``initialize`` is then a built table too. ``layer`` is set before any table
   is built.
7. ``notified`` (None unless the server's middleware has ``on_notification`` hooks) is handed
   each notification a session is sent, with what the session itself does with it, and runs
   the hooks around that in a task (``middleware.py`` rule 7). A stateless connection acts on
   no notification (cancellation is the engine's) and hands none on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Final, TypeAlias, TypeVar, overload

from . import downlevel, versions
from .context import RequestContext
from .versions import Revision

__all__ = ["Handler", "HandlerRegistry", "NotificationLayer", "Notified", "NotifyNext"]

Handler: TypeAlias = Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]
"""A method handler: ``await handler(params, context)`` is the request's result object."""

NotifyNext: TypeAlias = Callable[[dict[str, Any]], Awaitable[None]]
"""``await call_next(params)``: the rest of a notification's hooks and the receiver's own handling."""

Notified: TypeAlias = Callable[[RequestContext, dict[str, Any], NotifyNext], Awaitable[None]]
"""``await notified(context, params, call_next)``: the notification hooks folded into one."""

NotificationLayer: TypeAlias = Callable[[RequestContext, dict[str, Any], NotifyNext], None]
"""``notified(context, params, own)``: starts the hooks around ``own`` and returns (rule 7)."""

_H = TypeVar("_H", bound=Handler)

# Rule 5: the methods whose results an older revision sees cut down, and how.
_SHAPES: Final[dict[str, Callable[[dict[str, Any], Revision], dict[str, Any]]]] = {
    "tools/call": downlevel.tool_result,
    "prompts/get": downlevel.prompt_result,
}

# Rule 1: every method some served revision lists; the others are extensions' (rule 2).
_PROTOCOL_METHODS: Final = frozenset(method for revision in versions.SERVED for method in revision.methods)


def served_at(method: str, revision: Revision | None) -> bool:
    """True when ``method`` is served to requests of ``revision`` (None: before ``initialize``,
    where the session itself decides), by rules 1 and 2."""
    return revision is None or method in revision.methods or method not in _PROTOCOL_METHODS


class HandlerRegistry(Mapping[str, Handler]):
    """JSON-RPC method name -> the handler serving it, and the per-revision tables built from it.

    A read-only mapping (``handlers["tools/call"]``, ``in``, iteration in registration order);
    ``register`` adds or replaces, ``remove`` removes.
    """

    __slots__ = ("_handlers", "_layer", "_tables", "notified")

    def __init__(self) -> None:
        # Every method's handler: also the table before initialize (rule 4; a server built per
        # session keeps one dict fewer).
        self._handlers: dict[str, Handler] = {}
        # Revision name -> the table of that revision (rule 4).
        self._tables: dict[str, dict[str, Handler]] = {}
        self._layer: Callable[[str, Handler], Handler] | None = None  # rule 6
        self.notified: NotificationLayer | None = None  # rule 7

    def set_layer(self, layer: Callable[[str, Handler], Handler]) -> None:
        """Serve each handler as ``layer(method, handler)`` returns it (rule 6); RuntimeError once
        a table is built."""
        if self._tables:
            raise RuntimeError("the handler tables are already built: set the layer before the server serves")
        self._layer = layer

    @property
    def built(self) -> bool:
        """True once some revision's table is built (with a layer: also the one before initialize)."""
        return bool(self._tables)

    @overload
    def register(self, method: str, handler: _H, /) -> _H: ...

    @overload
    def register(self, method: str, /) -> Callable[[_H], _H]: ...

    def register(self, method: str, handler: _H | None = None, /) -> _H | Callable[[_H], _H]:
        """Serve ``method`` with ``handler``, replacing the handler it had; without ``handler``, a
        decorator that does so (``@server.handlers.register("example/echo")``). Returns the
        handler. Which revisions are served it: the module's rules 1 and 2."""
        if not isinstance(method, str) or not method:
            raise ValueError(f"a JSON-RPC method name is a non-empty string, not {method!r}")
        if handler is None:

            def decorate(handler: _H) -> _H:
                return self.register(method, handler)

            return decorate
        if not callable(handler):
            raise TypeError(f"the handler of {method} must be callable as handler(params, context)")
        self._handlers[method] = handler
        for name, table in self._tables.items():
            revision = versions.served(name)
            if served_at(method, revision):
                table[method] = self._served(method, handler, revision)
        return handler

    def remove(self, method: str) -> bool:
        """Stop serving ``method`` (its requests get -32601 from now on); True when it was served."""
        if self._handlers.pop(method, None) is None:
            return False
        for table in self._tables.values():
            table.pop(method, None)
        return True

    def table(self, revision: Revision | None) -> Mapping[str, Handler]:
        """The methods a request of ``revision`` is served, each with its handler (None: every
        method, for a session before ``initialize``); built once (rule 4)."""
        if revision is None and self._layer is None:
            return self._handlers
        name = "" if revision is None else revision.name  # ("": before initialize, rule 6)
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = {
                method: self._served(method, handler, revision)
                for method, handler in self._handlers.items()
                if served_at(method, revision)
            }
        return table

    def _served(self, method: str, handler: Handler, revision: Revision | None) -> Handler:
        layer = self._layer
        return _shaped(method, handler if layer is None else layer(method, handler), revision)

    def __getitem__(self, method: str) -> Handler:
        return self._handlers[method]

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)

    def __repr__(self) -> str:
        return f"<HandlerRegistry of {len(self._handlers)} methods>"


def _shaped(method: str, handler: Handler, revision: Revision | None) -> Handler:
    """``handler`` as sessions of ``revision`` are served it (rule 5)."""
    shape = _SHAPES.get(method)
    if shape is None or downlevel.current(revision):
        return handler
    assert revision is not None  # (None is the latest: current)
    older = revision

    async def shaped(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return shape(await handler(params, context), older)

    return shaped
