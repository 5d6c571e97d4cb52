"""Composition: one server mounted live inside another (``McpServer.mount``), or copied into it
(``McpServer.import_server``), under a namespace.

>>> from mcp_sse_server import McpServer
>>> weather, parent = McpServer("weather"), McpServer("front")
>>> @weather.tool()
... def forecast(city: str) -> str:
...     return "sunny"
>>> parent.mount(weather, namespace="wx")
>>> [tool.name for tool in weather.tools], "wx_forecast" in parent.mounted_names("tool")
(['forecast'], True)

Rules, kept here and nowhere else:

1. **Namespacing**, one rule per kind, exact in both directions. A namespace is
   ``[a-z][a-z0-9-]{0,31}`` (no ``_``, no ``+``), or ``""`` for none.
   - tools and prompts: ``<ns>_<name>`` (``forecast`` -> ``wx_forecast``); the first ``_``
     splits a front name, since a namespace holds none;
   - resources and templates: ``<ns>+`` before the scheme (``file:///a`` -> ``wx+file:///a``,
     ``urn:x`` -> ``wx+urn:x``, ``users://{id}`` -> ``wx+users://{id}``): always a valid
     RFC 3986 scheme, hierarchical or not; the front URI is stripped up to the first ``+``;
   - skill files (``skill://...``, whose scheme the skills extension fixes): ``skill://<ns>/...``.
   Task ids are not namespaced: a mounted tool's tasks run in the root server's runtime.
2. **Collisions are a ValueError at registration**, naming both owners, never a shadow: at
   ``mount()`` for every front name or URI the child brings (its mounts' included), and later
   when the child, the parent or any server in the tree registers a name whose front form is
   already served by another (the registries' ``guard``, ``registry.py`` rule 7). Replacing an
   entry under its own name stays allowed. A front tool name over 64 characters is logged
   (many hosts cap there).
3. **Live**: the parent serves each request for a front name by calling the child's own
   handler with the child's name, so the child's later registrations, removals and visibility
   rules show through, and its list changes reach the parent's sessions and listeners
   (``notifications/*/list_changed``, ``resources/updated`` with the front URI).
4. **Middleware, exactly once each**: the parent's tier-1 hooks wrap its table (where the
   routing handler sits), the child's wrap the child's handler the route calls, and a mounted
   tool's function runs inside the tier-2 hooks of every ancestor (outermost first) and then
   its own (``middleware.py``). The same ``RequestContext`` is passed down: ``context.state``,
   ``auth``, ``session`` (progress, logging, elicitation, sampling, cancellation) are the
   request's.
5. **Lists**: the parent's own entries, then each mount's in mount order; each list is the
   child's answer for the request (its scopes and visibility applied), mapped; the parent pages
   the merged list (a mounted child's own registries no longer page). A child that offers
   nothing of a kind adds nothing.
6. **URIs inside results** (``resources/read`` contents, ``resource_link`` and embedded
   ``resource`` blocks of tool results and prompt messages) are rewritten to the front form
   when the child serves them; other URIs (``https``, foreign ones) are left as they are.
7. **One parent**: a server is mounted in at most one parent, never in itself or its own
   subtree, and not after it has served on its own (``RuntimeError``): it is then served only
   through its parent.
8. ``import_server`` copies the child's tools, prompts, resources and templates under the
   namespace into the parent's registries at that moment (the same rules 1 and 2); nothing
   later is carried, nor the child's middleware or visibility: a snapshot with no per-call cost.
   Copied readers are called with the front URI.
9. A server that mounts nothing pays nothing: its handlers and registries are untouched until
   its first ``mount``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

from .context import RequestContext
from .handlers import Handler
from .jsonrpc import METHOD_NOT_FOUND, McpError
from .middleware import Middleware, tool_runner
from .middleware import wrap as wrap_handler
from .registry import Pager

if TYPE_CHECKING:
    import asyncio

    from .handlers import HandlerRegistry
    from .prompts import PromptRegistry
    from .resources import ResourceRegistry
    from .skills import SkillRegistry
    from .stateless_meta import MirroredHeader
    from .tasks import TaskRuntime
    from .tools import ToolRegistry
    from .types import Prompt, Resource, ResourceTemplate, Tool

__all__ = ["Composition", "Kind", "Mount", "Mounts", "Server", "back_key", "check_namespace", "front_key"]

logger = logging.getLogger("mcp_sse_server")

Kind: TypeAlias = Literal["tool", "prompt", "resource", "template"]
KINDS: Final[tuple[Kind, ...]] = ("tool", "prompt", "resource", "template")

_NAMESPACE: Final = re.compile(r"[a-z][a-z0-9-]{0,31}")
_SKILL: Final = "skill://"
_LONG_NAME: Final = 64
_MAPPED_MAX: Final = 4096  # mapped list entries remembered per mount (bounded: listers make new dicts)

# The list methods the parent merges: result key, the field holding the name, and its kind (rule 5).
_LISTS: Final[dict[str, tuple[str, str, Kind]]] = {
    "tools/list": ("tools", "name", "tool"),
    "prompts/list": ("prompts", "name", "prompt"),
    "resources/list": ("resources", "uri", "resource"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate", "template"),
}
_NOTIFICATIONS: Final[dict[Kind, str]] = {
    "tool": "notifications/tools/list_changed",
    "prompt": "notifications/prompts/list_changed",
    "resource": "notifications/resources/list_changed",
    "template": "notifications/resources/list_changed",
}


class Server(Protocol):
    """What this module asks of a server (``McpServer``: the engine's server imports this module)."""

    name: str
    tool_registry: ToolRegistry
    prompt_registry: PromptRegistry
    resource_registry: ResourceRegistry
    skill_registry: SkillRegistry
    handlers: HandlerRegistry
    _mounts: Mounts | None
    _mounted_in: Mount | None
    _middleware: list[Middleware]
    _loop: asyncio.AbstractEventLoop | None
    mirrored_headers: Callable[[str], tuple[MirroredHeader, ...]]

    def _scopes_of(self, kind: Kind, key: str) -> Collection[str]: ...

    @property
    def capabilities(self) -> dict[str, Any]: ...

    @property
    def tasks_declared(self) -> bool: ...

    @property
    def tasks(self) -> TaskRuntime: ...

    def _list_changed(self, method: str) -> None: ...

    async def notify_resource_updated(self, uri: str) -> None: ...

    def _refresh_runners(self) -> None: ...

    def add_tool(self, tool: Tool) -> None: ...

    def add_prompt(self, prompt: Prompt) -> None: ...

    def add_resource(self, resource: Resource) -> None: ...

    def add_resource_template(self, template: ResourceTemplate) -> None: ...


def check_namespace(namespace: str) -> str:
    """``namespace`` when it is valid (rule 1); ValueError naming the rule otherwise."""
    if not isinstance(namespace, str) or (namespace and not _NAMESPACE.fullmatch(namespace)):
        raise ValueError(f"namespace {namespace!r}: use [a-z][a-z0-9-]{{0,31}} (no '_' or '+'), or '' for none")
    return namespace


def front_key(namespace: str, kind: Kind, key: str) -> str:
    """The front form of a child's ``key`` (rule 1)."""
    if not namespace:
        return key
    if kind == "tool" or kind == "prompt":
        return f"{namespace}_{key}"
    if key.startswith(_SKILL):
        return f"{_SKILL}{namespace}/{key[len(_SKILL) :]}"
    return f"{namespace}+{key}"


def back_key(namespace: str, kind: Kind, front: str) -> str | None:
    """The child's key behind ``front``, or None when ``front`` is not in this namespace (rule 1)."""
    if not namespace:
        return front
    if kind == "tool" or kind == "prompt":
        prefix = namespace + "_"
    elif front.startswith(_SKILL):
        prefix = f"{_SKILL}{namespace}/"
        return _SKILL + front[len(prefix) :] if front.startswith(prefix) else None
    else:
        prefix = namespace + "+"
    return front[len(prefix) :] if front.startswith(prefix) and len(front) > len(prefix) else None


# --- what a server holds (its own entries, and through its mounts) ---------------------------


def holds_own(server: Server, kind: Kind, key: str) -> bool:
    """True when ``server``'s own registry of ``kind`` has ``key``."""
    if kind == "tool":
        return key in server.tool_registry
    if kind == "prompt":
        return key in server.prompt_registry
    if kind == "resource":
        return key in server.resource_registry
    return server.resource_registry.template(key) is not None


def holds(server: Server, kind: Kind, key: str) -> bool:
    """True when ``server`` serves ``key`` of ``kind``, itself or through a mount."""
    if holds_own(server, kind, key):
        return True
    mounts = server._mounts
    if mounts is None:
        return False
    for mount in mounts.mounts:
        back = mount.back(kind, key)
        if back is not None and holds(mount.child, kind, back):
            return True
    return False


def exposed(server: Server, kind: Kind) -> Iterator[str]:
    """Every key of ``kind`` that ``server`` serves: its own, then its mounts' front forms."""
    if kind == "tool":
        yield from (tool.name for tool in server.tool_registry)
    elif kind == "prompt":
        yield from (prompt.name for prompt in server.prompt_registry)
    elif kind == "resource":
        yield from (resource.uri for resource in server.resource_registry)
    else:
        yield from (template.uri_template for template in server.resource_registry.templates)
    mounts = server._mounts
    if mounts is not None:
        for mount in mounts.mounts:
            yield from (mount.front(kind, key) for key in exposed(mount.child, kind))


def serves_uri(server: Server, uri: str) -> bool:
    """True when ``resources/read`` of ``uri`` on ``server`` would reach an entry (rule 6)."""
    if server.resource_registry.serves(uri):
        return True
    mounts = server._mounts
    if mounts is None:
        return False
    for mount in mounts.mounts:
        back = mount.back("resource", uri)
        if back is not None and serves_uri(mount.child, back):
            return True
    return False


def claim_own(server: Server, kind: str, key: str) -> None:
    """The registries' guard of a server in a mount tree (rule 2): ValueError when ``key``'s
    front form collides anywhere up the tree."""
    checked: Kind = kind  # type: ignore[assignment]  # (the registries pass one of KINDS)
    mounts = server._mounts
    if mounts is not None:
        mounts.check(checked, key, None)
    up = server._mounted_in
    if up is not None:
        up.parent_mounts.check(checked, up.front(checked, key), up)


class Mount:
    """One child mounted in a parent under a namespace (the module's rules)."""

    __slots__ = ("_handlers", "_mapped", "child", "namespace", "parent", "parent_mounts")

    def __init__(self, parent: Server, mounts: Mounts, child: Server, namespace: str) -> None:
        self.parent = parent
        self.parent_mounts = mounts
        self.child = child
        self.namespace = namespace
        self._handlers: dict[str, Handler | None] = {}  # method -> the child's handler, middleware-wrapped
        self._mapped: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # id(child entry) -> (it, mapped)

    def __repr__(self) -> str:
        return f"<Mount {self.child.name!r} at {self.namespace!r} in {self.parent.name!r}>"

    def front(self, kind: Kind, key: str) -> str:
        """The front form of the child's ``key``."""
        return front_key(self.namespace, kind, key)

    def back(self, kind: Kind, front: str) -> str | None:
        """The child's key behind ``front`` (None: not this namespace)."""
        return back_key(self.namespace, kind, front)

    def handler(self, method: str) -> Handler | None:
        """The child's handler of ``method`` inside the child's tier-1 middleware, before any
        revision shaping (the parent's table shapes once), unpaged; None when it has none."""
        try:
            return self._handlers[method]
        except KeyError:
            pass
        own = self.child.handlers.get(method)
        chain = self.child._middleware
        served = own if own is None or not chain else wrap_handler(chain, Pager(), method, own)
        self._handlers[method] = served
        return served

    def forget(self) -> None:
        """Drop what was derived from the child (its handlers, its mapped entries, the routes to it)."""
        self._handlers.clear()
        self._mapped.clear()
        self.parent_mounts.forget()

    @property
    def links(self) -> bool:
        """True when the child may serve some URI (resources, templates, files, mounts): only then
        are its results searched for links to rewrite (rule 6)."""
        child = self.child
        return bool(child.resource_registry) or child._mounts is not None

    def changed(self, notification: str) -> None:
        """The child's registries' change hook: the parent's routes rebuilt, its sessions told."""
        self._mapped.clear()
        self.parent_mounts.forget()
        announce(self.parent, notification)

    async def listed(self, method: str, params: dict[str, Any], context: RequestContext) -> list[dict[str, Any]] | None:
        """The child's full list for ``method`` mapped to front names; None when it offers none."""
        handler = self.handler(method)
        if handler is None:
            return None
        try:
            result = await handler(params, context)
        except McpError as error:
            if error.code == METHOD_NOT_FOUND:  # the child offers nothing of this kind
                return None
            raise
        key, field, kind = _LISTS[method]
        items = result.get(key)
        if type(items) is not list:
            return None
        mapped, out = self._mapped, []
        if len(mapped) > _MAPPED_MAX:
            mapped.clear()
        for item in items:
            hit = mapped.get(id(item))
            if hit is None or hit[0] is not item:
                hit = mapped[id(item)] = (item, {**item, field: self.front(kind, item[field])})
            out.append(hit[1])
        return out

    def rewrite_blocks(self, blocks: Any) -> Any:
        """``blocks`` (a content block or a list of them) with the child's URIs in front form (rule 6)."""
        if isinstance(blocks, dict):
            return self._block(blocks)
        if type(blocks) is not list:
            return blocks
        return [self._block(block) if isinstance(block, dict) else block for block in blocks]

    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        kind = block.get("type")
        if kind == "resource_link":
            uri = block.get("uri")
            if isinstance(uri, str) and serves_uri(self.child, uri):
                return {**block, "uri": self.front("resource", uri)}
        elif kind == "resource":
            inner = block.get("resource")
            if isinstance(inner, dict):
                uri = inner.get("uri")
                if isinstance(uri, str) and serves_uri(self.child, uri):
                    return {**block, "resource": {**inner, "uri": self.front("resource", uri)}}
        return block

    def skill_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A ``skills/list``/``skills/get`` entry of the child with its URIs in front form."""
        files = [{**file, "uri": self.front("resource", file["uri"])} for file in entry.get("resources") or ()]
        return {**entry, "uri": self.front("resource", entry["uri"]), "resources": files}

    def rewrite_contents(self, result: dict[str, Any]) -> dict[str, Any]:
        """A ``resources/read`` result with the child's URIs in front form (rule 6)."""
        contents = result.get("contents")
        if type(contents) is not list:
            return result
        out = []
        for item in contents:
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str) and serves_uri(self.child, uri):
                item = {**item, "uri": self.front("resource", uri)}
            out.append(item)
        return {**result, "contents": out}


def announce(server: Server, notification: str) -> None:
    """Tell whoever hears ``server``'s list changes: its parent when mounted, else its sessions."""
    up = server._mounted_in
    if up is not None:
        up.changed(notification)
    else:
        server._list_changed(notification)


def _strip_cursor(params: dict[str, Any]) -> dict[str, Any]:
    if "cursor" in params:
        return {name: value for name, value in params.items() if name != "cursor"}
    return params


class Mounts:
    """A parent's mounts and the handlers that route its requests to them (rules 3-6).

    Made by the parent's first ``mount``: it then serves ``tools/*``, ``prompts/*``,
    ``resources/*`` and ``completion/complete`` through these routes, each falling back to
    the parent's own handler.
    """

    __slots__ = ("_maps", "_own", "_own_headers", "_pager", "_tools", "mounts", "server")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.mounts: list[Mount] = []
        self._maps: dict[Kind, dict[str, tuple[Mount, str]]] = {}  # front -> (mount, child key)
        self._own: dict[str, Handler] = {}
        # tools/call's own fast path: front name -> (mount, child name, the child's handler); None when stale
        self._tools: dict[str, tuple[Mount, str, Handler]] | None = None
        self._pager = server.skill_registry.pager  # the page size (the one pager never swapped)
        self._own_headers: Callable[[str], tuple[MirroredHeader, ...]] = server.mirrored_headers

    def install(self) -> None:
        """Serve the routed methods from here; the parent's registries stop paging (rule 5)."""
        server = self.server
        routes: dict[str, Handler] = {method: partial(self.list, method) for method in _LISTS}
        routes.update(
            {
                "tools/call": self.call_tool,
                "prompts/get": self.get_prompt,
                "resources/read": self.read,
                "resources/subscribe": partial(self.subscription, True),
                "resources/unsubscribe": partial(self.subscription, False),
                "completion/complete": self.complete,
                "skills/list": self.list_skills,
                "skills/get": partial(self.skill_uri, "skills/get"),
                "resources/directory/read": partial(self.skill_uri, "resources/directory/read"),
            }
        )
        for method, route in routes.items():
            self._own[method] = server.handlers[method]
            server.handlers.register(method, route)
        self._own_headers = server.mirrored_headers
        server.mirrored_headers = self.mirrored_headers
        unpaged = Pager()
        server.tool_registry.pager = server.resource_registry.pager = server.prompt_registry.pager = unpaged

    def forget(self) -> None:
        """Drop the front-name maps (a child changed): rebuilt on the next request."""
        self._maps.clear()
        self._tools = None

    def _routes(self, kind: Kind) -> dict[str, tuple[Mount, str]]:
        table = self._maps.get(kind)
        if table is None:
            table = self._maps[kind] = {
                mount.front(kind, key): (mount, key) for mount in self.mounts for key in exposed(mount.child, kind)
            }
        return table

    def scopes_of(self, kind: Kind, key: str) -> Collection[str]:
        """The scopes of what ``key`` names here: the child's entry's for a mounted one (at any
        depth), else the parent's own (``scopes.py`` rules; the HTTP layer checks them)."""
        found = self._resource_mount(key) if kind == "resource" else self.route(kind, key)
        if found is None:
            return self.server._scopes_of(kind, key)
        mount, back = found
        child = mount.child
        mounts = child._mounts
        return child._scopes_of(kind, back) if mounts is None else mounts.scopes_of(kind, back)

    def mirrored_headers(self, name: str) -> tuple[MirroredHeader, ...]:
        """The ``Mcp-Param-*`` arguments of tool ``name``: its child's, for a mounted one (the
        HTTP layer checks them on 2026-07-28 calls, before any handler runs)."""
        found = self.route("tool", name)
        if found is None:
            return self._own_headers(name)
        mount, key = found
        return mount.child.mirrored_headers(key)

    def route(self, kind: Kind, front: Any) -> tuple[Mount, str] | None:
        """The mount serving ``front`` and the child's key for it, or None (the parent's own)."""
        return self._routes(kind).get(front) if type(front) is str else None

    def check(self, kind: Kind, front: str, owner: Mount | None) -> None:
        """ValueError when ``front`` of ``kind``, brought by ``owner`` (None: the server itself),
        is already served here by someone else, here or further up (rule 2)."""
        server = self.server
        what = {"tool": "tool", "prompt": "prompt", "resource": "resource", "template": "resource template"}[kind]
        if owner is not None and holds_own(server, kind, front):
            raise ValueError(
                f"{what} {front!r} of mounted server {owner.child.name!r} collides with {server.name!r}'s own {what}"
            )
        for mount in self.mounts:
            if mount is owner:
                continue
            back = mount.back(kind, front)
            if back is not None and holds(mount.child, kind, back):
                by = f"server {server.name!r}" if owner is None else f"mounted server {owner.child.name!r}"
                raise ValueError(
                    f"{what} {front!r} of {by} collides with mounted server {mount.child.name!r} "
                    f"(namespace {mount.namespace!r})"
                )
        up = server._mounted_in
        if owner is not None and up is not None:
            up.parent_mounts.check(kind, up.front(kind, front), up)

    # --- the routes --------------------------------------------------------------------

    async def list(self, method: str, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """A list method: the parent's own entries, then each mount's (rule 5)."""
        key = _LISTS[method][0]
        inner = _strip_cursor(params)
        result: dict[str, Any] = {}
        items: list[dict[str, Any]] = []
        offered = False
        try:
            result = await self._own[method](inner, context)
            items = list(result.get(key) or ())
            offered = True
        except McpError as error:
            if error.code != METHOD_NOT_FOUND:
                raise
        for mount in self.mounts:
            listed = await mount.listed(method, inner, context)
            if listed is not None:
                items.extend(listed)
                offered = True
        if not offered:
            raise McpError(METHOD_NOT_FOUND, f"This server does not offer {key}")
        result = {**result, key: items}
        if self.server._middleware:  # the middleware layer pages outside the hooks (middleware.py rule 6)
            return result
        return {**result, **self._pager.page(key, key, items, params)}

    def call_tool(self, params: dict[str, Any], context: RequestContext) -> Awaitable[dict[str, Any]]:
        """``tools/call``: a mounted tool through its child, its links rewritten. A plain function
        returning the child's awaitable (no frame of its own) when there is nothing to rewrite."""
        tools = self._tools
        if tools is None:
            tools = self._tools = {}
            for front, (mount, key) in self._routes("tool").items():
                handler = mount.handler("tools/call")
                assert handler is not None  # (every server serves tools/call)
                tools[front] = (mount, key, handler)
        name = params.get("name")
        found = tools.get(name) if type(name) is str else None
        if found is None:
            return self._own["tools/call"](params, context)
        mount, back, handler = found
        if mount.links:
            return self._rewritten(mount, handler({**params, "name": back}, context))
        return handler({**params, "name": back}, context)

    @staticmethod
    async def _rewritten(mount: Mount, called: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        result = await called
        content = result.get("content")
        if content:
            result = {**result, "content": mount.rewrite_blocks(content)}
        return result

    async def get_prompt(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``prompts/get``: a mounted prompt through its child, its messages' links rewritten."""
        found = self.route("prompt", params.get("name"))
        if found is None:
            return await self._own["prompts/get"](params, context)
        mount, name = found
        handler = mount.handler("prompts/get")
        assert handler is not None
        result = await handler({**params, "name": name}, context)
        messages = result.get("messages")
        if type(messages) is list:
            messages = [
                {**m, "content": mount.rewrite_blocks(m.get("content"))} if isinstance(m, dict) else m for m in messages
            ]
            result = {**result, "messages": messages}
        return result

    def _resource_mount(self, uri: Any) -> tuple[Mount, str] | None:
        if type(uri) is not str or uri in self.server.resource_registry:
            return None  # the parent's own fixed resource first
        for mount in self.mounts:
            back = mount.back("resource", uri)
            if back is not None and (mount.namespace or serves_uri(mount.child, back)):
                return mount, back
        return None

    async def read(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/read``: a mounted URI through its child, the contents' URIs rewritten."""
        found = self._resource_mount(params.get("uri"))
        if found is None:
            return await self._own["resources/read"](params, context)
        mount, uri = found
        handler = mount.handler("resources/read")
        assert handler is not None
        return mount.rewrite_contents(await handler({**params, "uri": uri}, context))

    async def subscription(self, subscribe: bool, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/subscribe``/``unsubscribe``: a mounted URI is recorded on the session in its
        front form (updates are announced in that form: ``McpServer.notify_resource_updated``)."""
        uri = params.get("uri")
        if self._resource_mount(uri) is None:
            return await self._own["resources/subscribe" if subscribe else "resources/unsubscribe"](params, context)
        if subscribe:
            context.session.subscribe(uri)
        else:
            context.session.unsubscribe(uri)
        return {}

    async def complete(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``completion/complete`` for a mounted prompt or template: the child's completer answers."""
        ref = params.get("ref")
        found = None
        if isinstance(ref, dict):
            if ref.get("type") == "ref/prompt":
                found = self.route("prompt", ref.get("name"))
                field = "name"
            elif ref.get("type") == "ref/resource":
                found = self.route("template", ref.get("uri"))
                field = "uri"
        if found is None:
            return await self._own["completion/complete"](params, context)
        mount, key = found
        handler = mount.handler("completion/complete")
        assert handler is not None and isinstance(ref, dict)
        return await handler({**params, "ref": {**ref, field: key}}, context)

    async def list_skills(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``skills/list``: the parent's skills, then each mount's under ``skill://<ns>/`` (rule 1)."""
        catalog = self.server.skill_registry.catalog
        items = catalog.entries()
        offered = bool(catalog)
        inner = _strip_cursor(params)
        for mount in self.mounts:
            handler = mount.handler("skills/list")
            try:
                listed = await handler(inner, context) if handler is not None else None
            except McpError as error:
                if error.code != METHOD_NOT_FOUND:
                    raise
                continue
            if listed is not None:
                offered = True
                items.extend(mount.skill_entry(entry) for entry in listed.get("skills") or ())
        if not offered:
            raise McpError(METHOD_NOT_FOUND, "This server does not offer skills")
        return self._pager.page("skills", "skills", items, params)

    async def skill_uri(self, method: str, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``skills/get`` and ``resources/directory/read`` of a mounted skill URI: the child answers,
        its URIs rewritten."""
        found = self._resource_mount(params.get("uri"))
        handler = None if found is None else found[0].handler(method)
        if found is None or handler is None:
            return await self._own[method](params, context)
        mount, uri = found
        result = await handler({**_strip_cursor(params), "uri": uri}, context)
        if "skill" in result:
            return {**result, "skill": mount.skill_entry(result["skill"])}
        rows = [{**row, "uri": mount.front("resource", row["uri"])} for row in result.get("resources") or ()]
        return self._pager.page("directory", "resources", rows, params)

    # --- what the parent advertises ------------------------------------------------------

    def capabilities(self, own: dict[str, Any]) -> dict[str, Any]:
        """The parent's capabilities with each mount's merged in (``own`` is a new dict)."""
        for mount in self.mounts:
            for name, value in mount.child.capabilities.items():
                have = own.get(name)
                own[name] = {**value, **have} if isinstance(have, dict) and isinstance(value, dict) else value
        return own

    @property
    def tasks_declared(self) -> bool:
        """True when some mounted tool may run as a task."""
        return any(mount.child.tasks_declared for mount in self.mounts)


class Composition:
    """``mount`` and ``import_server``: ``McpServer`` inherits them (the module's rules)."""

    __slots__ = ()

    _mounts: Mounts | None = None  # this server's mounts (None until its first)
    _mounted_in: Mount | None = None  # where this server is mounted (None: a root)

    if TYPE_CHECKING:  # (McpServer's)
        _middleware: list[Middleware]

    def mount(self, child: Server, namespace: str = "") -> None:
        """Serve ``child``'s tools, prompts, resources and templates live from this server
        under ``namespace`` (``mount.py`` rule 1: tools ``ns_name``, URIs ``ns+scheme:...``).
        ValueError for a bad namespace, a name collision (nothing is mounted then), a child
        already mounted or a cycle; RuntimeError for a child that has served on its own."""
        parent: Server = self  # type: ignore[assignment]  # (a mixin of Server)
        check_namespace(namespace)
        if child is parent or _is_ancestor(child, parent):
            raise ValueError(f"cannot mount {child.name!r} inside itself")
        if child._mounted_in is not None:
            raise ValueError(f"{child.name!r} is already mounted in {child._mounted_in.parent.name!r}")
        if child._loop is not None:
            raise RuntimeError(f"{child.name!r} has already served on its own: mount a server before it serves")
        mounts = parent._mounts
        fresh = mounts is None
        if mounts is None:
            mounts = Mounts(parent)
        mount = Mount(parent, mounts, child, namespace)
        for kind in KINDS:
            for key in exposed(child, kind):
                front = mount.front(kind, key)
                mounts.check(kind, front, mount)
                if kind == "tool" and len(front) > _LONG_NAME:
                    logger.warning(
                        "mounted tool name %r is over %d characters: some hosts refuse it", front, _LONG_NAME
                    )
        if fresh:
            mounts.install()
            parent._mounts = mounts
        mounts.mounts.append(mount)
        mounts.forget()
        child._mounted_in = mount
        _attach(parent)
        _attach(child)
        for registry in (child.tool_registry, child.resource_registry, child.prompt_registry):
            registry.on_change = mount.changed
            registry.pager = Pager()  # the parent pages (rule 5)
        child.skill_registry.pager = Pager()
        _set_root(child, _root(parent))
        child._refresh_runners()
        for kind in ("tool", "prompt", "resource"):
            if next(exposed(child, kind), None) is not None:
                announce(parent, _NOTIFICATIONS[kind])

    def import_server(self, child: Server, namespace: str = "") -> None:
        """Copy ``child``'s tools, prompts, resources and templates into this server under
        ``namespace`` as they are now (``mount.py`` rule 8); ValueError on a collision (nothing
        is copied then)."""
        parent: Server = self  # type: ignore[assignment]
        check_namespace(namespace)
        tools = [dataclasses.replace(t, name=front_key(namespace, "tool", t.name)) for t in child.tool_registry]
        prompts = [dataclasses.replace(p, name=front_key(namespace, "prompt", p.name)) for p in child.prompt_registry]
        resources = [
            dataclasses.replace(r, uri=front_key(namespace, "resource", r.uri)) for r in child.resource_registry
        ]
        templates = [
            dataclasses.replace(t, uri_template=front_key(namespace, "template", t.uri_template))
            for t in child.resource_registry.templates
        ]
        fronts: list[tuple[Kind, str]] = [
            *(("tool", t.name) for t in tools),
            *(("prompt", p.name) for p in prompts),
            *(("resource", r.uri) for r in resources),
            *(("template", t.uri_template) for t in templates),
        ]
        for kind, front in fronts:
            if holds(parent, kind, front):
                raise ValueError(f"{kind} {front!r} imported from {child.name!r} is already served by {parent.name!r}")
        for tool in tools:
            parent.add_tool(tool)
        for prompt in prompts:
            parent.add_prompt(prompt)
        for resource in resources:
            parent.add_resource(resource)
        for template in templates:
            parent.add_resource_template(template)

    def mounted_names(self, kind: Kind) -> list[str]:
        """Every front name (``"tool"``, ``"prompt"``) or URI (``"resource"``, ``"template"``)
        this server's mounts serve, in mount order."""
        mounts = self._mounts
        if mounts is None:
            return []
        return [mount.front(kind, key) for mount in mounts.mounts for key in exposed(mount.child, kind)]

    def _refresh_runners(self) -> None:
        """Fold the tier-2 hooks of this server's ancestors (outermost first) and its own around
        its tools, and its mounts' likewise (rule 4): after ``add_middleware`` and ``mount``."""
        server: Server = self  # type: ignore[assignment]
        chain: list[Middleware] = []
        for each in _lineage(server):
            chain.extend(each._middleware)
        server.tool_registry.runner = tool_runner(chain)
        up = server._mounted_in
        if up is not None:
            up.forget()
        mounts = server._mounts
        if mounts is not None:
            for mount in mounts.mounts:
                mount.child._refresh_runners()


def _lineage(server: Server) -> list[Server]:
    """The root first, then each server down to ``server``."""
    line = [server]
    up = server._mounted_in
    while up is not None:
        line.append(up.parent)
        up = up.parent._mounted_in
    return line[::-1]


def _root(server: Server) -> Server:
    return _lineage(server)[0]


def _is_ancestor(candidate: Server, server: Server) -> bool:
    return candidate in _lineage(server)[:-1]


def _attach(server: Server) -> None:
    """Make ``server``'s registries ask ``claim_own`` before registering (rule 2)."""
    guard = partial(claim_own, server)
    server.tool_registry.guard = server.resource_registry.guard = server.prompt_registry.guard = guard


def _set_root(server: Server, root: Server) -> None:
    """A mounted server's task calls run in ``root``'s runtime (rule 1: task ids unchanged)."""
    server.tool_registry.host = root
    mounts = server._mounts
    if mounts is not None:
        for mount in mounts.mounts:
            _set_root(mount.child, root)
