"""McpClient: one async interface to an MCP server, whatever the transport.

Subclasses only say how to open a transport (``_open``); the handshake,
requests, pagination, progress, cancellation and the handlers for what the
server asks of the client live here, on the same JSON-RPC engine the server
uses.

>>> async def demo(client: McpClient) -> None:  # doctest: +SKIP
...     async with client:
...         tools = await client.list_tools()
...         result = await client.call_tool("add", {"a": 2, "b": 3})
...         print(result.content[0].text)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Final, Literal, TypeAlias, overload

from ..engine import versions
from ..engine.context import RequestContext
from ..engine.jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
)
from ..engine.protocol import Connection, ProgressCallback
from ..engine.stateless_meta import TASKS_EXTENSION
from ..engine.transport import Transport
from ..engine.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    ReadResourceResult,
    ResourceInfo,
    Root,
    Tool,
    call_tool_result_from_dict,
    complete_result_from_dict,
    read_resource_result_from_dict,
    resource_info_from_dict,
    tool_from_dict,
)
from .elicitation import (
    URL_ELICITATION_REQUIRED,
    UrlElicitationRequiredError,
    check_mode,
    complete_answer,
)
from .era_memo import MEMO_SESSION, Identity, forget_era, recall_era, remember_era, skips_probe
from .results import (
    PromptInfo,
    ResourceTemplateInfo,
    get_prompt_result_from_dict,
    prompt_info_from_dict,
    resource_template_info_from_dict,
)
from .skills import Skills
from .stateless import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    HEADER_MISMATCH,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    InputRoundsExceededError,
    StreamLostError,
    UnsupportedProtocolVersionError,
    invalid_x_mcp_header,
    is_stateless_error,
    missing_back_channel,
)
from .subscription import Subscription
from .tasks import TaskHandle

__all__ = [
    "MODES",
    "Era",
    "InputRoundsExceededError",
    "McpClient",
    "SessionExpiredError",
    "Subscription",
    "UnsupportedProtocolVersionError",
    "UrlElicitationRequiredError",
]

logger = logging.getLogger("mcp_sse_server.client")

DEFAULT_REQUEST_TIMEOUT: Final = 300.0
MAX_PAGES: Final = 1000  # a server that never stops paging must not hang the client
DEFAULT_MAX_INPUT_ROUNDS: Final = 10
DEFAULT_PROBE_TIMEOUT: Final = 10.0
# The level asked for when an on_log handler is set and no log_level is given: what a log
# handler is usually for (notices, warnings, errors, and the informational lines), without debug noise.
DEFAULT_LOG_LEVEL: Final = "info"
# mode=: probe for the stateless revision and fall back to a session, only a session, or only the
# stateless revision (named by its date).
MODE_AUTO: Final = "auto"
MODE_SESSION: Final = "session"
MODE_LEGACY: Final = "legacy"  # the name of MODE_SESSION before "session"; kept for one release
MODES: Final = (MODE_AUTO, MODE_SESSION, MODE_LEGACY, *versions.CLIENT_STATELESS)
# Requests that may answer input_required (MRTR); the inputs a server may ask for in one.
_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_STATE_ONLY_DELAYS: Final = (0.05, 0.1, 0.2, 0.25)
# Cacheable list results, and the notification that makes each stale.
_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

SamplingHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
ElicitationHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
LogHandler = Callable[[dict[str, Any]], Any]
ElicitationCompleteHandler = Callable[[dict[str, Any]], Any]
NotificationHandler = Callable[[JsonRpcNotification], Any]


class SessionExpiredError(Exception):
    """The server no longer knows this client's session (HTTP 404); re-initialize."""


Era: TypeAlias = Literal["stateless", "session"]
"""What ``McpClient.era`` holds once connected (before 0.3: "modern" and "legacy")."""

ERA_STATELESS: Final[Era] = "stateless"
ERA_SESSION: Final[Era] = "session"


class McpClient(ABC):
    """The client side of MCP. Use it as an async context manager or call
    ``initialize()`` and ``close()`` yourself.

    Handlers for what the server may ask:
    - ``sampling_handler(params) -> result`` answers sampling/createMessage;
    - ``elicitation_handler(params) -> result`` answers elicitation/create;
    - ``roots`` (a list of ``Root``) answers roots/list;
    - ``on_log(params)`` receives notifications/message, from ``log_level`` up
      (``"info"`` when not given; see below);
    - ``on_elicitation_complete(params)`` receives notifications/elicitation/complete
      (else ``on_notification`` does);
    - ``on_notification(notification)`` receives every other notification.
    Capabilities are declared from which of these are set: an elicitation
    handler declares form mode, and URL mode too with ``elicitation_url=True``
    (the handler then also gets ``{"mode": "url", "url", "elicitationId",
    "message"}``); a sampling handler declares ``sampling.tools`` with
    ``sampling_tools=True`` (it then gets ``tools``/``toolChoice`` and may answer
    with an array of content blocks, passed through as it is).

    Results are typed (``Tool``, ``CallToolResult``, ``ResourceInfo``,
    ``ResourceTemplateInfo``, ``ReadResourceResult``, ``PromptInfo``,
    ``GetPromptResult``, ``CompleteResult``); each of those methods takes
    ``raw=True`` to return the wire form instead, as the server sent it (for a
    list, the items of every page), unparsed: for members this package does not
    model, or a server whose answer the parser refuses (ValueError).

    An elicitation in a mode the client did not declare is refused with
    -32602 without asking the handler. An accepted form answer gets the
    schema's ``default`` for every field the handler left out. A request the
    server refuses until a URL elicitation is done raises
    ``UrlElicitationRequiredError`` (code -32042) listing them.

    Logs: servers send none, or any they like, until the client names a level,
    so a client that wants them asks: ``effective_log_level`` is ``log_level``,
    else ``"info"`` (``DEFAULT_LOG_LEVEL``) when ``on_log`` is set, else None
    (nothing is asked). On a session revision it is sent as
    ``logging/setLevel`` right after ``initialize`` (and after every new
    session) when the server declares the ``logging`` capability; in the
    stateless revision it goes in every request's ``_meta``. Pass
    ``log_level="debug"`` for everything; ``set_log_level`` changes it later.

    Protocol revisions (``mode``): ``"auto"`` (the default) first asks
    ``server/discover`` at 2026-07-28, the stateless revision, and speaks it
    when the server lists it (or answers with an error only such a server
    sends: -32020, -32021, -32022 naming a revision both speak); on anything
    else it performs the ``initialize`` handshake and opens a session.
    ``"session"`` only does that (``"legacy"``, its old name, is kept for
    one release); ``"2026-07-28"`` only speaks that revision. ``era`` says
    which came out (``"stateless"`` or ``"session"``;
    ``stateless`` is True for the former) and ``protocol_version`` the
    revision. A stdio server that the probe breaks (it exits, prints what is
    not JSON-RPC, or stays silent) is started again and asked ``initialize``
    (``StdioClient``). What an ``"auto"`` client found is remembered for this
    process (the era memo, ``client/era_memo.py``; ``remember_era=False``
    opts out): a server remembered as a session server is not probed again.
    In the stateless revision every request carries the version,
    the capabilities above, ``client_info`` and the ``effective_log_level``
    (``set_log_level`` keeps it client-side) in ``_meta``; what the server
    asks of the client comes as ``input_required`` results,
    answered through the same handlers, at most ``max_input_rounds`` (10)
    rounds per call; ``listen()`` receives change notifications; list results
    and discover are cached for the ``ttlMs`` the server allows (``cache``).

    Session fallback (``session_fallback``, on by default): servers of other SDKs that speak
    2026-07-28 may still have handlers that ask the client directly (sampling, elicitation,
    roots) rather than through ``input_required``; at 2026-07-28 that fails and the server says
    so (``stateless.missing_back_channel`` knows their wordings). When a call fails that way,
    the client has a handler for what was asked, and the server also serves the handshake, the
    client opens one session beside its 2026-07-28 connection (``_session_client``: HTTP only)
    and repeats the call there, where the server can reach back; later such failures reuse that
    session, and ``close()`` ends it. A server that refuses the handshake gets no second try:
    the original failure is returned. The repeated call runs the tool a second time from the
    start; ``session_fallback=False`` keeps the failure instead.
    """

    def __init__(
        self,
        *,
        client_name: str = "mcp-sse-server",
        client_version: str = "0.1.0",
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: Sequence[Root] | None = None,
        on_log: LogHandler | None = None,
        on_notification: NotificationHandler | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        elicitation_url: bool = False,
        sampling_tools: bool = False,
        on_elicitation_complete: ElicitationCompleteHandler | None = None,
        mode: str = MODE_AUTO,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        log_level: str | None = None,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
        cache: bool = True,
        session_fallback: bool = True,
        remember_era: bool = True,
    ) -> None:
        if max_input_rounds < 1:
            raise ValueError("max_input_rounds must be at least 1")
        self.mode = mode
        self.max_input_rounds = max_input_rounds
        self.log_level = log_level  # as given; effective_log_level says what is asked for
        self.probe_timeout = probe_timeout
        self.cache = cache
        self.session_fallback = session_fallback
        self.remember_era = remember_era
        self._fallback: McpClient | None = None  # the session of the session fallback, once opened
        self._fallback_refused = False  # the server would not open one: no further attempts
        self._fallback_opening = asyncio.Lock()
        self._owner: McpClient | None = None  # on a fallback session: the client whose handlers answer
        self.era: Era | None = None  # ERA_STATELESS or ERA_SESSION once known; kept across reconnects
        self.discover_result: dict[str, Any] | None = None
        self._cached: dict[tuple[str, str], tuple[float, Any]] = {}
        self._subscriptions: dict[Any, Subscription] = {}
        self.client_info = {"name": client_name, "version": client_version}
        self.sampling_handler = sampling_handler
        self.elicitation_handler = elicitation_handler
        self.roots = list(roots) if roots is not None else None
        self.on_log = on_log
        self.on_notification = on_notification
        self.request_timeout = request_timeout
        self.elicitation_url = elicitation_url
        self.sampling_tools = sampling_tools
        self.on_elicitation_complete = on_elicitation_complete
        self.server_info: dict[str, Any] | None = None
        self.server_capabilities: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.protocol_version: str | None = None
        self.connection: Connection | None = None
        self._tools_cache: list[Tool] | None = None
        self._initialize_result: dict[str, Any] | None = None

    @property
    def mode(self) -> str:
        """``"auto"``, ``"session"`` or a stateless revision (see the class); set to ``"legacy"``,
        it reads ``"session"``."""
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        self._mode = MODE_SESSION if mode == MODE_LEGACY else mode

    # --- what subclasses provide --------------------------------------------------

    @abstractmethod
    async def _open(self) -> Transport:
        """Open the transport to the server."""

    # --- lifecycle ----------------------------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        capabilities: dict[str, Any] = {}
        if self.sampling_handler is not None:
            capabilities["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation_handler is not None:
            capabilities["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        return capabilities

    @property
    def stateless_capabilities(self) -> dict[str, Any]:
        """The capabilities stamped on every request of the stateless revision (same handlers,
        that revision's shape: roots has no listChanged there)."""
        capabilities = self.capabilities
        if "roots" in capabilities:
            capabilities["roots"] = {}
        return capabilities

    @property
    def modern_capabilities(self) -> dict[str, Any]:
        """The old name of ``stateless_capabilities``; kept for one release."""
        return self.stateless_capabilities

    @property
    def effective_log_level(self) -> str | None:
        """The log level this client asks servers for: ``log_level``, else ``DEFAULT_LOG_LEVEL``
        ("info") when an ``on_log`` handler is set, else None (no level is asked for)."""
        if self.log_level is not None:
            return self.log_level
        return DEFAULT_LOG_LEVEL if self.on_log is not None else None

    @property
    def fallback_session(self) -> McpClient | None:
        """The session the session fallback opened (see the class), None until one is needed and
        when the server would not open one."""
        return self._fallback

    @property
    def stateless(self) -> bool:
        """True when this client speaks the stateless revision (2026-07-28) to its server."""
        return self.era == ERA_STATELESS

    @property
    def modern(self) -> bool:
        """The old name of ``stateless``; kept for one release."""
        return self.era == ERA_STATELESS

    @property
    def elicitation_modes(self) -> tuple[str, ...]:
        """The elicitation modes this client declares (none without a handler)."""
        if self.elicitation_handler is None:
            return ()
        return ("form", "url") if self.elicitation_url else ("form",)

    async def initialize(self) -> dict[str, Any]:
        """Open the transport and perform the handshake; returns the InitializeResult.

        On a client that is already initialized and connected this returns the
        handshake's result again without repeating it.
        """
        if self._initialize_result is not None and self.connection is not None and not self.connection.closed:
            return self._initialize_result
        return await self._handshake()

    def _may_probe(self) -> bool:
        """True when this client should ask for the stateless revision before the handshake."""
        return self.mode != MODE_SESSION and self.era != ERA_SESSION

    def _era_identity(self) -> Identity | None:
        """This client's server in the era memo (``client/era_memo.py``); None (the default) for a
        transport whose server has no identity outside this client."""
        return None

    def _memo_identity(self) -> Identity | None:
        """The era memo key this client reads and writes: only ``mode="auto"`` clients with
        ``remember_era`` use the memo."""
        if self.mode != MODE_AUTO or not self.remember_era:
            return None
        return self._era_identity()

    async def _handshake(self) -> dict[str, Any]:
        if self.connection is None or self.connection.closed:
            self.connection = Connection(await self._open(), self)
        self._initialize_result = None
        if not self._may_probe():
            result = await self._initialize()
        else:
            identity = self._memo_identity()
            remembered = recall_era(identity) if identity is not None else None
            if identity is not None and skips_probe(remembered):
                result = await self._initialize_remembered(identity)
            else:
                result = await self._probe_or_initialize(remembered)
        identity = self._memo_identity()
        if identity is not None and self.era is not None:
            spoken = self.protocol_version or versions.CLIENT_STATELESS[-1]
            remember_era(identity, spoken if self.stateless else MEMO_SESSION)
        return result

    async def _initialize_remembered(self, identity: Identity) -> dict[str, Any]:
        """``initialize`` without a probe, for a server the era memo remembers as a session server;
        one that now refuses it naming a stateless revision is forgotten and probed."""
        logger.debug("the server is remembered as a session server; skipping server/discover")
        try:
            return await self._initialize()
        except UnsupportedProtocolVersionError as refusal:
            if not any(name in versions.CLIENT_STATELESS for name in refusal.supported):
                raise
            logger.info("the server remembered as a session server now refuses initialize; probing it again")
            forget_era(identity)
            if self.connection is None or self.connection.closed:
                self.connection = Connection(await self._open(), self)
            return await self._probe_or_initialize(None)

    async def _probe_or_initialize(self, preferred: str | None) -> dict[str, Any]:
        """The probe (at ``preferred`` first, when it is a stateless revision), else ``initialize``."""
        adopted = await self._probe(preferred)
        if adopted is not None:
            return adopted
        stateless = ", ".join(versions.CLIENT_STATELESS)
        logger.debug("the server does not speak %s; falling back to initialize", stateless)
        try:
            return await self._initialize()
        except UnsupportedProtocolVersionError as refusal:
            # The probe got no usable answer (a timeout, say) but the server turns the
            # handshake down naming a revision both speak: ask once more.
            if not any(name in versions.CLIENT_STATELESS for name in refusal.supported):
                raise
            if self.connection is None or self.connection.closed:
                self.connection = Connection(await self._open(), self)
            adopted = await self._probe()
            if adopted is None:
                raise
            return adopted

    async def _send_probe(self, params: dict[str, Any]) -> dict[str, Any]:
        """Send the ``server/discover`` probe (its ``probe_timeout`` applies); its result."""
        return await self._live().request("server/discover", params, timeout=self.probe_timeout)

    async def _recover_from_probe(self, failure: Exception) -> bool:
        """The probe failed with ``failure`` (a TimeoutError or a connection error): True once the
        client holds a fresh connection to speak ``initialize`` on, because the probe is what broke
        the server (stdio overrides this); False (the default) to handle ``failure`` as before. May
        raise the error a forced ``mode`` reports instead."""
        return False

    # --- the stateless revision (2026-07-28) ---------------------------------------------

    def _stamp(
        self, params: dict[str, Any] | None, version: str | None = None, *, tasks: bool = False
    ) -> dict[str, Any]:
        """``params`` with the stateless revision's ``_meta`` envelope (a new dict); ``tasks``:
        declaring the Tasks extension too (``call_tool_task`` and its handle's requests)."""
        stamped = dict(params or {})
        meta = dict(stamped.get("_meta") or {})
        meta[PROTOCOL_VERSION_KEY] = version or self.protocol_version or versions.CLIENT_STATELESS[-1]
        capabilities = self.stateless_capabilities
        if tasks:
            capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
        meta[CLIENT_CAPABILITIES_KEY] = capabilities
        meta[CLIENT_INFO_KEY] = self.client_info
        level = self.effective_log_level
        if level is not None:
            meta[LOG_LEVEL_KEY] = level
        stamped["_meta"] = meta
        return stamped

    async def _probe(self, preferred: str | None = None) -> dict[str, Any] | None:
        """Ask ``server/discover`` (at ``preferred`` first, when it is a stateless revision this
        client speaks); the adopted result when the server speaks the stateless revision, None when
        the handshake should follow (never on a recognised stateless error)."""
        forced = self.mode != MODE_AUTO
        if forced:
            version = self.mode
        else:
            version = preferred if preferred in versions.CLIENT_STATELESS else versions.CLIENT_STATELESS[-1]
        for attempt in range(2):
            try:
                result = await self._send_probe(self._stamp(None, version))
            except TimeoutError as error:
                if await self._recover_from_probe(error):
                    return None
                if forced:
                    raise
                logger.info("server/discover got no answer within %g s; using the handshake", self.probe_timeout)
                return None
            except McpError as error:
                if isinstance(error, ConnectionError):
                    if await self._recover_from_probe(error):
                        return None  # the probe broke the server; a fresh one gets initialize
                    raise  # the server cannot be reached: no revision question to settle
                if error.code == UNSUPPORTED_PROTOCOL_VERSION:
                    refusal = UnsupportedProtocolVersionError(error.message, error.data)
                    mutual = [name for name in refusal.supported if name in versions.CLIENT_STATELESS]
                    if mutual and attempt == 0:
                        version = mutual[-1]
                        continue
                    if not forced and any(versions.client_accepts(name) for name in refusal.supported):
                        return None
                    await self.close()
                    raise refusal from None
                if is_stateless_error(error):
                    logger.info("server/discover failed with %s; the server speaks %s", error.code, version)
                    return self._adopt({}, version)
                if forced:
                    raise
                return None
            listed = result.get("supportedVersions")
            names = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
            mutual = [name for name in names if name in versions.CLIENT_STATELESS]
            if not mutual:
                if forced:
                    await self.close()
                    raise UnsupportedProtocolVersionError(
                        "The server does not list this client's protocol revision in server/discover",
                        {"supported": names, "requested": version},
                    )
                return None
            if version not in mutual:
                version = mutual[-1]
            self._remember("server/discover", "", result)
            return self._adopt(result, version)
        return None

    def _adopt(self, discovered: dict[str, Any], version: str) -> dict[str, Any]:
        """Speak the stateless revision ``version`` with a server that answered ``discovered``."""
        self.era = ERA_STATELESS
        self.protocol_version = version
        self.discover_result = discovered or None
        meta = discovered.get("_meta")
        info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        if not isinstance(info, dict):
            info = discovered.get("serverInfo")  # some early servers put it in the result
        self.server_info = info if isinstance(info, dict) else None
        capabilities = discovered.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        instructions = discovered.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        # What initialize() returns: the handshake's shape, so callers of either era read it alike.
        self._initialize_result = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities,
            "serverInfo": self.server_info or {},
            **({"instructions": self.instructions} if self.instructions is not None else {}),
        }
        return self._initialize_result

    async def discover(self) -> dict[str, Any]:
        """The server's DiscoverResult (stateless revision only), from the cache while its
        ``ttlMs`` lasts."""
        if not self.stateless:
            raise McpError(METHOD_NOT_FOUND, f"server/discover is not a method of revision {self.protocol_version}")
        cached = self._recall("server/discover", "")
        if cached is not None:
            return dict(cached)
        result = await self.request("server/discover")
        self._adopt(result, self.protocol_version or versions.CLIENT_STATELESS[-1])
        self._remember("server/discover", "", result)
        return result

    # --- the ttlMs cache ------------------------------------------------------------------

    def _recall(self, method: str, key: str) -> Any:
        entry = self._cached.get((method, key))
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            del self._cached[(method, key)]
            return None
        return entry[1]

    def _remember(self, method: str, key: str, result: dict[str, Any], value: Any = None) -> None:
        """Cache ``value`` (else ``result``) for the ``ttlMs`` the server gave ``result``."""
        ttl = result.get("ttlMs")
        if not self.cache or type(ttl) is not int or ttl <= 0:
            return
        self._cached[(method, key)] = (time.monotonic() + ttl / 1000, result if value is None else value)

    def invalidate_cache(self, *methods: str) -> None:
        """Forget cached results (of ``methods``, or all)."""
        if not methods:
            self._cached.clear()
            return
        for entry in [entry for entry in self._cached if entry[0] in methods]:
            del self._cached[entry]

    async def _initialize(self) -> dict[str, Any]:
        offer = {
            "protocolVersion": versions.CLIENT_OFFERS,
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        }
        result = await self.request("initialize", offer, retry_expired=False)
        answered = result.get("protocolVersion")
        if not isinstance(answered, str) or not versions.client_accepts(answered):
            await self.close()
            raise McpError(
                INTERNAL_ERROR,
                f"The server answered protocol revision {answered!r}, which this client does not speak "
                f"(it speaks {', '.join(versions.CLIENT_ACCEPTED)})",
            )
        self.protocol_version = answered
        self.era = ERA_SESSION
        self.server_info = result.get("serverInfo")
        self.server_capabilities = result.get("capabilities") or {}
        self.instructions = result.get("instructions")
        await self.notify("notifications/initialized")
        await self._ask_for_logs()
        self._initialize_result = result
        return result

    async def _ask_for_logs(self) -> None:
        """logging/setLevel with ``effective_log_level`` on a new session whose server declares
        ``logging``: without it the server picks what to send (some send nothing, ours everything)."""
        level = self.effective_log_level
        if level is None or "logging" not in (self.server_capabilities or {}):
            return
        try:
            # No retry on an expired session: this runs inside the (re-)initialization itself.
            await self.request("logging/setLevel", {"level": level}, retry_expired=False)
        except McpError as error:
            if isinstance(error, ConnectionError):
                raise
            # Logs are an extra: a server that refuses the level still serves everything else.
            logger.warning("the server refused logging/setLevel %r: %s", level, error.message)

    async def close(self) -> None:
        """End the session (and the session fallback's) and release the transport (idempotent)."""
        fallback, self._fallback, self._fallback_refused = self._fallback, None, False
        if fallback is not None:
            await fallback.close()
        if self.connection is not None:
            await self.connection.close()

    async def __aenter__(self) -> McpClient:
        await self.initialize()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    def _live(self) -> Connection:
        if self.connection is None:
            raise RuntimeError("the client is not initialized: call initialize() or use 'async with'")
        return self.connection

    # --- requests -----------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | bool | None = True,
        on_progress: ProgressCallback | None = None,
        retry_expired: bool = True,
    ) -> dict[str, Any]:
        """Send any request and return its result; McpError for an error reply.

        ``timeout`` defaults to ``request_timeout``; None waits forever. When the
        server has forgotten the session, the client initializes a new one and
        retries once.
        """
        limit = self.request_timeout if timeout is True else (None if timeout is False else timeout)
        if self.stateless:
            return await self._stateless_or_session(method, params, limit, on_progress)
        try:
            try:
                return await self._send_request(method, params, limit, on_progress)
            except SessionExpiredError:
                if not retry_expired:
                    raise
                logger.info("session expired; initializing a new one")
                await self._reinitialize()
                return await self._send_request(method, params, limit, on_progress)
        except McpError as error:
            if error.code == URL_ELICITATION_REQUIRED and not isinstance(error, UrlElicitationRequiredError):
                raise UrlElicitationRequiredError(error.message, error.data) from None
            if error.code == UNSUPPORTED_PROTOCOL_VERSION and not isinstance(error, UnsupportedProtocolVersionError):
                raise UnsupportedProtocolVersionError(error.message, error.data) from None
            raise

    async def _send_request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> dict[str, Any]:
        return await self._live().request(method, params, timeout=timeout, on_progress=on_progress)

    async def _stateless_or_session(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> dict[str, Any]:
        """A stateless-revision request, repeated on the session fallback (see the class) when the
        server says it could not reach back to the client for something this client answers."""
        try:
            result = await self._stateless_request(method, params, timeout, on_progress)
        except McpError as error:
            session = None if isinstance(error, ConnectionError) else await self._fallback_for(error, method)
            if session is None:
                raise
            return await session.request(method, params, timeout=timeout, on_progress=on_progress)
        if method == "tools/call" and result.get("isError") is True:
            session = await self._fallback_for(result, method)
            if session is not None:
                return await session.request(method, params, timeout=timeout, on_progress=on_progress)
        return result

    async def _fallback_for(self, failure: McpError | dict[str, Any], method: str) -> McpClient | None:
        """The session to repeat ``method`` on after ``failure``, or None: not a failure to reach
        back (``missing_back_channel``), or one the fallback does not take (``_may_fall_back``)."""
        if not self._may_fall_back(missing_back_channel(failure)):
            return None
        return await self._fallback_session(method)

    def _may_fall_back(self, wanted: str | None) -> bool:
        """True when a call whose server could not send ``wanted`` may be repeated on a session:
        the fallback is on, this client answers ``wanted``, and the server did not refuse one."""
        if wanted is None or not self.session_fallback or self._owner is not None or self._fallback_refused:
            return False
        if wanted == "sampling/createMessage":
            return self.sampling_handler is not None
        if wanted == "elicitation/create":
            return self.elicitation_handler is not None
        return wanted == "roots/list" and self.roots is not None

    async def _fallback_session(self, method: str) -> McpClient | None:
        """The session fallback's client, opened on first need; None when this transport has none
        or the server refused the handshake (then never asked again until ``close()``)."""
        async with self._fallback_opening:
            if self._fallback is not None or self._fallback_refused:
                return self._fallback
            client = self._session_client()
            if client is None:
                self._fallback_refused = True
                return None
            client._owner = self
            try:
                await client.initialize()
                if not client._holds_session():
                    # It answers each request on its own: our answers could not reach the handler either.
                    raise McpError(INTERNAL_ERROR, "the handshake opened no session")
            except Exception as error:  # any refusal: the original failure stands
                logger.info("%s needs a session, but the server did not open one: %s", method, error)
                with contextlib.suppress(Exception):
                    await client.close()
                self._fallback_refused = True
                return None
            logger.info(
                "%s asked this client something 2026-07-28 cannot carry to it; repeating it on a %s session",
                method,
                client.protocol_version,
            )
            self._fallback = client
            return client

    def _session_client(self) -> McpClient | None:
        """A new client of the same server, in session mode, with this client's options (for the
        session fallback); None (the default) when the transport cannot reach the same server twice."""
        return None

    def _holds_session(self) -> bool:
        """True when the server keeps this client's session between requests (so a request the
        server sends mid-call can be answered); a transport that cannot tell says True."""
        return True

    def _handler_options(self) -> dict[str, Any]:
        """This client's handlers and options as keyword arguments, for a sibling client (the session
        fallback's) that declares the same capabilities; what the server asks still reaches this
        client's handlers (``_serve``)."""
        return {
            "client_name": self.client_info["name"],
            "client_version": self.client_info["version"],
            "sampling_handler": self.sampling_handler,
            "elicitation_handler": self.elicitation_handler,
            "roots": self.roots,
            "on_log": self.on_log,
            "on_notification": self.on_notification,
            "request_timeout": self.request_timeout,
            "elicitation_url": self.elicitation_url,
            "sampling_tools": self.sampling_tools,
            "on_elicitation_complete": self.on_elicitation_complete,
            "log_level": self.log_level,
            "max_input_rounds": self.max_input_rounds,
            "cache": self.cache,
            "session_fallback": False,
        }

    async def _stateless_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        *,
        tasks: bool = False,
    ) -> dict[str, Any]:
        """One request of the stateless revision: stamped, retried once at a revision the server
        names in -32022, retried once after re-listing tools on -32020 for tools/call, and driven
        through ``input_required`` rounds to its complete result. A request whose stream broke
        before its answer is sent again once, except tools/call (it may have side effects: the
        caller decides)."""
        retried_version = retried_headers = reissued = False
        while True:
            try:
                result = await self._send_request(method, self._stamp(params, tasks=tasks), timeout, on_progress)
                return await self._complete(method, params, result, timeout, on_progress, tasks=tasks)
            except StreamLostError:
                # The stream broke before the answer and nothing resumes it: send the request
                # again (new id), once, unless it may have side effects (tools/call).
                if reissued or method == "tools/call":
                    raise
                reissued = True
                logger.info("the stream of %s broke before its answer; sending it again", method)
                continue
            except McpError as error:
                if error.code == UNSUPPORTED_PROTOCOL_VERSION:
                    refusal = UnsupportedProtocolVersionError(error.message, error.data)
                    mutual = [name for name in refusal.supported if name in versions.CLIENT_STATELESS]
                    if mutual and not retried_version:
                        retried_version = True
                        self.protocol_version = mutual[-1]
                        continue
                    raise refusal from None
                if error.code == HEADER_MISMATCH and method == "tools/call" and not retried_headers:
                    # Our Mcp-Param-* headers came from a stale tools/list: refresh it and retry.
                    retried_headers = True
                    self.invalidate_cache("tools/list")
                    await self.list_tools()
                    continue
                raise

    async def _complete(
        self,
        method: str,
        params: dict[str, Any] | None,
        result: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        *,
        tasks: bool = False,
    ) -> dict[str, Any]:
        """Drive ``input_required`` results (MRTR) until the result is complete (or, for a
        request that declared the Tasks extension, a task).

        Each round answers every ``inputRequests`` entry concurrently through the
        client's handlers, then retries the same method and params (a new request id)
        with ``inputResponses`` and the ``requestState`` echoed exactly as received.
        """
        rounds = 0
        while True:
            kind = result.get("resultType", "complete")
            if kind == "complete" or (tasks and kind == "task"):
                return result
            if kind != "input_required" or method not in _INPUT_METHODS:
                raise McpError(INTERNAL_ERROR, f"The server answered {method} with an unrecognised resultType {kind!r}")
            if rounds >= self.max_input_rounds:
                raise InputRoundsExceededError(method, self.max_input_rounds)
            requests = result.get("inputRequests")
            if requests is not None and not isinstance(requests, dict):
                raise McpError(INTERNAL_ERROR, f"The server answered {method} with malformed inputRequests")
            retry = {
                key: value for key, value in (params or {}).items() if key not in ("inputResponses", "requestState")
            }
            if requests:
                retry["inputResponses"] = await self.answer_inputs(requests)
            else:  # only state: the server is still working; give it a moment
                await asyncio.sleep(_STATE_ONLY_DELAYS[min(rounds, len(_STATE_ONLY_DELAYS) - 1)])
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            rounds += 1
            result = await self._send_request(method, self._stamp(retry, tasks=tasks), timeout, on_progress)

    async def answer_inputs(self, requests: dict[str, Any]) -> dict[str, Any]:
        """Answers to a result's ``inputRequests`` (by key) from this client's handlers,
        concurrently; the first failure cancels the rest and is raised."""
        answers: dict[str, Any] = {}

        async def answer(key: str, request: Any) -> None:
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise McpError(INTERNAL_ERROR, f"The server sent a malformed input request {key!r}")
            params = request.get("params")
            answers[key] = await self._serve(request["method"], params if isinstance(params, dict) else {})

        try:
            async with asyncio.TaskGroup() as group:
                for key, request in requests.items():
                    group.create_task(answer(str(key), request))
        except BaseExceptionGroup as failures:
            raise failures.exceptions[0] from None
        return answers

    async def _reinitialize(self) -> None:
        await self._handshake()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._live().notify(method, params)

    async def send_message(self, message: JsonRpcMessage) -> JsonRpcMessage | None:
        """Send a raw message. A request returns its response (or error) message; others return None."""
        if isinstance(message, JsonRpcRequest):
            try:
                result = await self.request(message.method, message.params)
            except McpError as error:
                return JsonRpcError(message.id, error.code, error.message, error.data)
            return JsonRpcResponse(message.id, result)
        if isinstance(message, JsonRpcNotification):
            await self.notify(message.method, message.params)
            return None
        await self._live().transport.send(message)
        return None

    async def ping(self) -> None:
        """ping; the stateless revision has none, so there it asks server/discover instead."""
        await self.request("server/discover" if self.stateless else "ping")

    async def _all_pages(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every item of a paginated list; cached (stateless revision) for the shortest ``ttlMs``
        of its pages, until a list_changed notification says otherwise."""
        cached = self._recall(method, "")
        if cached is not None:
            return list(cached)
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        ttls: list[Any] = []
        for _ in range(MAX_PAGES):
            result = await self.request(method, {"cursor": cursor} if cursor is not None else None)
            page = result.get(key)
            if not isinstance(page, list):
                raise McpError(METHOD_NOT_FOUND if page is None else INTERNAL_ERROR, f"malformed {method} result")
            items.extend(page)
            ttls.append(result.get("ttlMs"))
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                if all(type(ttl) is int for ttl in ttls):
                    self._remember(method, "", {"ttlMs": min(ttls)}, list(items))
                return items
            cursor = next_cursor
        raise RuntimeError(f"{method} returned more than {MAX_PAGES} pages")

    @overload
    async def list_tools(self, *, raw: Literal[False] = False) -> list[Tool]: ...
    @overload
    async def list_tools(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_tools(self, *, raw: bool = False) -> list[Tool] | list[dict[str, Any]]:
        """Every tool, across all pages; ``raw=True``: their tools/list entries (``tools`` is then
        left as it was)."""
        items = await self._all_pages("tools/list", "tools")
        if self.stateless:
            kept = []
            for item in items:
                problem = invalid_x_mcp_header(item.get("inputSchema")) if isinstance(item, dict) else None
                if problem is None:
                    kept.append(item)
                else:
                    logger.warning("dropping tool %r from tools/list: %s", item.get("name"), problem)
            items = kept
        if raw:
            return items
        tools = [tool_from_dict(item) for item in items]
        self._tools_cache = tools
        return tools

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        """The ``inputSchema`` of tool ``name`` from the last ``list_tools()`` (for Mcp-Param-* headers)."""
        for tool in self._tools_cache or ():
            if tool.name == name:
                schema = getattr(tool, "input_schema", None)
                return schema if isinstance(schema, dict) else None
        return None

    @property
    def tools(self) -> list[Tool] | None:
        """The tools from the last ``list_tools()``."""
        return self._tools_cache

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
        raw: Literal[False] = False,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
        raw: Literal[True],
    ) -> dict[str, Any]: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
        raw: bool = False,
    ) -> CallToolResult | dict[str, Any]:
        """Call a tool. Cancelling the awaiting task (or a timeout) sends notifications/cancelled.
        ``raw=True``: the CallToolResult as sent."""
        result = await self.request(
            "tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout, on_progress=on_progress
        )
        return result if raw else call_tool_result_from_dict(result)

    async def call_tool_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        ttl_ms: int | None = None,
        timeout: float | bool | None = True,
    ) -> TaskHandle:
        """Call a tool as a task: a handle on it (``refresh()`` and ``status``, ``result()``,
        ``answer()``, ``cancel()``, async iteration over its status changes; the rules are in
        ``client/tasks.py``). ``timeout`` bounds the creating call, not the task.

        On a 2025-11-25 session the call asks for a task (``params.task``, with ``ttl_ms``)
        when the server declares tasks for tools/call and the tool allows them; at 2026-07-28
        it declares the Tasks extension and the server decides (and its ttl: ``ttl_ms`` is not
        sent). A call the server ran inline gives a handle that has ended already, with its
        result."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if not self.stateless and self._may_ask_task(name):
            params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
        return TaskHandle(self, await self.task_request("tools/call", params, timeout))

    def _may_ask_task(self, tool: str) -> bool:
        """True when this session's server takes ``params.task`` on tools/call for ``tool`` (as far as
        the last tools/list tells: a tool not listed yet is asked)."""
        tasks = (self.server_capabilities or {}).get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        if not isinstance(tools, dict) or not isinstance(tools.get("call"), dict):
            return False
        listed = next((entry for entry in self._tools_cache or () if entry.name == tool), None)
        return listed is None or listed.task_support != "forbidden"

    async def task_request(
        self, method: str, params: dict[str, Any], timeout: float | bool | None = True
    ) -> dict[str, Any]:
        """A request of a task (``TaskHandle``'s): at 2026-07-28 it declares the Tasks extension."""
        if not self.stateless:
            return await self.request(method, params, timeout=timeout)
        limit = self.request_timeout if timeout is True else (None if timeout is False else timeout)
        return await self._stateless_request(method, params, limit, None, tasks=True)

    @property
    def skills(self) -> Skills:
        """The server's skills (the skills extension): ``list()``, ``get(uri)``, ``read(entry, file)``
        and ``load(entry)`` verifying every file against its entry, ``read_directory(uri)``; the
        rules are in ``client/skills.py``. Nothing is read until asked."""
        return Skills(self)

    @overload
    async def list_resources(self, *, raw: Literal[False] = False) -> list[ResourceInfo]: ...
    @overload
    async def list_resources(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_resources(self, *, raw: bool = False) -> list[ResourceInfo] | list[dict[str, Any]]:
        """Every resource, across all pages; ``raw=True``: their resources/list entries."""
        items = await self._all_pages("resources/list", "resources")
        return items if raw else [resource_info_from_dict(item) for item in items]

    @overload
    async def list_resource_templates(self, *, raw: Literal[False] = False) -> list[ResourceTemplateInfo]: ...
    @overload
    async def list_resource_templates(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_resource_templates(self, *, raw: bool = False) -> list[ResourceTemplateInfo] | list[dict[str, Any]]:
        """Every resource template, across all pages; ``raw=True``: their resources/templates/list entries."""
        items = await self._all_pages("resources/templates/list", "resourceTemplates")
        return items if raw else [resource_template_info_from_dict(item) for item in items]

    @overload
    async def read_resource(self, uri: str, *, raw: Literal[False] = False) -> ReadResourceResult: ...
    @overload
    async def read_resource(self, uri: str, *, raw: Literal[True]) -> dict[str, Any]: ...

    async def read_resource(self, uri: str, *, raw: bool = False) -> ReadResourceResult | dict[str, Any]:
        """resources/read; cached (stateless revision) for its ``ttlMs`` until the resource
        is reported updated. ``raw=True``: the ReadResourceResult as sent."""
        result = self._recall("resources/read", uri)
        if result is None:
            result = await self.request("resources/read", {"uri": uri})
            self._remember("resources/read", uri, result)
        return dict(result) if raw else read_resource_result_from_dict(result)

    async def subscribe_resource(self, uri: str) -> None:
        """resources/subscribe (session revisions; the stateless one has ``listen()`` instead)."""
        self._session_only("resources/subscribe", "listen(resource_subscriptions=[...])")
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        self._session_only("resources/unsubscribe", "the end of a listen() block")
        await self.request("resources/unsubscribe", {"uri": uri})

    def _session_only(self, method: str, instead: str) -> None:
        if self.stateless:
            raise McpError(
                METHOD_NOT_FOUND, f"{method} does not exist in protocol revision {self.protocol_version}: use {instead}"
            )

    @overload
    async def list_prompts(self, *, raw: Literal[False] = False) -> list[PromptInfo]: ...
    @overload
    async def list_prompts(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_prompts(self, *, raw: bool = False) -> list[PromptInfo] | list[dict[str, Any]]:
        """Every prompt, across all pages; ``raw=True``: their prompts/list entries."""
        items = await self._all_pages("prompts/list", "prompts")
        return items if raw else [prompt_info_from_dict(item) for item in items]

    @overload
    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, raw: Literal[False] = False
    ) -> GetPromptResult: ...
    @overload
    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, raw: Literal[True]
    ) -> dict[str, Any]: ...

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, raw: bool = False
    ) -> GetPromptResult | dict[str, Any]:
        """prompts/get; ``raw=True``: the GetPromptResult as sent (``{"description"?, "messages": [...]}``)."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        result = await self.request("prompts/get", params)
        return result if raw else get_prompt_result_from_dict(result)

    @overload
    async def complete(
        self,
        ref: dict[str, Any],
        argument_name: str,
        argument_value: str,
        context_arguments: dict[str, str] | None = None,
        *,
        raw: Literal[False] = False,
    ) -> CompleteResult: ...
    @overload
    async def complete(
        self,
        ref: dict[str, Any],
        argument_name: str,
        argument_value: str,
        context_arguments: dict[str, str] | None = None,
        *,
        raw: Literal[True],
    ) -> dict[str, Any]: ...

    async def complete(
        self,
        ref: dict[str, Any],
        argument_name: str,
        argument_value: str,
        context_arguments: dict[str, str] | None = None,
        *,
        raw: bool = False,
    ) -> CompleteResult | dict[str, Any]:
        """completion/complete; ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``. ``raw=True``: the CompleteResult as sent
        (``{"completion": {"values", "total"?, "hasMore"?}}``)."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument_name, "value": argument_value}}
        if context_arguments:
            params["context"] = {"arguments": context_arguments}
        result = await self.request("completion/complete", params)
        return result if raw else complete_result_from_dict(result)

    async def set_log_level(self, level: str) -> None:
        """logging/setLevel, and ``log_level`` for later sessions; in the stateless revision the
        level is kept here and stamped on every request instead (the server sends logs only for
        requests that carry one)."""
        self.log_level = level
        if not self.stateless:
            await self.request("logging/setLevel", {"level": level})

    async def notify_roots_changed(self) -> None:
        """notifications/roots/list_changed (the stateless revision has none: the server asks for
        roots when it needs them)."""
        if not self.stateless:
            await self.notify("notifications/roots/list_changed")

    # --- subscriptions ---------------------------------------------------------------

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        max_relistens: int = 3,
    ) -> AsyncIterator[Subscription]:
        """Receive change notifications: ``async with client.listen(tools_list_changed=True) as
        subscription: async for notification in subscription: ...``.

        Stateless revision: one ``subscriptions/listen`` request whose stream stays open;
        ``subscription.acknowledged`` is the filter the server honours (known once
        ``await subscription.ready()`` returns). A stream that ends without the server's
        closing result is listened to again, at most ``max_relistens`` times in a row.
        Session revisions: the named resources are subscribed with resources/subscribe
        (and unsubscribed at the end) and the session's notifications of the asked kinds
        are delivered.
        """
        wanted: dict[str, Any] = {}
        if tools_list_changed:
            wanted["toolsListChanged"] = True
        if prompts_list_changed:
            wanted["promptsListChanged"] = True
        if resources_list_changed:
            wanted["resourcesListChanged"] = True
        if resource_subscriptions:
            wanted["resourceSubscriptions"] = list(resource_subscriptions)
        subscription = Subscription(wanted)
        if not self.stateless:
            async with self._session_listen(subscription):
                yield subscription
            return
        runner = asyncio.get_running_loop().create_task(self._run_listen(subscription, max_relistens))
        try:
            yield subscription
        finally:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
            subscription.finish(None)

    async def _run_listen(self, subscription: Subscription, max_relistens: int) -> None:
        failures = 0
        try:
            while True:
                connection = self._live()
                request_id = connection.next_request_id()
                self._subscriptions[request_id] = subscription
                subscription.listening(request_id)
                try:
                    await self._request_with_id(
                        connection,
                        request_id,
                        "subscriptions/listen",
                        self._stamp({"notifications": subscription.wanted}),
                    )
                    subscription.finish(None)  # the server ended it gracefully
                    return
                except McpError as error:
                    if not subscription.was_acknowledged or failures >= max_relistens or connection.closed:
                        subscription.finish(error)
                        return
                    failures += 1
                    logger.info("the subscription stream closed unexpectedly (%s); listening again", error.message)
                finally:
                    self._subscriptions.pop(request_id, None)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            subscription.finish(error)

    async def _request_with_id(
        self, connection: Connection, request_id: RequestId, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A request whose id the caller chose (``next_request_id``): the subscription id of a
        listen is its request id. Cancelling it cancels the request (HTTP: closes its stream)."""
        future: asyncio.Future[JsonRpcMessage] = asyncio.get_running_loop().create_future()
        connection._pending[request_id] = future
        try:
            await connection.transport.send(JsonRpcRequest(request_id, method, params))
            reply = await future
        except asyncio.CancelledError:
            if not connection.closed:
                with contextlib.suppress(Exception):
                    await connection.transport.send(
                        JsonRpcNotification("notifications/cancelled", {"requestId": request_id, "reason": "closed"})
                    )
            raise
        finally:
            connection._pending.pop(request_id, None)
        if type(reply) is JsonRpcResponse:
            return reply.result
        raise reply.to_exception()  # type: ignore[union-attr]

    @asynccontextmanager
    async def _session_listen(self, subscription: Subscription) -> AsyncIterator[None]:
        uris = list(subscription.wanted.get("resourceSubscriptions", ()))
        subscribed: list[str] = []
        key = object()
        self._subscriptions[key] = subscription
        try:
            for uri in uris:
                await self.subscribe_resource(uri)
                subscribed.append(uri)
            subscription.acknowledge(dict(subscription.wanted))
            yield
        finally:
            self._subscriptions.pop(key, None)
            subscription.finish(None)
            for uri in subscribed:
                with contextlib.suppress(Exception):
                    await self.unsubscribe_resource(uri)

    # --- what the server asks of the client (ConnectionOwner) ---------------------------

    async def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> dict[str, Any]:
        return await self._serve(request.method, request.params or {})

    async def _serve(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """What the server asks of the client, by request (session revisions) or as an
        ``input_required`` entry (stateless revision): the same handlers answer both."""
        if method == "ping":
            return {}
        if self._owner is not None:  # a session fallback: its owner's handlers answer (roots as they are now)
            return await self._owner._serve(method, params)
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return await self.sampling_handler(params)
        if method == "elicitation/create" and self.elicitation_handler is not None:
            mode = check_mode(params, self.elicitation_modes)
            return complete_answer(params, mode, await self.elicitation_handler(params))
        if method == "roots/list" and self.roots is not None:
            return {"roots": [{"uri": r.uri, **({"name": r.name} if r.name else {})} for r in self.roots]}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        method = notification.method
        params = notification.params or {}
        for stale in _LIST_CHANGED.get(method, ()):
            self.invalidate_cache(stale)
        if method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            self._cached.pop(("resources/read", params["uri"]), None)
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID_KEY in meta:
            subscription = self._subscriptions.get(meta[SUBSCRIPTION_ID_KEY])
            if subscription is not None:
                subscription.deliver(notification)
            else:
                logger.debug("dropping %s for unknown subscription %r", method, meta[SUBSCRIPTION_ID_KEY])
            return
        if not self.stateless:
            for subscription in list(self._subscriptions.values()):
                subscription.offer(notification)
        if notification.method == "notifications/message" and self.on_log is not None:
            self.on_log(notification.params or {})
        elif notification.method == "notifications/elicitation/complete" and self.on_elicitation_complete is not None:
            self.on_elicitation_complete(notification.params or {})
        elif self.on_notification is not None:
            self.on_notification(notification)

    def connection_closed(self) -> None:
        return None
