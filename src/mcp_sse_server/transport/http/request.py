"""``McpRequest``: one HTTP request to the MCP endpoint, its headers read once.

Every layer of the app's stack asks the same view: the Origin/Host middleware
makes it (``McpRequest.of(scope)``) and keeps it in the scope under
``SCOPE_KEY``, so the router and the endpoints read the same object instead of
scanning the headers again. Only the headers the endpoint acts on get a slot;
``headers`` has every one by name (the last of a repeated one), and
``count(name)`` tells how often a name came when it matters (``repeated`` says
whether any name came twice, at the cost of one ``len``).

>>> request = McpRequest({"method": "POST", "path": "/mcp", "headers": [(b"host", b"x"), (b"mcp-session-id", b"a")]})
>>> request.session_id, request.host, request.repeated
(b'a', b'x', False)
"""

from __future__ import annotations

from typing import Final

from .accept import accepts_json_and_sse
from .asgi import Scope
from .body import UNSUPPORTED_MEDIA_TYPE, is_json_content_type
from .errors import HttpError

__all__ = ["SCOPE_KEY", "McpRequest", "below"]

SCOPE_KEY: Final = "mcp_sse_server.request"

# The headers with a slot of their own, in the order McpRequest.__init__ assigns them.
_SLOTTED: Final = (
    b"accept",
    b"content-type",
    b"content-length",
    b"mcp-session-id",
    b"mcp-protocol-version",
    b"last-event-id",
    b"host",
    b"origin",
)

# What MCP clients send; any other value is evaluated (and cached) by accepts_json_and_sse.
_USUAL_ACCEPT: Final = b"application/json, text/event-stream"
_NOT_ACCEPTABLE_POST: Final = "Not acceptable: the Accept header must allow both application/json and text/event-stream"
_NOT_ACCEPTABLE_JSON: Final = "Not acceptable: the Accept header must allow application/json"
_NOT_ACCEPTABLE_GET: Final = "Not acceptable: the Accept header must allow text/event-stream"


class McpRequest:
    """The method, path and headers of one request, as the endpoint reads them.

    ``body`` is the whole request body when the server had all of it before the app started (the
    fast path offers it: ``fast_protocol.py``), read without a ``receive``; None: read it from
    ``receive`` (``body.py``)."""

    __slots__ = (
        "accept",
        "body",
        "content_length",
        "content_type",
        "headers",
        "host",
        "last_event_id",
        "method",
        "origin",
        "path",
        "raw",
        "repeated",
        "session_id",
        "version",
    )

    def __init__(self, scope: Scope, body: bytes | None = None) -> None:
        self.body = body
        raw = scope["headers"]
        headers: dict[bytes, bytes] = dict(raw)  # at C speed; a repeated name shows as a shorter dict
        self.raw: list[tuple[bytes, bytes]] = raw
        self.headers = headers
        self.repeated = len(headers) != len(raw)
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        # One C-level pass over the names the endpoint acts on (in _SLOTTED's order).
        (
            self.accept,
            self.content_type,
            self.content_length,
            self.session_id,
            self.version,
            self.last_event_id,
            self.host,
            self.origin,
        ) = map(headers.get, _SLOTTED)

    @staticmethod
    def of(scope: Scope) -> McpRequest:
        """The request's view, made on first use and kept in the scope for the layers below."""
        request: McpRequest | None = scope.get(SCOPE_KEY)
        if request is None:
            request = scope[SCOPE_KEY] = McpRequest(scope)
        return request

    def count(self, name: bytes) -> int:
        """How many headers named ``name`` the request has."""
        if not self.repeated:
            return int(name in self.headers)
        return sum(1 for key, _ in self.raw if key == name)

    def check_post(self, json_response: bool) -> bool:
        """The media rules of a POST (406 for its Accept, 415 for its Content-Type); returns
        whether the client takes an SSE stream. Without JSON replies it must take both
        JSON and SSE; with them (``json_response``) JSON is enough."""
        accept = self.accept
        sse = True
        if accept != _USUAL_ACCEPT:
            takes_json, sse = accepts_json_and_sse(accept)
            if not takes_json or not (sse or json_response):
                raise HttpError(406, _NOT_ACCEPTABLE_JSON if json_response else _NOT_ACCEPTABLE_POST)
        content_type = self.content_type
        if content_type != b"application/json" and not is_json_content_type(content_type):
            raise HttpError(415, UNSUPPORTED_MEDIA_TYPE)
        return sse

    def check_get(self) -> None:
        """406 unless a GET's Accept takes an SSE stream."""
        if not accepts_json_and_sse(self.accept)[1]:
            raise HttpError(406, _NOT_ACCEPTABLE_GET)


def below(path: str, root_path: str) -> str:
    """``path`` below the app's mount point ``root_path`` (an ASGI ``path`` is the whole path).

    >>> below("/api/sse", "/api"), below("/sse", ""), below("/apis/sse", "/api")
    ('/sse', '/sse', '/apis/sse')
    """
    if root_path and path.startswith(root_path) and path[len(root_path) : len(root_path) + 1] in ("/", ""):
        return path[len(root_path) :]
    return path
