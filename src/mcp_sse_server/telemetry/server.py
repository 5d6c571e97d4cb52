"""OpenTelemetry on the server side: the ``engine.observe.Observer`` that makes a SERVER span for
every request a server's sessions serve, records its duration histograms and counts refusals.

Rules of this module:

1. It is imported only when a server's telemetry is switched on (``Telemetry.server_observer``).
   Tracer, meter, instruments and propagator are resolved once, here, never per request.
2. Names, attributes and error rules are ``conventions``'. A tool or prompt name is a span name
   (and a metric attribute) only when the server has it registered; an unknown method is
   ``_OTHER`` with its text in ``mcp_sse_server.method.original`` on the span only.
3. Parent, in order: the trace context in the request's ``_meta`` (SEP-414); else, on HTTP, the
   request's ``traceparent``/``tracestate`` headers; else the ambient context (an ASGI
   instrumentation's span). A context that is not the parent but carries a valid span is a
   link: the ambient span, and headers that differ from ``_meta``. An invalid ``traceparent``
   is ignored (the next source is used).
4. Status: ERROR only when the server failed: a JSON-RPC error code outside
   ``CALLER_FAULT_CODES`` (description: the wire message, which never holds exception text: a
   handler's exception is "Internal error" on the wire and its class in ``error.type``), or a
   ``tools/call`` result with ``isError`` (``tool_error``). A cancelled request ends with a
   ``cancelled`` event and no error; a 2026-07-28 ``input_required`` result is an attribute and
   an event, not an error.
5. The span is the current span while the handler runs (attached in the task that serves the
   request, detached when it ends), so spans the handler makes, and log records of the
   ``mcp_sse_server`` logger (``logs=True``), carry its ids.
6. ``mcp.server.operation.duration`` is measured with ``perf_counter`` (metrics work with spans
   off); ``mcp.server.session.duration`` only for sessions (a stateless request has none).
   Neither carries a session or request id. ``mcp_sse_server.sessions.active`` counts the
   sessions this process serves: from the first request it answers on one (``initialize``, or a
   request of a session another worker opened) until its connection here ends.
7. Nothing here raises into the engine: a failing hook is logged and the request goes on.
8. Across workers (Redis): a ``notifications/cancelled`` forwarded to the worker running its
   request gets a SERVER span where it arrived, and that span's context travels in the routed
   message; the running worker adds a ``cancel (routed)`` event and a link to it on the
   request's span. An answer carries the context it arrived in (``_meta``, headers, ambient):
   the CLIENT span of the request it answers (rule 12) gets an ``answer (routed)`` event and a
   link to it. A 2024-11-05 POST sent on to the worker holding its stream carries its HTTP origin
   (``observe.current_http``: trace headers and peer), current there while its message is taken.
9. A task (both generations) is an INTERNAL span ``task {tool}`` from its start to its terminal
   status, in a trace of its own linked to the call that made it (``task_trace="child"``: a
   child of that call); status changes are events; ``failed`` is an error by rule 4 (a core
   task failed by an ``isError`` result is ``tool_error``), ``cancelled`` is not. Every
   ``tasks/*`` request naming a task (``tasks/get``, ``tasks/result``, ``tasks/update``,
   ``tasks/cancel``, both generations) carries ``mcp_sse_server.task.id`` and links to the
   task's trace, on whichever worker serves it, through the task's anchor (``task_anchor``);
   a core ``tasks/list`` links to the anchor of every task on the page it answers.
   Why an anchor: nothing about the task's span is stored (older workers build a ``TaskRecord``
   from every stored field and would fail on a new one), and the OpenTelemetry API cannot set
   a span's own ids (only an SDK ``IdGenerator`` can). So a task's trace and a span id are
   derived from its id (SHA-256: unguessable, since the id is); with ``task_trace="link"`` the
   task span is the child of that remote, never exported, anchor, which puts it in the derived
   trace; a poll computes the same anchor from the ``taskId`` it names and links to it, so the
   link leads to the task's trace (a viewer shows the task span with a parent it never
   received). With ``task_trace="child"`` the task span is in its caller's trace and links to
   the anchor, so the polls and the task share a linked context, but the polls do not lead to
   the caller's trace. The anchor is sampled when the creating call was (a task is kept or
   dropped with its call, as a child would be).
10. With the global providers (no provider given) and no SDK installed, nothing could be
    recorded: a request makes no span and records nothing (checked per request, so an SDK
    installed later is used from then on); only a caller's trace context in ``_meta`` is made
    current for the handler, so that what it calls downstream is propagated in the caller's
    trace (the HTTP headers are not looked at: observed.py rule 4).
11. ``capture_content=True`` (off by default: arguments and results are often sensitive) puts a
    ``tools/call``'s arguments and result, and a ``prompts/get``'s arguments, on its span as
    JSON text cut to ``max_attribute_bytes`` (``conventions.captured_request``/``_result``);
    never on a metric.
12. A request the server sends its client (elicitation, sampling, roots, ping) is a CLIENT span,
    a child of the current one (the request whose handler asks), its context in a copy of the
    request's ``_meta``, so the client's SERVER span of it is its child; every error code is an
    error there, a timeout ``timeout``, a cancelled asker ``cancelled``. With no span (dormant,
    spans off, propagation only) the current context is still sent.
13. The rounds of one 2026-07-28 call (``input_required`` and its retries) are separate requests:
    the first round's span context is sealed in the ``requestState`` (``current_trace``), and
    each later round's span gets an ``input_required round`` event and a link to it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import logging
import time
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..engine.jsonrpc import JsonRpcError, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, McpError
from ..engine.observe import HttpOrigin, current_http
from ..engine.stateless_meta import PROTOCOL_VERSION_KEY
from ..engine.transport import Reply
from .conventions import (
    ATTRIBUTE,
    CANCELLED,
    DURATION_BUCKETS,
    METRIC,
    OTHER,
    TOOL_ERROR,
    TRACE_META_KEYS,
    captured_request,
    captured_result,
    client_error_type,
    exception_error_type,
    guarded_method,
    is_tool_error,
    metric_attributes,
    operation_target,
    request_attributes,
    server_error_type,
    span_name,
)
from .logs import install_log_correlation

__all__ = ["SCOPE_NAME", "ServerObserver", "task_anchor", "trace_carrier"]

logger = logging.getLogger("mcp_sse_server")

SCOPE_NAME: Final = "mcp_sse_server"
_METRICS_STATE: Any = metrics._internal  # (where the API keeps the global meter provider)
_INPUT_REQUIRED: Final = "input_required"


@functools.cache  # (reading the package metadata costs milliseconds: once per process, not per server)
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-sse-server")
    except PackageNotFoundError:  # (run from a source tree)
        return "0"


_ANCHOR_LABEL: Final = b"mcp_sse_server task anchor\x00"
_TASK_METHODS: Final = frozenset(("tasks/get", "tasks/result", "tasks/update", "tasks/cancel"))
_LISTED_LINKS: Final = 100  # a tasks/list page's links at most (a page holds 100; the SDK keeps 128 links)


def task_anchor(task_id: str, sampled: bool = True) -> SpanContext:
    """The remote span context every worker derives from ``task_id`` (rule 9): the task's trace
    id (the first 16 bytes of SHA-256 over a fixed label and the id) and span id (the next 8);
    neither is ever zero, so the context is valid per W3C, and the trace id is flagged random
    (W3C level 2) because the task id it is hashed from is."""
    digest = hashlib.sha256(_ANCHOR_LABEL + task_id.encode()).digest()
    flags = TraceFlags.RANDOM_TRACE_ID | (TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    return SpanContext(
        int.from_bytes(digest[:16], "big") or 1,
        int.from_bytes(digest[16:24], "big") or 1,
        is_remote=True,
        trace_flags=TraceFlags(flags),
    )


def _link_listed(span: Span, listed: Any) -> None:
    """Rule 9: a ``tasks/list`` span links to the trace of every task on the page it answers."""
    if type(listed) is list:
        for each in listed[:_LISTED_LINKS]:
            task_id = each.get("taskId") if type(each) is dict else None
            if type(task_id) is str:
                span.add_link(task_anchor(task_id))


def trace_carrier(keys: tuple[str, ...] = TRACE_META_KEYS, source: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The W3C trace entries of ``source`` that are strings (a ``_meta`` or a header map)."""
    if not source:
        return {}
    return {key: value for key in keys if type(value := source.get(key)) is str}


def _valid(parent: otel_context.Context) -> bool:
    return trace.get_current_span(parent).get_span_context().is_valid


def _network(connection: Any, http: HttpOrigin | None) -> dict[str, Any]:
    """``network.*`` and ``client.*`` of the transport a request came over (none in memory)."""
    if http is not None:
        attributes: dict[str, Any] = {
            ATTRIBUTE.NETWORK_TRANSPORT: "tcp",
            ATTRIBUTE.NETWORK_PROTOCOL_NAME: "http",
            ATTRIBUTE.NETWORK_PROTOCOL_VERSION: http.http_version,
        }
        if http.client_address is not None:
            attributes[ATTRIBUTE.CLIENT_ADDRESS] = http.client_address
            if http.client_port is not None:
                attributes[ATTRIBUTE.CLIENT_PORT] = http.client_port
        return attributes
    module = type(getattr(connection, "transport", None)).__module__
    if module.endswith(".stdio"):
        return {ATTRIBUTE.NETWORK_TRANSPORT: "pipe"}
    if ".http" in module:  # a session's HTTP transport, outside a request (its end)
        return {ATTRIBUTE.NETWORK_TRANSPORT: "tcp", ATTRIBUTE.NETWORK_PROTOCOL_NAME: "http"}
    return {}


class ServerObserver:
    """The observer of one ``McpServer`` (``engine.observe.Observer``); rules are the module's.

    ``server`` None: the observer of an HTTP endpoint whose factory builds a server per session
    (``telemetry.setup.instrument``): it sees the endpoint's requests (peer, trace headers,
    refusals), and ``bound`` gives each server it builds an observer sharing its instruments.
    """

    def __init__(self, settings: Any, server: Any) -> None:
        # (``settings`` is a ``config.Telemetry``: not imported, config imports this module)
        self.settings = settings
        self.server = server
        version = _version()
        tracer_provider = settings.tracer_provider or trace.get_tracer_provider()
        self.tracer = tracer_provider.get_tracer(SCOPE_NAME, version)
        meter_provider = settings.meter_provider or metrics.get_meter_provider()
        meter = meter_provider.get_meter(SCOPE_NAME, version)
        self.spans = settings.spans and settings.mode == "native"
        self.metrics = settings.metrics and settings.mode == "native"
        # Rule 10: with the global providers and no SDK installed yet, nothing is recorded. Whether
        # one was installed is read from the API's module globals: get_tracer_provider() reads
        # the environment on every call (2-4 µs); an API release without them is never dormant.
        self._may_sleep = (
            (settings.tracer_provider is None or not self.spans)
            and (settings.meter_provider is None or not self.metrics)
            and hasattr(trace, "_TRACER_PROVIDER")
            and hasattr(_METRICS_STATE, "_METER_PROVIDER")
        )
        self.operation_duration = meter.create_histogram(
            METRIC.SERVER_OPERATION_DURATION,
            unit=METRIC.UNIT_SECONDS,
            description="Duration of an MCP request or notification as the server handled it",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.session_duration = meter.create_histogram(
            METRIC.SERVER_SESSION_DURATION,
            unit=METRIC.UNIT_SECONDS,
            description="Duration of an MCP session as the server saw it",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.rejections = meter.create_counter(
            METRIC.REQUESTS_REJECTED, unit="{request}", description="HTTP requests refused below JSON-RPC"
        )
        self.routed_messages = meter.create_counter(
            METRIC.ROUTED_MESSAGES, unit="{message}", description="Messages that arrived from another worker"
        )
        self.tasks_active = meter.create_up_down_counter(
            METRIC.TASKS_ACTIVE, unit="{task}", description="Tasks running in this process"
        )
        self.sessions_active = meter.create_up_down_counter(
            METRIC.SESSIONS_ACTIVE, unit="{session}", description="Sessions this process serves now"
        )
        # Rule 6: the sessions counted in sessions_active, by id() of their owner, with the
        # attributes they were counted with (shared by the observers ``bound`` makes).
        self._live: dict[int, dict[str, Any]] = {}
        if settings.logs:
            install_log_correlation()

    def bound(self, server: Any) -> ServerObserver:
        """An observer of ``server`` with this one's settings, tracer and instruments (a server
        per session then costs no instrument lookups)."""
        observer = copy.copy(self)
        observer.server = server
        return observer

    # --- the cardinality guard (rule 2) -------------------------------------------------------

    def _known(self, kind: str, name: str) -> bool:
        if self.server is None:
            return False
        registry = self.server.tool_registry if kind == "tool" else self.server.prompt_registry
        return name in registry

    def _registered(self, method: str) -> bool:
        if self.server is None:
            return False
        try:
            self.server.handlers[method]
        except KeyError:
            return False
        return True

    # --- the parent (rule 3) ---------------------------------------------------------------------

    def _parent(self, meta: Any) -> tuple[otel_context.Context, list[Link]]:
        """The parent context of a message with ``_meta`` ``meta``, and the contexts to link."""
        http = current_http.get()
        ambient = otel_context.get_current()
        parent: otel_context.Context | None = None
        links: list[Link] = []
        from_meta = trace_carrier(source=meta) if type(meta) is dict else {}
        if from_meta:
            extracted = propagate.extract(from_meta)
            if _valid(extracted):
                parent = extracted
        if http is not None and http.headers and self.settings.http_headers:
            from_headers = propagate.extract(http.headers)
            if _valid(from_headers):
                header_span = trace.get_current_span(from_headers).get_span_context()
                if parent is None:
                    parent = from_headers
                elif header_span != trace.get_current_span(parent).get_span_context():
                    links.append(Link(header_span))
        if parent is None:
            parent = ambient
        elif _valid(ambient):
            links.append(Link(trace.get_current_span(ambient).get_span_context()))
        return parent, links

    # --- engine.observe.Observer ----------------------------------------------------------------

    def dormant(self) -> bool:
        """True while nothing would be recorded (rule 10): the global providers are the API's
        proxies (no SDK installed) or their signal is off."""
        return (
            self._may_sleep
            and (not self.spans or trace._TRACER_PROVIDER is None)
            and (not self.metrics or _METRICS_STATE._METER_PROVIDER is None)
        )

    def inbound(self, request: JsonRpcRequest, connection: Any) -> _Request | _Attached | None:
        try:
            # ``dormant()`` written out: this is the whole per-request cost of rule 10.
            if (
                self._may_sleep
                and (not self.spans or trace._TRACER_PROVIDER is None)
                and (not self.metrics or _METRICS_STATE._METER_PROVIDER is None)
            ):
                # Rule 10: no span, and the caller's context (if it sent one) made current for the handler.
                params = request.params
                meta = params.get("_meta") if params is not None else None
                if type(meta) is not dict or ("traceparent" not in meta and "baggage" not in meta):
                    return None  # no context to pass on: the request is served as without telemetry
                return _Attached(otel_context.attach(self._parent(meta)[0]))
            return self._inbound(request, connection)
        except Exception:  # rule 7
            logger.exception("telemetry: could not observe %s", request.method)
            return None

    def _inbound(self, request: JsonRpcRequest, connection: Any) -> _Request:
        params = request.params
        meta = params.get("_meta") if params is not None else None
        http = current_http.get()
        ambient = otel_context.get_current()
        parent, links = self._parent(meta)
        method = guarded_method(request.method, self._registered)
        target = operation_target(request.method, params, self._known)
        attributes = request_attributes(method, params, request.id, target)
        if method == OTHER:
            attributes[ATTRIBUTE.METHOD_ORIGINAL] = request.method
        owner = getattr(connection, "owner", None)
        revision = getattr(owner, "revision", None)
        if revision is not None:
            attributes[ATTRIBUTE.PROTOCOL_VERSION] = revision
        elif type(meta) is dict and type(meta.get(PROTOCOL_VERSION_KEY)) is str:
            attributes[ATTRIBUTE.PROTOCOL_VERSION] = meta[PROTOCOL_VERSION_KEY]
        attributes.update(_network(connection, http))
        if request.method.startswith("tasks/") and params is not None and type(params.get("taskId")) is str:
            attributes[ATTRIBUTE.TASK_ID] = params["taskId"]
            if request.method in _TASK_METHODS:  # rule 9: to the task's trace, whoever made it
                links.append(Link(task_anchor(params["taskId"])))
        span: Span | None = None
        if self.spans:
            span = self.tracer.start_span(
                span_name(method, target), parent, SpanKind.SERVER, attributes=attributes, links=links
            )
            if self.settings.capture_content and span.is_recording():  # (rule 11)
                span.set_attributes(captured_request(request.method, params, self.settings.max_attribute_bytes))
            token = otel_context.attach(trace.set_span_in_context(span, parent))
        elif parent is not ambient:  # propagation only (or spans off): the handler joins the caller's trace
            token = otel_context.attach(parent)
        else:
            token = None
        return _Request(self, request.method, owner, attributes, span, token)

    def outbound(
        self, method: str, params: dict[str, Any] | None, connection: Any
    ) -> tuple[dict[str, Any] | None, _Outbound | None]:
        """Rule 12: a CLIENT span for a request the server sends its client, its context in a copy of
        the request's ``_meta`` (with no span: the current context, so the answer joins the trace)."""
        try:
            span: Span | None = None
            if self.spans and not self.dormant():
                owner = getattr(connection, "owner", None)
                attributes: dict[str, Any] = {ATTRIBUTE.METHOD: guarded_method(method)}
                revision = getattr(owner, "revision", None)
                if revision is not None:
                    attributes[ATTRIBUTE.PROTOCOL_VERSION] = revision
                    session_id = getattr(getattr(owner, "record", None), "id", None)
                    if session_id:
                        attributes[ATTRIBUTE.SESSION_ID] = session_id
                attributes.update(_network(connection, current_http.get()))
                span = self.tracer.start_span(
                    span_name(attributes[ATTRIBUTE.METHOD], None), kind=SpanKind.CLIENT, attributes=attributes
                )
            if self.settings.propagate:
                carrier: dict[str, str] = {}
                propagate.inject(carrier, trace.set_span_in_context(span) if span is not None else None)
                if carrier:
                    sent = dict(params or {})
                    meta = sent.get("_meta")
                    sent["_meta"] = {**meta, **carrier} if type(meta) is dict else carrier
                    params = sent
            return params, (_Outbound(span) if span is not None else None)
        except Exception:  # rule 7
            logger.exception("telemetry: could not observe the %s sent", method)
            return params, None

    def current_trace(self) -> dict[str, str] | None:
        """Rule 13: the current span's W3C context, when it is one of ours being recorded."""
        try:
            if not self.spans or not trace.get_current_span().is_recording():
                return None
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            return {key: carrier[key] for key in ("traceparent", "tracestate") if key in carrier} or None
        except Exception:  # rule 7
            logger.exception("telemetry: could not read the current trace context")
            return None

    def notification(self, notification: JsonRpcNotification, request: Any) -> None:
        if request is not None:
            reason = (notification.params or {}).get("reason")
            request.event(CANCELLED, {ATTRIBUTE.REASON: reason} if type(reason) is str else {})

    def task_started(self, record: Any, core: bool) -> _Task | None:
        """Rule 9: the task's own span, linked to (or a child of) the call that made it, and
        counted in ``mcp_sse_server.tasks.active`` until it ends."""
        try:
            generation = "core" if core else "extension"
            counted: dict[str, Any] | None = None
            if self.metrics:
                counted = {ATTRIBUTE.TASK_GENERATION: generation}
                self.tasks_active.add(1, counted)
            span: Span | None = None
            if self.spans:
                creator = trace.get_current_span().get_span_context()
                attributes: dict[str, Any] = {
                    ATTRIBUTE.TOOL_NAME: record.tool if self._known("tool", record.tool) else OTHER,
                    ATTRIBUTE.TASK_ID: record.id,
                    ATTRIBUTE.TASK_GENERATION: generation,
                }
                # Rule 9: the anchor every poll of this task links to, sampled as the call was.
                anchor = task_anchor(record.id, creator.trace_flags.sampled or not creator.is_valid)
                if self.settings.task_trace == "child":
                    parent, links = None, [Link(anchor)]
                else:  # a trace of its own (the anchor's): a long task neither stretches nor outlives the caller's
                    parent = trace.set_span_in_context(NonRecordingSpan(anchor), otel_context.Context())
                    links = [Link(creator)] if creator.is_valid else []
                span = self.tracer.start_span(
                    span_name("task", attributes[ATTRIBUTE.TOOL_NAME]),
                    parent,
                    SpanKind.INTERNAL,
                    attributes=attributes,
                    links=links,
                )
                span.add_event("working")
            if span is None and counted is None:
                return None
            return _Task(span, self.tasks_active if counted is not None else None, counted)
        except Exception:  # rule 7
            logger.exception("telemetry: could not observe task %s", getattr(record, "id", "?"))
            return None

    def _session_seen(self, owner: Any, revision: str) -> None:
        """Rule 6: a session served here is counted in ``sessions.active`` once, until it ends."""
        key = id(owner)
        if key not in self._live:
            attributes = {ATTRIBUTE.PROTOCOL_VERSION: revision}
            self._live[key] = attributes
            self.sessions_active.add(1, attributes)

    def session_ended(self, session: Any, duration: float, error: str | None) -> None:
        counted = self._live.pop(id(session), None)
        if counted is not None:
            self.sessions_active.add(-1, counted)
        revision = getattr(session, "revision", None)
        if revision is None or not self.metrics:  # never initialized, or a stateless request's
            return
        attributes: dict[str, Any] = {ATTRIBUTE.PROTOCOL_VERSION: revision}
        attributes.update(_network(getattr(session, "connection", None), None))
        if error is not None:
            attributes[ATTRIBUTE.ERROR_TYPE] = error
        self.session_duration.record(duration, attributes)

    def rejected(self, reason: str) -> None:
        if self.metrics:
            self.rejections.add(1, {ATTRIBUTE.REASON: reason})

    def routed(self, message_type: str, trace_context: dict[str, str] | None, request: Any) -> None:
        if self.metrics:
            self.routed_messages.add(1, {ATTRIBUTE.MESSAGE_TYPE: message_type})
        if request is not None:
            request.event(f"{message_type} (routed)", {}, trace_context)

    def forwarding(self, message_type: str, params: dict[str, Any] | None) -> dict[str, str] | None:
        """Rule 8: the context a routed message carries to the worker that needs it."""
        if not self.settings.propagate:
            return None
        try:
            parent = self._parent(params.get("_meta") if params is not None else None)[0]
            context = parent
            if message_type == "cancel" and self.spans:
                # The cancel has its SERVER span here, where it arrived; the worker running the
                # request links its span to this one.
                span = self.tracer.start_span(
                    "notifications/cancelled",
                    parent,
                    SpanKind.SERVER,
                    attributes={ATTRIBUTE.METHOD: "notifications/cancelled", ATTRIBUTE.ROUTED: True},
                )
                span.end()
                context = trace.set_span_in_context(span, parent)
            carrier: dict[str, str] = {}
            propagate.inject(carrier, context)
            return carrier or None
        except Exception:  # rule 7
            logger.exception("telemetry: could not forward the trace context of a routed %s", message_type)
            return None


class _Attached:
    """A request served with the caller's context current and nothing recorded (rule 10)."""

    __slots__ = ("token",)

    def __init__(self, token: Any) -> None:
        self.token = token

    def failed(self, error: Exception) -> None:
        pass

    def event(self, name: str, attributes: dict[str, Any], trace_context: dict[str, str] | None = None) -> None:
        pass

    def finish(self, reply: Reply | None, error: BaseException | None) -> None:
        otel_context.detach(self.token)


class _Outbound:
    """A request the server sent its client (``engine.observe.OutboundObservation``): its CLIENT
    span, ended by the client-side error rules (every error code is an error)."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span

    def event(self, name: str, attributes: dict[str, Any], trace_context: dict[str, str] | None = None) -> None:
        span = self.span
        if not span.is_recording():
            return
        span.add_event(name, attributes)
        if trace_context:
            linked = trace.get_current_span(propagate.extract(trace_context)).get_span_context()
            if linked.is_valid:
                span.add_link(linked)

    def finish(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        span = self.span
        try:
            if error is not None and span.is_recording():
                if isinstance(error, McpError):
                    span.set_attributes(
                        {ATTRIBUTE.ERROR_TYPE: client_error_type(error.code), ATTRIBUTE.STATUS_CODE: str(error.code)}
                    )
                    span.set_status(Status(StatusCode.ERROR, error.message))
                else:  # a timeout, or the handler that asked was cancelled
                    span.set_attribute(
                        ATTRIBUTE.ERROR_TYPE, exception_error_type(error) if isinstance(error, Exception) else CANCELLED
                    )
                    span.set_status(Status(StatusCode.ERROR))
        finally:
            span.end()


class _Task:
    """One task (``engine.observe.TaskObservation``): its span (statuses as events, ended with the
    task) and its place in ``tasks.active`` (``active``, with the attributes it was counted with)."""

    __slots__ = ("active", "counted", "span")

    def __init__(self, span: Span | None, active: Any, counted: dict[str, Any] | None) -> None:
        self.span = span
        self.active = active
        self.counted = counted

    def status(self, status: str, detail: str | None = None) -> None:
        if self.span is not None:
            self.span.add_event(status, {"mcp_sse_server.asked": detail} if detail else {})

    def ended(self, status: str, outcome: dict[str, Any] | None) -> None:
        if self.active is not None:
            self.active.add(-1, self.counted)
            self.active = None  # (counted down once)
        span = self.span
        if span is None or not span.is_recording():
            return
        span.add_event(status)
        if status == "failed":
            error = (outcome or {}).get("error")
            code = error.get("code") if type(error) is dict else None
            error_type = (
                server_error_type(code) if type(code) is int else TOOL_ERROR
            )  # (a core task's isError result fails it)
            if error_type is not None:
                span.set_attribute(ATTRIBUTE.ERROR_TYPE, error_type)
                span.set_status(Status(StatusCode.ERROR, error.get("message") if type(error) is dict else None))
        elif status == "completed" and is_tool_error("tools/call", (outcome or {}).get("result")):
            span.set_attribute(ATTRIBUTE.ERROR_TYPE, TOOL_ERROR)
            span.set_status(Status(StatusCode.ERROR))
        span.end()


class _Request:
    """One request under observation (``engine.observe.Observation``)."""

    __slots__ = ("attributes", "error", "method", "observer", "owner", "span", "started", "token")

    def __init__(
        self,
        observer: ServerObserver,
        method: str,
        owner: Any,
        attributes: dict[str, Any],
        span: Span | None,
        token: Any,
    ) -> None:
        self.observer = observer
        self.method = method
        self.owner = owner
        self.attributes = attributes
        self.span = span
        self.token = token
        self.error: Exception | None = None
        self.started = time.perf_counter()

    def failed(self, error: Exception) -> None:
        self.error = error

    def event(self, name: str, attributes: dict[str, Any], trace_context: dict[str, str] | None = None) -> None:
        span = self.span
        if span is None or not span.is_recording():
            return
        span.add_event(name, attributes)
        if trace_context:
            linked = trace.get_current_span(propagate.extract(trace_context)).get_span_context()
            if linked.is_valid:
                span.add_link(linked)

    def finish(self, reply: Reply | None, error: BaseException | None) -> None:
        try:
            self._finish(reply, error)
        except Exception:  # rule 7
            logger.exception("telemetry: could not end the span of %s", self.method)
        finally:
            if self.token is not None:
                otel_context.detach(self.token)

    def _finish(self, reply: Reply | None, error: BaseException | None) -> None:
        duration = time.perf_counter() - self.started
        attributes = self.attributes
        if ATTRIBUTE.PROTOCOL_VERSION not in attributes:  # initialize: known once it succeeded
            revision = getattr(self.owner, "revision", None)
            if revision is not None:
                attributes[ATTRIBUTE.PROTOCOL_VERSION] = revision
        record = getattr(self.owner, "record", None)
        session_id = getattr(record, "id", None)
        if session_id and getattr(self.owner, "revision", None) is not None:  # sessions only (digest 1.6)
            attributes[ATTRIBUTE.SESSION_ID] = session_id
        span = self.span
        status: Status | None = None
        events: list[tuple[str, dict[str, Any]]] = []
        if type(reply) is JsonRpcError:
            code = reply.code
            attributes[ATTRIBUTE.STATUS_CODE] = str(code)
            error_type = server_error_type(code)
            if error_type is not None:
                handler_error = self.error
                attributes[ATTRIBUTE.ERROR_TYPE] = (
                    exception_error_type(handler_error) if handler_error is not None else error_type
                )
                status = Status(StatusCode.ERROR, reply.message)
                if handler_error is not None and span is not None and self.observer.settings.record_exceptions:
                    span.record_exception(handler_error)
        elif type(reply) is JsonRpcResponse:
            result = reply.result
            if is_tool_error(self.method, result):
                attributes[ATTRIBUTE.ERROR_TYPE] = TOOL_ERROR
                status = Status(StatusCode.ERROR)
            elif result.get("resultType") == _INPUT_REQUIRED:
                attributes[ATTRIBUTE.RESULT_TYPE] = _INPUT_REQUIRED
                asked = result.get("inputRequests")
                methods = sorted(
                    {entry.get("method") for entry in asked.values() if type(entry) is dict}
                    if type(asked) is dict
                    else set(),
                    key=str,
                )
                events.append(("input_required", {"mcp_sse_server.asked": [str(m) for m in methods]}))
            elif self.method == "tasks/list" and span is not None and span.is_recording():
                _link_listed(span, result.get("tasks"))
        elif reply is None:
            events.append((CANCELLED, {}))
        if reply is None and isinstance(error, Exception):  # (a CancelledError is no failure)
            attributes[ATTRIBUTE.ERROR_TYPE] = exception_error_type(error)
            status = Status(StatusCode.ERROR)
        if span is not None:
            if span.is_recording():
                span.set_attributes(attributes)
                settings = self.observer.settings
                if settings.capture_content and type(reply) is JsonRpcResponse:  # (rule 11)
                    span.set_attributes(captured_result(self.method, reply.result, settings.max_attribute_bytes))
                for name, event in events:
                    span.add_event(name, event)
                if status is not None:
                    span.set_status(status)
            span.end()
        observer = self.observer
        if observer.metrics:
            observer.operation_duration.record(duration, metric_attributes(attributes))
            revision = getattr(self.owner, "revision", None)
            if revision is not None and record is not None:  # a session (a stateless request has no record)
                observer._session_seen(self.owner, revision)
