"""Clients: one McpClient interface over in-memory, Streamable HTTP, stdio and legacy SSE transports."""

from .base import McpClient, SessionExpiredError
from .memory import InMemoryClient

__all__ = ["InMemoryClient", "McpClient", "SessionExpiredError"]
