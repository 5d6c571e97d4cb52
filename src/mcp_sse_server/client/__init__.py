"""Clients: one McpClient interface over in-memory, Streamable HTTP, stdio and legacy SSE transports,
speaking the stateless revision 2026-07-28 where the server does and the session revisions otherwise.

Each client's module (and so httpx) is imported only when that client is used.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from ._common import (
        McpConnectionError,
    )
    from .base import (
        McpClient,
        SessionExpiredError,
    )
    from .config import (
        ConfigError,
        ServerConfig,
    )
    from .connect import (
        ServerRegistry,
        ServerStartError,
        create_client,
        initialize_mcp_server,
    )
    from .http import (
        StreamableHttpClient,
    )
    from .memory import (
        InMemoryClient,
    )
    from .provider import (
        ConfigFileError,
        McpServerProvider,
        StartedServers,
        default_config_path,
    )
    from .results import (
        PromptInfo,
        ResourceTemplateInfo,
    )
    from .skills import (
        SkillEntry,
        SkillFile,
        SkillResource,
        Skills,
        SkillVerificationError,
    )
    from .sse import (
        SseClient,
    )
    from .stateless import (
        InputRoundsExceededError,
        UnsupportedProtocolVersionError,
    )
    from .stdio import (
        StdioClient,
    )
    from .subscription import (
        Subscription,
    )
    from .tasks import (
        TaskCancelledError,
        TaskHandle,
    )

_EXPORTS = {
    "McpClient": ".base",
    "SessionExpiredError": ".base",
    "InMemoryClient": ".memory",
    "McpConnectionError": "._common",
    "StreamableHttpClient": ".http",
    "SseClient": ".sse",
    "StdioClient": ".stdio",
    "ConfigError": ".config",
    "ServerConfig": ".config",
    "ServerRegistry": ".connect",
    "ServerStartError": ".connect",
    "create_client": ".connect",
    "initialize_mcp_server": ".connect",
    "ConfigFileError": ".provider",
    "McpServerProvider": ".provider",
    "StartedServers": ".provider",
    "default_config_path": ".provider",
    "InputRoundsExceededError": ".stateless",
    "UnsupportedProtocolVersionError": ".stateless",
    "SkillEntry": ".skills",
    "SkillFile": ".skills",
    "SkillResource": ".skills",
    "SkillVerificationError": ".skills",
    "Skills": ".skills",
    "Subscription": ".subscription",
    "TaskCancelledError": ".tasks",
    "TaskHandle": ".tasks",
    "PromptInfo": ".results",
    "ResourceTemplateInfo": ".results",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ConfigError",
    "ConfigFileError",
    "InMemoryClient",
    "InputRoundsExceededError",
    "McpClient",
    "McpConnectionError",
    "McpServerProvider",
    "PromptInfo",
    "ResourceTemplateInfo",
    "ServerConfig",
    "ServerRegistry",
    "ServerStartError",
    "SessionExpiredError",
    "SkillEntry",
    "SkillFile",
    "SkillResource",
    "SkillVerificationError",
    "Skills",
    "SseClient",
    "StartedServers",
    "StdioClient",
    "StreamableHttpClient",
    "Subscription",
    "TaskCancelledError",
    "TaskHandle",
    "UnsupportedProtocolVersionError",
    "create_client",
    "default_config_path",
    "initialize_mcp_server",
]
