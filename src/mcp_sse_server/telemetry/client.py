"""OpenTelemetry on the client side: a CLIENT span for every request a client sends, a SERVER span
for every request it answers, and the client's two duration histograms.

Rules of this module:

1. It is imported only when a client's telemetry is switched on (``McpClient(telemetry=...)``),
   and it is the client's only module that imports ``opentelemetry``; without the API installed
   switching it on raises ``ImportError`` naming the ``otel`` extra (``config.require_api``,
   which the client asks first).
2. Names, attributes and the error rules are ``conventions``': a span is named
   ``{method} {target}`` (the tool or prompt the caller named: a client names what it calls),
   every JSON-RPC error code is an error (``error.type`` and ``rpc.response.status_code`` are the
   code, the description its message), a ``tools/call`` result with ``isError`` is
   ``tool_error``, a timeout ``timeout``, a cancelled call ``cancelled``, any other exception
   its class name (never its text).
3. Trace context goes into a *copy* of the request's ``_meta`` through the global propagator
   (``traceparent``/``tracestate``, and ``baggage`` where configured); the caller's dicts are
   never changed. The HTTP transports copy those keys onto headers of the same names.
4. One logical call, one span (``logical``): a 2026-07-28 request with its ``input_required``
   rounds, its retries and its session fallback. While it is open it is the current span, and
   the requests the same client sends for it carry it and make no span of their own
   (``exchange`` sees it in ``_LOGICAL``); another client inside it (the fallback's session)
   and other calls made meanwhile (a ``tools/list`` refresh) are its children. Rounds,
   retries and the fallback are span events (``note``).
5. What the server asks the client (elicitation, sampling, roots, ping) is a SERVER span
   parented by the context in the request's ``_meta``, else by the current one (an
   ``inputRequests`` entry is answered inside its call's span). Caller-fault codes are not
   errors there (``conventions.server_error_type``).
6. ``mcp.client.operation.duration`` is recorded where a span ends (``perf_counter`` deltas, so
   metrics work with spans off), ``mcp.client.session.duration`` from a session's handshake to
   the end of its connection (``error.type`` only when the connection ended under it). Neither
   carries a session or request id.
7. ``spans=False`` keeps the metrics and propagation; ``mode="propagation_only"`` makes no span
   and no metric, and passes the current context on; ``propagate=False`` injects nothing.
   Hooks never raise into the client: a failure to export is OpenTelemetry's to log.
8. ``capture_content=True`` (off by default: sensitive) puts a ``tools/call``'s arguments and
   result, and a ``prompts/get``'s arguments, on its CLIENT span as JSON text cut to
   ``max_attribute_bytes`` (``conventions.captured_request``/``_result``); never on a metric.
"""

from __future__ import annotations

import contextvars
import functools
import time
import urllib.parse
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, Protocol

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from ..engine.jsonrpc import McpError
from .conventions import (
    ATTRIBUTE,
    CANCELLED,
    DURATION_BUCKETS,
    METRIC,
    TOOL_ERROR,
    captured_request,
    captured_result,
    client_error_type,
    exception_error_type,
    is_tool_error,
    metric_attributes,
    operation_target,
    request_attributes,
    server_error_type,
    span_name,
)

__all__ = ["EVENTS", "ClientTelemetry", "Traced", "remote_parent"]

_SCOPE: Final = "mcp_sse_server.client"

EVENTS: Final = {
    "retry": "mcp_sse_server.retry",
    "input_required": "mcp_sse_server.input_required",
    "session_fallback": "mcp_sse_server.session_fallback",
}
"""The span events of a logical call (rule 4), by the word the client notes them with."""
# Their attributes, by the keyword the client gives each with.
_DETAILS: Final = {
    "reason": ATTRIBUTE.REASON,
    "round": "mcp_sse_server.round",
    "methods": "mcp_sse_server.input.methods",
}
_PROPAGATION_ONLY: Final = "propagation_only"

# How each of this package's client transports reaches its server (transport class name).
_NETWORK: Final = {
    "StdioClientTransport": {ATTRIBUTE.NETWORK_TRANSPORT: "pipe"},
    "StreamableHttpClientTransport": {ATTRIBUTE.NETWORK_TRANSPORT: "tcp", ATTRIBUTE.NETWORK_PROTOCOL_NAME: "http"},
    "SseClientTransport": {ATTRIBUTE.NETWORK_TRANSPORT: "tcp", ATTRIBUTE.NETWORK_PROTOCOL_NAME: "http"},
}


class Traced(Protocol):
    """What a span reads of the client it belongs to (``ClientCore``)."""

    transport: Any
    protocol_version: str | None


class _Logical:
    """The open span of one logical call, and the client it belongs to (rule 4)."""

    __slots__ = ("client", "span")

    def __init__(self, client: object, span: Span) -> None:
        self.client = client
        self.span = span


_LOGICAL: contextvars.ContextVar[_Logical | None] = contextvars.ContextVar("mcp_client_logical_call", default=None)


@functools.lru_cache(maxsize=64)
def _endpoint(kind: str, url: str | None) -> dict[str, Any]:
    """The network and ``server.*`` attributes of a transport of class ``kind`` at ``url``.

    >>> _endpoint("StreamableHttpClientTransport", "http://127.0.0.1:8080/mcp")["server.port"]
    8080
    """
    attributes: dict[str, Any] = dict(_NETWORK.get(kind, {}))
    if url is not None:
        parts = urllib.parse.urlsplit(url)
        if parts.hostname:
            attributes[ATTRIBUTE.SERVER_ADDRESS] = parts.hostname
            try:
                port = parts.port
            except ValueError:
                port = None
            attributes[ATTRIBUTE.SERVER_PORT] = port or (443 if parts.scheme == "https" else 80)
    return attributes


def _peer(client: Traced) -> dict[str, Any]:
    transport = client.transport
    url = getattr(transport, "url", None)
    return _endpoint(type(transport).__name__, url if isinstance(url, str) else None)


class _Call:
    """One span (or, with spans off, one measurement) from start to end."""

    __slots__ = ("attributes", "method", "span", "started")

    def __init__(self, method: str, attributes: dict[str, Any], span: Span | None) -> None:
        self.method = method
        self.attributes = attributes
        self.span = span
        self.started = time.perf_counter()


class ClientTelemetry:
    """The OpenTelemetry side of one client (and of its fallback session, which shares it).

    ``settings`` is ``True`` (the global providers, every default) or an object with any of
    ``tracer_provider``, ``meter_provider``, ``spans``, ``metrics``, ``propagate`` and ``mode``
    (``telemetry.Telemetry``), read once here.
    """

    __slots__ = ("_capture", "_operation", "_propagator", "_session", "_sessions", "_spans", "_tracer")

    def __init__(self, settings: object = True) -> None:
        propagation_only = getattr(settings, "mode", "native") == _PROPAGATION_ONLY
        self._spans = getattr(settings, "spans", True) and not propagation_only
        self._propagator = propagate if getattr(settings, "propagate", True) else None
        # Rule 8: the byte limit of captured content, None when it is not captured (the default).
        self._capture: int | None = (
            getattr(settings, "max_attribute_bytes", 4096) if getattr(settings, "capture_content", False) else None
        )
        self._tracer = trace.get_tracer(_SCOPE, tracer_provider=getattr(settings, "tracer_provider", None))
        self._operation: Any = None
        self._session: Any = None
        if getattr(settings, "metrics", True) and not propagation_only:
            meter = metrics.get_meter(_SCOPE, meter_provider=getattr(settings, "meter_provider", None))
            self._operation = meter.create_histogram(
                METRIC.CLIENT_OPERATION_DURATION,
                unit=METRIC.UNIT_SECONDS,
                description="Duration of an MCP request as the client saw it",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            self._session = meter.create_histogram(
                METRIC.CLIENT_SESSION_DURATION,
                unit=METRIC.UNIT_SECONDS,
                description="Duration of an MCP session as the client saw it",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
        # The sessions open, by client: when each began and what its measurement carries.
        self._sessions: weakref.WeakKeyDictionary[Any, tuple[float, dict[str, Any]]] = weakref.WeakKeyDictionary()

    # --- requests sent -------------------------------------------------------------------

    def _start(self, client: Traced, method: str, params: Mapping[str, Any] | None, request_id: Any) -> _Call:
        target = operation_target(method, params)
        attributes = request_attributes(method, params, request_id, target)
        attributes.update(_peer(client))
        if client.protocol_version is not None:
            attributes[ATTRIBUTE.PROTOCOL_VERSION] = client.protocol_version
        span = None
        if self._spans:
            span = self._tracer.start_span(span_name(method, target), kind=SpanKind.CLIENT, attributes=attributes)
            if self._capture is not None and span.is_recording():
                span.set_attributes(captured_request(method, params, self._capture))
        return _Call(method, attributes, span)

    def _inject(self, params: dict[str, Any] | None, span: Span | None) -> dict[str, Any] | None:
        """``params`` with the trace context in a copy of its ``_meta`` (rule 3)."""
        if self._propagator is None:
            return params
        carrier: dict[str, Any] = {}
        where = trace.set_span_in_context(span) if span is not None else None
        self._propagator.inject(carrier, context=where)
        if not carrier:
            return params
        sent = dict(params or {})
        meta = sent.get("_meta")
        sent["_meta"] = {**meta, **carrier} if isinstance(meta, dict) else carrier
        return sent

    def _end(self, client: Traced, call: _Call, result: Mapping[str, Any] | None, error: BaseException | None) -> None:
        """End ``call``'s span with its outcome (rule 2) and record its duration."""
        duration = time.perf_counter() - call.started
        outcome: dict[str, Any] = {}
        description = None
        if error is not None:
            if isinstance(error, McpError):
                code = str(error.code)
                outcome[ATTRIBUTE.ERROR_TYPE] = client_error_type(error.code)
                outcome[ATTRIBUTE.STATUS_CODE] = code
                description = error.message
            elif not isinstance(error, Exception):  # the caller was cancelled
                outcome[ATTRIBUTE.ERROR_TYPE] = CANCELLED
            else:
                outcome[ATTRIBUTE.ERROR_TYPE] = exception_error_type(error)
        elif is_tool_error(call.method, result):
            outcome[ATTRIBUTE.ERROR_TYPE] = TOOL_ERROR
        if ATTRIBUTE.PROTOCOL_VERSION not in call.attributes:
            version = client.protocol_version
            if version is None and call.method == "initialize" and result is not None:
                version = result.get("protocolVersion")
            if isinstance(version, str):
                outcome[ATTRIBUTE.PROTOCOL_VERSION] = version
        call.attributes.update(outcome)
        span = call.span
        if span is not None:
            if span.is_recording():
                session_id = getattr(client.transport, "session_id", None)
                if isinstance(session_id, str):
                    outcome[ATTRIBUTE.SESSION_ID] = session_id
                span.set_attributes(outcome)
                if self._capture is not None and error is None:
                    span.set_attributes(captured_result(call.method, result, self._capture))
                if ATTRIBUTE.ERROR_TYPE in outcome:
                    span.set_status(StatusCode.ERROR, description)
            span.end()
        if self._operation is not None:
            self._operation.record(duration, metric_attributes(call.attributes))

    async def exchange(
        self,
        client: Traced,
        method: str,
        params: dict[str, Any] | None,
        request_id: Any,
        send: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``send`` one request on the wire with its CLIENT span (or, inside a logical call of
        ``client``, with that call's context only: rule 4)."""
        logical = _LOGICAL.get()
        if logical is not None and logical.client is client:
            return await send(self._inject(params, logical.span))
        call = self._start(client, method, params, request_id)
        recording = call.span is not None and call.span.is_recording()
        return await self._run(client, call, send, self._inject(params, call.span), attach=recording)

    async def logical(
        self,
        client: Traced,
        method: str,
        params: dict[str, Any] | None,
        run: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``run`` one logical call (rule 4) under one span; ``run`` gets ``params`` with its
        context injected, which every round and retry of the call then carries."""
        call = self._start(client, method, params, None)
        span = call.span if call.span is not None else trace.get_current_span()
        scope = _Logical(client, span)
        return await self._run(
            client, call, run, self._inject(params, call.span), attach=call.span is not None, scope=scope
        )

    async def _run(
        self,
        client: Traced,
        call: _Call,
        send: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
        sent: dict[str, Any] | None,
        *,
        attach: bool,
        scope: _Logical | None = None,
    ) -> dict[str, Any]:
        """``send(sent)`` and end ``call`` with its outcome; ``attach``: its span is current
        meanwhile (a logical call's always, so that what nests under it follows its sampling; a
        wire request's only when it records); ``scope``: the logical call it opens (rule 4)."""
        token = otel_context.attach(trace.set_span_in_context(call.span)) if attach and call.span is not None else None
        opened = _LOGICAL.set(scope) if scope is not None else None
        try:
            result = await send(sent)
        except BaseException as error:
            self._end(client, call, None, error)
            raise
        finally:
            if opened is not None:
                _LOGICAL.reset(opened)
            if token is not None:
                otel_context.detach(token)
        self._end(client, call, result, None)
        return result

    def note(self, event: str, details: Mapping[str, Any]) -> None:
        """An event on the open logical call's span: ``event`` one of ``EVENTS``' words,
        ``details`` keyed as ``_DETAILS``."""
        logical = _LOGICAL.get()
        if logical is not None and logical.span.is_recording():
            logical.span.add_event(EVENTS[event], {_DETAILS[key]: value for key, value in details.items()})

    # --- requests answered ---------------------------------------------------------------

    async def answered(
        self,
        client: Traced,
        method: str,
        params: Mapping[str, Any],
        request_id: Any,
        answer: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``answer()`` what the server asked, inside its SERVER span (rule 5)."""
        if not self._spans:
            return await answer()
        parent = None
        meta = params.get("_meta")
        if isinstance(meta, dict) and "traceparent" in meta:
            extracted = propagate.extract(meta)
            if trace.get_current_span(extracted).get_span_context().is_valid:
                parent = extracted
        logical = _LOGICAL.get()
        if logical is not None and logical.client is client:
            request_id = None  # an inputRequests entry of a call: its key is no JSON-RPC id
        attributes = request_attributes(method, params, request_id, None)
        attributes.update(_peer(client))
        if client.protocol_version is not None:
            attributes[ATTRIBUTE.PROTOCOL_VERSION] = client.protocol_version
        span = self._tracer.start_span(span_name(method, None), context=parent, kind=SpanKind.SERVER)
        if span.is_recording():
            span.set_attributes(attributes)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        try:
            result = await answer()
        except BaseException as error:
            if span.is_recording():
                failure = None
                if isinstance(error, McpError):
                    span.set_attribute(ATTRIBUTE.STATUS_CODE, str(error.code))
                    failure = server_error_type(error.code)
                elif isinstance(error, Exception):
                    failure = exception_error_type(error)
                else:
                    failure = CANCELLED
                if failure is not None:
                    span.set_attribute(ATTRIBUTE.ERROR_TYPE, failure)
                    span.set_status(StatusCode.ERROR, error.message if isinstance(error, McpError) else None)
            raise
        finally:
            otel_context.detach(token)
            span.end()
        return result

    # --- sessions ------------------------------------------------------------------------

    def session_opened(self, client: Traced) -> None:
        """A session began (its handshake finished); one still open on ``client`` ends first."""
        if self._session is None:
            return
        self.session_ended(client, None)
        attributes = dict(_peer(client))
        if client.protocol_version is not None:
            attributes[ATTRIBUTE.PROTOCOL_VERSION] = client.protocol_version
        self._sessions[client] = (time.perf_counter(), attributes)

    def session_ended(self, client: Traced, error: str | None) -> None:
        """``client``'s session ended (``error``: why, when it ended under the client)."""
        opened = self._sessions.pop(client, None)
        if opened is None or self._session is None:
            return
        started, attributes = opened
        if error is not None:
            attributes = {**attributes, ATTRIBUTE.ERROR_TYPE: error}
        self._session.record(time.perf_counter() - started, attributes)


@contextmanager
def remote_parent(traceparent: str, tracestate: str | None = None) -> Iterator[bool]:
    """Make a W3C ``traceparent`` (from another process: ``call --traceparent``) the current
    context for the duration; yields False, changing nothing, when it is not a valid one."""
    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    extracted = propagate.extract(carrier)
    if not trace.get_current_span(extracted).get_span_context().is_valid:
        yield False
        return
    token = otel_context.attach(extracted)
    try:
        yield True
    finally:
        otel_context.detach(token)
