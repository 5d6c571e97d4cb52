"""ErrorPolicy: a tool's exceptions mapped, by type, to a JSON-RPC error or a tool error with a
fixed message; never the exception's own text.

>>> from mcp_sse_server import McpServer
>>> policy = ErrorPolicy({
...     TimeoutError: ToolErrorAs("The upstream service timed out: try again later."),
...     PermissionError: ErrorAs(-32001, "Not allowed"),
... })
>>> server = McpServer("s", middleware=[policy])

Rules, kept here and nowhere else:

1. It runs around the tool's function (tier 2, ``on_tool_run``), so it sees the raw exception,
   wherever the function runs: inline, in a task's job, in each MRTR round.
2. The most specific mapped class of the exception's type wins (its method resolution order;
   looked up once per type). ``ErrorAs(code, message, data)`` answers the request with that
   JSON-RPC error; ``ToolErrorAs(message)`` returns a tool error (``isError``) the model reads.
3. The messages are the policy's, fixed when it is made: the exception's text, which may hold
   paths, queries or secrets, is never sent. It is logged (``log=True``, the default) so that
   the operator still sees it.
4. ``McpError`` (the tool meant that error), unmapped exceptions (the engine's "internal error"
   tool result, also without text), cancellation and MRTR's ``InputRequired`` pass untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.context import RequestContext
from ..engine.jsonrpc import McpError
from ..engine.middleware import Middleware, RunNext
from ..engine.types import CallToolResult, Tool

__all__ = ["ErrorAs", "ErrorPolicy", "ToolErrorAs"]

logger = logging.getLogger("mcp_sse_server.middleware")


@dataclass(frozen=True, slots=True)
class ErrorAs:
    """Answer with this JSON-RPC error (rule 2)."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class ToolErrorAs:
    """Answer with a tool error carrying this text (rule 2)."""

    message: str


_Mapping = ErrorAs | ToolErrorAs


class ErrorPolicy(Middleware):
    """Maps a tool's exceptions by type (the module's rules)."""

    def __init__(self, rules: Mapping[type[BaseException], _Mapping], *, log: bool = True) -> None:
        for kind, mapping in rules.items():
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise TypeError(f"ErrorPolicy maps Exception subclasses, not {kind!r}")
            if issubclass(kind, McpError):
                raise TypeError("McpError passes as it is: it is not mapped (rule 4)")
            if not isinstance(mapping, ErrorAs | ToolErrorAs):
                raise TypeError(f"map {kind.__name__} to ErrorAs(...) or ToolErrorAs(...), not {mapping!r}")
        self.rules = dict(rules)
        self.log = log
        self._found: dict[type[BaseException], _Mapping | None] = {}

    def mapping_for(self, kind: type[BaseException]) -> _Mapping | None:
        """What an exception of ``kind`` becomes (rule 2); None: it passes."""
        try:
            return self._found[kind]
        except KeyError:
            found = next((self.rules[base] for base in kind.__mro__ if base in self.rules), None)
            self._found[kind] = found
            return found

    async def on_tool_run(
        self, context: RequestContext, tool: Tool, arguments: dict[str, Any], call_next: RunNext
    ) -> Any:
        try:
            return await call_next(arguments)
        except McpError:
            raise
        except Exception as error:
            mapping = self.mapping_for(type(error))
            if mapping is None:
                raise
            if self.log:
                logger.warning("tool %s raised %s, answered as mapped", tool.name, type(error).__name__, exc_info=True)
            if isinstance(mapping, ErrorAs):
                raise McpError(mapping.code, mapping.message, mapping.data) from None
            return CallToolResult.error(mapping.message)
