"""Transports move JSON-RPC messages between a protocol engine and its peer."""

from .base import Transport
from .memory import MemoryTransport

__all__ = ["MemoryTransport", "Transport"]
