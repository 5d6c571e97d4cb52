"""``Telemetry``: the switch and settings of OpenTelemetry for one server or client.

Rules of this module:

* It imports no OpenTelemetry: building a ``Telemetry`` costs nothing, and a server or client
  given none never imports it. ``server_observer`` (called once, when a server is built) is where
  ``opentelemetry`` is first imported, and it fails with an ``ImportError`` naming the ``otel``
  extra when the API is missing.
* Providers default to the global ones (``None``); tests pass their own and never set globals.
* Defaults follow the digest: spans and metrics on, content capture off (sensitive), tasks
  linked to (not children of) the call that created them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..engine.observe import Observer

__all__ = ["OTEL_EXTRA_HINT", "Telemetry", "require_api"]

OTEL_EXTRA_HINT = "OpenTelemetry needs the otel extra: pip install 'mcp-sse-server[otel]'"


@dataclass(frozen=True, slots=True)
class Telemetry:
    """OpenTelemetry for one server (``McpServer(..., telemetry=Telemetry())``) or client.

    ``spans``, ``metrics``, ``logs`` (trace ids on the records of the ``mcp_sse_server`` logger)
    switch each part; ``propagate=False`` injects no trace context into what is sent.
    ``mode="propagation_only"`` extracts and injects trace context (a handler's own spans join the
    caller's trace) but makes no MCP spans. ``task_trace="child"`` makes a task's span a child of
    the call that created it instead of a new trace linked to it. ``capture_content=True`` puts
    tool arguments and results and prompt arguments on the spans as JSON text of at most
    ``max_attribute_bytes`` (off by default: they are often sensitive).
    """

    spans: bool = True
    metrics: bool = True
    logs: bool = True
    propagate: bool = True
    mode: Literal["native", "propagation_only"] = "native"
    tracer_provider: Any = None
    meter_provider: Any = None
    http_headers: bool = True
    task_trace: Literal["link", "child"] = "link"
    record_exceptions: bool = True
    capture_content: bool = False
    max_attribute_bytes: int = 4096

    def server_observer(self, server: Any) -> Observer:
        """The engine hooks for ``server`` (imports OpenTelemetry; ImportError without the API)."""
        require_api()
        from .server import ServerObserver

        return ServerObserver(self, server)


def require_api() -> None:
    """Raise ImportError naming the ``otel`` extra when ``opentelemetry-api`` is not importable."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError as error:
        raise ImportError(OTEL_EXTRA_HINT) from error
