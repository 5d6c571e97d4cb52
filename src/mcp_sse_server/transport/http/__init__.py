"""MCP over Streamable HTTP with Server-Sent Events.

* ``McpHttpServer.bind(server, port=..., settings=..., backend=...)`` serves
  an endpoint on a socket (uvicorn with httptools, in the caller's event loop).
* ``McpHttpApp`` is the same endpoint as an ASGI app, to mount in Starlette,
  FastAPI or any ASGI server: ``Mount("/mcp", app=McpHttpApp(server))``.
* ``HttpSettings`` is how an endpoint is served (path, limits, JSON replies,
  the 2024-11-05 transport, authorization), one object both take; the stores
  are the ``backend`` beside it (``stores.backend_from_url``).
* ``SseTransport`` with ``read_json_rpc_post`` and ``write_json_rpc_error``
  is for routing MCP yourself; you then own what the app does around it
  (session lookup, the initialize-only gate, limits); wrap your app in
  ``OriginHostMiddleware`` for the Origin/Host checks.
* ``HttpLimits`` (the settings' ``limits``) documents every limit and security default.

The HTTP surface: one path; POST carries one JSON-RPC message (a request is
answered with an SSE stream: related notifications and server requests, then
the response; a notification or response gets 202); GET opens the session's
standalone stream (backlog before it attaches, replay after Last-Event-ID, a
new GET supersedes the old); DELETE ends the session; anything else is 405.
Every 4xx/5xx carries a JSON-RPC error body and never exception text.
Beside it, unless turned off (``legacy_sse=False``), the HTTP+SSE transport
of revision 2024-11-05: a stream at ``/sse`` (and on a session-less GET of
the endpoint) whose POSTs go to ``/messages/?session_id=...``
(``LegacyPaths`` moves them).

Security model: loopback bind by default; a non-loopback bind needs
``auth`` (bearer tokens checked: ``auth.ResourceServer``) or
``allowed_origins``; an Origin must be loopback or allowlisted (with an
allowlist and no tokens checked, Origin is required); Host must name a
loopback host, an allowlisted origin's host, an ``allowed_hosts`` entry, the
bound address or the resource's public host (DNS-rebinding defence). Only
``initialize`` opens a session.
"""

from typing import TYPE_CHECKING

from ...engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .app import McpHttpApp as McpHttpApp
    from .errors import HttpError as HttpError
    from .errors import write_json_rpc_error as write_json_rpc_error
    from .limits import DEFAULT_LIMITS as DEFAULT_LIMITS
    from .limits import HttpLimits as HttpLimits
    from .security import OriginHostMiddleware as OriginHostMiddleware
    from .security import OriginPolicy as OriginPolicy
    from .server import McpHttpServer as McpHttpServer
    from .server import server_ssl_context as server_ssl_context
    from .settings import DEFAULT_SETTINGS as DEFAULT_SETTINGS
    from .settings import HttpSettings as HttpSettings
    from .settings import LegacyPaths as LegacyPaths
    from .transport import (
        ClientDisconnected as ClientDisconnected,
    )
    from .transport import (
        SseTransport as SseTransport,
    )
    from .transport import (
        read_json_rpc_post as read_json_rpc_post,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__)
