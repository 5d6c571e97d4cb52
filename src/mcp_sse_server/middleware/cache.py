"""ResponseCache: answers repeated lists, reads, prompts and allow-listed tool calls from a cache.

>>> from mcp_sse_server import McpServer
>>> server = McpServer("s", middleware=[ResponseCache(ttl=60.0, tools={"catalog"})])

Rules, kept here and nowhere else:

1. Cached: the four list methods (``lists=True``); ``tools/call`` of the tools named in
   ``tools``, ``prompts/get`` of the prompts in ``prompts``, ``resources/read`` of the URIs in
   ``resources``. Nothing else, ever: a tool has effects unless its author says it has none.
2. The key is the SHA-256 of the method, the params without ``_meta`` (progress tokens and the
   2026-07-28 envelope, whose revision is its own part) and, for a list, without ``cursor`` (a
   list hook gets and returns the full list; the table cuts the page after it: one entry
   serves every page), the revision, the principal
   (``caller.principal_hash``, or ``public`` without a token) with the token's scopes (listings
   hide what a token lacks the scopes for), and ``vary(context)`` when given (per-session
   visibility rules, say). So no entry made for one principal, revision or scope set is ever
   served to another.
3. Never stored: a result with ``isError``, a task's creation result, an MRTR continuation
   round (``caller.is_continuation``: it is not even looked up) or a round that asked the
   client (it raises ``InputRequired``, so there is no result). Entries live ``ttl`` seconds.
4. Entries are grouped: ``tools`` (tools/list, tools/call), ``prompts`` (prompts/list,
   prompts/get), ``resources`` (the resource and template lists) and ``resource:<uri>`` (reads
   of one URI). On its first request the cache follows the server's event bus (what
   ``subscriptions/listen`` hears: ``{"kind": "tools"}`` after a tool is added or removed,
   ``{"kind": "resource", "uri": ...}`` after ``notify_resource_updated``) and drops the group
   an event names; a resource list change drops every read too. The engine sends its
   list-changed notifications to sessions outside the middleware chain, so the bus is where
   a cache can hear them; with a Redis bus, a change on one worker drops entries on all.
   A drop lands a few event-loop turns after the change (in process), or when Redis delivers it.
5. Hits are decoded from stored bytes, so no caller can change another's result in place.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any, Final, Protocol

import orjson

from ..engine.background import in_background
from ..engine.context import RequestContext
from ..engine.middleware import CallNext, Middleware
from .caller import is_continuation, principal_hash

__all__ = ["CacheStore", "MemoryCache", "ResponseCache", "group_of"]

logger = logging.getLogger("mcp_sse_server.middleware")

_LISTS: Final[dict[str, str]] = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
}
_READS: Final = "resource:"  # the prefix of a resource's own group
_UNSHAPING: Final = frozenset({"_meta"})
_UNSHAPING_LIST: Final = frozenset({"_meta", "cursor"})


class CacheStore(Protocol):
    """Where entries live, by group (rule 4)."""

    async def get(self, group: str, key: str) -> bytes | None:
        """The entry, or None (absent or expired)."""
        ...

    async def put(self, group: str, key: str, value: bytes, ttl: float) -> None:
        """Keep ``value`` under ``key`` in ``group`` for ``ttl`` seconds."""
        ...

    async def drop(self, group: str) -> None:
        """Forget every entry of ``group``; ``"resource:"`` alone: of every resource's group."""
        ...


class MemoryCache:
    """Entries in this process: at most ``max_entries``, the oldest dropped first."""

    __slots__ = ("_clock", "_entries", "_groups", "max_entries")

    def __init__(self, *, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, bytes]] = OrderedDict()
        self._groups: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, group: str, key: str) -> bytes | None:
        found = self._entries.get((group, key))
        if found is None:
            return None
        if found[0] <= self._clock():
            self._forget((group, key))
            return None
        return found[1]

    async def put(self, group: str, key: str, value: bytes, ttl: float) -> None:
        entries = self._entries
        entries[(group, key)] = (self._clock() + ttl, value)
        entries.move_to_end((group, key))
        self._groups.setdefault(group, set()).add(key)
        while len(entries) > self.max_entries:
            self._forget(next(iter(entries)))

    async def drop(self, group: str) -> None:
        groups = [name for name in self._groups if name.startswith(_READS)] if group == _READS else [group]
        for name in groups:
            for key in self._groups.pop(name, ()):
                self._entries.pop((name, key), None)

    def _forget(self, entry: tuple[str, str]) -> None:
        del self._entries[entry]
        keys = self._groups.get(entry[0])
        if keys is not None:
            keys.discard(entry[1])
            if not keys:
                del self._groups[entry[0]]


def group_of(method: str, params: dict[str, Any]) -> str:
    """The group an entry of ``method`` belongs to (rule 4)."""
    if method == "resources/read":
        return _READS + str(params.get("uri"))
    return _LISTS.get(method) or method.partition("/")[0]


def _groups_for(event: dict[str, Any]) -> list[str]:
    kind = event.get("kind")
    if kind == "resource":
        return [_READS + str(event.get("uri"))]
    if kind == "resources":
        return ["resources", _READS]
    return [kind] if kind in ("tools", "prompts") else []


def _storable(result: dict[str, Any]) -> bool:
    """False for a tool error and a task's creation result (rule 3)."""
    return result.get("isError") is not True and "task" not in result and result.get("resultType") in (None, "complete")


class ResponseCache(Middleware):
    """Caches what the module's rules allow; ``store`` defaults to ``MemoryCache()``."""

    def __init__(
        self,
        ttl: float = 300.0,
        *,
        store: CacheStore | None = None,
        lists: bool = True,
        tools: Collection[str] = (),
        prompts: Collection[str] = (),
        resources: Collection[str] = (),
        vary: Callable[[RequestContext], str] | None = None,
    ) -> None:
        if not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds")
        self.ttl = float(ttl)
        self.store: CacheStore = store if store is not None else MemoryCache()
        self.lists = lists
        self.tools = frozenset(tools)
        self.prompts = frozenset(prompts)
        self.resources = frozenset(resources)
        self._vary = vary
        self._following: weakref.WeakKeyDictionary[Any, asyncio.Task[None]] = weakref.WeakKeyDictionary()

    async def on_list(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        if not self.lists:
            return await call_next(params)
        return await self._cached(context, params, call_next)

    async def on_call_tool(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        return await self._if_allowed(self.tools, "name", context, params, call_next)

    async def on_get_prompt(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        return await self._if_allowed(self.prompts, "name", context, params, call_next)

    async def on_read_resource(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        return await self._if_allowed(self.resources, "uri", context, params, call_next)

    def _if_allowed(
        self, allowed: frozenset[str], member: str, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> Awaitable[dict[str, Any]]:
        """The request through the cache when ``params[member]`` is allow-listed (rule 1)."""
        if params.get(member) in allowed:
            return self._cached(context, params, call_next)
        return call_next(params)

    def key(self, context: RequestContext, params: dict[str, Any]) -> str:
        """The entry's key (rule 2)."""
        # (a list hook gets the full list whatever the cursor: the table cuts the page after it)
        unshaping = _UNSHAPING_LIST if context.method in _LISTS else _UNSHAPING
        shaping = {name: value for name, value in params.items() if name not in unshaping}
        token = context.auth
        parts = [
            context.method,
            shaping,
            context.session.revision,
            principal_hash(context) or "public",
            sorted(token.scopes) if token is not None else None,
            self._vary(context) if self._vary is not None else None,
        ]
        return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()

    async def _cached(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        if is_continuation(params):  # rule 3
            return await call_next(params)
        self._follow(context)
        group, key = group_of(context.method, params), self.key(context, params)
        hit = await self.store.get(group, key)
        if hit is not None:
            found: dict[str, Any] = orjson.loads(hit)
            return found
        result = await call_next(params)
        if (
            result.get("isError") is not True
            and "task" not in result
            and result.get("resultType") in (None, "complete")
        ):
            await self.store.put(group, key, orjson.dumps(result), self.ttl)
        return result

    def _follow(self, context: RequestContext) -> None:
        """Follow the server's event bus from now on (rule 4), once per server and event loop."""
        server = context.server
        task = self._following.get(server)
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            return
        bus = getattr(server, "event_bus", None)
        if bus is not None:
            self._following[server] = in_background(self._drop_on(bus.subscribe()))

    async def _drop_on(self, events: AsyncIterator[dict[str, Any]]) -> None:
        try:
            async for event in events:
                for group in _groups_for(event):
                    try:
                        await self.store.drop(group)
                    except Exception:  # (a store out of reach: the entries expire by their ttl)
                        logger.exception("the response cache could not drop %s", group)
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
