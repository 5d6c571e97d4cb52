"""``Otel``: an SDK tracer and meter provider with in-memory exporters, read back by the
server-side telemetry tests (the ``otel`` fixture of conftest.py makes one per test); ``raw``: a
``RawClient`` of a server over MemoryTransport, initialized at a session revision if given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fixtures.sessions import RawClient
from mcp_sse_server import McpServer, MemoryTransport
from mcp_sse_server.telemetry import Telemetry


@dataclass
class Otel:
    """An SDK pipeline a test reads back: its spans and metric points."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def telemetry(self, **options: Any) -> Telemetry:
        return Telemetry(tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def server_spans(self) -> list[ReadableSpan]:
        from opentelemetry.trace import SpanKind

        return [span for span in self.spans() if span.kind is SpanKind.SERVER]

    def span(self, name: str) -> ReadableSpan:
        found = [span for span in self.spans() if span.name == name]
        assert len(found) == 1, [span.name for span in self.spans()]
        return found[0]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for each in scope.metrics:
                    if each.name == metric:
                        found.extend(each.data.data_points)
        return found


async def raw(server: McpServer, revision: str | None) -> RawClient:
    """A RawClient of ``server``; with ``revision``, its session initialized at it (else 2026-07-28 requests)."""
    server_side, client_side = MemoryTransport.pair()
    await server.connect(server_side)
    client = RawClient(server, client_side)
    if revision is not None:
        await client.initialize(protocol_version=revision)
    return client
