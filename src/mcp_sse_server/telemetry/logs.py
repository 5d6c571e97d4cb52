"""Log correlation: the current span's ids on every record of the ``mcp_sse_server`` logger.

Rules of this module:

* The field names are those of ``opentelemetry-instrumentation-logging`` (``otelTraceID``,
  ``otelSpanID``, ``otelTraceSampled``, ``otelServiceName``), so one log format serves both.
* Outside a span the ids are ``"0"`` and sampled is False: a format string naming them never fails.
* One filter for the process, installed once however many servers switch it on
  (``install_log_correlation``), removed by ``remove_log_correlation``.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

__all__ = ["TraceIdFilter", "install_log_correlation", "remove_log_correlation"]

_LOGGER = "mcp_sse_server"


class TraceIdFilter(logging.Filter):
    """Sets the current span's trace and span ids on each record (never drops one)."""

    def __init__(self, service_name: str = "") -> None:
        super().__init__()
        self.service_name = service_name

    def filter(self, record: logging.LogRecord) -> bool:
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            record.otelTraceID = trace.format_trace_id(context.trace_id)
            record.otelSpanID = trace.format_span_id(context.span_id)
            record.otelTraceSampled = context.trace_flags.sampled
        else:
            record.otelTraceID = record.otelSpanID = "0"
            record.otelTraceSampled = False
        record.otelServiceName = self.service_name
        return True


_installed: TraceIdFilter | None = None


def install_log_correlation(service_name: str = "") -> TraceIdFilter:
    """Add the filter to the ``mcp_sse_server`` logger (once); returns it."""
    global _installed
    if _installed is None:
        _installed = TraceIdFilter(service_name)
        logging.getLogger(_LOGGER).addFilter(_installed)
    return _installed


def remove_log_correlation() -> None:
    """Take the filter off the logger again."""
    global _installed
    if _installed is not None:
        logging.getLogger(_LOGGER).removeFilter(_installed)
        _installed = None
