"""What a client needs for the stateless revision 2026-07-28: the per-request
``_meta`` envelope, the HTTP routing headers (``Mcp-Method``, ``Mcp-Name``,
``Mcp-Param-*`` from a tool's ``x-mcp-header`` annotations), the error codes
that mark a stateless server, and the ``resultType`` check.

>>> encode_header_value("get_weather")
'get_weather'
>>> encode_header_value("héllo")
'=?base64?aMOpbGxv?='
>>> encode_header_value(" padded")
'=?base64?IHBhZGRlZA==?='
>>> schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
>>> param_headers(schema, {"region": "eu-west"})
{'Mcp-Param-Region': 'eu-west'}
>>> invalid_x_mcp_header({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}})
"property 'n' carries x-mcp-header but is of type 'number' (only string, integer and boolean may)"
>>> missing_back_channel(McpError(-32603, "Cannot send 'roots/list': this transport context has no back-channel"))
'roots/list'
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final

from ..engine import stateless_meta
from ..engine.jsonrpc import HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION, McpError

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "HEADER_MISMATCH",
    "LOG_LEVEL_KEY",
    "MISSING_CLIENT_CAPABILITY",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "InputRoundsExceededError",
    "StreamLostError",
    "UnsupportedProtocolVersionError",
    "encode_header_value",
    "invalid_x_mcp_header",
    "is_stateless_error",
    "missing_back_channel",
    "param_headers",
    "routing_headers",
]

# The ``_meta`` keys of the envelope and of results, under the client's names (the values are
# stateless_meta's, which the server side uses).
PROTOCOL_VERSION_KEY: Final = stateless_meta.PROTOCOL_VERSION_KEY
CLIENT_CAPABILITIES_KEY: Final = stateless_meta.CLIENT_CAPABILITIES
CLIENT_INFO_KEY: Final = stateless_meta.CLIENT_INFO
LOG_LEVEL_KEY: Final = stateless_meta.LOG_LEVEL
SERVER_INFO_KEY: Final = stateless_meta.SERVER_INFO
SUBSCRIPTION_ID_KEY: Final = stateless_meta.SUBSCRIPTION_ID

_SENTINEL: Final = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_TYPES: Final = ("string", "integer", "boolean")
_MAX_SAFE_INTEGER: Final = 2**53 - 1

# What servers of other SDKs say when a handler asked the client something (sampling,
# elicitation, roots) while serving a 2026-07-28 request, which gives them no way to send it:
# each pattern captures the method the handler wanted, or names it (McpClient's session
# fallback reads them).
_NO_BACK_CHANNEL: Final = (
    # the official Python SDK (mcp 2.x) and servers built on it (fastmcp)
    (re.compile(r"Cannot send '([\w/]+)': this transport context has no back-channel"), None),
    # fastmcp's ctx.elicit, which refuses before the SDK is asked
    (re.compile(r"elicitation via server-initiated requests is unavailable on 2026-07-28"), "elicitation/create"),
    # the TypeScript SDK v2
    (
        re.compile(
            r"Server-to-client requests are not available on protocol revision [^:]*: '([\w/]+)' cannot be sent"
        ),
        None,
    ),
)
_SERVER_TO_CLIENT: Final = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})


class UnsupportedProtocolVersionError(McpError):
    """The server does not serve the protocol revision this client asked for (-32022).

    ``supported`` lists the revisions the server named; the message shows them.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(UNSUPPORTED_PROTOCOL_VERSION, message, data)
        listed = data.get("supported") if isinstance(data, dict) else None
        self.supported: list[str] = (
            [item for item in listed if isinstance(item, str)] if isinstance(listed, list) else []
        )
        requested = data.get("requested") if isinstance(data, dict) else None
        self.requested = requested if isinstance(requested, str) else None

    def __str__(self) -> str:
        supported = ", ".join(self.supported) or "none named"
        asked = f" (asked for {self.requested})" if self.requested else ""
        return f"{self.message}{asked}; the server supports: {supported}"


class StreamLostError(Exception):
    """Marks a connection error of the stateless revision where the request's stream broke
    before its answer: the request is lost (there is no resumption) and may be sent again."""


class InputRoundsExceededError(McpError):
    """The server kept answering ``input_required`` past the client's ``max_input_rounds``."""

    def __init__(self, method: str, rounds: int) -> None:
        super().__init__(
            -32603,
            f"{method} still needed input after {rounds} rounds (max_input_rounds={rounds}); giving up",
            {"rounds": rounds},
        )


def is_stateless_error(error: McpError) -> bool:
    """True when ``error`` can only come from a server of the stateless revision.

    -32020, -32021 and -32022 are the revision's own codes; -32602 counts when it
    complains about the ``_meta`` envelope (a session server has no reason to).
    """
    if error.code in (HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION):
        return True
    if error.code == -32602:
        text = f"{error.message} {error.data!r}"
        return "_meta" in text or "io.modelcontextprotocol/" in text
    return False


def missing_back_channel(failure: McpError | Mapping[str, Any]) -> str | None:
    """The server-to-client request (``sampling/createMessage``, ``elicitation/create`` or
    ``roots/list``) a server says it could not send because the request it was serving gave it
    no channel back to the client, or None. ``failure`` is an error reply, or a tools/call result
    with ``isError`` (some servers report it that way); only the known wordings count."""
    if isinstance(failure, McpError):
        texts = [failure.message]
    elif failure.get("isError") is True and isinstance(failure.get("content"), list):
        texts = [
            block["text"]
            for block in failure["content"]
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
    else:
        return None
    for text in texts:
        for pattern, named in _NO_BACK_CHANNEL:
            found = pattern.search(text)
            wanted = named or (found.group(1) if found is not None else None)
            if found is not None and wanted in _SERVER_TO_CLIENT:
                return wanted
    return None


def encode_header_value(value: str) -> str:
    """``value`` as an HTTP header value: as it is when that is safe (visible ASCII
    and spaces, no surrounding blanks, not itself of the sentinel form), else
    ``=?base64?<base64 of its UTF-8>?=``."""
    plain = (
        all(0x20 <= ord(char) <= 0x7E for char in value)
        and value == value.strip(" \t")
        and not _SENTINEL.fullmatch(value)
    )
    if plain:
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def routing_headers(method: str, params: Mapping[str, Any] | None) -> dict[str, str]:
    """``Mcp-Method`` and, for tools/call, prompts/get and resources/read, ``Mcp-Name``."""
    headers = {"Mcp-Method": method}
    key = stateless_meta.NAMED_BY.get(method)
    target = params.get(key) if params is not None and key is not None else None
    if isinstance(target, str):
        headers["Mcp-Name"] = encode_header_value(target)
    return headers


def _annotations(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """Every ``x-mcp-header`` in ``schema``: (the path of keys to it, its value, its schema)."""
    found: list[tuple[tuple[str, ...], Any, Any]] = []
    if isinstance(schema, dict):
        if "x-mcp-header" in schema:
            found.append((path, schema["x-mcp-header"], schema))
        for key, value in schema.items():
            if isinstance(value, dict | list):
                found.extend(_annotations(value, (*path, str(key))))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found.extend(_annotations(value, (*path, str(index))))
    return found


def _property_path(path: tuple[str, ...]) -> tuple[str, ...] | None:
    """The argument names along ``path`` when it is a pure ``properties`` chain, else None."""
    if not path or len(path) % 2:
        return None
    if any(path[index] != "properties" for index in range(0, len(path), 2)):
        return None
    return tuple(path[index] for index in range(1, len(path), 2))


def invalid_x_mcp_header(schema: Any) -> str | None:
    """Why the ``x-mcp-header`` annotations of a tool's ``inputSchema`` are invalid, or None."""
    seen: set[str] = set()
    for path, header, field in _annotations(schema):
        names = _property_path(path)
        where = ".".join(names) if names else "/".join(path) or "the schema root"
        if names is None:
            return f"x-mcp-header at {where} is not reached through properties alone"
        if not isinstance(header, str) or not _TOKEN.fullmatch(header):
            return f"property {where!r} has x-mcp-header {header!r}, which is not an HTTP token"
        if header.lower() in seen:
            return f"x-mcp-header {header!r} is used twice"
        seen.add(header.lower())
        kind = field.get("type")
        if kind not in _HEADER_TYPES:
            return (
                f"property {where!r} carries x-mcp-header but is of type {kind!r} "
                "(only string, integer and boolean may)"
            )
    return None


def param_headers(schema: Any, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers for a tools/call with ``arguments`` of a tool with ``schema``
    (nothing for an invalid schema; a header is left out when its value is absent or null)."""
    if arguments is None or invalid_x_mcp_header(schema) is not None:
        return {}
    headers: dict[str, str] = {}
    for path, header, field in _annotations(schema):
        names = _property_path(path) or ()
        value: Any = arguments
        for name in names:
            value = value.get(name) if isinstance(value, Mapping) else None
        kind = field.get("type")
        if value is None:
            continue
        if kind == "boolean" and isinstance(value, bool):
            text = "true" if value else "false"
        elif kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > _MAX_SAFE_INTEGER:
                continue
            text = str(value)
        elif kind == "string" and isinstance(value, str):
            text = value
        else:
            continue  # the server validates the arguments and says what is wrong
        headers[f"Mcp-Param-{header}"] = encode_header_value(text)
    return headers
