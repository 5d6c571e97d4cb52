"""``from_config``: one ``McpServer`` serving every entry of an ``mcpServers`` file, each through
a ``proxy`` under its namespace (``mcp-sse-server serve --gateway FILE``).

The file is what ``client/config.py`` reads (``{"mcpServers": {name: entry}}``, each entry a
``ServerConfig``), plus these keys of an entry: ``namespace``, ``enabled``, ``scopes``,
``inherit_env``, ``tools`` (its tools renamed, redescribed, hidden, tagged, their arguments
renamed, defaulted or fixed), ``include_tags`` and ``exclude_tags`` (``entry_tools.py``), and
the proxy's ``connections``, ``pool``, ``mode`` and ``roots``. The file is
trusted input: it starts programs.

Rules:

1. Namespaces: an entry's ``namespace``, else its name lower-cased; it must be
   ``[a-z][a-z0-9-]{0,31}`` (``engine/mount.py`` rule 1: tools and prompts ``<ns>_<name>``,
   resources and templates ``<ns>+<uri>``), else ``ConfigError`` naming the entry and asking
   for one. Always applied, whatever the number of entries, so adding an entry renames nothing.
   Two entries with one namespace are a ``ConfigError``.
2. ``"enabled": false``: the entry is listed nowhere and never started.
3. Backends start lazily, each on the first request that needs it (a list, or a call to one
   of its names), and are stopped by ``close()``.
4. A list asks every enabled entry; one that fails is left out and the result carries
   ``_meta: {"degraded": true, "failedBackends": [namespace, ...]}``, never an empty success;
   one that offers nothing of the kind (-32601) adds nothing.
   The merged list is paged with the gateway's own cursors (``page_size``).
5. A request for a name or URI is routed by its namespace to that entry's proxy, with the
   entry's own name or URI; a name of no entry is the -32602 an unknown name gets. A dead
   entry's tool calls answer ``isError`` "Backend NAME is unavailable: ..." (``server.py``
   rule 4). URIs in ``resources/read`` contents come back in their front form. The
   ``Mcp-Param-*`` headers of a tool are its entry's (from that entry's last tools list).
6. ``scopes`` (a list of OAuth scopes): a token must hold them all to see the entry's tools,
   prompts, resources and templates in lists and to use them (``engine/scopes.py`` rules 2-4:
   checked where the gateway is served with ``auth=``).
7. A stdio entry's program gets the entry's ``env`` plus this process's ``PATH``, ``HOME`` and
   ``LANG`` only, so the gateway's own secrets (Redis URL, keys) do not leak into every
   backend; ``"inherit_env": true`` gives it the whole environment as well.
8. Everything else (what a backend asks, progress, cancellation, logs, list changes,
   resource updates with front URIs) is each proxy's (``server.py``), for the gateway's sessions.
9. A gateway read from a file watches it (``watch_interval`` seconds between looks at its size,
   time and inode, from the first request on; ``reload()`` looks now): when it changed, the
   entries added, removed or edited take effect, the entries left as they were keep their
   backends, an edited or removed entry's backends are closed (their calls in flight fail),
   and every session and listener is told the tool, prompt and resource lists changed. A file
   that no longer reads (bad JSON, a bad entry, gone) is logged and the entries stay as they were.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Final

from ..engine.context import RequestContext
from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from ..engine.mount import Kind, back_key, check_namespace, front_key
from ..engine.registry import Pager
from ..engine.scopes import NO_SCOPES, check_scopes, needed
from ..engine.scopes import Kind as ScopeKind
from ..engine.server import McpServer
from ..engine.session import ServerSession
from ..engine.stateless_meta import MirroredHeader
from .entry_tools import EntryTools
from .server import ProxyServer, client_factory

__all__ = ["GatewayServer", "from_config"]

# Entry keys this module reads (the others are ServerConfig's).
_PROXY_KEYS: Final = ("connections", "pool", "mode", "roots")
_GATEWAY_KEYS: Final = (
    "namespace",
    "enabled",
    "scopes",
    "inherit_env",
    "tools",
    "include_tags",
    "exclude_tags",
    *_PROXY_KEYS,
)
# What a stdio entry's program gets of this process's environment without inherit_env (rule 7).
_INHERITED: Final = ("PATH", "HOME", "LANG")
_LISTS: Final[dict[str, tuple[str, Kind, str]]] = {
    "tools/list": ("tools", "tool", "name"),
    "prompts/list": ("prompts", "prompt", "name"),
    "resources/list": ("resources", "resource", "uri"),
    "resources/templates/list": ("resourceTemplates", "template", "uriTemplate"),
}
# What the gateway declares: backends start lazily, so it cannot ask them at the handshake.
_CAPABILITIES: Final = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "completions": {},
    "logging": {},
}

_CHANGED: Final = (
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
)

Handler = Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]
StatKey = tuple[int, int, int, int]
# An entry as the file gives it: its name and its keys (what a reload compares).
Configured = tuple[str, dict[str, Any]]

logger = logging.getLogger("mcp_sse_server.proxy")


class GatewayServer(McpServer):
    """Serves several ``ProxyServer``, each under its namespace (rules in the module docstring;
    build one with ``from_config``)."""

    def __init__(
        self,
        entries: Mapping[str, ProxyServer],
        *,
        name: str = "gateway",
        page_size: int | None = None,
        source: str | os.PathLike[str] | None = None,
        watch_interval: float = 1.0,
        scopes: Mapping[str, Collection[str]] | None = None,
        tools: Mapping[str, EntryTools] | None = None,
    ):
        super().__init__(name, page_size=page_size)
        self.entries = dict(entries)  # namespace -> its proxy
        self._pager = Pager(page_size)
        for namespace, entry in self.entries.items():
            check_namespace(namespace)
            self._attach(namespace, entry)
        # The file this gateway reloads (rule 9), what it was when read, and its entries then.
        self.source = None if source is None else Path(source)
        self.watch_interval = watch_interval
        self._seen: StatKey | None = None
        self._configured: dict[str, Configured] = {}
        self._watcher: asyncio.Task[None] | None = None
        # namespace -> the scopes a token needs for that entry (rule 6); entries without any left out.
        self.scopes = {namespace: check_scopes(found) for namespace, found in (scopes or {}).items() if found}
        self.entry_tools = dict(tools or {})  # namespace -> its entry's ``tools`` key, compiled
        self.on_roots_list_changed = self._roots_changed
        self.mirrored_headers = self._mirrored_headers
        handlers = self.handlers
        for method in _LISTS:
            handlers.register(method, self._lister(method))
        handlers.register("tools/call", self._call_tool)
        handlers.register("prompts/get", self._router("prompts/get", "prompt", "name"))
        handlers.register("resources/read", self._read)
        handlers.register("resources/subscribe", self._router("resources/subscribe", "resource", "uri"))
        handlers.register("resources/unsubscribe", self._router("resources/unsubscribe", "resource", "uri"))
        handlers.register("completion/complete", self._complete)

    @property
    def capabilities(self) -> dict[str, Any]:
        """Tools, prompts, resources (with subscriptions), completion and logging, always."""
        return {key: dict(value) for key, value in _CAPABILITIES.items()}

    def _attach(self, namespace: str, entry: ProxyServer) -> None:
        entry.announcer = self
        entry.front_uri = _front_uri(namespace)

    # --- reloading (rule 9) ----------------------------------------------------------------

    def _watch(self) -> None:
        if self._watcher is None and self.source is not None:
            # (In a context of its own: not the first request's, which it would otherwise keep.)
            self._watcher = asyncio.get_running_loop().create_task(self._watching(), context=contextvars.Context())

    async def _watching(self) -> None:
        while True:
            await asyncio.sleep(self.watch_interval)
            try:
                await self.reload()
            except Exception:  # (a backend that fails to close must not end the watching)
                logger.exception("gateway %s: reloading %s failed", self.name, self.source)

    async def reload(self) -> bool:
        """Take the file's changes now, if it changed since it was read (rule 9); whether the
        entries changed."""
        source = self.source
        if source is None:
            return False
        key = _stat_key(source)
        if key == self._seen:
            return False
        self._seen = key
        try:
            configured = _configured(json.loads(source.read_text(encoding="utf-8")))
            kept = self._configured
            entries = {
                namespace: self.entries[namespace]
                if kept.get(namespace) == found and namespace in self.entries
                else _proxy(*found)
                for namespace, found in configured.items()
            }
        except (OSError, ValueError) as error:  # (ConfigError and JSONDecodeError are ValueErrors)
            logger.warning("gateway %s: %s no longer reads (%s); entries kept as they were", self.name, source, error)
            return False
        dropped = [entry for namespace, entry in self.entries.items() if entries.get(namespace) is not entry]
        if not dropped and list(entries) == list(self.entries):
            self._configured = configured
            return False  # (an entry's scopes are part of it: a change there replaced it)
        for namespace, entry in entries.items():
            self._attach(namespace, entry)
        self.entries, self._configured = entries, configured
        self.scopes = _scopes_of(configured)
        self.entry_tools = _tools_of(configured)
        logger.info("gateway %s: %s changed; entries now %s", self.name, source, ", ".join(entries) or "none")
        for method in _CHANGED:
            self._list_changed(method)
        for entry in dropped:
            await entry.close_server_scope()
        return True

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        """The scopes of the entry the request names (rule 6)."""
        if not self.scopes:
            return NO_SCOPES
        return needed(method, params, self._entry_scopes)

    def _entry_scopes(self, kind: ScopeKind, key: str) -> Collection[str]:
        found = self._route(kind, key)
        return NO_SCOPES if found is None else self.scopes.get(found[0], NO_SCOPES)

    def _mirrored_headers(self, name: str) -> tuple[MirroredHeader, ...]:
        found = self._route("tool", name)
        if found is None:
            return ()
        namespace, entry, back = found
        tools = self.entry_tools.get(namespace)
        if tools is not None:
            headers = tools.headers(back)
            if headers is not None:
                return headers
            if tools.back_name(back) is None:
                return ()  # (a name the rules took away: unknown)
        return entry.mirrored_headers(back)

    def _roots_changed(self) -> None:
        for entry in self.entries.values():
            entry._roots_changed()

    def session_ended(self, session: ServerSession) -> None:
        """The front session ended: so did each entry's backend connection for it."""
        super().session_ended(session)
        for entry in self.entries.values():
            entry.session_ended(session)

    async def close_server_scope(self) -> None:
        """Close every entry's backends (``close`` and the HTTP app's shutdown end here), and stop
        watching the file (a later request watches it again)."""
        await super().close_server_scope()
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
        for entry in self.entries.values():
            await entry.close_server_scope()

    # --- routing ---------------------------------------------------------------------------

    def _entry(self, kind: Kind, front: Any) -> tuple[str, ProxyServer, str] | None:
        """The namespace, entry and entry's own name or URI that ``front`` routes to (rule 5)."""
        if self._watcher is None:
            self._watch()
        return self._route(kind, front)

    def _route(self, kind: Kind, front: Any) -> tuple[str, ProxyServer, str] | None:
        if not isinstance(front, str):
            return None
        namespace = front.partition("_" if kind in ("tool", "prompt") else "+")[0]
        entry = self.entries.get(namespace)
        back = None if entry is None else back_key(namespace, kind, front)
        return None if entry is None or back is None else (namespace, entry, back)

    def _router(self, method: str, kind: Kind, key: str) -> Handler:
        async def route(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            found = self._entry(kind, params.get(key))
            if found is None:
                raise McpError(INVALID_PARAMS, f"Unknown {kind}: {params.get(key)}")
            _namespace, entry, back = found
            return await entry.handlers[method]({**params, key: back}, context)

        return route

    async def _call_tool(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        found = self._entry("tool", params.get("name"))
        tools = None if found is None else self.entry_tools.get(found[0])
        back = None if found is None else found[2] if tools is None else tools.back_name(found[2])
        if found is None or back is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.get('name')}")
        params = {**params, "name": back}
        if tools is not None:
            params["arguments"] = tools.back_arguments(found[2], params.get("arguments"))
        return await found[1].handlers["tools/call"](params, context)

    async def _read(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        found = self._entry("resource", params.get("uri"))
        if found is None:
            raise McpError(INVALID_PARAMS, f"Unknown resource: {params.get('uri')}")
        namespace, entry, back = found
        result = await entry.handlers["resources/read"]({**params, "uri": back}, context)
        contents = result.get("contents")
        if isinstance(contents, list):
            mapped = [_mapped(item, "uri", namespace, "resource") for item in contents if isinstance(item, dict)]
            result = {**result, "contents": mapped}
        return result

    async def _complete(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        ref = params.get("ref")
        if not isinstance(ref, dict):
            raise McpError(INVALID_PARAMS, 'Invalid "ref": expected an object')
        kind: Kind = "prompt" if ref.get("type") == "ref/prompt" else "template"
        key = "name" if kind == "prompt" else "uri"
        found = self._entry(kind, ref.get(key))
        if found is None:
            raise McpError(INVALID_PARAMS, f"Unknown {kind}: {ref.get(key)}")
        _namespace, entry, back = found
        return await entry.handlers["completion/complete"]({**params, "ref": {**ref, key: back}}, context)

    def _lister(self, method: str) -> Handler:
        collection, kind, key = _LISTS[method]

        async def handle(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            if self._watcher is None:
                self._watch()
            items: list[dict[str, Any]] = []
            failed: list[str] = []
            token = context.auth
            for namespace, entry in list(self.entries.items()):
                if token is not None and not token.scopes.issuperset(self.scopes.get(namespace, NO_SCOPES)):
                    continue  # (not offered what it cannot use)
                try:
                    found = await entry.handlers[method]({}, context)
                except McpError as error:
                    if error.code == METHOD_NOT_FOUND:
                        continue  # (an entry that offers nothing of this kind)
                    if error.code != INTERNAL_ERROR:
                        raise
                    failed.append(namespace)
                    continue
                listed = found.get(collection) or []
                tools = self.entry_tools.get(namespace) if kind == "tool" else None
                if tools is not None:
                    listed = tools.listed(listed)
                items.extend(_mapped(item, key, namespace, kind) for item in listed)
            result = self._pager.page(method, collection, items, params)
            if failed:
                result["_meta"] = {"degraded": True, "failedBackends": failed}
            return result

        return handle


def _front_uri(namespace: str) -> Callable[[str], str]:
    return lambda uri: front_key(namespace, "resource", uri)


def _mapped(item: dict[str, Any], key: str, namespace: str, kind: Kind) -> dict[str, Any]:
    value = item.get(key)
    return {**item, key: front_key(namespace, kind, value)} if isinstance(value, str) else item


def _stat_key(path: Path) -> StatKey | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


def _configured(data: Any) -> dict[str, Configured]:
    """Namespace -> (entry name, entry) of each enabled entry of an ``mcpServers`` document
    (rules 1 and 2); ConfigError naming the entry and key at fault."""
    from ..client.config import ConfigError

    servers = data.get("mcpServers") if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping):
        raise ConfigError(("mcpServers",), "expected an object of server entries")
    found: dict[str, Configured] = {}
    for entry_name, entry in servers.items():
        where = ("mcpServers", entry_name)
        if not isinstance(entry, Mapping):
            raise ConfigError(where, "expected an object")
        if entry.get("enabled", True) is False:
            continue
        namespace = entry.get("namespace", str(entry_name).lower())
        try:
            check_namespace(namespace)
        except ValueError:
            raise ConfigError(
                (*where, "namespace"), f"{namespace!r} is not a namespace: give one matching [a-z][a-z0-9-]{{0,31}}"
            ) from None
        if not namespace or namespace in found:
            raise ConfigError((*where, "namespace"), f"{namespace!r} is already another entry's: give another")
        scopes = entry.get("scopes", [])
        try:
            if not isinstance(scopes, list):
                raise ValueError("expected a list of scopes")
            check_scopes(scopes)
        except (TypeError, ValueError) as error:
            raise ConfigError((*where, "scopes"), str(error)) from None
        if not isinstance(entry.get("inherit_env", False), bool):
            raise ConfigError((*where, "inherit_env"), "expected true or false")
        if not isinstance(entry.get("tools", {}), Mapping):
            raise ConfigError((*where, "tools"), "expected an object of tool rules")
        _entry_tools(entry, where)  # (its errors, now)
        found[namespace] = (str(entry_name), dict(entry))
    return found


def _entry_tools(entry: Mapping[str, Any], where: tuple[str, ...]) -> EntryTools | None:
    if not any(key in entry for key in ("tools", "include_tags", "exclude_tags")):
        return None
    include, exclude = entry.get("include_tags"), entry.get("exclude_tags")
    return EntryTools(entry.get("tools", {}), (*where, "tools"), include, exclude)


def _tools_of(configured: Mapping[str, Configured]) -> dict[str, EntryTools]:
    found = ((namespace, _entry_tools(entry, ("mcpServers", name))) for namespace, (name, entry) in configured.items())
    return {namespace: tools for namespace, tools in found if tools is not None}


def _scopes_of(configured: Mapping[str, Configured]) -> dict[str, frozenset[str]]:
    found = ((namespace, entry.get("scopes")) for namespace, (_name, entry) in configured.items())
    return {namespace: check_scopes(scopes) for namespace, scopes in found if scopes}


def _proxy(entry_name: str, entry: dict[str, Any]) -> ProxyServer:
    """The proxy serving one entry; ConfigError naming it when its keys cannot work."""
    from ..client.config import ConfigError, ServerConfig

    own = {key: value for key, value in entry.items() if key not in _GATEWAY_KEYS}
    config = ServerConfig.from_dict(own, entry_name)
    options = {key: entry[key] for key in _PROXY_KEYS if key in entry}
    factory = client_factory(config)
    if config.transport == "stdio" and not entry.get("inherit_env", False):  # rule 7
        config.env = {**{name: os.environ[name] for name in _INHERITED if name in os.environ}, **config.env}
        whole = factory

        def factory(**client_options: Any) -> Any:
            return whole(inherit_env=False, **client_options)

    try:
        return ProxyServer(factory, name=entry_name, **options)
    except (TypeError, ValueError) as error:
        raise ConfigError(("mcpServers", entry_name), str(error)) from None


def from_config(
    source: str | os.PathLike[str] | Mapping[str, Any], *, name: str = "gateway", watch_interval: float = 1.0
) -> GatewayServer:
    """A ``GatewayServer`` for the ``mcpServers`` of ``source``: a JSON file's path (watched for
    changes every ``watch_interval`` seconds, rule 7), or its content as a dict (rules in the
    module docstring). ``ConfigError`` (a ValueError) names the entry and key at fault; OSError
    when the file cannot be read."""
    from ..client.config import ConfigError

    data: Any = source
    seen = None
    if not isinstance(source, Mapping):
        seen = _stat_key(Path(source))  # (before reading: a write after this is seen as a change)
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ConfigError((), f"{os.fspath(source)} is not JSON: {error}") from None
    configured = _configured(data)
    entries = {namespace: _proxy(*found) for namespace, found in configured.items()}
    scopes, tools = _scopes_of(configured), _tools_of(configured)
    if isinstance(source, Mapping):
        return GatewayServer(entries, name=name, scopes=scopes, tools=tools)
    gateway = GatewayServer(
        entries, name=name, source=source, watch_interval=watch_interval, scopes=scopes, tools=tools
    )
    gateway._seen, gateway._configured = seen, configured
    return gateway
