"""What every session shares instead of holding its own copy, and that sharing
changes no behaviour: method tables per class, compiled schemas and tool
wire dicts per distinct schema/tool."""

from __future__ import annotations

from typing import Any

from mcp_sse_server import McpServer
from mcp_sse_server.context import RequestContext

from .conftest import Connect


async def test_the_method_table_is_per_class_and_honours_overrides(connect: Connect) -> None:
    class Custom(McpServer):
        async def _ping(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
            return {"served_by": self.name}

    plain, custom = McpServer("plain", "1"), Custom("custom", "1")
    assert "_handlers" not in vars(plain) and "_handlers" not in vars(custom)
    assert await (await connect(custom)).result("ping") == {"served_by": "custom"}
    assert await (await connect(plain)).result("ping") == {}
