"""Built-in servers and the base class for in-memory servers."""

from .factory import MemoryServerFactory, UnknownServerError
from .memory_server import MemoryServer

__all__ = ["MemoryServer", "MemoryServerFactory", "UnknownServerError"]
