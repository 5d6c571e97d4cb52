"""McpServer: a server defined once (registries, validators, capabilities) and its method handlers.

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
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import inspect
import logging
import os
import re
import warnings
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeVar, overload

import orjson

from . import downlevel, transports, versions
from .background import in_background
from .context import LOG_LEVELS, RequestContext, current_context
from .elicitation_schema import check_elicitation_schema
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    McpError,
)
from .memory_stores import MemoryEventBus, MemoryTaskStore
from .records import SessionRecord
from .schema import SchemaValidator
from .scopes import NO_SCOPES, Kind, check_scopes, needed
from .session import Handler, ServerSession
from .skill_format import SKILLS_EXTENSION, SkillFormatError
from .skills import NO_SKILLS, SkillCatalog, load_skills
from .stateless import RequestSession, StatelessEndpoint, StatelessSwitch
from .stateless_meta import SUBSCRIPTION_ID, CachePolicy, MirroredHeader, mirrored_headers
from .stores import EventBus
from .tasks import TASKS_EXTENSION, TaskRuntime, declares_tasks, missing_tasks_extension
from .transport import Transport
from .types import (
    Annotations,
    BlobResourceContents,
    CallToolResult,
    Completer,
    CompleteRequest,
    CompleteResult,
    GetPromptResult,
    Icon,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    TaskStarts,
    TaskSupport,
    TemplateLister,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from .uri_template import UriTemplate
from .versions import Revision

if TYPE_CHECKING:
    from .request_state import RequestStateSealer

__all__ = ["McpServer", "check_elicitation_schema", "check_tool_name"]

logger = logging.getLogger("mcp_sse_server")

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


# JSON-RPC method -> the McpServer method serving it (looked up on the instance, so overrides count).
_METHOD_NAMES: Final = {
    "initialize": "_initialize",
    "ping": "_ping",
    "tools/list": "_list_tools",
    "tools/call": "_call_tool",
    "resources/list": "_list_resources",
    "resources/templates/list": "_list_templates",
    "resources/read": "_read_resource",
    "resources/subscribe": "_subscribe",
    "resources/unsubscribe": "_unsubscribe",
    "prompts/list": "_list_prompts",
    "prompts/get": "_get_prompt",
    "completion/complete": "_complete",
    "logging/setLevel": "_set_level",
    "server/discover": "_discover",
    "subscriptions/listen": "_listen",
    "tasks/get": "_get_task",
    "tasks/result": "_task_result",
    "tasks/list": "_list_tasks",
    "tasks/update": "_update_task",
    "tasks/cancel": "_cancel_task",
    "skills/list": "_list_skills",
    "skills/get": "_get_skill",
    "resources/directory/read": "_read_directory",
}

# subscriptions/listen: the kind of a list-changed event -> the filter flag that asks for it.
_LISTEN_FLAGS: Final = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


async def _call(function: Callable[..., Any], is_async: bool, *args: Any) -> Any:
    """Run a user callback: async ones on the loop, sync ones in a worker thread."""
    if is_async:
        return await function(*args)
    result = await asyncio.to_thread(function, *args)
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine
        result = await result
    return result


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


def _is_async(function: Callable[..., Any]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - objects with an async __call__
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


class _RegisteredTool:
    """A tool as registered: its validators compiled and its tools/list entries built, once.

    ``wire`` is the entry for sessions before 2025-11-25, ``wire_icons`` the one
    with icons (the same object when the tool has none).
    """

    __slots__ = ("headers", "in_thread", "input", "is_async", "output", "tasks", "tool", "wire", "wire_icons")

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
        self.is_async = handler is not None and _is_async(handler)
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


def _check_scopes(what: str, scopes: Collection[str]) -> None:
    """ValueError naming ``what`` for scopes that are not OAuth scope tokens."""
    if scopes:
        try:
            check_scopes(scopes)
        except ValueError as error:
            raise ValueError(f"{what}: {error}") from None


def _params_str(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise McpError(INVALID_PARAMS, f'Missing or invalid "{key}": expected a string')
    return value


DEFAULT_SERVER_VERSION: Final = "0.1.0"
"""The ``serverInfo.version`` of a server built without one."""

_Factory = TypeVar("_Factory", bound=Callable[[], "McpServer"])
_Function = TypeVar("_Function", bound=Callable[..., Any])
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


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _session_call(
    method: Callable[Concatenate[ServerSession, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[McpServer, _P], Coroutine[Any, Any, _R]]:
    """``McpServer.<name>``: ``ServerSession.<name>`` on the current session (see ``McpServer``),
    with a DeprecationWarning pointing at ``context.session``. The signature, overloads included,
    is the session's: it is written once, in session.py."""
    name = method.__name__

    @functools.wraps(method)
    def call(server: McpServer, /, *args: _P.args, **kwargs: _P.kwargs) -> Coroutine[Any, Any, _R]:
        # Warned when called, not when awaited: the warning then names the caller's line.
        warnings.warn(
            f"McpServer.{name}() is deprecated: call context.session.{name}() on the request's session "
            "(or on one of server.sessions outside a request)",
            DeprecationWarning,
            stacklevel=2,
        )
        return server._on_session(method, *args, **kwargs)

    call.__qualname__ = f"McpServer.{name}"
    call.__doc__ = (
        f"Deprecated: ``context.session.{name}(...)``. ``ServerSession.{name}`` on the current "
        "session (the request's, else the server's one session; see the class docstring)."
    )
    return call


class McpServer:
    """An MCP server, defined once, serving every session connected to it.

    Register tools, resources, resource templates and prompts, then connect
    transports (``await server.connect(transport)``, once per client) or hand
    the server to ``McpHttpServer.bind``, ``McpHttpApp``, ``serve_stdio`` or
    ``InMemoryClient``. Capabilities are advertised from what is registered;
    logging is always advertised. With ``page_size`` set, list results are
    paged with opaque cursors.

    Per-session calls (``log``, ``client_capabilities``, ...; and the
    deprecated ``create_message``, ``elicit``, ``elicit_url``, ``list_roots``
    and ``ping``: call those on ``context.session``) act on the session of the
    request being served. Outside a request (a background task, say) they act
    on the server's one session only while it has never had another: a server
    that has served several sessions raises RuntimeError there, so that nothing
    meant for one client reaches another by accident. Name the session
    (a ``ServerSession`` from ``sessions``, or ``context.session``), or send
    to every session on purpose with ``broadcast_log``.
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
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be a positive integer or None")
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.page_size = page_size
        # serverInfo members of revision 2025-11-25, sent only to sessions at it or later
        self.icons = list(icons) if icons is not None else None
        self.description = description
        self.website_url = website_url
        self.strict_tool_names = strict_tool_names
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
        self._tables: dict[str | None, dict[str, Handler]] = {}
        self._tools: dict[str, _RegisteredTool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, tuple[UriTemplate, ResourceTemplate]] = {}
        self._prompts: dict[str, Prompt] = {}
        self._scoped: set[tuple[Kind, str]] = set()  # the entries registered with scopes
        # Wire lists built once per revision (name) and collection; dropped when the collection changes.
        self._lists: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._skills = NO_SKILLS
        for path in skills:
            self.add_skills(path)

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
        self._loop = asyncio.get_running_loop()
        switch = self._switch
        if switch is None:  # one for every session: a session holds only a reference to it
            switch = self._switch = StatelessSwitch(StatelessEndpoint(self))
        session = ServerSession(self, transport, record, reinitialize=reinitialize, before_initialize=switch)
        self._sessions.add(session)
        self._sessions_served += 1
        return session

    def session_ended(self, session: ServerSession) -> None:
        """Called by a session when its connection closes: the server forgets it."""
        self._sessions.discard(session)

    @property
    def sessions(self) -> tuple[ServerSession, ...]:
        """The sessions open now."""
        return tuple(self._sessions)

    async def close(self) -> None:
        """Close every session: pending server-to-client calls fail, running handlers are cancelled."""
        for session in list(self._sessions):
            await session.close()

    def handlers_for(self, revision: Revision | None) -> dict[str, Handler]:
        """The method table a session of ``revision`` is served from (None: every method), built once."""
        key = revision.name if revision is not None else None
        table = self._tables.get(key)
        if table is None:
            table = {
                method: getattr(self, name)
                for method, name in _METHOD_NAMES.items()
                if revision is None or method in revision.methods
            }
            if not downlevel.current(revision):
                # An older revision's results are cut down to it (downlevel.py): its table, not the
                # request path of the newer ones, pays for that.
                assert revision is not None
                for method, shape in (("tools/call", downlevel.tool_result), ("prompts/get", downlevel.prompt_result)):
                    table[method] = _shaped(table[method], shape, revision)
            self._tables[key] = table
        return table

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
            if isinstance(owner, ServerSession) and owner.server is self:
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

    # --- registration ------------------------------------------------------------

    def add_tool(self, tool: Tool) -> None:
        """Register (or replace) a tool; its schemas are compiled now. ValueError if invalid.

        A name outside the SEP-986 rules (1-128 of ``A-Za-z0-9_-.``) is logged
        as a warning, or refused with ValueError when the server was built with
        ``strict_tool_names=True``.
        """
        problem = check_tool_name(tool.name)
        if problem is not None:
            if self.strict_tool_names:
                raise ValueError(f"Tool {tool.name!r}: {problem}")
            logger.warning("%s: clients may refuse or rename it", problem)
        registered = _RegisteredTool(tool)  # the schemas first: their errors say the most
        _check_scopes(f"Tool {tool.name!r}", tool.scopes)
        self._mark_scoped("tool", tool.name, tool.scopes)
        if tool.handler is None:
            if type(self).on_tool_call is McpServer.on_tool_call:
                raise ValueError(f"Tool {tool.name!r} has no handler (and this server does not override on_tool_call)")
        else:
            _check_handler(tool.name, tool.handler)
        self._tools[tool.name] = registered
        self._forget("tools")
        self._list_changed("notifications/tools/list_changed")

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

    def remove_tool(self, name: str) -> bool:
        """Remove a tool; True when it existed."""
        removed = self._tools.pop(name, None) is not None
        self._scoped.discard(("tool", name))
        if removed:
            self._forget("tools")
            self._list_changed("notifications/tools/list_changed")
        return removed

    def _forget(self, collection: str) -> None:
        """Drop the cached wire lists of ``collection`` (every revision)."""
        for key in [key for key in self._lists if key[0] == collection]:
            del self._lists[key]

    def _listing(self, collection: str, revision: Revision | None) -> list[dict[str, Any]]:
        """``collection``'s wire list for sessions of ``revision``, built on first use."""
        protocol = revision if revision is not None else versions.LATEST
        key = (collection, protocol.name)
        items = self._lists.get(key)
        if items is None:
            icons = protocol.icons
            if collection == "tools":
                items = [entry.wire_icons if icons else entry.wire for entry in self._tools.values()]
                if protocol.core_tasks:  # each task tool says so (the extension has no such field)
                    items = [
                        {**item, "execution": {"taskSupport": entry.tasks}} if entry.tasks is not None else item
                        for item, entry in zip(items, self._tools.values(), strict=True)
                    ]
            elif collection == "resources":
                items = [resource.info().to_dict(icons) for resource in self._resources.values()]
            elif collection == "resourceTemplates":
                items = [template.to_dict(icons) for _, template in self._templates.values()]
            else:
                items = [prompt.to_dict(icons) for prompt in self._prompts.values()]
            if not downlevel.current(protocol):
                items = [downlevel.listed(item, protocol) for item in items]
            self._lists[key] = items
        return items

    def mirrored_headers(self, tool_name: str) -> tuple[MirroredHeader, ...]:
        """The arguments of a tool that 2026-07-28 clients also send as ``Mcp-Param-*`` headers."""
        entry = self._tools.get(tool_name)
        return entry.headers if entry is not None else ()

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        """The scopes a bearer token needs for this request, beyond the endpoint's own: those of
        the tool, prompt or resource it names (``scopes=``; the rules are in ``scopes.py``)."""
        if not self._scoped:
            return NO_SCOPES  # most servers: nothing registered with scopes
        return needed(method, params, self._scopes_of)

    def _mark_scoped(self, kind: Kind, key: str, scopes: Collection[str]) -> None:
        if scopes:
            self._scoped.add((kind, key))
        else:
            self._scoped.discard((kind, key))

    def _scopes_of(self, kind: Kind, key: str) -> Collection[str]:
        if kind == "tool":
            entry = self._tools.get(key)
            return entry.tool.scopes if entry is not None else ()
        if kind == "prompt":
            prompt = self._prompts.get(key)
            return prompt.scopes if prompt is not None else ()
        if kind == "template":
            found = self._templates.get(key)
            return found[1].scopes if found is not None else ()
        resource = self._resources.get(key)  # resolved as _read_resource reads it
        if resource is not None:
            return resource.scopes
        for matcher, template in self._templates.values():
            if matcher.match(key) is not None:
                return template.scopes
        return ()

    def _visible(
        self, kind: Kind, key: str, items: list[dict[str, Any]], context: RequestContext
    ) -> list[dict[str, Any]]:
        """``items`` without the entries the request's token lacks the scopes for (rule 3 of
        ``scopes.py``; all of them without a token: a server without authorization checks none)."""
        token = context.auth
        if token is None:
            return items
        granted, scopes_of = token.scopes, self._scopes_of
        return [item for item in items if granted.issuperset(scopes_of(kind, item[key]))]

    @property
    def tools(self) -> list[Tool]:
        return [entry.tool for entry in self._tools.values()]

    def add_resource(self, resource: Resource) -> None:
        if resource.reader is None and resource.contents is None:
            raise ValueError(f"Resource {resource.uri!r} needs a reader or fixed contents")
        _check_scopes(f"Resource {resource.uri!r}", resource.scopes)
        self._mark_scoped("resource", resource.uri, resource.scopes)
        self._resources[resource.uri] = resource
        self._forget("resources")
        self._list_changed("notifications/resources/list_changed")

    def remove_resource(self, uri: str) -> bool:
        removed = self._resources.pop(uri, None) is not None
        self._scoped.discard(("resource", uri))
        if removed:
            self._forget("resources")
            self._list_changed("notifications/resources/list_changed")
        return removed

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
        for uri in catalog.files:  # (checked first: nothing is registered when one is refused)
            if uri in self._resources:
                raise SkillFormatError(f"{uri} is already served as a resource")
        self._skills = self._skills.merged(catalog)
        for skill in catalog.skills:
            skill_md = catalog.files[skill.uri]
            self.add_resource(
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
        return self._skills

    def add_resource_template(self, template: ResourceTemplate) -> None:
        """Register a template; ValueError if its URI template is outside {var}/{+var}."""
        _check_scopes(f"Resource template {template.uri_template!r}", template.scopes)
        self._mark_scoped("template", template.uri_template, template.scopes)
        self._templates[template.uri_template] = (UriTemplate(template.uri_template), template)
        self._forget("resourceTemplates")
        self._list_changed("notifications/resources/list_changed")

    def remove_resource_template(self, uri_template: str) -> bool:
        removed = self._templates.pop(uri_template, None) is not None
        self._scoped.discard(("template", uri_template))
        if removed:
            self._forget("resourceTemplates")
            self._list_changed("notifications/resources/list_changed")
        return removed

    def add_prompt(self, prompt: Prompt) -> None:
        _check_scopes(f"Prompt {prompt.name!r}", prompt.scopes)
        self._mark_scoped("prompt", prompt.name, prompt.scopes)
        self._prompts[prompt.name] = prompt
        self._forget("prompts")
        self._list_changed("notifications/prompts/list_changed")

    def remove_prompt(self, name: str) -> bool:
        removed = self._prompts.pop(name, None) is not None
        self._scoped.discard(("prompt", name))
        if removed:
            self._forget("prompts")
            self._list_changed("notifications/prompts/list_changed")
        return removed

    def _list_changed(self, method: str) -> None:
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

    @property
    def implementation(self) -> dict[str, str]:
        """The server's name and version, as results of 2026-07-28 requests are stamped with."""
        return {"name": self.name, "version": self.version}

    @property
    def capabilities(self) -> dict[str, Any]:
        """What this server advertises, derived from what is registered."""
        capabilities: dict[str, Any] = {"logging": {}}
        if any(prompt.completer for prompt in self._prompts.values()) or any(
            template.completer for _, template in self._templates.values()
        ):
            capabilities["completions"] = {}
        if self._prompts:
            capabilities["prompts"] = {"listChanged": True}
        if self._resources or self._templates:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if self._tools:
            capabilities["tools"] = {"listChanged": True}
        if self._skills:
            capabilities["extensions"] = {SKILLS_EXTENSION: {"directoryRead": True}}
        return capabilities

    # --- lifecycle -------------------------------------------------------------------

    async def _initialize(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        requested = _params_str(params, "protocolVersion")
        client_info = params.get("clientInfo")
        if not isinstance(client_info, dict) or not isinstance(client_info.get("name"), str):
            raise McpError(INVALID_PARAMS, 'Missing or invalid "clientInfo": expected an object with a "name"')
        capabilities = params.get("capabilities", {})
        if not isinstance(capabilities, dict):
            raise McpError(INVALID_PARAMS, 'Invalid "capabilities": expected an object')
        client_info = dict(client_info)
        if not isinstance(client_info.get("version"), str):
            client_info["version"] = "0.0.0"  # several clients omit it; see README "Known deviations"
        revision = versions.negotiate(requested)
        context.session.start(revision, client_info, capabilities)
        server_info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            server_info["title"] = self.title
        if revision.icons:
            if self.description is not None:
                server_info["description"] = self.description
            if self.icons:
                server_info["icons"] = [icon.to_dict() for icon in self.icons]
            if self.website_url is not None:
                server_info["websiteUrl"] = self.website_url
        capabilities = self.capabilities
        if revision.core_tasks and self.tasks_declared:
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        result: dict[str, Any] = {
            "protocolVersion": revision.name,
            "capabilities": downlevel.capabilities(capabilities, revision),
            "serverInfo": downlevel.server_info(server_info, revision),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    async def _ping(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return {}

    async def _set_level(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        level = params.get("level")
        if not isinstance(level, str):
            raise McpError(INVALID_PARAMS, f'Missing or invalid "level"; expected one of: {", ".join(LOG_LEVELS)}')
        context.session.set_log_level(level)
        return {}

    # --- pagination --------------------------------------------------------------

    def _page(self, collection: str, key: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            start = self._decode_cursor(collection, cursor, len(items))
        if self.page_size is None:
            return {key: items}
        end = start + self.page_size
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            token = orjson.dumps({"c": collection, "o": end})
            result["nextCursor"] = base64.urlsafe_b64encode(token).decode("ascii")
        return result

    def _decode_cursor(self, collection: str, cursor: Any, size: int) -> int:
        invalid = McpError(INVALID_PARAMS, f"Invalid cursor for {collection}: start over without a cursor")
        if self.page_size is None or not isinstance(cursor, str) or len(cursor) > 200:
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

    # --- tools -------------------------------------------------------------------

    def _require(self, capability: str) -> None:
        offered = {
            "tools": bool(self._tools),
            "resources": bool(self._resources or self._templates),
            "prompts": bool(self._prompts),
        }.get(capability)
        if offered is None:
            offered = capability in self.capabilities
        if not offered:
            raise McpError(METHOD_NOT_FOUND, f"This server does not offer {capability}")

    def _task_call(
        self, name: str, entry: _RegisteredTool, params: dict[str, Any], context: RequestContext
    ) -> dict[str, Any] | None:
        """Whether this call runs as a task (tasks.py rule 1): None when inline, else the core
        call's ``params.task`` (an empty one for the extension); the errors the rule names."""
        if context.tool_task is not None:  # (the task's own run of the call)
            return None
        session = context.session
        if type(session) is RequestSession:
            if entry.tasks is None:
                return None  # (a "task" member is not part of this revision: ignored)
            if declares_tasks(session.record.client_capabilities):
                return {}
            if entry.tasks == "required":
                raise missing_tasks_extension(f"Tool {name}")
            return None
        protocol = session.protocol
        if protocol is not None and protocol.core_tasks and self.tasks_declared:
            requested = params.get("task")
            if requested is not None:
                if entry.tasks is None:
                    raise McpError(METHOD_NOT_FOUND, f'Tool {name} does not run as a task: call it without "task"')
                if type(requested) is not dict:
                    raise McpError(INVALID_PARAMS, 'Invalid "task": expected an object (with an optional "ttl")')
                return requested
            if entry.tasks == "required":
                raise McpError(METHOD_NOT_FOUND, f'Tool {name} runs only as a task: call it with "task"')
            return None
        if entry.tasks == "required":
            raise McpError(
                METHOD_NOT_FOUND,
                f"Tool {name} runs only as a task, which a {session.record.revision} session cannot start",
            )
        return None

    @property
    def tasks_declared(self) -> bool:
        """True when some tool may run as a task: the server then declares tasks (2025-11-25's
        ``capabilities.tasks``, the Tasks extension in 2026-07-28's ``server/discover``)."""
        return any(entry.tasks is not None for entry in self._tools.values())

    async def _list_tools(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("tools")
        items = self._visible("tool", "name", self._listing("tools", context.session.protocol), context)
        return self._page("tools", "tools", items, params)

    async def _call_tool(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise McpError(INVALID_PARAMS, 'Missing or invalid "name": expected the tool name as a string')
        entry = self._tools.get(name)
        if entry is None:
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
        if entry.tasks is not None or "task" in params:  # (a task tool, or a call asking for a task: tasks.py rule 1)
            task = self._task_call(name, entry, params, context)
            if task is not None:
                return await self.tasks.call(
                    name, entry.tool.task_starts, context, lambda: self._call_tool(params, context), task
                )
        # The handler is awaited right here (no helper coroutines): this is every tool call's path.
        handler = entry.tool.handler
        value: Any
        try:
            if handler is None:
                value = await self.on_tool_call(name, arguments, context)
            elif entry.is_async:
                value = await handler(arguments, context)  # type: ignore[misc]
            elif entry.in_thread:
                value = await _call(handler, False, arguments, context)
            else:
                value = handler(arguments, context)
                if inspect.isawaitable(value):
                    value = await value
        except (McpError, asyncio.CancelledError):
            raise
        except Exception:
            logger.exception("tool %s failed", name)
            value = CallToolResult.error(f"Tool {name} failed with an internal error")
        result = value if type(value) is CallToolResult else _as_tool_result(value)
        if entry.output is not None:
            result = self._check_output(entry, result)
        out = result.to_dict()
        if _has_link_icons(result.content):
            _drop_link_icons(out["content"], context)
        return out

    async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        """Called for tools registered without a handler; MemoryServer overrides it."""
        raise McpError(INTERNAL_ERROR, f"Tool {name} has no handler")

    def _check_output(self, entry: _RegisteredTool, result: CallToolResult) -> CallToolResult:
        if entry.output is None or result.is_error:
            return result
        name = entry.tool.name
        if result.structured_content is None:
            logger.error("tool %s declares an outputSchema but returned no structuredContent", name)
            raise McpError(INTERNAL_ERROR, f"Tool {name} returned no structured content for its output schema")
        problem = entry.output.first_error(result.structured_content, noun="field")
        if problem is not None:
            logger.error("tool %s returned structuredContent that breaks its outputSchema: %s", name, problem)
            raise McpError(
                INTERNAL_ERROR, f"Tool {name} returned structured content that does not match its output schema"
            )
        return result

    # --- resources ---------------------------------------------------------------

    async def _list_resources(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("resources")
        protocol = context.session.protocol
        items = self._visible("resource", "uri", self._listing("resources", protocol), context)
        listers = [template for _, template in self._templates.values() if template.lister is not None]
        token = context.auth
        if token is not None:  # a template's listed resources need its scopes
            listers = [template for template in listers if token.scopes.issuperset(template.scopes)]
        if listers:
            items = list(items)  # listed entries are added to a copy: the cached fixed entries stay as they are
        icons = protocol is None or protocol.icons
        failed: list[str] = []
        for template in listers:
            assert template.lister is not None
            try:
                listed = await _call(template.lister, _is_async(template.lister))
                items.extend(downlevel.listed(info.to_dict(icons), protocol) for info in listed)
            except Exception:
                logger.exception("lister of resource template %s failed", template.name)
                failed.append(template.name)
        result = self._page("resources", "resources", items, params)
        if failed:
            result["_meta"] = {"degraded": True, "failedListers": failed}
        return result

    async def _list_templates(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("resources")
        items = self._visible(
            "template", "uriTemplate", self._listing("resourceTemplates", context.session.protocol), context
        )
        return self._page("resourceTemplates", "resourceTemplates", items, params)

    async def _read_resource(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        uri = _params_str(params, "uri")
        resource = self._resources.get(uri)
        if resource is not None:
            if resource.reader is None:
                assert resource.contents is not None
                return {"contents": [resource.contents.to_dict()]}
            value = await _call(resource.reader, _is_async(resource.reader), uri, context)
            return _as_read_result(uri, value, resource.mime_type).to_dict()
        skill_file = self._skills.files.get(uri)
        if skill_file is not None:
            return {"contents": [skill_file.contents().to_dict()]}
        for matcher, template in self._templates.values():
            variables = matcher.match(uri)
            if variables is not None:
                value = await _call(template.reader, _is_async(template.reader), uri, variables, context)
                return _as_read_result(uri, value, template.mime_type).to_dict()
        raise McpError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})

    async def _subscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("resources")
        context.session.subscribe(_params_str(params, "uri"))
        return {}

    async def _unsubscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("resources")
        context.session.unsubscribe(_params_str(params, "uri"))
        return {}

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri``, and every listener watching it, that it changed."""
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

    # --- the skills extension (skills.py) ------------------------------------------------

    def _require_skills(self) -> SkillCatalog:
        if not self._skills:
            raise McpError(METHOD_NOT_FOUND, "This server does not offer skills")
        return self._skills

    async def _list_skills(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return self._page("skills", "skills", self._require_skills().entries(), params)

    async def _get_skill(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        catalog = self._require_skills()
        uri = _params_str(params, "uri")
        skill = catalog.skill(uri)
        if skill is None:
            raise McpError(INVALID_PARAMS, f"Not the SKILL.md of a skill served here: {uri}", {"uri": uri})
        return {"skill": skill.entry}

    async def _read_directory(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        catalog = self._require_skills()
        uri = _params_str(params, "uri")
        children = catalog.directories.get(uri)
        if children is None:
            raise McpError(INVALID_PARAMS, f"Not a directory of a skill served here: {uri}", {"uri": uri})
        return self._page("directory", "resources", list(children), params)

    # --- the stateless revision's own methods ----------------------------------------

    async def _discover(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        capabilities = self.capabilities
        if self.tasks_declared:  # (never in a session's initialize)
            capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
        result: dict[str, Any] = {
            "supportedVersions": [revision.name for revision in versions.STATELESS],
            "capabilities": capabilities,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    async def _listen(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """subscriptions/listen: the acknowledgement, then the requested notifications until the
        client goes away (the request is cancelled); each carries the subscription id."""
        wanted = params.get("notifications", {})
        if type(wanted) is not dict:
            raise McpError(INVALID_PARAMS, 'Invalid "notifications": expected an object of filters')
        capabilities = self.capabilities
        honoured: dict[str, Any] = {}
        for capability, flag in _LISTEN_FLAGS.items():
            value = wanted.get(flag)
            if value is not None and type(value) is not bool:
                raise McpError(INVALID_PARAMS, f'Invalid "notifications.{flag}": expected a boolean')
            if value and capability in capabilities:
                honoured[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if uris is not None:
            if type(uris) is not list or not all(isinstance(uri, str) for uri in uris):
                raise McpError(INVALID_PARAMS, 'Invalid "notifications.resourceSubscriptions": expected URIs')
            if "resources" in capabilities:
                honoured["resourceSubscriptions"] = list(uris)
        if "taskIds" in wanted:
            honoured["taskIds"] = await self.tasks.listened(wanted["taskIds"], context)
        subscription = {SUBSCRIPTION_ID: context.request_id}
        self._loop = asyncio.get_running_loop()
        events = self.event_bus.subscribe()  # before the acknowledgement: nothing after it is missed
        followers: list[asyncio.Task[None]] = []
        try:
            await context.session.notify(
                "notifications/subscriptions/acknowledged", {"_meta": subscription, "notifications": honoured}
            )

            async def task_changed(task: dict[str, Any]) -> None:
                await context.session.notify("notifications/tasks", {**task, "_meta": subscription})

            for task_id in honoured.get("taskIds", ()):
                followers.append(asyncio.get_running_loop().create_task(self.tasks.follow(task_id, task_changed)))
            kinds = {kind for kind, flag in _LISTEN_FLAGS.items() if honoured.get(flag)}
            watched = set(honoured.get("resourceSubscriptions", ()))
            async for event in events:
                kind = event.get("kind")
                if kind == "resource":
                    if event.get("uri") in watched:
                        await context.session.notify(
                            "notifications/resources/updated", {"_meta": subscription, "uri": event["uri"]}
                        )
                elif kind in kinds:
                    await context.session.notify(f"notifications/{kind}/list_changed", {"_meta": subscription})
        finally:
            for follower in followers:
                follower.cancel()
            await events.aclose()  # type: ignore[attr-defined]
        return {"_meta": subscription}

    # --- tasks (tasks.py: the core methods for a 2025-11-25 session, else the extension's) ---

    def _task_methods(self, context: RequestContext) -> TaskRuntime:
        """The task runtime, for a request that may reach it (-32601 on a session of a server
        that declared no tasks: the methods are not there for it)."""
        if type(context.session) is not RequestSession and not self.tasks_declared:
            raise McpError(METHOD_NOT_FOUND, "This server runs no tool as a task: tasks/* are not served")
        return self.tasks

    def _core(self, context: RequestContext) -> bool:
        return type(context.session) is not RequestSession

    async def _get_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        tasks = self._task_methods(context)
        return await (tasks.core_get if self._core(context) else tasks.get)(params, context)

    async def _task_result(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return await self._task_methods(context).core_result(params, context)

    async def _list_tasks(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return await self._task_methods(context).core_list(params, context)

    async def _update_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return await self.tasks.update(params, context)

    async def _cancel_task(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        tasks = self._task_methods(context)
        return await (tasks.core_cancel if self._core(context) else tasks.cancel)(params, context)

    # --- prompts -----------------------------------------------------------------

    async def _list_prompts(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("prompts")
        items = self._visible("prompt", "name", self._listing("prompts", context.session.protocol), context)
        return self._page("prompts", "prompts", items, params)

    async def _get_prompt(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        name = _params_str(params, "name")
        prompt = self._prompts.get(name)
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if type(arguments) is not dict or not all(isinstance(v, str) for v in arguments.values()):
            raise McpError(INVALID_PARAMS, 'Invalid "arguments": expected an object of string values')
        for argument in prompt.arguments:
            if argument.required and argument.name not in arguments:
                raise McpError(INVALID_PARAMS, f"Missing required argument {argument.name!r} for prompt {name}")
        value = await _call(prompt.handler, _is_async(prompt.handler), arguments, context)
        if isinstance(value, GetPromptResult):
            result = value
        elif isinstance(value, str):
            result = GetPromptResult([PromptMessage.user(value)])
        else:
            result = GetPromptResult(list(value))
        if result.description is None and prompt.description is not None:
            result.description = prompt.description
        out = result.to_dict()
        if _has_link_icons([message.content for message in result.messages]):
            for message in out["messages"]:
                _drop_link_icons([message["content"]], context)
        return out

    # --- completion and logging ----------------------------------------------------

    async def _complete(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        self._require("completions")
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise McpError(INVALID_PARAMS, 'completion/complete needs "ref" and "argument" objects')
        argument_name = argument.get("name")
        argument_value = argument.get("value")
        if not isinstance(argument_name, str) or not isinstance(argument_value, str):
            raise McpError(INVALID_PARAMS, '"argument" needs a string "name" and "value"')
        ref_type = ref.get("type")
        completer: Any
        if ref_type == "ref/prompt":
            target = _params_str(ref, "name")
            prompt = self._prompts.get(target)
            if prompt is None:
                raise McpError(INVALID_PARAMS, f"Unknown prompt: {target}")
            completer = prompt.completer
        elif ref_type == "ref/resource":
            target = _params_str(ref, "uri")
            found = self._templates.get(target)
            if found is None:
                raise McpError(INVALID_PARAMS, f"Unknown resource template: {target}")
            completer = found[1].completer
        else:
            raise McpError(INVALID_PARAMS, 'Invalid "ref.type": expected "ref/prompt" or "ref/resource"')
        if completer is None:
            return CompleteResult([]).to_dict()
        extra = params.get("context")
        known = extra.get("arguments") if isinstance(extra, dict) else None
        request = CompleteRequest(
            ref_type, target, argument_name, argument_value, dict(known) if isinstance(known, dict) else {}
        )
        value = await _call(completer, _is_async(completer), request, context)
        result = value if isinstance(value, CompleteResult) else CompleteResult(list(value))
        return result.to_dict()

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

    # --- calling back into the client: deprecated, use context.session ------------------

    create_message = _session_call(ServerSession.create_message)
    list_roots = _session_call(ServerSession.list_roots)
    elicit = _session_call(ServerSession.elicit)
    elicit_url = _session_call(ServerSession.elicit_url)
    ping = _session_call(ServerSession.ping)

    async def _on_session(
        self,
        method: Callable[Concatenate[ServerSession, _P], Coroutine[Any, Any, _R]],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _R:
        # The session is picked when the call runs, as it always was: a task started inside a
        # request keeps that request's context. Looked up by name, so a session's override counts.
        bound: Callable[_P, Coroutine[Any, Any, _R]] = getattr(self._session(), method.__name__)
        return await bound(*args, **kwargs)


def _shaped(
    handler: Handler, shape: Callable[[dict[str, Any], Revision], dict[str, Any]], revision: Revision
) -> Handler:
    """``handler`` with its results passed through ``shape`` for sessions of ``revision``."""

    async def shaped(params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        return shape(await handler(params, context), revision)

    return shaped


def _has_link_icons(blocks: Sequence[Any]) -> bool:
    """True when a resource link among ``blocks`` carries icons (rare: checked before any revision lookup)."""
    for block in blocks:  # noqa: SIM110 - a loop, no generator frame: every tool call passes here
        if type(block) is ResourceLink and block.icons:
            return True
    return False


def _drop_link_icons(blocks: list[dict[str, Any]], context: RequestContext) -> None:
    """Remove resource links' icons from wire ``blocks`` for sessions before 2025-11-25."""
    protocol = context.session.protocol
    if protocol is not None and protocol.icons:
        return
    for block in blocks:
        if block.get("type") == "resource_link":
            block.pop("icons", None)


def _as_tool_result(value: Any) -> CallToolResult:
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, str):
        return CallToolResult.text(value)
    if isinstance(value, dict):
        return CallToolResult.structured(value)
    raise TypeError(f"a tool handler must return CallToolResult, str or dict, not {type(value).__name__}")


def _as_read_result(uri: str, value: Any, mime_type: str | None) -> ReadResourceResult:
    if isinstance(value, ReadResourceResult):
        return value
    if isinstance(value, str):
        return ReadResourceResult([TextResourceContents(uri, value, mime_type)])
    if isinstance(value, bytes | bytearray):
        return ReadResourceResult([BlobResourceContents.from_bytes(uri, bytes(value), mime_type)])
    if isinstance(value, Sequence):
        contents: list[ResourceContents] = list(value)
        return ReadResourceResult(contents)
    raise TypeError(
        f"a resource reader must return ReadResourceResult, contents, str or bytes, not {type(value).__name__}"
    )
