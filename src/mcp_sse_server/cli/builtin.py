"""The servers a single word names, for both ``serve`` and ``tools``/``call``: the demo and the
in-memory servers of :class:`~mcp_sse_server.servers.factory.MemoryServerFactory`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..server import McpServer

DEMO: Final = "demo"


def builtin_servers() -> dict[str, Callable[[], McpServer]]:
    """Each built-in server's name and a function building a new one."""
    from ..servers.demo import build_demo_server
    from ..servers.factory import MemoryServerFactory

    builders: dict[str, Callable[[], McpServer]] = {DEMO: build_demo_server}
    for name in MemoryServerFactory.commands():
        builders[name] = lambda name=name: MemoryServerFactory.create_memory_server(name)  # type: ignore[misc]
    return builders
