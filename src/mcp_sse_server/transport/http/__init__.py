"""MCP over Streamable HTTP with Server-Sent Events.

* ``McpHttpServer.bind(on_session=..., port=...)`` serves an endpoint on a socket.
* ``McpHttpApp`` is the same endpoint as an ASGI app, to mount in Starlette,
  FastAPI or any ASGI server.
* ``SseTransport`` with ``read_json_rpc_post`` and ``write_json_rpc_error``
  is for routing MCP yourself.
* ``HttpLimits`` documents every limit and security default.
"""

from .app import ACCEPTED_PROTOCOL_VERSIONS, McpHttpApp
from .errors import HttpError, write_json_rpc_error
from .events import BufferedEvent, EventBuffer, MemoryEventBuffer
from .limits import DEFAULT_LIMITS, HttpLimits
from .server import McpHttpServer
from .sessions import MemorySessionStore, Session, SessionStore
from .transport import ClientDisconnected, SseTransport, read_json_rpc_post

__all__ = [
    "ACCEPTED_PROTOCOL_VERSIONS",
    "DEFAULT_LIMITS",
    "BufferedEvent",
    "ClientDisconnected",
    "EventBuffer",
    "HttpError",
    "HttpLimits",
    "McpHttpApp",
    "McpHttpServer",
    "MemoryEventBuffer",
    "MemorySessionStore",
    "Session",
    "SessionStore",
    "SseTransport",
    "read_json_rpc_post",
    "write_json_rpc_error",
]
