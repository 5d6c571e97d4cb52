"""Clients: one McpClient interface over in-memory, Streamable HTTP, stdio and legacy SSE transports."""

from .base import McpClient, SessionExpiredError
from .memory import InMemoryClient

__all__ = ["InMemoryClient", "McpClient", "SessionExpiredError"]

# Remote transports (issue 4, "Clients").
from ._common import McpConnectionError
from .http import StreamableHttpClient
from .sse import SseClient
from .stdio import StdioClient

__all__ += ["McpConnectionError", "SseClient", "StdioClient", "StreamableHttpClient"]

# Server configs, initialize_mcp_server and the mcp_server.json registry (issue 4).
from .config import ConfigError, ServerConfig  # noqa: E402
from .connect import ServerStartError, create_client, initialize_mcp_server  # noqa: E402
from .provider import ConfigFileError, McpServerProvider, default_config_path  # noqa: E402

__all__ += [
    "ConfigError",
    "ConfigFileError",
    "McpServerProvider",
    "ServerConfig",
    "ServerStartError",
    "create_client",
    "default_config_path",
    "initialize_mcp_server",
]
