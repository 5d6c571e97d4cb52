"""The MCP semantic conventions of OpenTelemetry, as this library applies them: names and pure rules.

Rules of this module:

* It imports nothing from OpenTelemetry (nor anything outside the standard library and
  ``engine.jsonrpc``): the server and client instrumentations share it, and tests read it.
* The conventions are still at Development stability, so every attribute, span and metric
  name lives here and nowhere else; when the conventions move, this file moves.
* Span names and metric attributes are low-cardinality: a tool or prompt name becomes a span
  name only when the caller says it is registered (``is_known``), and a method outside
  ``KNOWN_METHODS`` (or a handler registered on the server) is ``_OTHER``.
* Never on a metric: ``mcp.session.id``, ``jsonrpc.request.id`` (unbounded).

Error rules (server side): the codes in ``CALLER_FAULT_CODES`` mean the caller sent something that
cannot be served; they set ``rpc.response.status_code`` but no ``error.type``, and the span status
stays unset. Every other JSON-RPC code is an error. A ``tools/call`` result with ``isError: true``
is ``tool_error``. On the client side every code is an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR

__all__ = [
    "ATTRIBUTE",
    "CALLER_FAULT_CODES",
    "CANCELLED",
    "DURATION_BUCKETS",
    "EXECUTE_TOOL",
    "KNOWN_METHODS",
    "METRIC",
    "OTHER",
    "REJECT_REASONS",
    "RESOURCE_NOT_FOUND",
    "TIMEOUT",
    "TOOL_ERROR",
    "TRACE_META_KEYS",
    "Known",
    "captured_request",
    "captured_result",
    "client_error_type",
    "exception_error_type",
    "guarded_method",
    "is_tool_error",
    "metric_attributes",
    "operation_target",
    "request_attributes",
    "server_error_type",
    "span_name",
]

# --- attribute names ----------------------------------------------------------------------------


class ATTRIBUTE:
    """Attribute names: the conventions' own, then ours (prefixed ``mcp_sse_server.``)."""

    METHOD: Final = "mcp.method.name"
    SESSION_ID: Final = "mcp.session.id"
    PROTOCOL_VERSION: Final = "mcp.protocol.version"
    RESOURCE_URI: Final = "mcp.resource.uri"
    REQUEST_ID: Final = "jsonrpc.request.id"
    STATUS_CODE: Final = "rpc.response.status_code"
    ERROR_TYPE: Final = "error.type"
    OPERATION: Final = "gen_ai.operation.name"
    TOOL_NAME: Final = "gen_ai.tool.name"
    PROMPT_NAME: Final = "gen_ai.prompt.name"
    TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
    TOOL_RESULT: Final = "gen_ai.tool.call.result"
    PROMPT_VARIABLE_PREFIX: Final = "gen_ai.prompt.variable."
    NETWORK_TRANSPORT: Final = "network.transport"
    NETWORK_PROTOCOL_NAME: Final = "network.protocol.name"
    NETWORK_PROTOCOL_VERSION: Final = "network.protocol.version"
    SERVER_ADDRESS: Final = "server.address"
    SERVER_PORT: Final = "server.port"
    CLIENT_ADDRESS: Final = "client.address"
    CLIENT_PORT: Final = "client.port"
    # ours
    METHOD_ORIGINAL: Final = "mcp_sse_server.method.original"
    RESULT_TYPE: Final = "mcp_sse_server.result_type"
    TASK_ID: Final = "mcp_sse_server.task.id"
    TASK_GENERATION: Final = "mcp_sse_server.task.generation"
    WORKER_ID: Final = "mcp_sse_server.worker.id"
    REASON: Final = "mcp_sse_server.reason"
    MESSAGE_TYPE: Final = "mcp_sse_server.message.type"
    ROUTED: Final = "mcp_sse_server.routed"


OTHER: Final = "_OTHER"
"""The value a method, tool or prompt name takes when it is not known (cardinality guard)."""

TOOL_ERROR: Final = "tool_error"
TIMEOUT: Final = "timeout"
CANCELLED: Final = "cancelled"
EXECUTE_TOOL: Final = "execute_tool"

# The W3C keys SEP-414 reserves in ``_meta`` (no DNS prefix), and the HTTP headers of the same names.
TRACE_META_KEYS: Final = ("traceparent", "tracestate", "baggage")

# --- metrics ------------------------------------------------------------------------------------

DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""The conventions' bucket advice for the four duration histograms (seconds)."""


class METRIC:
    """Instrument names and units: the conventions' histograms, then our counters."""

    UNIT_SECONDS: Final = "s"
    SERVER_OPERATION_DURATION: Final = "mcp.server.operation.duration"
    CLIENT_OPERATION_DURATION: Final = "mcp.client.operation.duration"
    SERVER_SESSION_DURATION: Final = "mcp.server.session.duration"
    CLIENT_SESSION_DURATION: Final = "mcp.client.session.duration"
    # ours: a Counter by ``mcp_sse_server.reason`` (one of REJECT_REASONS)
    REQUESTS_REJECTED: Final = "mcp_sse_server.requests.rejected"
    # ours: a Counter by ``mcp_sse_server.message.type`` (answer, cancel, ...)
    ROUTED_MESSAGES: Final = "mcp_sse_server.routed.messages"
    # ours: an UpDownCounter of the sessions this process serves, by ``mcp.protocol.version``
    SESSIONS_ACTIVE: Final = "mcp_sse_server.sessions.active"
    # ours: an UpDownCounter of the tasks running here, by ``mcp_sse_server.task.generation``
    TASKS_ACTIVE: Final = "mcp_sse_server.tasks.active"


REJECT_REASONS: Final = frozenset(
    {"origin", "host", "size", "session_not_found", "limit", "unavailable", "shed", "busy", "rate_limit"}
)
"""Why a request was refused below JSON-RPC (the values of ``mcp_sse_server.reason``)."""

# --- methods and names --------------------------------------------------------------------------

KNOWN_METHODS: Final = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "logging/setLevel",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "tasks/update",
        "server/discover",
        "subscriptions/listen",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/roots/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/elicitation/complete",
        "notifications/tasks/status",
        "notifications/subscriptions/acknowledged",
    }
)
"""Methods named as themselves on spans and metrics; anything else is ``_OTHER`` unless the
server registered a handler for it (``guarded_method``'s ``registered``)."""

_URI_METHODS: Final = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"}
)

Known = Callable[[str, str], bool]
"""``is_known(kind, name)``: is the tool (``kind == "tool"``) or prompt (``"prompt"``) registered?"""


def guarded_method(method: str, registered: Callable[[str], bool] | None = None) -> str:
    """``method`` when it is well known (or ``registered`` says the server serves it), else ``_OTHER``."""
    if method in KNOWN_METHODS or (registered is not None and registered(method)):
        return method
    return OTHER


def operation_target(method: str, params: Mapping[str, Any] | None, is_known: Known | None = None) -> str | None:
    """The tool or prompt name a span is named after, or None.

    Only a name ``is_known`` accepts (None accepts every name: a client names what it calls) is
    returned; an unknown name from a peer would otherwise mint a new span name per request.
    """
    if params is None:
        return None
    if method == "tools/call":
        kind = "tool"
    elif method == "prompts/get":
        kind = "prompt"
    else:
        return None
    name = params.get("name")
    if type(name) is not str or not name:
        return None
    if is_known is not None and not is_known(kind, name):
        return None
    return name


def span_name(method: str, target: str | None) -> str:
    """``{method} {target}`` (``tools/call add``), or the method alone."""
    return f"{method} {target}" if target else method


def request_attributes(
    method: str,
    params: Mapping[str, Any] | None,
    request_id: str | int | None,
    target: str | None,
) -> dict[str, Any]:
    """The attributes every span of one request carries, whichever side makes it.

    ``method`` is the guarded method (``_OTHER`` for an unknown one); ``target`` is what
    ``operation_target`` returned; ``jsonrpc.request.id`` only for a request with an id.
    """
    attributes: dict[str, Any] = {ATTRIBUTE.METHOD: method}
    if request_id is not None:
        attributes[ATTRIBUTE.REQUEST_ID] = str(request_id)
    if method == "tools/call":
        attributes[ATTRIBUTE.OPERATION] = EXECUTE_TOOL
        attributes[ATTRIBUTE.TOOL_NAME] = target or OTHER
    elif method == "prompts/get":
        attributes[ATTRIBUTE.PROMPT_NAME] = target or OTHER
    elif method in _URI_METHODS and params is not None:
        uri = params.get("uri")
        if type(uri) is str:
            attributes[ATTRIBUTE.RESOURCE_URI] = uri
    return attributes


def metric_attributes(span_attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of a span's attributes a duration histogram may carry (no ids, no URI)."""
    return {key: value for key, value in span_attributes.items() if key in _METRIC_KEYS}


_METRIC_KEYS: Final = frozenset(
    {
        ATTRIBUTE.METHOD,
        ATTRIBUTE.ERROR_TYPE,
        ATTRIBUTE.TOOL_NAME,
        ATTRIBUTE.PROMPT_NAME,
        ATTRIBUTE.OPERATION,
        ATTRIBUTE.STATUS_CODE,
        ATTRIBUTE.PROTOCOL_VERSION,
        ATTRIBUTE.NETWORK_TRANSPORT,
        ATTRIBUTE.NETWORK_PROTOCOL_NAME,
        ATTRIBUTE.NETWORK_PROTOCOL_VERSION,
        ATTRIBUTE.SERVER_ADDRESS,
        ATTRIBUTE.SERVER_PORT,
    }
)

# --- errors -------------------------------------------------------------------------------------

RESOURCE_NOT_FOUND: Final = -32002

CALLER_FAULT_CODES: Final = frozenset(
    {PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, RESOURCE_NOT_FOUND}
)
"""Codes that are the caller's fault: not an error on a SERVER span (status unset, no
``error.type``). Our -32020/-32021/-32022 fall in the server range and count as errors, as the
conventions' literal rule says (open point 9.1 of the digest)."""


def server_error_type(code: int) -> str | None:
    """``error.type`` of a SERVER span whose reply is the error ``code``; None when it is the caller's fault."""
    return None if code in CALLER_FAULT_CODES else str(code)


def client_error_type(code: int) -> str:
    """``error.type`` of a CLIENT span whose reply is the error ``code``: every code is an error."""
    return str(code)


def exception_error_type(error: BaseException) -> str:
    """``error.type`` for an exception that is not a JSON-RPC error: ``timeout``, or its class."""
    if isinstance(error, TimeoutError):
        return TIMEOUT
    return type(error).__qualname__


def is_tool_error(method: str, result: Mapping[str, Any] | None) -> bool:
    """True for a ``tools/call`` result that reports failure (``isError: true``)."""
    return method == "tools/call" and result is not None and result.get("isError") is True


# --- captured content (opt-in: ``Telemetry(capture_content=True)``) ------------------------------


def _text(value: Any, limit: int) -> str:
    """``value`` as JSON text (a string as it is), cut to at most ``limit`` UTF-8 bytes."""
    text = value if type(value) is str else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode(errors="ignore")  # (never half a character)


def captured_request(method: str, params: Mapping[str, Any] | None, limit: int) -> dict[str, str]:
    """The content attributes of a request: a ``tools/call``'s arguments as JSON text, a
    ``prompts/get``'s arguments one ``gen_ai.prompt.variable.<name>`` each. Sensitive: only
    when capture is switched on, and on spans only (never on a metric)."""
    arguments = params.get("arguments") if params is not None else None
    if method == "tools/call":
        return {ATTRIBUTE.TOOL_ARGUMENTS: _text(arguments if arguments is not None else {}, limit)}
    if method == "prompts/get" and isinstance(arguments, Mapping):
        return {ATTRIBUTE.PROMPT_VARIABLE_PREFIX + str(name): _text(value, limit) for name, value in arguments.items()}
    return {}


def captured_result(method: str, result: Mapping[str, Any] | None, limit: int) -> dict[str, str]:
    """The content attribute of a ``tools/call`` result: its ``structuredContent`` as JSON text
    when it has one, else its ``content``."""
    if method != "tools/call" or result is None:
        return {}
    structured = result.get("structuredContent")
    return {ATTRIBUTE.TOOL_RESULT: _text(structured if structured is not None else result.get("content"), limit)}
