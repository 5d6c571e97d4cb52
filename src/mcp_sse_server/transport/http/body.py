"""Reading a POST's body: its media type, its size limit, one JSON-RPC message.

Rules:

1. The body must be ``application/json`` (parameters allowed): 415 otherwise.
2. A declared ``Content-Length`` beyond ``max_request_bytes`` is refused (413)
   before a byte is read; so is a body that grows past it while it arrives.
3. The body is one JSON-RPC message: 400 with -32700 (not JSON) or -32600
   (not a message) otherwise. A batch (a JSON array) is refused too, except by
   ``read_session_post``, which hands it to a session that may take it (``batch.py``).
4. A client that leaves before its body arrived raises ``ClientDisconnected``;
   nobody is left to answer.

>>> is_json_content_type(b"application/json; charset=utf-8")
True
>>> is_json_content_type(b"text/plain")
False
"""

from __future__ import annotations

from typing import Any, Final

from ...engine.jsonrpc import BatchReceived, JsonRpcMessage, McpError, parse_message
from .asgi import Message, Receive, Scope
from .errors import HttpError
from .limits import DEFAULT_LIMITS

__all__ = [
    "UNSUPPORTED_MEDIA_TYPE",
    "ClientDisconnected",
    "check_content_length",
    "is_json_content_type",
    "parse_body",
    "read_body",
    "read_json_rpc_post",
    "read_message",
    "read_session_post",
]

UNSUPPORTED_MEDIA_TYPE: Final = "Unsupported media type: the body must be application/json"


class ClientDisconnected(Exception):
    """The client went away before its request body arrived."""


def is_json_content_type(value: bytes | None) -> bool:
    """True for ``application/json``, with or without parameters."""
    if value is None:
        return False
    if value == b"application/json":
        return True
    return value.split(b";", 1)[0].strip().lower() == b"application/json"


def _too_large(max_bytes: int) -> HttpError:
    return HttpError(413, f"Payload too large: the body exceeds the limit of {max_bytes} bytes")


def check_content_length(content_length: bytes, max_bytes: int) -> None:
    """Refuse a declared body size beyond ``max_bytes`` (413) before reading a byte of it."""
    try:
        declared = int(content_length)
    except ValueError:
        raise HttpError(400, "Bad request: invalid Content-Length header") from None
    if declared > max_bytes:
        raise _too_large(max_bytes)


async def read_body(
    receive: Receive, max_bytes: int, content_length: bytes | None = None, first: Message | None = None
) -> bytes:
    """The request body, refusing (413) a declared or actual size beyond ``max_bytes``.

    ``first`` is a message already received, when the caller looked at it.
    """
    if content_length is not None:
        check_content_length(content_length, max_bytes)
    message = first if first is not None else await receive()
    if message["type"] != "http.request":
        raise ClientDisconnected
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > max_bytes:
            raise _too_large(max_bytes)
        return body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _within(offered: bytes, max_bytes: int) -> bytes:
    """A body the server had whole (``McpRequest.body``), refused (413) beyond ``max_bytes``."""
    if len(offered) > max_bytes:
        raise _too_large(max_bytes)
    return offered


def parse_body(body: bytes) -> JsonRpcMessage:
    """One JSON-RPC message from a POST body; HttpError 400 (-32700/-32600) otherwise."""
    try:
        return parse_message(body)
    except McpError as error:
        raise HttpError(400, error.message, error.code) from None


async def read_message(
    receive: Receive, max_bytes: int, content_length: bytes | None, offered: bytes | None = None
) -> tuple[JsonRpcMessage, bytes]:
    """A POST's one JSON-RPC message and the body it came in (rules 2-4); ``offered``: the whole
    body, when the server has it already (``McpRequest.body``), taken instead of reading ``receive``."""
    body = await read_body(receive, max_bytes, content_length) if offered is None else _within(offered, max_bytes)
    return parse_body(body), body


async def read_session_post(
    receive: Receive, max_bytes: int, content_length: bytes | None, offered: bytes | None = None
) -> tuple[JsonRpcMessage | list[Any], bytes]:
    """A session POST's one JSON-RPC message, or the items of its batch (a list), and its body
    (``offered`` as ``read_message`` takes it)."""
    body = await read_body(receive, max_bytes, content_length) if offered is None else _within(offered, max_bytes)
    try:
        return parse_message(body), body
    except BatchReceived as batch:
        return batch.items, body
    except McpError as error:
        raise HttpError(400, error.message, error.code) from None


async def read_json_rpc_post(
    scope: Scope, receive: Receive, *, max_request_bytes: int = DEFAULT_LIMITS.max_request_bytes
) -> JsonRpcMessage:
    """Read and parse the JSON-RPC message of an MCP POST (for embedders routing MCP themselves).

    Raises ``HttpError`` (415 for a non-JSON Content-Type, 413 beyond
    ``max_request_bytes``, 400 for a body that is not one JSON-RPC message)
    and ``ClientDisconnected``. Write an HttpError with ``await error.write(send)``.
    """
    headers = dict(scope["headers"])
    if not is_json_content_type(headers.get(b"content-type")):
        raise HttpError(415, UNSUPPORTED_MEDIA_TYPE)
    return parse_body(await read_body(receive, max_request_bytes, headers.get(b"content-length")))
