"""Proxying: serve another MCP server (in process, over HTTP, legacy SSE or stdio) as an ``McpServer``
(``proxy``), or every server of an ``mcpServers`` file as one (``from_config``).

Names are imported on first use.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .backend import BackendUnavailable as BackendUnavailable
    from .gateway import GatewayServer as GatewayServer
    from .gateway import from_config as from_config
    from .server import ProxyServer as ProxyServer
    from .server import proxy as proxy


__getattr__, __dir__ = lazy_exports(__name__, __file__)
