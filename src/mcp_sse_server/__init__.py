"""mcp-sse-server: the Model Context Protocol over Streamable HTTP with SSE, stdio and in process.

Names are imported on first use, so ``import mcp_sse_server`` stays cheap.
"""

from typing import TYPE_CHECKING

from .engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .client import (
        InMemoryClient as InMemoryClient,
    )
    from .client import (
        McpClient as McpClient,
    )
    from .client import (
        McpServerProvider as McpServerProvider,
    )
    from .client import (
        ServerConfig as ServerConfig,
    )
    from .client import (
        SkillEntry as SkillEntry,
    )
    from .client import (
        SkillVerificationError as SkillVerificationError,
    )
    from .client import (
        SseClient as SseClient,
    )
    from .client import (
        StdioClient as StdioClient,
    )
    from .client import (
        StreamableHttpClient as StreamableHttpClient,
    )
    from .client import (
        initialize_mcp_server as initialize_mcp_server,
    )
    from .engine.apps import APP_MIME_TYPE as APP_MIME_TYPE
    from .engine.apps import APPS_EXTENSION as APPS_EXTENSION
    from .engine.apps import App as App
    from .engine.apps import Csp as Csp
    from .engine.apps import Permissions as Permissions
    from .engine.apps import allow_attribute as allow_attribute
    from .engine.apps import client_supports_apps as client_supports_apps
    from .engine.apps import csp_header as csp_header
    from .engine.context import RequestContext as RequestContext
    from .engine.files import file_template as file_template
    from .engine.files import resolve_under as resolve_under
    from .engine.jsonrpc import (
        JsonRpcError as JsonRpcError,
    )
    from .engine.jsonrpc import (
        JsonRpcMessage as JsonRpcMessage,
    )
    from .engine.jsonrpc import (
        JsonRpcNotification as JsonRpcNotification,
    )
    from .engine.jsonrpc import (
        JsonRpcRequest as JsonRpcRequest,
    )
    from .engine.jsonrpc import (
        JsonRpcResponse as JsonRpcResponse,
    )
    from .engine.jsonrpc import (
        McpError as McpError,
    )
    from .engine.jsonrpc import (
        MissingClientCapability as MissingClientCapability,
    )
    from .engine.jsonrpc import (
        encode_message as encode_message,
    )
    from .engine.jsonrpc import (
        parse_message as parse_message,
    )
    from .engine.middleware import Middleware as Middleware
    from .engine.not_found import NotFound as NotFound
    from .engine.records import SessionRecord as SessionRecord
    from .engine.server import McpServer as McpServer
    from .engine.server import shared_server as shared_server
    from .engine.session import (
        ElicitationContentError as ElicitationContentError,
    )
    from .engine.session import (
        ServerSession as ServerSession,
    )
    from .engine.session import (
        TypedElicitResult as TypedElicitResult,
    )
    from .engine.skill_format import SkillFormatError as SkillFormatError
    from .engine.skills import SkillCatalog as SkillCatalog
    from .engine.skills import load_skills as load_skills
    from .engine.typed import Depends as Depends
    from .engine.types import (
        Annotations as Annotations,
    )
    from .engine.types import (
        AudioContent as AudioContent,
    )
    from .engine.types import (
        BlobResourceContents as BlobResourceContents,
    )
    from .engine.types import (
        CallToolResult as CallToolResult,
    )
    from .engine.types import (
        CompleteRequest as CompleteRequest,
    )
    from .engine.types import (
        CompleteResult as CompleteResult,
    )
    from .engine.types import (
        CreateMessageRequest as CreateMessageRequest,
    )
    from .engine.types import (
        CreateMessageResult as CreateMessageResult,
    )
    from .engine.types import (
        ElicitResult as ElicitResult,
    )
    from .engine.types import (
        EmbeddedResource as EmbeddedResource,
    )
    from .engine.types import (
        GetPromptResult as GetPromptResult,
    )
    from .engine.types import (
        ImageContent as ImageContent,
    )
    from .engine.types import (
        ModelHint as ModelHint,
    )
    from .engine.types import (
        ModelPreferences as ModelPreferences,
    )
    from .engine.types import (
        Prompt as Prompt,
    )
    from .engine.types import (
        PromptArgument as PromptArgument,
    )
    from .engine.types import (
        PromptMessage as PromptMessage,
    )
    from .engine.types import (
        ReadResourceResult as ReadResourceResult,
    )
    from .engine.types import (
        Resource as Resource,
    )
    from .engine.types import (
        ResourceInfo as ResourceInfo,
    )
    from .engine.types import (
        ResourceLink as ResourceLink,
    )
    from .engine.types import (
        ResourceTemplate as ResourceTemplate,
    )
    from .engine.types import (
        Root as Root,
    )
    from .engine.types import (
        SamplingMessage as SamplingMessage,
    )
    from .engine.types import (
        TextContent as TextContent,
    )
    from .engine.types import (
        TextResourceContents as TextResourceContents,
    )
    from .engine.types import (
        Tool as Tool,
    )
    from .engine.types import (
        ToolAnnotations as ToolAnnotations,
    )
    from .engine.uri_template import UriTemplate as UriTemplate
    from .engine.versions import PROTOCOL_VERSION as PROTOCOL_VERSION
    from .servers import MemoryServer as MemoryServer
    from .servers import MemoryServerFactory as MemoryServerFactory
    from .transport import MemoryTransport as MemoryTransport
    from .transport import Transport as Transport
    from .transport.http import (
        HttpLimits as HttpLimits,
    )
    from .transport.http import (
        HttpSettings as HttpSettings,
    )
    from .transport.http import (
        McpHttpApp as McpHttpApp,
    )
    from .transport.http import (
        McpHttpServer as McpHttpServer,
    )
    from .transport.http import (
        SseTransport as SseTransport,
    )
    from .transport.http import (
        read_json_rpc_post as read_json_rpc_post,
    )
    from .transport.http import (
        write_json_rpc_error as write_json_rpc_error,
    )


__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(__name__, __file__)
