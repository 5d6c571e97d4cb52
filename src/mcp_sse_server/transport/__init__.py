"""Transports move JSON-RPC messages between a protocol engine and its peer."""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from ..engine.transport import Transport as Transport
    from .memory import MemoryTransport as MemoryTransport

# Imported on first use: importing a transport subpackage (transport.http.limits) stays cheap.
__getattr__, __dir__ = lazy_exports(__name__, __file__)
