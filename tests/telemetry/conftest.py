"""Fixtures of the server-side telemetry tests: an SDK tracer and meter provider per test,
with in-memory exporters, passed to the server through ``Telemetry`` (no global is set)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_otel import Otel


def _pipeline() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(tracer_provider, meter_provider, exporter, reader)
    tracer_provider.shutdown()
    meter_provider.shutdown()


@pytest.fixture
def otel() -> Iterator[Otel]:
    yield from _pipeline()


@pytest.fixture
def other() -> Iterator[Otel]:
    """A second pipeline (another worker's SDK), for tests of two servers."""
    yield from _pipeline()
