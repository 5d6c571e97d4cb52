"""The stateless revision (2026-07-28): every request stands alone.

A stateless request carries its protocol version, the client's capabilities
and identity (and a log level) in ``params._meta``; nothing is remembered
between requests, and nothing is stored. ``StatelessEndpoint`` is the owner of
any connection that carries stateless requests (a Streamable HTTP POST; a
stdio process whose first request was stateless, handed over by
``StatelessSwitch``); for each request it builds a ``RequestSession`` from the
envelope, so handlers use the very API they use on a session
(``context.session.elicit(...)``, ``create_message``, ``list_roots``, ``log``).
It knows the server as a ``StatelessHost``; the wire constants are in
``stateless_meta.py``.

Rules, in the order they are checked:

1. The envelope: ``_meta`` with a string protocol version and an object of
   client capabilities, else -32602. ``clientInfo`` (an object with a
   ``name``) and ``logLevel`` (a log level name) are optional but checked.
2. The version must be a served stateless revision: -32022 with the supported
   versions otherwise.
3. The method must be in that revision's table: -32601 otherwise (404 over
   HTTP; ``initialize``, ``ping``, ``logging/setLevel`` and subscribing to
   resources are gone).
4. A handler that asks the client something cannot wait: the request ends
   with ``resultType: "input_required"``, the questions (``inputRequests``)
   and a sealed ``requestState`` (``request_state.py``); the client retries
   with ``inputResponses`` and the state, and the handler runs again from the
   start, its earlier questions answered from the state. Only ``tools/call``,
   ``prompts/get`` and ``resources/read`` may ask. A capability the client did
   not declare on the request is -32021 naming it.
5. Every result carries ``resultType`` and the server's identity in
   ``_meta``; cacheable results carry ``ttlMs`` and ``cacheScope``
   (``CachePolicy``). An unknown resource is -32602 (not -32002).
6. Logs (``notifications/message``) go out only when the request set a
   ``logLevel``; nothing else is ever sent unasked.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from . import versions
from .context import LOG_LEVELS, RequestContext, current_context
from .handlers import Handler
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    JsonRpcNotification,
    JsonRpcRequest,
    McpError,
)
from .protocol import Connection
from .records import SessionRecord
from .session import ServerSession, SessionHost
from .stateless_meta import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO,
    SUBSCRIPTION_ID,
    CachePolicy,
    MirroredHeader,
    has_envelope,
    mirrored_headers,
)

if TYPE_CHECKING:
    from .request_state import RequestStateSealer

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "CachePolicy",
    "Envelope",
    "InputRequired",
    "MirroredHeader",
    "RequestSession",
    "StatelessEndpoint",
    "StatelessHost",
    "StatelessSwitch",
    "has_envelope",
    "mirrored_headers",
    "read_envelope",
    "refuse_enveloped",
    "unsupported_version",
]

logger = logging.getLogger("mcp_sse_server")

# The requests whose handlers may ask the client something (input_required).
_MAY_ASK: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
# The requests whose complete results are cacheable (ttlMs, cacheScope).
_CACHEABLE: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "skills/list",
        "skills/get",
        "resources/directory/read",
    }
)
# Above every log level: a request that set none gets no log notifications.
_NO_LOGS: Final = len(LOG_LEVELS)


class StatelessHost(SessionHost, Protocol):
    """What the stateless endpoint asks of the server it serves (``McpServer`` is one): a
    session's host, and what stamps results and seals ``requestState``."""

    @property
    def request_state(self) -> RequestStateSealer:
        """Seals and opens the ``requestState`` of input_required rounds."""

    @property
    def implementation(self) -> dict[str, str]:
        """The server's name and version, stamped on every result."""

    @property
    def cache(self) -> CachePolicy:
        """The caching hints of cacheable results."""


class Envelope(NamedTuple):
    """A stateless request's ``_meta``: who asks, at which revision, able to answer what.

    (A NamedTuple: one is read on every stateless request, and a frozen dataclass builds slower.)
    """

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None


def read_envelope(params: Any) -> Envelope:
    """The envelope of a stateless request's params; McpError -32602 naming what is wrong."""
    meta = params.get("_meta") if type(params) is dict else None
    if type(meta) is not dict:
        raise McpError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES}",
        )
    version = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(version, str):
        raise McpError(INVALID_PARAMS, f"params._meta needs {PROTOCOL_VERSION_KEY} (a string)")
    capabilities = meta.get(CLIENT_CAPABILITIES)
    if type(capabilities) is not dict:
        raise McpError(INVALID_PARAMS, f"params._meta needs {CLIENT_CAPABILITIES} (an object; {{}} for none)")
    client_info = meta.get(CLIENT_INFO)
    if client_info is not None and (type(client_info) is not dict or not isinstance(client_info.get("name"), str)):
        raise McpError(INVALID_PARAMS, f"params._meta {CLIENT_INFO} must be an object with a name")
    level = meta.get(LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise McpError(INVALID_PARAMS, f"params._meta {LOG_LEVEL} must be one of: {', '.join(LOG_LEVELS)}")
    return Envelope(version, capabilities, client_info, level)


def unsupported_version(requested: str) -> McpError:
    """-32022 naming the versions a request may name (what server/discover lists too)."""
    supported = [revision.name for revision in versions.STATELESS]
    return McpError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}; this server supports {', '.join(supported)}",
        {"supported": supported, "requested": requested},
    )


class InputRequired(BaseException):
    """Raised inside a stateless request's handler by a question the client has not answered yet.

    A BaseException so that a handler's ``except Exception`` cannot swallow it:
    the endpoint turns it into an ``input_required`` result.
    """


class RequestSession(ServerSession):
    """The session of one stateless request, built from its envelope (never stored).

    Questions to the client (``elicit``, ``create_message``, ``list_roots``)
    are answered from the request's earlier rounds or become its
    ``inputRequests``; capabilities are the ones this request declared.
    """

    __slots__ = ("answers", "asked", "first_round", "questions", "responses", "used")

    def __init__(
        self, server: SessionHost, connection: Connection, envelope: Envelope, revision: versions.Revision
    ) -> None:
        # Not ServerSession.__init__: a request session shares the connection of its request and
        # has no handshake. It starts from the same state (_setup), then differs where it must.
        self._setup(
            server,
            SessionRecord(
                revision=revision.name,
                client_info=envelope.client_info,
                client_capabilities=envelope.client_capabilities,
                log_level=envelope.log_level,
            ),
        )
        self.connection = connection
        self.ready = True
        self._protocol = revision
        self._log_rank = LOG_LEVELS[envelope.log_level] if envelope.log_level is not None else _NO_LOGS
        self.answers: dict[str, Any] = {}  # earlier rounds' (from the sealed state) and this retry's, once used
        self.responses: dict[str, Any] = {}  # this retry's inputResponses
        self.questions: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()
        self.asked = 0
        self.first_round: dict[str, str] | None = None  # telemetry: the call's first round's trace context

    def _require_elicitation_mode(self, mode: str, what: str = "elicitation/create") -> versions.Revision | None:
        if mode not in self.elicitation_modes:
            raise _missing({"elicitation": {mode: {}}}, f"{what} in {mode} mode")
        return self._protocol

    def _check_may_ask(self, method: str, capability: str | None) -> None:
        """-32021 when the request did not declare ``capability`` (it is always ready to be asked)."""
        if capability is not None and capability not in self.record.client_capabilities:  # type: ignore[operator]
            raise _missing({capability: {}}, method)

    async def _ask(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, key: str | None
    ) -> dict[str, Any]:
        """Answered by this retry or an earlier round, else a question for this round (InputRequired).

        ``key`` names the question (``q1``, ``q2``... in the order asked when not given).
        """
        if method == "ping":
            return {}
        context = current_context.get()
        task = context.task_asking() if context is not None else None
        if task is not None:  # a task's question waits for tasks/update
            return await task.ask(method, params)
        self.asked += 1
        if key is None:
            key = f"q{self.asked}"
        elif key in self.used:
            raise ValueError(f"question key {key!r} is used twice in one request")
        self.used.add(key)
        answer = self.answers.get(key)
        if answer is None:
            answer = self.responses.get(key)
            if answer is not None and type(answer) is not dict:
                raise McpError(INVALID_PARAMS, f'Invalid "inputResponses.{key}": expected a result object')
        if answer is not None:
            self.answers[key] = answer
            return answer
        self.questions[key] = {"method": method, "params": params or {}}
        raise InputRequired

    async def log(self, level: str, data: Any, logger: str | None = None, *, related_request_id: Any = None) -> None:
        """As a session's, except inside a task: a task sends no log notifications."""
        context = current_context.get()
        if context is not None and context.task_asking() is not None:
            return
        await super().log(level, data, logger, related_request_id=related_request_id)

    async def close(self) -> None:
        """A request session ends with its request."""


def _missing(required: dict[str, Any], what: str) -> McpError:
    return McpError(
        MISSING_CLIENT_CAPABILITY,
        f"This request needs a client capability it did not declare ({what})",
        {"requiredCapabilities": required},
    )


def _as_invalid_params(error: McpError) -> McpError:
    """An unknown resource (-32002) as 2026-07-28 answers it: invalid params (rule 5)."""
    return McpError(INVALID_PARAMS, error.message, error.data)


def _observe_round(context: RequestContext, request: JsonRpcRequest, first_round: dict[str, str]) -> None:
    """Telemetry: this retry's span gets an event and a link to the call's first round."""
    find = getattr(context.connection, "observation", None)  # (an ObservedConnection's)
    observation = find(request.id) if find is not None else None
    if observation is not None:
        observation.event("input_required round", {"mcp_sse_server.round": context.rounds}, first_round)


class StatelessEndpoint:
    """Serves stateless (2026-07-28) requests of ``server``: the owner of any connection carrying them."""

    __slots__ = ("_tables", "server")

    def __init__(self, server: StatelessHost) -> None:
        self.server = server
        # Each served stateless revision's method table, by name (the server builds each once).
        self._tables: dict[str, tuple[versions.Revision, Mapping[str, Handler]]] | None = None

    async def serve(self, request: JsonRpcRequest, context: RequestContext) -> dict[str, Any]:
        """Serve one stateless request (rules 1-6); McpError for an error answer."""
        params = request.params or {}
        envelope = read_envelope(params)
        tables = self._tables
        if tables is None:
            tables = self._tables = {r.name: (r, self.server.handlers.table(r)) for r in versions.STATELESS}
        found = tables.get(envelope.protocol_version)
        if found is None:
            raise unsupported_version(envelope.protocol_version)
        revision, table = found
        method = request.method
        handler = table.get(method)
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}", method)
        # A server-side context's peer is the Connection that built it (context.py types it as
        # the Peer protocol only to stay below protocol.py).
        # The request's own session is built when first asked for (most handlers never ask).
        connection: Connection = context.connection  # type: ignore[assignment]
        context.bind_session(functools.partial(RequestSession, self.server, connection, envelope, revision))
        if method not in _MAY_ASK:
            return self._stamp(method, await self._run(handler, params, context))
        target = params.get("name") if method != "resources/read" else params.get("uri")
        arguments = params.get("arguments")
        if "inputResponses" in params or "requestState" in params:
            context.rounds = self._resume(context.session, method, target, arguments, params)
            if context.session.first_round is not None:
                _observe_round(context, request, context.session.first_round)
        try:
            result = await handler(params, context)  # (_run inlined: every tools/call passes here)
        except McpError as error:
            if error.code == RESOURCE_NOT_FOUND:
                raise _as_invalid_params(error) from None
            raise
        except InputRequired:
            session = context.session  # (made now if the handler never asked: then it has no questions)
            if not session.questions:  # raised by the handler itself, not by a question
                raise McpError(INTERNAL_ERROR, "Internal error") from None
            sealer = self.server.request_state
            payload: dict[str, Any] = {"answers": session.answers, "round": context.rounds}
            observer = getattr(context.connection, "observer", None)  # telemetry (engine/observe.py)
            if observer is not None:
                first_round = session.first_round or observer.current_trace()
                if first_round:  # the later rounds' spans link to the first round's
                    payload["trace"] = first_round
            state = sealer.seal(
                payload,
                method=method,
                target=target if isinstance(target, str) else None,
                arguments=arguments,
            )
            return self._stamp(
                method,
                {"resultType": "input_required", "inputRequests": session.questions, "requestState": state},
                cacheable=False,
            )
        return self._stamp(method, result)

    @staticmethod
    async def _run(handler: Handler, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        try:
            return await handler(params, context)
        except McpError as error:
            if error.code == RESOURCE_NOT_FOUND:
                raise _as_invalid_params(error) from None
            raise

    def _resume(self, session: RequestSession, method: str, target: Any, arguments: Any, params: dict[str, Any]) -> int:
        """Load the answers of earlier rounds (from the sealed state) and of this retry, and the
        W3C trace context of the call's first round when the state carries one (telemetry:
        ``session.first_round``); the number of this round (``RequestContext.rounds``)."""
        responses = params.get("inputResponses")
        if responses is not None:
            if type(responses) is not dict:
                raise McpError(INVALID_PARAMS, 'Invalid "inputResponses": expected an object of results by key')
            session.responses = responses  # a question takes its answer from here when asked; others are ignored
        state = params.get("requestState")
        if state is None:
            return 0
        # Only here, and only then, does cryptography load (request_state imports it).
        from .request_state import InvalidRequestState

        try:
            payload = self.server.request_state.open(
                state, method=method, target=target if isinstance(target, str) else None, arguments=arguments
            )
        except InvalidRequestState as error:
            logger.info("refused a requestState (%s) on %s", error, method)
            raise McpError(
                INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"}
            ) from None
        answers = payload.get("answers")
        if not isinstance(answers, dict):
            raise McpError(INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"})
        session.answers.update(answers)
        earlier = payload.get("round")
        trace = payload.get("trace")
        if type(trace) is dict and all(type(key) is str and type(value) is str for key, value in trace.items()):
            session.first_round = trace
        return earlier + 1 if type(earlier) is int and earlier >= 0 else 1

    def _stamp(self, method: str, result: dict[str, Any], *, cacheable: bool = True) -> dict[str, Any]:
        """The result with ``resultType``, the server's identity and (when cacheable) caching hints."""
        server = self.server
        stamped = {"resultType": "complete", **result}
        meta = result.get("_meta")
        identity = server.implementation
        stamped["_meta"] = {**meta, SERVER_INFO: identity} if meta else {SERVER_INFO: identity}
        if cacheable and method in _CACHEABLE and stamped["resultType"] == "complete":
            stamped["ttlMs"] = server.cache.ttl_ms
            stamped["cacheScope"] = server.cache.scope
        return stamped

    handle_request = serve  # (the owner's entry: serve itself, one call fewer per request)

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        """Stateless clients send no notifications the server acts on (cancellation is the engine's)."""

    def connection_closed(self) -> None:
        return None


class StatelessSwitch:
    """The ``before_initialize`` hook ``McpServer.connect`` gives every session (``session.py`` rule 5).

    The first request of a connection decides its era (stdio, in process): a request carrying the
    stateless envelope (``initialize`` never does) hands the connection to this switch, which
    then serves it as stateless only: ``initialize`` there is -32022, and no notification is acted
    on. One switch serves every connection of its server, so a session pays nothing for it.
    """

    __slots__ = ("endpoint",)

    def __init__(self, endpoint: StatelessEndpoint) -> None:
        self.endpoint = endpoint

    def __call__(self, request: JsonRpcRequest) -> StatelessSwitch | None:
        """Take the connection when ``request`` is stateless, else leave it to the session."""
        if request.method != "initialize" and has_envelope(request.params):
            return self
        return None

    def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> Awaitable[dict[str, Any]]:
        """Serve a request of a connection this switch took: stateless, or -32022 for ``initialize``."""
        if request.method == "initialize":
            params = request.params or {}
            raise unsupported_version(str(params.get("protocolVersion")))
        return self.endpoint.serve(request, context)

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        """A stateless connection acts on no notification (cancellation is the engine's)."""

    def connection_closed(self) -> None:
        """Nothing to do: the session this switch took over ends as a session."""


def refuse_enveloped(request: JsonRpcRequest) -> McpError:
    """The error for a stateless request on a connection that began with ``initialize``."""
    return McpError(
        INVALID_REQUEST,
        f"{request.method} carries a {versions.REVISION_2026_07_28} envelope on a connection that "
        "began with initialize: this connection speaks the handshake revisions",
    )
