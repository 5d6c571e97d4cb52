"""MCP servers from OpenAPI specs and FastAPI apps: ``from_openapi(spec, ...)`` and
``from_fastapi(app)`` return an ``McpServer`` whose tools (and, by route rules, resources and
resource templates) call the API. Names are imported on first use (``engine/_lazy.py``), so
httpx and PyYAML load only when a spec is served.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .forwarding import ForwardHeaders as ForwardHeaders
    from .forwarding import inbound_headers as inbound_headers
    from .routes import GETS_AS_RESOURCES as GETS_AS_RESOURCES
    from .routes import Route as Route
    from .schemas import OpenApiError as OpenApiError
    from .server import Credentials as Credentials
    from .server import from_fastapi as from_fastapi
    from .server import from_openapi as from_openapi
    from .server import load_spec as load_spec


__getattr__, __dir__ = lazy_exports(__name__, __file__)
