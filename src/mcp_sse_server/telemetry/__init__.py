"""OpenTelemetry for mcp-sse-server: spans, metrics and log correlation, off unless asked for.

Everything here that imports ``opentelemetry`` is imported only when telemetry is switched on
(``McpServer(..., telemetry=Telemetry())``, ``serve --otel``); ``conventions`` and ``config``
import none of it. The engine knows only its own interface (``engine.observe``); this package
implements it, one floor above the engine.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .config import Telemetry as Telemetry
    from .conventions import ATTRIBUTE as ATTRIBUTE
    from .conventions import METRIC as METRIC
    from .setup import instrument as instrument

__getattr__, __dir__ = lazy_exports(__name__, __file__)
