"""JSON-RPC error bodies for HTTP 4xx and 5xx answers.

Every refusal carries ``{"jsonrpc": "2.0", "id": ..., "error": {code,
message}}`` with a message a person can act on. Nothing from an exception
(text, traceback, path) is ever put in one: log those instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import orjson

from ...engine.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RequestId
from .asgi import Send

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_REQUEST",
    "PARSE_ERROR",
    "SERVER_BUSY",
    "SESSION_ENDED",
    "UNKNOWN_SESSION",
    "HttpError",
    "error_body",
    "in_flight_conflict",
    "shutting_down",
    "write_json_rpc_error",
]

# Servers that are full or closing answer with the transport-level code.
SERVER_BUSY: Final = -32000

# The texts of refusals made in more than one place.
UNKNOWN_SESSION: Final = "Session not found: it expired, was deleted or never existed; initialize a new one"
SESSION_ENDED: Final = "Session not found: it has ended; initialize a new one"


class HttpError(Exception):
    """An HTTP refusal with its JSON-RPC error: raised inside the request path, written by the app."""

    def __init__(
        self,
        status: int,
        message: str,
        code: int | None = None,
        *,
        request_id: RequestId | None = None,
        headers: Iterable[tuple[bytes, bytes]] = (),
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = _default_code(status) if code is None else code
        self.message = message
        self.request_id = request_id
        self.headers = list(headers)
        self.data = data

    async def write(self, send: Send) -> None:
        await write_json_rpc_error(
            send, self.status, self.code, self.message, request_id=self.request_id, headers=self.headers, data=self.data
        )


def error_body(code: int, message: str, request_id: RequestId | None = None, data: Any = None) -> bytes:
    """The bytes of a JSON-RPC error response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def _default_code(status: int) -> int:
    return INTERNAL_ERROR if status >= 500 else INVALID_REQUEST


async def write_json_rpc_error(
    send: Send,
    status: int,
    code: int | None = None,
    message: str = "Bad request",
    *,
    request_id: RequestId | None = None,
    headers: Iterable[tuple[bytes, bytes]] = (),
    data: Any = None,
) -> None:
    """Answer an ASGI HTTP request with ``status`` and a JSON-RPC error body.

    ``code`` defaults to -32600 for 4xx and -32603 for 5xx.
    """
    body = error_body(_default_code(status) if code is None else code, message, request_id, data)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


def in_flight_conflict(request_id: RequestId) -> HttpError:
    """409: a client request id already in flight in its session (on any worker)."""
    return HttpError(
        409, f"Conflict: request id {request_id!r} is already in flight in this session", request_id=request_id
    )


def shutting_down() -> HttpError:
    """503 for a request that arrives while the server shuts down."""
    return HttpError(
        503, "Service unavailable: the server is shutting down", SERVER_BUSY, headers=[(b"connection", b"close")]
    )
