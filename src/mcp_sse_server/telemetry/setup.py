"""``serve --otel``: OpenTelemetry providers from the standard ``OTEL_*`` variables, and telemetry
switched on for the servers a command serves.

Rules of this module:

1. ``install_from_environment`` needs ``opentelemetry-api`` (ImportError naming the ``otel`` extra
   without it). With ``opentelemetry-sdk`` and the OTLP/HTTP exporter importable it installs a
   global ``TracerProvider`` (``BatchSpanProcessor(OTLPSpanExporter())``) and ``MeterProvider``
   (``PeriodicExportingMetricReader(OTLPMetricExporter())``); the SDK and the exporters read the
   ``OTEL_*`` variables themselves (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
   ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_METRIC_EXPORT_INTERVAL``, ...); ``OTEL_TRACES_EXPORTER``
   or ``OTEL_METRICS_EXPORTER`` set to ``none`` leaves that signal out. Without the SDK it says
   once on stderr that spans go nowhere (a provider installed by other code still gets them).
2. What it returns flushes and shuts the providers down: call it when serving ends (the SDK's
   own exit hook does too, but a worker ended by a signal may not run it).
3. ``instrument`` gives a server (or each server a factory builds) its observer before it serves;
   a server already given telemetry keeps its own. A factory comes back as an ``Instrumented``
   factory whose ``observer`` the HTTP endpoint uses (the peer, the trace headers, refusals:
   ``McpHttpApp.observer``) and whose servers share its tracer and instruments.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from .config import Telemetry, require_api

__all__ = ["Instrumented", "install_from_environment", "instrument"]

_NO_SDK = (
    "Note: --otel without opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http installed: "
    "spans and metrics go to whatever providers the process installed (none: nowhere)."
)


def install_from_environment() -> Callable[[], None]:
    """Install the global providers (rule 1); returns their flush-and-shutdown (rule 2)."""
    require_api()
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        print(_NO_SDK, file=sys.stderr)
        return lambda: None
    resource = Resource.create()  # (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)
    stops: list[Callable[[], Any]] = []
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() != "none":
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(tracer_provider)
        stops.append(tracer_provider.shutdown)  # (shutdown flushes the batch first)
    if os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() != "none":
        meter_provider = MeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
        )
        metrics.set_meter_provider(meter_provider)
        stops.append(meter_provider.shutdown)

    def shutdown() -> None:
        for stop in stops:
            try:
                stop()
            except Exception as error:  # (an exporter that cannot reach its collector at exit)
                print(f"OpenTelemetry shutdown: {error}", file=sys.stderr)

    return shutdown


def instrument(served: Any, telemetry: Telemetry | None = None) -> Any:
    """``served`` (an ``McpServer`` or a factory of them) with telemetry switched on (rule 3)."""
    settings = telemetry if telemetry is not None else Telemetry()
    from ..engine.server import McpServer

    if isinstance(served, McpServer):
        if served.observer is None:
            served.observer = settings.server_observer(served)
        return served
    return Instrumented(served, settings.server_observer(None))


class Instrumented:
    """A factory of servers (``McpHttpApp``'s ``SessionFactory``) whose servers have telemetry;
    ``observer`` is the endpoint's (rule 3)."""

    def __init__(self, factory: Callable[[], Any], observer: Any) -> None:
        functools.update_wrapper(self, factory)  # (keeps a @shared_server mark)
        self.factory = factory
        self.observer = observer

    def __call__(self) -> Any:
        server = self.factory()
        if inspect.isawaitable(server):
            return self._later(server)
        return self._switch_on(server)

    def _switch_on(self, server: Any) -> Any:
        if getattr(server, "observer", None) is None:
            server.observer = self.observer.bound(server)
        return server

    async def _later(self, pending: Any) -> Any:
        return self._switch_on(await pending)
