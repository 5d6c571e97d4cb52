"""JSON-RPC 2.0 messages as MCP 2025-06-18 uses them: parse, build, serialize.

Messages are small slotted classes rather than validated models: the hot path
parses bytes with orjson, checks the shape once here, and never copies params.

>>> msg = parse_message(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
>>> msg
JsonRpcRequest(id=1, method='ping', params=None)
>>> encode_message(JsonRpcResponse(id=1, result={}))
b'{"jsonrpc":"2.0","id":1,"result":{}}'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

import orjson

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "BatchReceived",
    "JsonRpcError",
    "JsonRpcMessage",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "McpError",
    "RequestId",
    "dumps",
    "encode_message",
    "json_type",
    "message_from_dict",
    "message_to_dict",
    "parse_message",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
RESOURCE_NOT_FOUND: Final = -32002
# The stateless revision's errors (2026-07-28): a required header missing or unlike the body,
# a client capability the request needs but did not declare, a protocol version not served
# (numbered after the revision's late renumbering: -32001, -32003 and -32004 are not them).
HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
# Used by transports for a request that cannot be served (closed session, timeout).
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001

RequestId: TypeAlias = str | int


class McpError(Exception):
    """An error that travels to the peer as a JSON-RPC error object.

    Raise it from a handler when the request itself is wrong and the client,
    not the model, should deal with it:

    >>> raise McpError(INVALID_PARAMS, "Unknown tool: nope")  # doctest: +SKIP
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error_object(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"McpError(code={self.code}, message={self.message!r}, data={self.data!r})"


class MissingClientCapability(McpError, RuntimeError):
    """A server-to-client request the client did not declare the capability for: raised by the
    session before anything is sent. Inside a request it answers that request with -32021 and
    the sentence (the client, not the model, lacks the capability); it stays a RuntimeError for
    code that caught it as one. ``required`` (the capabilities missing, as the client would
    declare them) is the error's ``data.requiredCapabilities``, the shape 2026-07-28 gives -32021:
    a proxy passes this error on to fronts of any revision."""

    def __init__(self, message: str, required: dict[str, Any] | None = None) -> None:
        super().__init__(
            MISSING_CLIENT_CAPABILITY, message, None if required is None else {"requiredCapabilities": required}
        )


class BatchReceived(McpError):
    """A JSON array where one message was expected: a JSON-RPC batch. Only 2025-03-26 sessions
    take them (``versions.Revision.batches``): a transport that serves one reads ``items``; to
    anyone else this is the -32600 it says."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(
            INVALID_REQUEST, "Batch requests are not supported: only sessions of revision 2025-03-26 take them"
        )
        self.items = items


class JsonRpcRequest:
    """A request: it has an id and expects exactly one response."""

    __slots__ = ("id", "method", "params")

    def __init__(self, id: RequestId, method: str, params: dict[str, Any] | None = None) -> None:
        self.id = id
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"JsonRpcRequest(id={self.id!r}, method={self.method!r}, params={self.params!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonRpcRequest) and (self.id, self.method, self.params) == (
            other.id,
            other.method,
            other.params,
        )


class JsonRpcNotification:
    """A one-way message: no id, never answered."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"JsonRpcNotification(method={self.method!r}, params={self.params!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonRpcNotification) and (self.method, self.params) == (
            other.method,
            other.params,
        )


class JsonRpcResponse:
    """A successful answer to the request with the same id."""

    __slots__ = ("id", "result")

    def __init__(self, id: RequestId, result: dict[str, Any]) -> None:
        self.id = id
        self.result = result

    def __repr__(self) -> str:
        return f"JsonRpcResponse(id={self.id!r}, result={self.result!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonRpcResponse) and (self.id, self.result) == (other.id, other.result)


class JsonRpcError:
    """An error answer. ``id`` is None when the request's id could not be read."""

    __slots__ = ("code", "data", "id", "message")

    def __init__(self, id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        self.id = id
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def from_exception(cls, id: RequestId | None, error: McpError) -> JsonRpcError:
        return cls(id, error.code, error.message, error.data)

    def to_exception(self) -> McpError:
        return McpError(self.code, self.message, self.data)

    def __repr__(self) -> str:
        return f"JsonRpcError(id={self.id!r}, code={self.code}, message={self.message!r}, data={self.data!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonRpcError) and (self.id, self.code, self.message, self.data) == (
            other.id,
            other.code,
            other.message,
            other.data,
        )


JsonRpcMessage: TypeAlias = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse | JsonRpcError


def _is_id(value: Any) -> bool:
    # bool is an int subclass but never a valid id.
    return (type(value) is int) or isinstance(value, str)


_ABSENT: Final = object()


def message_from_dict(data: Any) -> JsonRpcMessage:
    """Build a message from decoded JSON, or raise McpError(-32600) naming what is wrong."""
    # The usual well-formed request or notification, in as few steps as possible;
    # anything else takes the checks below, which name what is wrong.
    if type(data) is dict and data.get("jsonrpc") == "2.0":
        method = data.get("method")
        if type(method) is str:
            params = data.get("params")
            if params is None or type(params) is dict:
                id_ = data.get("id", _ABSENT)
                if type(id_) is int or type(id_) is str:
                    return JsonRpcRequest(id_, method, params)
                if id_ is _ABSENT:
                    return JsonRpcNotification(method, params)
    if type(data) is not dict:
        if isinstance(data, list):
            raise BatchReceived(data)
        raise McpError(INVALID_REQUEST, "A JSON-RPC message must be a JSON object")
    if data.get("jsonrpc") != "2.0":
        raise McpError(INVALID_REQUEST, 'The "jsonrpc" member must be exactly "2.0"')
    method = data.get("method")
    if method is not None:
        if not isinstance(method, str):
            raise McpError(INVALID_REQUEST, 'The "method" member must be a string')
        params = data.get("params")
        if params is not None and type(params) is not dict:
            raise McpError(INVALID_REQUEST, 'The "params" member must be an object')
        if "id" in data:
            id_ = data["id"]
            if id_ is None:
                raise McpError(INVALID_REQUEST, "A request id must not be null")
            if not _is_id(id_):
                raise McpError(INVALID_REQUEST, "A request id must be a string or an integer")
            return JsonRpcRequest(id_, method, params)
        return JsonRpcNotification(method, params)
    if "id" not in data:
        raise McpError(INVALID_REQUEST, 'A message needs a "method" (request or notification) or an "id" (response)')
    id_ = data["id"]
    if "result" in data:
        if "error" in data:
            raise McpError(INVALID_REQUEST, 'A response must not carry both "result" and "error"')
        if not _is_id(id_):
            raise McpError(INVALID_REQUEST, "A response id must be a string or an integer")
        result = data["result"]
        if type(result) is not dict:
            raise McpError(INVALID_REQUEST, 'The "result" member must be an object')
        return JsonRpcResponse(id_, result)
    error = data.get("error")
    if type(error) is not dict:
        raise McpError(INVALID_REQUEST, 'A response needs a "result" or an "error" object')
    code = error.get("code")
    message = error.get("message")
    if type(code) is not int or not isinstance(message, str):
        raise McpError(INVALID_REQUEST, 'An error object needs an integer "code" and a string "message"')
    if id_ is not None and not _is_id(id_):
        raise McpError(INVALID_REQUEST, "A response id must be a string, an integer or null")
    return JsonRpcError(id_, code, message, error.get("data"))


def parse_message(raw: bytes | bytearray | memoryview | str) -> JsonRpcMessage:
    """Parse one JSON-RPC message from its wire form.

    Raises McpError with -32700 for bytes that are not JSON and -32600 for JSON
    that is not a single, well-formed message.
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise McpError(PARSE_ERROR, "Parse error: the body is not valid JSON") from None
    return message_from_dict(data)


def message_to_dict(message: JsonRpcMessage) -> dict[str, Any]:
    """The JSON object for a message (the inverse of message_from_dict)."""
    if type(message) is JsonRpcResponse:
        return {"jsonrpc": "2.0", "id": message.id, "result": message.result}
    if type(message) is JsonRpcRequest:
        if message.params is None:
            return {"jsonrpc": "2.0", "id": message.id, "method": message.method}
        return {"jsonrpc": "2.0", "id": message.id, "method": message.method, "params": message.params}
    if type(message) is JsonRpcNotification:
        if message.params is None:
            return {"jsonrpc": "2.0", "method": message.method}
        return {"jsonrpc": "2.0", "method": message.method, "params": message.params}
    if type(message) is JsonRpcError:
        error: dict[str, Any] = {"code": message.code, "message": message.message}
        if message.data is not None:
            error["data"] = message.data
        return {"jsonrpc": "2.0", "id": message.id, "error": error}
    raise TypeError(f"not a JSON-RPC message: {message!r}")


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON. Integers beyond 64 bits (which orjson refuses) fall
    back to the standard library, so a big result is sent exactly, not lost."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def json_type(value: Any) -> str:
    """The JSON type of ``value``, for messages about a value of the wrong kind: one of
    ``null``, ``boolean``, ``number``, ``string``, ``array`` and ``object``, else the Python
    type's name.

    >>> [json_type(value) for value in (None, True, 1.5, "a", [1], {"k": 1}, b"")]
    ['null', 'boolean', 'number', 'string', 'array', 'object', 'bytes']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def encode_message(message: JsonRpcMessage) -> bytes:
    """Serialize a message to compact UTF-8 JSON; TypeError/ValueError if it holds non-JSON values."""
    if type(message) is JsonRpcResponse:  # most of what a server sends
        try:
            return orjson.dumps({"jsonrpc": "2.0", "id": message.id, "result": message.result})
        except orjson.JSONEncodeError:
            pass  # dumps() below falls back or raises the usual error
    return dumps(message_to_dict(message))
