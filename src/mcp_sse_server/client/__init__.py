"""Clients: one McpClient over the transport it is given (in-memory, Streamable HTTP, stdio, legacy
SSE, or a ``ClientTransport`` of one's own), speaking the stateless revision 2026-07-28 where the
server does and the session revisions otherwise.

Each client's module (and so httpx) is imported only when that client is used.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from ..engine.types import PromptRef as PromptRef
    from ..engine.types import ResourceTemplateRef as ResourceTemplateRef
    from ._common import McpConnectionError as McpConnectionError
    from .app_host import AppHostSession as AppHostSession
    from .apps import AppTool as AppTool
    from .apps import AppView as AppView
    from .apps import app_tools as app_tools
    from .apps import read_app as read_app
    from .base import McpClient as McpClient
    from .base import SessionExpiredError as SessionExpiredError
    from .config import ConfigError as ConfigError
    from .config import ServerConfig as ServerConfig
    from .connect import (
        ServerRegistry as ServerRegistry,
    )
    from .connect import (
        ServerStartError as ServerStartError,
    )
    from .connect import (
        create_client as create_client,
    )
    from .connect import (
        initialize_mcp_server as initialize_mcp_server,
    )
    from .hooks import EventHook as EventHook
    from .hooks import NotificationEvent as NotificationEvent
    from .hooks import RequestEvent as RequestEvent
    from .hooks import ResponseEvent as ResponseEvent
    from .hooks import ServerRequestEvent as ServerRequestEvent
    from .http import StreamableHttpClient as StreamableHttpClient
    from .http import StreamableHttpClientTransport as StreamableHttpClientTransport
    from .memory import InMemoryClient as InMemoryClient
    from .memory import InMemoryClientTransport as InMemoryClientTransport
    from .provider import (
        ConfigFileError as ConfigFileError,
    )
    from .provider import (
        McpServerProvider as McpServerProvider,
    )
    from .provider import (
        StartedServers as StartedServers,
    )
    from .provider import (
        default_config_path as default_config_path,
    )
    from .results import LogMessage as LogMessage
    from .results import PromptInfo as PromptInfo
    from .results import ResourceTemplateInfo as ResourceTemplateInfo
    from .skills import (
        SkillEntry as SkillEntry,
    )
    from .skills import (
        SkillFile as SkillFile,
    )
    from .skills import (
        SkillResource as SkillResource,
    )
    from .skills import (
        Skills as Skills,
    )
    from .skills import (
        SkillVerificationError as SkillVerificationError,
    )
    from .sse import SseClient as SseClient
    from .sse import SseClientTransport as SseClientTransport
    from .stateless import (
        InputRoundsExceededError as InputRoundsExceededError,
    )
    from .stateless import (
        UnsupportedProtocolVersionError as UnsupportedProtocolVersionError,
    )
    from .stdio import StdioClient as StdioClient
    from .stdio import StdioClientTransport as StdioClientTransport
    from .subscription import Subscription as Subscription
    from .tasks import TaskCancelledError as TaskCancelledError
    from .tasks import TaskHandle as TaskHandle
    from .transport import ClientTransport as ClientTransport
    from .typed_handlers import Accept as Accept
    from .typed_handlers import Cancel as Cancel
    from .typed_handlers import Decline as Decline
    from .typed_handlers import ElicitationAnswerError as ElicitationAnswerError
    from .typed_handlers import ElicitRequest as ElicitRequest
    from .typed_handlers import SamplingRequest as SamplingRequest


__getattr__, __dir__ = lazy_exports(__name__, __file__)
