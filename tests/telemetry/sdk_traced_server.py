"""The official Python SDK's (``mcp`` 2.3) MCPServer over stdio, with its own OpenTelemetry
middleware on (the SDK's default) and an SDK tracer provider that writes every finished span as
one JSON line to ``$SPANS_OUT`` (trace id, span id, parent span id, name, kind): what
test_client_peers.py reads back to see one trace across our client and this server.

``add`` adds; ``traceparent`` answers the ``traceparent`` its request carried in ``_meta``."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence

from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

warnings.simplefilter("ignore")


class JsonLines(SpanExporter):
    """Each span, as it ends, appended to ``path`` as one JSON line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                context = span.get_span_context()
                assert context is not None
                record = {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": format(context.trace_id, "032x"),
                    "span_id": format(context.span_id, "016x"),
                    "parent_id": format(span.parent.span_id, "016x") if span.parent is not None else None,
                }
                out.write(json.dumps(record) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLines(os.environ["SPANS_OUT"])))
trace.set_tracer_provider(provider)

server = MCPServer("sdk-traced")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@server.tool()
def traceparent(ctx: Context) -> str:
    """The traceparent this request carried in _meta ('' without one)."""
    meta = ctx.request_context.meta or {}
    value = meta.get("traceparent", "")
    return value if isinstance(value, str) else ""


if __name__ == "__main__":
    server.run("stdio")
