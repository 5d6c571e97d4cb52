"""What the registries of a server share: wire lists, scopes, pages, change hooks, user callbacks.

``tools.py``, ``resources.py`` and ``prompts.py`` each keep one kind of entry (``skills.py``
the skills) and serve its methods; this module holds what they do alike.

Rules, kept here and nowhere else:

1. A registry's wire list (what its list method returns) is built once per revision, on first
   use, and dropped when an entry is added, replaced or removed: sessions share it, so it is
   never changed in place.
2. A change calls the registry's ``on_change`` hook with the method of its list-changed
   notification (``McpServer`` tells ready sessions and listeners).
3. A listing shows an entry only to a request whose token holds the entry's scopes
   (``scopes.py`` rule 3); without a token, all of them.
4. With a page size (``Pager``), a list is cut into pages: ``nextCursor`` is opaque (base64 of
   the collection and the offset); a cursor of another collection, malformed or beyond the
   list is -32602, and so is any cursor when lists are not paged.
5. A user callback (a tool's handler, a resource's reader, a lister, a completer) runs on the
   event loop when it is a coroutine function, else in a worker thread (``call``).
6. With ``visibility`` (a ``ServerVisibility``, set by the server with its first rule) a
   listing leaves out, and a lookup does not find, what the request's rules hide
   (``visibility.py``); without it nothing is checked.
7. With ``guard`` set (by ``mount.py`` on a server that mounts or is mounted), ``add`` asks it
   ``guard(kind, key)`` before anything is registered: it raises ValueError when the key would
   collide with another server's entry under the same front name. Registration only: no
   request reads it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import inspect
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from . import downlevel, versions
from .context import RequestContext
from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from .scopes import check_scopes
from .types import ResourceLink
from .versions import Revision

if TYPE_CHECKING:  # (visibility.py loads with a server's first rule)
    from .visibility import Rule, ServerVisibility

__all__ = [
    "Guard",
    "OnChange",
    "Pager",
    "Registry",
    "Scoped",
    "call",
    "drop_link_icons",
    "has_link_icons",
    "is_async",
    "is_shown",
    "params_str",
    "rules_of",
    "shown_items",
    "visible",
]

OnChange: TypeAlias = Callable[[str], None]
"""A registry's change hook: called with the method of its list-changed notification (rule 2)."""

Guard: TypeAlias = Callable[[str, str], None]
"""``guard(kind, key)``: raises ValueError when registering ``key`` would collide (rule 7)."""

Scoped: TypeAlias = set[tuple[str, str]]
"""The (kind, key) of the entries registered with scopes: one set for all the registries of a
server, so that a request's one look (``McpServer.scopes_needed``) says whether any has (rule 3)."""

_MAX_CURSOR: Final = 200  # characters: a cursor this package made is far shorter


async def call(function: Callable[..., Any], is_async: bool, *args: Any) -> Any:
    """Run a user callback (rule 5): async ones on the loop, sync ones in a worker thread."""
    if is_async:
        return await function(*args)
    result = await asyncio.to_thread(function, *args)
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine
        result = await result
    return result


def is_async(function: Callable[..., Any]) -> bool:
    """True for a coroutine function, or an object whose ``__call__`` is one."""
    method = getattr(function, "__call__", None)  # noqa: B004 - objects with an async __call__
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(method)


def params_str(params: dict[str, Any], key: str) -> str:
    """``params[key]`` when it is a string, else -32602 naming it."""
    value = params.get(key)
    if not isinstance(value, str):
        raise McpError(INVALID_PARAMS, f'Missing or invalid "{key}": expected a string')
    return value


class Pager:
    """Cuts list results into pages of ``page_size`` entries (None: one page of everything; rule 4)."""

    __slots__ = ("page_size",)

    def __init__(self, page_size: int | None = None) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be a positive integer or None")
        self.page_size = page_size

    def page(self, collection: str, key: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        """The page of ``items`` the request's ``cursor`` asks for, as the result ``{key: [...]}``."""
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            start = self._offset(collection, cursor, len(items))
        if self.page_size is None:
            return {key: items}
        end = start + self.page_size
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            token = orjson.dumps({"c": collection, "o": end})
            result["nextCursor"] = base64.urlsafe_b64encode(token).decode("ascii")
        return result

    def _offset(self, collection: str, cursor: Any, size: int) -> int:
        invalid = McpError(INVALID_PARAMS, f"Invalid cursor for {collection}: start over without a cursor")
        if self.page_size is None or not isinstance(cursor, str) or len(cursor) > _MAX_CURSOR:
            raise invalid
        try:
            data = orjson.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            raise invalid from None
        if not isinstance(data, dict) or data.get("c") != collection:
            raise invalid
        offset = data.get("o")
        if type(offset) is not int or offset < 0 or offset > size:
            raise invalid
        return offset


class Registry:
    """The base of a server's registries: the wire lists of its collections by revision (rule 1),
    the change hook (rule 2), which entries have scopes (rule 3) and the pager (rule 4).

    A subclass builds a collection's wire entries in ``_entries`` and calls ``_changed`` after
    each change; ``capability`` names what it offers, for the -32601 of a server without it.
    """

    __slots__ = ("_lists", "_scoped", "guard", "on_change", "pager", "visibility")

    capability: str = ""

    def __init__(
        self, pager: Pager | None = None, on_change: OnChange | None = None, scoped: Scoped | None = None
    ) -> None:
        self.pager = pager if pager is not None else Pager()
        self.on_change = on_change
        # (collection, revision name) -> the wire list of that collection for that revision
        self._lists: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._scoped = scoped if scoped is not None else set()
        self.visibility: ServerVisibility | None = None  # rule 6
        self.guard: Guard | None = None  # rule 7

    @property
    def scoped(self) -> bool:
        """True when some entry (of this registry, or of one sharing its ``Scoped``) has scopes."""
        return bool(self._scoped)

    def _entries(self, collection: str, revision: Revision) -> list[dict[str, Any]]:
        """The wire entries of ``collection`` at ``revision`` (before ``downlevel`` cuts them)."""
        raise NotImplementedError

    def _listing(self, collection: str, revision: Revision | None) -> list[dict[str, Any]]:
        """``collection``'s wire list for requests of ``revision`` (None: the latest), built on first use."""
        protocol = revision if revision is not None else versions.LATEST
        key = (collection, protocol.name)
        items = self._lists.get(key)
        if items is None:
            items = self._entries(collection, protocol)
            if not downlevel.current(protocol):
                items = [downlevel.listed(item, protocol) for item in items]
            self._lists[key] = items
        return items

    def _changed(self, collection: str, notification: str) -> None:
        """After a change to ``collection``: its wire lists dropped, the hook told."""
        for key in [key for key in self._lists if key[0] == collection]:
            del self._lists[key]
        if self.on_change is not None:
            self.on_change(notification)

    def _mark_scoped(self, kind: str, key: str, scopes: Collection[str], what: str) -> None:
        """Check ``scopes`` (ValueError naming ``what``) and note whether the entry has any."""
        if scopes:
            try:
                check_scopes(scopes)
            except ValueError as error:
                raise ValueError(f"{what}: {error}") from None
            self._scoped.add((kind, key))
        else:
            self._scoped.discard((kind, key))

    def _require(self, offered: bool) -> None:
        """-32601 for a request to a registry with nothing to offer."""
        if not offered:
            raise McpError(METHOD_NOT_FOUND, f"This server does not offer {self.capability}")


def visible(
    items: list[dict[str, Any]], key: str, scopes_of: Callable[[str], Collection[str]], context: RequestContext
) -> list[dict[str, Any]]:
    """``items`` without the entries the request's token lacks the scopes for (rule 3)."""
    token = context.auth
    if token is None:
        return items
    granted = token.scopes
    return [item for item in items if granted.issuperset(scopes_of(item[key]))]


def rules_of(registry: Registry, context: RequestContext) -> Sequence[Rule]:
    """The visibility rules of the request (rule 6): empty when there are none to apply."""
    visibility = registry.visibility
    return visibility.rules_for(context) if visibility is not None else ()


def is_shown(rules: Sequence[Rule], kind: str, names: Sequence[str], tags: Collection[str]) -> bool:
    """Whether ``rules`` (not empty: a caller without any has nothing to check) show the item."""
    from .visibility import shown

    return shown(rules, kind, names, tags)


def shown_items(
    items: list[dict[str, Any]],
    rules: Sequence[Rule],
    kind: str,
    describe: Callable[[dict[str, Any]], tuple[Sequence[str], Collection[str]]],
) -> list[dict[str, Any]]:
    """``items`` without the entries ``rules`` hide (rule 6), as a new list; ``describe`` gives
    an entry's names and tags."""
    if not rules:
        return items
    return [item for item in items if is_shown(rules, kind, *describe(item))]


def has_link_icons(blocks: Sequence[Any]) -> bool:
    """True when a resource link among ``blocks`` carries icons (rare: checked before any revision lookup)."""
    for block in blocks:  # noqa: SIM110 - a loop, no generator frame: every tool call passes here
        if type(block) is ResourceLink and block.icons:
            return True
    return False


def drop_link_icons(blocks: list[dict[str, Any]], context: RequestContext) -> None:
    """Remove resource links' icons from wire ``blocks`` for requests before 2025-11-25."""
    protocol = context.session.protocol
    if protocol is not None and protocol.icons:
        return
    for block in blocks:
        if block.get("type") == "resource_link":
            block.pop("icons", None)
