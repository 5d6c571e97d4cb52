"""McpServer: a server defined once, as a facade over its registries and its handler registry.

One McpServer serves any number of sessions: ``connect(transport)`` opens a
``ServerSession`` (``session.py``) for each client. It knows nothing of HTTP:
connect it to any Transport.

>>> server = McpServer("calc", "1.0.0")
>>> async def add(args, ctx):
...     return CallToolResult.text(str(args["a"] + args["b"]))
>>> server.add_tool(Tool(
...     "add",
...     {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
...      "required": ["a", "b"]},
...     add,
...     description="Adds two numbers.",
... ))

What lives where: the tools, resources (with templates) and prompts are kept by
``tool_registry`` (``tools.py``), ``resource_registry`` (``resources.py``) and
``prompt_registry`` (``prompts.py``), the skills by ``skill_registry``
(``skills.py``); each serves its methods. ``handlers`` (``handlers.py``) maps
every JSON-RPC method to its handler, and each revision's table is built from
it; the lifecycle's methods are ``lifecycle.py``'s, completion's
``completion.py``'s, the tasks' ``tasks.py``'s. This module wires them
together and keeps the sessions, the capabilities and the shared runtime
(event bus, task runtime, ``requestState`` sealer).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

from . import transports
from .app_decorators import AppDecorators
from .app_links import APPS_EXTENSION
from .background import in_background
from .completion import Completion
from .context import RequestContext, current_context
from .decorators import Decorators
from .handlers import HandlerRegistry
from .jsonrpc import INTERNAL_ERROR, McpError
from .lifecycle import Lifecycle
from .memory_stores import MemoryEventBus, MemoryTaskStore
from .middleware import Middleware, notification_runner
from .middleware import check as middleware_check
from .middleware import wrap as wrap_handler
from .mount import Composition
from .prompts import PromptRegistry
from .records import SessionRecord
from .registry import Pager, Scoped
from .resources import ResourceRegistry
from .scopes import NO_SCOPES, Kind, needed
from .session import ServerSession
from .skill_format import SKILLS_EXTENSION, SkillFormatError
from .skills import SkillCatalog, SkillRegistry, load_skills
from .stateless import StatelessEndpoint, StatelessSwitch
from .stateless_meta import CachePolicy, MirroredHeader
from .stores import EventBus
from .tasks import TaskMethods, TaskRuntime
from .tools import ToolRegistry
from .transport import Transport
from .types import CallToolResult, Icon, Prompt, Resource, ResourceTemplate, Tool

if TYPE_CHECKING:
    from collections.abc import Collection

    from .observe import Observer, TelemetrySwitch
    from .request_state import RequestStateSealer

__all__ = ["DEFAULT_SERVER_VERSION", "McpServer", "is_shared_server", "shared_server"]

logger = logging.getLogger("mcp_sse_server")

DEFAULT_SERVER_VERSION: Final = "0.1.0"
"""The ``serverInfo.version`` of a server built without one."""

_Factory = TypeVar("_Factory", bound=Callable[[], "McpServer"])
_SHARED_MARK: Final = "__mcp_shared_server__"


def shared_server(factory: _Factory) -> _Factory:
    """Mark a server factory whose one server may serve every session at once.

    ``mcp-sse-server serve module:factory`` calls an unmarked factory once per
    session (the seed's contract: each client its own server, so nothing one
    client causes reaches another); a marked one once, its server shared.
    Mark a factory whose server keeps no per-client state and, outside a
    request, names the session it talks to or uses ``broadcast_log``.

    >>> @shared_server
    ... def build() -> McpServer:
    ...     return McpServer("calc", "1.0.0")
    >>> is_shared_server(build)
    True
    """
    setattr(factory, _SHARED_MARK, True)
    return factory


def is_shared_server(factory: object) -> bool:
    """True for a factory marked with ``shared_server``."""
    return getattr(factory, _SHARED_MARK, False) is True


class McpServer(Decorators, AppDecorators, Composition):
    """An MCP server, defined once, serving every session connected to it.

    Register tools, resources, resource templates and prompts (``add_tool``,
    ``@server.tool`` and the rest), then connect transports (``await
    server.connect(transport)``, once per client) or hand the server to
    ``McpHttpServer.bind``, ``McpHttpApp``, ``serve_stdio`` or
    ``InMemoryClient``. Capabilities are advertised from what is registered;
    logging is always advertised. With ``page_size`` set, list results are
    paged with opaque cursors. ``handlers`` serves each JSON-RPC method: add a
    method or replace a handler there. ``middleware`` (and ``add_middleware``)
    wraps the handlers and tool functions (``middleware.py``).

    Per-session calls (``log``, ``client_capabilities``, ...) act on the
    session of the request being served. Outside a request (a background task,
    say) they act on the server's one session only while it has never had
    another: a server that has served several sessions raises RuntimeError
    there, so that nothing meant for one client reaches another by accident.
    Name the session (a ``ServerSession`` from ``sessions``, or
    ``context.session``, which is also what asks the client: ``elicit``,
    ``create_message``, ``list_roots``, ``ping``), or send to every session on
    purpose with ``broadcast_log``.
    """

    def __init__(
        self,
        name: str,
        version: str = DEFAULT_SERVER_VERSION,
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int | None = None,
        icons: Sequence[Icon] | None = None,
        description: str | None = None,
        website_url: str | None = None,
        strict_tool_names: bool = False,
        request_state: RequestStateSealer | None = None,
        event_bus: EventBus | None = None,
        cache: CachePolicy = CachePolicy(),
        tasks: TaskRuntime | None = None,
        skills: Sequence[str | os.PathLike[str] | SkillCatalog] = (),
        middleware: Sequence[Middleware] = (),
        telemetry: TelemetrySwitch | None = None,
    ) -> None:
        pager = Pager(page_size)
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        # serverInfo members of revision 2025-11-25, sent only to sessions at it or later
        self.icons = list(icons) if icons is not None else None
        self.description = description
        self.website_url = website_url
        # The stateless revision (stateless.py): requestState sealing, listen fan-out, caching hints.
        self._loop: asyncio.AbstractEventLoop | None = None  # where sessions and listeners are served
        self._request_state = request_state
        self._event_bus = event_bus
        self._tasks = tasks
        self.cache = cache
        # Hands a connection whose first request is stateless to the stateless endpoint (made on
        # the first connect: the stateless.py rule "the first request decides the era").
        self._switch: StatelessSwitch | None = None
        self.on_roots_list_changed: Callable[[], Any] | None = None
        self._sessions: set[ServerSession] = set()
        self._sessions_served = 0  # ever connected: above 1, nothing outside a request picks a session
        # The registries, each serving its methods from ``handlers``.
        # (The entries with scopes are noted in one set: most servers have none, and every request
        # with a token asks, in scopes_needed.)
        self._scoped: Scoped = set()
        changed = self._list_changed
        overridden = type(self).on_tool_call is not McpServer.on_tool_call
        self.tool_registry = ToolRegistry(
            pager,
            changed,
            self._scoped,
            strict_names=strict_tool_names,
            fallback=self.on_tool_call if overridden else None,
            tasks=self,
        )
        self.resource_registry = ResourceRegistry(pager, changed, self._scoped)
        self.prompt_registry = PromptRegistry(pager, changed, self._scoped)
        self.skill_registry = SkillRegistry(pager)
        # The arguments of a tool that 2026-07-28 clients also send as ``Mcp-Param-*`` headers: the
        # registry's own method, not a delegate (every stateless tools/call over HTTP asks it).
        self.mirrored_headers: Callable[[str], tuple[MirroredHeader, ...]] = self.tool_registry.mirrored_headers
        self.handlers = HandlerRegistry()
        Lifecycle(self).install(self.handlers)
        self.tool_registry.install(self.handlers)
        self.resource_registry.install(self.handlers)
        self.prompt_registry.install(self.handlers)
        Completion(self.prompt_registry, self.resource_registry).install(self.handlers)
        TaskMethods(self).install(self.handlers)
        self.skill_registry.install(self.handlers)
        for path in skills:
            self.add_skills(path)
        self._middleware: list[Middleware] = []  # outermost first (middleware.py)
        for each in middleware:
            self.add_middleware(each)
        # OpenTelemetry (telemetry/): None keeps every session on the plain Connection.
        self.observer: Observer | None = None if telemetry is None else telemetry.server_observer(self)

    def add_middleware(self, middleware: Middleware) -> None:
        """Add ``middleware`` inside those added before it (the first is the outermost).
        TypeError when it is not a ``Middleware`` instance overriding some hook; RuntimeError
        once the server has served (sessions keep the tables built without it)."""
        checked = middleware_check(middleware)
        if self._loop is not None or self.handlers.built:
            raise RuntimeError("add_middleware() must come before the server serves a session or a request")
        chain = self._middleware
        if not chain:  # (the chain is read when tables are built: after this, never changed)
            # The list handlers stop paging: the table pages outside the hooks (middleware.py rule 6).
            pager, unpaged = self.skill_registry.pager, Pager()
            self.tool_registry.pager = self.resource_registry.pager = self.prompt_registry.pager = unpaged
            self.handlers.set_layer(partial(wrap_handler, chain, pager))
        chain.append(checked)
        self._refresh_runners()  # (with a mounted server's ancestors' tier-2 hooks: mount.py rule 4)
        self.handlers.notified = notification_runner(chain)

    @property
    def page_size(self) -> int | None:
        """Entries per page of a list result (None: lists are not paged)."""
        return self.skill_registry.pager.page_size  # (the one pager never swapped: add_middleware)

    @property
    def strict_tool_names(self) -> bool:
        """True when a tool name outside SEP-986 is refused rather than logged."""
        return self.tool_registry.strict_names

    # --- running ----------------------------------------------------------------------

    def run(self, transport: str = "stdio", **options: Any) -> None:
        """Serve this server from a script until it is stopped, in a new event loop (uvloop when
        installed): ``"stdio"`` (the default) until stdin closes, ``"http"`` until SIGINT or SIGTERM
        (``options`` are ``McpHttpServer.bind``'s: ``host``, ``port``, ``path``, ``limits``, ...;
        the endpoint is printed to stderr). ValueError for another transport.

        >>> server.run("http", port=8080)  # doctest: +SKIP
        """
        # The transports sit above the engine: their table names them, and they load on call.
        found = transports.entry(transport)
        runner = None if found is None else found.served_by()
        if found is None or runner is None:
            # Each by its shortest name ("http" rather than "streamable-http").
            served = sorted(min((t.name, *t.aliases), key=len) for t in transports.transports() if t.serve)
            raise ValueError(f"unknown transport {transport!r}: use one of {', '.join(served)}")
        if found.name == "stdio" and options:
            raise ValueError(f"the stdio transport takes no options (got {', '.join(sorted(options))})")
        runner(self, **options)

    # --- sessions ------------------------------------------------------------------

    async def connect(
        self, transport: Transport, *, record: SessionRecord | None = None, reinitialize: bool = False
    ) -> ServerSession:
        """Serve one client over ``transport``: a new session of this server.

        ``record`` is the session's plain-data record when a session store
        keeps it; ``reinitialize`` lets the client repeat ``initialize`` on the
        live session (stdio clients do).
        """
        self.running_here()
        switch = self._switch
        if switch is None:  # one for every session: a session holds only a reference to it
            switch = self._switch = StatelessSwitch(StatelessEndpoint(self))
        session = ServerSession(self, transport, record, reinitialize=reinitialize, before_initialize=switch)
        self._sessions.add(session)
        self._sessions_served += 1
        return session

    def running_here(self) -> None:
        """Note that this server serves on the running event loop (``connect`` and a listener do):
        list changes made in worker threads are announced there, and ``use_shared`` is refused."""
        if self._loop is None:  # first serving: the apps' links are checked (apps.py rule 4)
            self._check_apps()
        self._loop = asyncio.get_running_loop()

    def session_ended(self, session: ServerSession) -> None:
        """Called by a session when its connection closes: the server forgets it."""
        self._sessions.discard(session)

    @property
    def sessions(self) -> tuple[ServerSession, ...]:
        """The sessions open now."""
        return tuple(self._sessions)

    async def close(self) -> None:
        """Close every session: pending server-to-client calls fail, running handlers are cancelled;
        then clean up the server-scoped providers (``Depends(..., scope="server")``)."""
        for session in list(self._sessions):
            await session.close()
        await self.close_server_scope()

    async def close_server_scope(self) -> None:
        """Clean up the server-scoped providers (``Depends(..., scope="server")``), last made
        first; a later request makes them anew. ``McpHttpApp``'s shutdown calls it."""
        typed = sys.modules.get("mcp_sse_server.engine.typed")  # (loaded only where typed functions are)
        if typed is not None:
            await typed.close_server_scope(self)

    def _session(self) -> ServerSession:
        """The session of the request being served, else the server's one session (see the class docstring)."""
        session = self._own_session()
        if session is None:
            raise RuntimeError(f"{self.name} is not connected: it has no session now")
        return session

    def _own_session(self) -> ServerSession | None:
        """The session of the request being served; outside a request the server's one session
        (None when it has ended or not begun). RuntimeError once the server has served several."""
        context = current_context.get()
        if context is not None:
            owner = context.session
            if isinstance(owner, ServerSession) and (owner.server is self or self._mounted_in is not None):
                return owner
        if self._sessions_served > 1:
            raise RuntimeError(
                f"{self.name} has served {self._sessions_served} sessions: outside a request, name the session "
                "(one of server.sessions, or context.session captured inside a handler), or send to every "
                "session on purpose with server.broadcast_log"
            )
        return next(iter(self._sessions), None)

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The current session's client info (see the class docstring for which session)."""
        return self._session().client_info

    @property
    def client_capabilities(self) -> dict[str, Any] | None:
        """The current session's client capabilities."""
        return self._session().client_capabilities

    @property
    def protocol_version(self) -> str | None:
        """The current session's negotiated revision."""
        return self._session().revision

    @property
    def initialized(self) -> bool:
        """True when the current session completed initialize."""
        return self._session().initialized

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send notifications/message to the current request's session; outside a request to the
        server's one session (on the standalone stream over HTTP), dropped when it has ended, and
        RuntimeError once the server has served several (see the class docstring). The session
        drops what is below its level."""
        session = self._own_session()
        if session is not None:
            await session.log(level, data, logger)

    async def broadcast_log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send notifications/message to every session open now, each dropping what is below its level."""
        for session in list(self._sessions):
            await session.log(level, data, logger)

    # --- registration (the registries' own API does the same) ----------------------------

    def add_tool(self, tool: Tool) -> None:
        """Register (or replace) a tool; its schemas are compiled now. ValueError if invalid.

        A name outside the SEP-986 rules (1-128 of ``A-Za-z0-9_-.``) is logged
        as a warning, or refused with ValueError when the server was built with
        ``strict_tool_names=True``.
        """
        self.tool_registry.add(tool)

    def remove_tool(self, name: str) -> bool:
        """Remove a tool; True when it existed."""
        return self.tool_registry.remove(name)

    @property
    def tools(self) -> list[Tool]:
        """The tools, in registration order."""
        return list(self.tool_registry)

    def add_resource(self, resource: Resource) -> None:
        """Register (or replace) a fixed resource; ValueError without a reader or contents."""
        self.resource_registry.add(resource)

    def remove_resource(self, uri: str) -> bool:
        """Remove the fixed resource at ``uri``; True when it existed."""
        return self.resource_registry.remove(uri)

    def add_resource_template(self, template: ResourceTemplate) -> None:
        """Register a template; ValueError if its URI template is outside {var}/{+var}."""
        self.resource_registry.add_template(template)

    def remove_resource_template(self, uri_template: str) -> bool:
        """Remove a resource template; True when it existed."""
        return self.resource_registry.remove_template(uri_template)

    def add_prompt(self, prompt: Prompt) -> None:
        """Register (or replace) a prompt."""
        self.prompt_registry.add(prompt)

    def remove_prompt(self, name: str) -> bool:
        """Remove a prompt; True when it existed."""
        return self.prompt_registry.remove(name)

    def add_skills(self, path: str | os.PathLike[str] | SkillCatalog, *, prefix: str | None = None) -> SkillCatalog:
        """Serve the skills at ``path`` (the skills extension, SEP-2640; rules in ``skills.py``): a
        directory with a ``SKILL.md`` is one skill, any other directory holds skills below it; or
        a ``SkillCatalog`` already loaded (``load_skills``: servers built per session share one).

        Each skill's files become resources ``skill://<prefix/>...<name>/<file>`` (its
        ``SKILL.md`` listed in resources/list), answered from the bytes read now; the
        server declares the extension and answers skills/list, skills/get and
        resources/directory/read. ``prefix`` puts the skills under organisational
        segments (``"acme/billing"``). Returns what was loaded; SkillFormatError (a
        ValueError) names the file when a skill is malformed or a URI is already served.
        """
        if isinstance(path, SkillCatalog):
            if prefix is not None:
                raise ValueError("prefix goes with a path: a SkillCatalog was given its URIs when it was loaded")
            catalog = path
        else:
            catalog = load_skills(path, prefix=prefix)
        resources = self.resource_registry
        for uri in catalog.files:  # (checked first: nothing is registered when one is refused)
            if uri in resources:
                raise SkillFormatError(f"{uri} is already served as a resource")
        resources.serve_files(self.skill_registry.add(catalog).files)
        for skill in catalog.skills:
            skill_md = catalog.files[skill.uri]
            resources.add(
                Resource(
                    skill.uri,
                    skill.name,
                    description=skill.description,
                    mime_type=skill_md.mime_type,
                    size=len(skill_md.data),
                    contents=skill_md.contents(),
                )
            )
        return catalog

    @property
    def skills(self) -> SkillCatalog:
        """The skills this server serves (``add_skills``)."""
        return self.skill_registry.catalog

    async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        """Answers calls to tools registered without a handler, in a subclass that overrides it
        (MemoryServer does); a tool without a handler is refused at registration otherwise."""
        raise McpError(INTERNAL_ERROR, f"Tool {name} has no handler")

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        """The scopes a bearer token needs for this request, beyond the endpoint's own: those of
        the tool, prompt or resource it names (``scopes=``; the rules are in ``scopes.py``), a
        mounted server's included."""
        mounts = self._mounts
        if mounts is not None:  # (what a child registers with scopes later counts too)
            return needed(method, params, mounts.scopes_of)
        if not self._scoped:
            return NO_SCOPES  # most servers: nothing registered with scopes
        return needed(method, params, self._scopes_of)

    def _scopes_of(self, kind: Kind, key: str) -> Collection[str]:
        if kind == "tool":
            return self.tool_registry.scopes_of(key)
        if kind == "prompt":
            return self.prompt_registry.scopes_of(key)
        if kind == "template":
            return self.resource_registry.template_scopes(key)
        return self.resource_registry.scopes_of(key)

    # --- change notifications --------------------------------------------------------------

    def _list_changed(self, method: str) -> None:
        """The registries' change hook: tell every ready session and every listener."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            home = self._loop
            if home is not None and not home.is_closed():
                # A change made from a worker thread (a sync handler): announced on the server's loop.
                home.call_soon_threadsafe(self._list_changed, method)
            return  # else registration before serving: nobody can be told yet
        for session in self._sessions:
            session.notify_soon(method)
        bus = self._event_bus
        if bus is not None:  # someone listens (subscriptions/listen made it)
            kind = method.split("/")[1]  # notifications/<kind>/list_changed
            in_background(bus.publish({"kind": kind}))

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri``, and every listener watching it, that it changed."""
        if self._mounted_in is not None:  # served through the parent: its sessions, the front URI
            return await self._mounted_in.parent.notify_resource_updated(self._mounted_in.front("resource", uri))
        for session in list(self._sessions):
            if session.is_subscribed(uri):
                await session.connection.notify("notifications/resources/updated", {"uri": uri})
        if self._event_bus is not None:
            await self._event_bus.publish({"kind": "resource", "uri": uri})

    async def notify_resource_list_changed(self) -> None:
        """Tell every ready session, and every listener, that the resource list changed."""
        for session in list(self._sessions):
            if session.ready:
                await session.connection.notify("notifications/resources/list_changed")
        if self._event_bus is not None:
            await self._event_bus.publish({"kind": "resources"})

    # --- what the deployment shares ---------------------------------------------------------

    @property
    def request_state(self) -> RequestStateSealer:
        """Seals the ``requestState`` of 2026-07-28 input_required rounds: the deployment's key ring
        (``request_state.deployment_sealer``) unless one was given."""
        sealer = self._request_state
        if sealer is None:
            from .request_state import deployment_sealer  # cryptography loads when first needed

            sealer = self._request_state = deployment_sealer()
        return sealer

    @property
    def event_bus(self) -> EventBus:
        """Where list changes and resource updates reach ``subscriptions/listen`` (in process unless given)."""
        bus = self._event_bus
        if bus is None:
            bus = self._event_bus = MemoryEventBus()
        return bus

    @property
    def tasks(self) -> TaskRuntime:
        """The runtime of this server's tasks (``tasks.py``): in process unless one was given
        (``McpServer(tasks=...)``, ``use_shared``), made on first use."""
        if self._tasks is None:
            self._tasks = TaskRuntime(MemoryTaskStore())
        return self._tasks

    @property
    def has_task_runtime(self) -> bool:
        """True once this server has its task runtime (given, or made by ``tasks``)."""
        return self._tasks is not None

    def use_shared(
        self,
        *,
        request_state: RequestStateSealer | None = None,
        event_bus: EventBus | None = None,
        tasks: TaskRuntime | None = None,
    ) -> None:
        """Give a server built elsewhere (a ``module:factory`` the CLI serves, say) the
        ``requestState`` key ring, the event bus and the task runtime every server of the
        deployment shares, as the constructor's arguments of the same names would; None leaves
        one unchanged. Only before the server serves anything (RuntimeError after: sealed
        states, listeners and tasks would straddle two)."""
        if self._loop is not None:
            raise RuntimeError("use_shared() must come before the server serves a session or a listener")
        if request_state is not None:
            self._request_state = request_state
        if event_bus is not None:
            self._event_bus = event_bus
        if tasks is not None:
            self._tasks = tasks

    # --- what the server advertises -----------------------------------------------------------

    @property
    def implementation(self) -> dict[str, str]:
        """The server's name and version, as results of 2026-07-28 requests are stamped with."""
        return {"name": self.name, "version": self.version}

    @property
    def capabilities(self) -> dict[str, Any]:
        """What this server advertises, derived from what is registered (a new dict each time)."""
        capabilities: dict[str, Any] = {"logging": {}}
        prompts, resources = self.prompt_registry, self.resource_registry
        if prompts.has_completers or resources.has_completers:
            capabilities["completions"] = {}
        if prompts:
            capabilities["prompts"] = {"listChanged": True}
        if resources:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if self.tool_registry:
            capabilities["tools"] = {"listChanged": True}
        if self.skill_registry:
            capabilities["extensions"] = {SKILLS_EXTENSION: {"directoryRead": True}}
        if self._mounts is not None:
            capabilities = self._mounts.capabilities(capabilities)
        if "_apps" in self.__dict__ and self._check_apps():  # MCP Apps (apps.py rules 4 and 5)
            capabilities["extensions"] = {**capabilities.get("extensions", {}), APPS_EXTENSION: {}}
        return capabilities

    @property
    def tasks_declared(self) -> bool:
        """True when some tool may run as a task: the server then declares tasks (2025-11-25's
        ``capabilities.tasks``, the Tasks extension in 2026-07-28's ``server/discover``)."""
        return self.tool_registry.tasks_declared or (self._mounts is not None and self._mounts.tasks_declared)
