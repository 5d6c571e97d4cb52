"""Inbound HTTP headers an OpenAPI server may copy onto its API calls: an allowlist, off by default.

Rules:

1. ``ForwardHeaders(app, names)`` wraps the ASGI app serving MCP: for each HTTP request it keeps
   the headers in ``names`` (lower-cased) in ``inbound_headers``, a ContextVar the tool handlers
   of that request read (the engine runs them in tasks made inside the request, which copy it).
   Without the wrapper, or with an empty allowlist, nothing is kept and nothing is forwarded.
2. ``from_openapi(forward_headers=...)`` copies only the allowlisted headers it finds there, and
   never over a header the API client or ``credentials=`` sets (the API's own key wins, #3260).
3. ``Authorization`` is forwarded only when it is named in the allowlist: the MCP client's bearer
   token is for this server, and handing it to another service is token passthrough.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["ForwardHeaders", "inbound_headers"]

inbound_headers: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "mcp_sse_server.openapi.inbound_headers", default=None
)
"""The allowlisted headers of the HTTP request being served (rule 1); None outside one."""

_Asgi = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[MutableMapping[str, Any]], Awaitable[None]]],
    Awaitable[None],
]


class ForwardHeaders:
    """An ASGI wrapper keeping the headers in ``names`` of each HTTP request in ``inbound_headers``."""

    def __init__(self, app: _Asgi, names: Iterable[str]) -> None:
        self.app = app
        self.names = frozenset(name.lower().encode("latin-1") for name in names)

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope.get("type") != "http" or not self.names:
            await self.app(scope, receive, send)
            return
        kept = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name.lower() in self.names
        }
        reset = inbound_headers.set(kept)
        try:
            await self.app(scope, receive, send)
        finally:
            inbound_headers.reset(reset)
