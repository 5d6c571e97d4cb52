"""The servers a single word names, for both ``serve`` and ``tools``/``call``: the demo and the
in-memory servers of :class:`~mcp_sse_server.servers.factory.MemoryServerFactory`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..engine.server import McpServer

DEMO: Final = "demo"


def builtin_servers() -> dict[str, Callable[[], McpServer]]:
    """Each built-in server's name and a function building a new one.

    Nothing is imported until a builder runs: the demo's module uses the decorators, which
    load pydantic, and serving another target must not pay for it.
    """
    from ..servers.factory import MemoryServerFactory

    builders: dict[str, Callable[[], McpServer]] = {DEMO: _build_demo}
    for name in MemoryServerFactory.commands():
        builders[name] = lambda name=name: MemoryServerFactory.create_memory_server(name)  # type: ignore[misc]
    return builders


def _build_demo() -> McpServer:
    from ..servers.demo import build_demo_server

    return build_demo_server()
