"""``McpRouter``: which endpoint serves an HTTP request, decided once from its ``McpRequest``.

The rules (``route``, a pure function of the request):

0. With the 2024-11-05 HTTP+SSE transport (``legacy``, ``legacy_sse.py``):
   its stream path takes GET and its messages path POST; any other method
   there is 405 with ``Allow``. Its paths are below the app's mount point
   (``root_path``: ``Mount("/mcp", app)`` serves ``/mcp/sse``).
1. The path must be the endpoint's, when the app has one: 404.
2. A repeated ``Mcp-Session-Id`` is refused: 400.
3. An ``MCP-Protocol-Version`` header naming no session revision goes to the
   stateless endpoint, whatever the method (it answers 405 for all but POST).
4. With the 2024-11-05 transport, a GET carrying neither ``Mcp-Session-Id``
   nor ``MCP-Protocol-Version`` whose Accept takes ``text/event-stream``
   opens a 2024-11-05 stream: a Streamable HTTP client always names its
   session on GET (without the transport, that GET is 400, as any GET
   without a session id is).
5. Otherwise the method decides: POST, GET and DELETE go to the session
   endpoint; anything else is 405 with ``Allow``.

The router also turns failures into answers, in one place: an ``HttpError``
is written as such, a client gone before its body arrived gets nothing, a
shared store out of reach is 503 with ``Retry-After``, and anything else is
logged and answered 500 with no detail.

>>> request = McpRequest({"method": "PATCH", "path": "/mcp", "headers": []})
>>> route(request, "/mcp")
Traceback (most recent call last):
...
mcp_sse_server.transport.http.errors.HttpError: Method not allowed: PATCH; the MCP endpoint takes GET, POST and DELETE
"""

from __future__ import annotations

import enum
import logging
from typing import Final

from ...engine import versions
from ...engine.stores import StoreUnavailable
from .accept import accepts_json_and_sse
from .asgi import Receive, Scope, Send
from .body import ClientDisconnected
from .errors import INTERNAL_ERROR, SERVER_BUSY, HttpError
from .legacy_sse import LegacySseEndpoint
from .request import McpRequest, below
from .session_endpoint import HttpSessionEndpoint
from .settings import LegacyPaths
from .stateless_endpoint import HttpStatelessEndpoint

__all__ = ["McpRouter", "Route", "route"]

logger = logging.getLogger("mcp_sse_server.http")

_ALLOW: Final = [(b"allow", b"GET, POST, DELETE")]
_ALLOW_GET: Final = [(b"allow", b"GET")]
_ALLOW_POST: Final = [(b"allow", b"POST")]


class Route(enum.Enum):
    """Where a request goes (``route``)."""

    STATELESS = "the stateless endpoint"
    POST = "a session POST"
    GET = "a session GET"
    DELETE = "a session DELETE"
    LEGACY_STREAM = "a 2024-11-05 stream's GET"
    LEGACY_POST = "a 2024-11-05 POST to the messages path"


_BY_METHOD: Final = {"POST": Route.POST, "GET": Route.GET, "DELETE": Route.DELETE}


def route(
    request: McpRequest, path: str | None, legacy: LegacyPaths | None = None, scope: Scope | None = None
) -> Route:
    """The endpoint for ``request`` (rules in the module docstring); HttpError when there is none.

    ``legacy`` is where the 2024-11-05 transport is served (None: it is not), below the
    ``root_path`` of the request's ASGI ``scope`` (read only for a path that is not the endpoint's)."""
    method = request.method
    if path is None or request.path != path:  # (the endpoint's own path, the usual case, skips this)
        if legacy is not None:
            root_path = scope.get("root_path", "") if scope is not None else ""
            local = below(request.path, root_path) if root_path else request.path
            if local == legacy.stream:
                if method != "GET":
                    raise HttpError(405, f"Method not allowed: {method}; the SSE stream takes GET", headers=_ALLOW_GET)
                return Route.LEGACY_STREAM
            if local == legacy.messages:
                if method != "POST":
                    raise HttpError(
                        405, f"Method not allowed: {method}; the messages endpoint takes POST", headers=_ALLOW_POST
                    )
                return Route.LEGACY_POST
        if path is not None:
            raise HttpError(404, f"Not found: the MCP endpoint is {path}")
    if request.repeated and request.count(b"mcp-session-id") > 1:
        raise HttpError(400, "Bad request: several Mcp-Session-Id headers; send exactly one")
    version = request.version
    if version is not None and not versions.for_header(version):
        return Route.STATELESS
    if (
        method == "GET"
        and legacy is not None
        and request.session_id is None
        and version is None
        and accepts_json_and_sse(request.accept)[1]
    ):
        return Route.LEGACY_STREAM
    found = _BY_METHOD.get(method)
    if found is None:
        raise HttpError(
            405,
            f"Method not allowed: {method}; the MCP endpoint takes GET, POST and DELETE",
            headers=_ALLOW,
        )
    return found


class McpRouter:
    """The MCP endpoint as an ASGI app: routes each request (``route``) and answers failures.

    ``legacy`` serves the 2024-11-05 transport (None: the app does not)."""

    __slots__ = ("legacy", "legacy_paths", "path", "sessions", "stateless")

    def __init__(
        self,
        sessions: HttpSessionEndpoint,
        stateless: HttpStatelessEndpoint,
        path: str | None,
        legacy: LegacySseEndpoint | None = None,
    ) -> None:
        self.sessions = sessions
        self.stateless = stateless
        self.path = path
        self.legacy = legacy
        self.legacy_paths = None if legacy is None else legacy.paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = McpRequest.of(scope)
        try:
            where = route(request, self.path, self.legacy_paths, scope)
            if where is Route.POST:
                await self.sessions.post(request, receive, send)
            elif where is Route.STATELESS:
                await self.stateless.handle(request, receive, send)
            elif where is Route.GET:
                await self.sessions.get(request, receive, send)
            elif where is Route.DELETE:
                await self.sessions.delete(request, send)
            else:
                legacy = self.legacy
                assert legacy is not None  # (route names it only with legacy paths)
                if where is Route.LEGACY_POST:
                    await legacy.post(scope, request, receive, send)
                else:
                    await legacy.stream(scope, request, receive, send)
        except HttpError as error:
            await error.write(send)
        except ClientDisconnected:
            pass
        except StoreUnavailable as error:
            # A shared store out of reach: the client retries, nothing is lost.
            logger.warning("the session store is unavailable: %s", error)
            await _answer_late(
                send,
                HttpError(
                    503,
                    "Service unavailable: the session store cannot be reached; try again later",
                    SERVER_BUSY,
                    headers=[(b"retry-after", b"2")],
                ),
            )
        except Exception:
            # A bug of ours or of a pluggable store: the detail goes to the log only.
            logger.exception("the MCP endpoint failed on %s %s", request.method, request.path)
            await _answer_late(send, HttpError(500, "Internal error", INTERNAL_ERROR))


async def _answer_late(send: Send, error: HttpError) -> None:
    """Answer a failure found mid-request: if the response had started, the server closes the connection."""
    try:
        await error.write(send)
    except Exception:
        pass
