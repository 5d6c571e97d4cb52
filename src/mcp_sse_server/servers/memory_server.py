"""MemoryServer: the ChatMCP-style base class for servers defined by a tool list.

A subclass declares ``tools`` and implements ``on_tool_call``; everything else
(initialize, ping, listing, argument validation, logging, completion) comes
from McpServer, so a MemoryServer speaks the full protocol in-process and can
be served over HTTP like any other server.

>>> class Echo(MemoryServer):
...     server_name = "echo"
...     tools = [Tool("echo", {"type": "object", "properties": {"text": {"type": "string"}},
...                            "required": ["text"]}, description="Echoes text.")]
...     async def on_tool_call(self, name, arguments, context):
...         return CallToolResult.text(arguments["text"])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..engine.context import RequestContext
from ..engine.server import McpServer
from ..engine.types import CallToolResult, Icon, Tool

__all__ = ["MemoryServer"]


class MemoryServer(McpServer):
    """Base class for in-memory servers: declare ``tools``, implement ``on_tool_call``.

    Tools declared with a handler keep it; tools without one are answered by
    ``on_tool_call(name, arguments, context)``. Arguments reach it already
    validated against the tool's input schema.
    """

    server_name: ClassVar[str] = "memory-server"
    server_version: ClassVar[str] = "1.0.0"
    server_title: ClassVar[str | None] = None
    server_instructions: ClassVar[str | None] = None
    if TYPE_CHECKING:  # subclasses declare it; at class creation it moves to _declared_tools
        tools: ClassVar[list[Tool]]
    _declared_tools: ClassVar[Any] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass's ``tools`` (a list, or a property: the seed's "tools getter") is its
        # declaration. It is moved aside so that ``server.tools`` is the live registry again.
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("tools")
        if declared is not None:
            cls._declared_tools = declared
            delattr(cls, "tools")

    def __init__(
        self,
        name: str | None = None,
        version: str | None = None,
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int | None = None,
        icons: Sequence[Icon] | None = None,
        description: str | None = None,
        website_url: str | None = None,
        strict_tool_names: bool = False,
    ) -> None:
        super().__init__(
            name or self.server_name,
            version or self.server_version,
            title=title or self.server_title,
            instructions=instructions or self.server_instructions,
            page_size=page_size,
            icons=icons,
            description=description,
            website_url=website_url,
            strict_tool_names=strict_tool_names,
        )
        declared = type(self)._declared_tools
        if hasattr(declared, "__get__"):  # a property or another descriptor: ask this instance
            declared = declared.__get__(self, type(self))
        for tool in declared:
            self.add_tool(tool)

    async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        """Answer a call to a declared tool that has no handler of its own."""
        raise NotImplementedError(f"{type(self).__name__} must implement on_tool_call for tool {name}")
