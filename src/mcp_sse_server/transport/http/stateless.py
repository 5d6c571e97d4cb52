"""The HTTP rules of the stateless revision (2026-07-28), checked before a request is served.

Which requests come here is the router's business (``router.py``): a request
whose ``MCP-Protocol-Version`` names no session revision. Rules, in order:

1. The body is one JSON-RPC request (a notification is accepted with 202 and
   dropped; anything else is 400 -32600). An incomplete ``_meta`` envelope is
   the engine's 400 -32602, before any header is compared.
2. Routing headers mirror the body and appear once each, else 400 -32020:
   ``MCP-Protocol-Version`` = the envelope's version, ``Mcp-Method`` = the
   method, ``Mcp-Name`` = the tool or prompt name (``tools/call``,
   ``prompts/get``), the URI (``resources/read``) or the task id
   (``tasks/get``, ``tasks/update``, ``tasks/cancel``), and for ``tools/call``
   each ``Mcp-Param-<name>`` = the argument its tool's schema mirrors there
   (``x-mcp-header``), present exactly when the argument is (other ``Mcp-Param-*``
   headers are not recognised, and ignored). Values that are
   not visible ASCII travel as ``=?base64?<UTF-8 in base64>?=`` and are decoded
   before comparing.
3. Then the engine (``modern.py``): version served (-32022), method known
   (-32601, 404), capabilities (-32021). An error answered before anything
   was streamed carries its HTTP status (``sse.status_for``).
4. No session is looked up, created or named; closing the response stream
   cancels the request.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from ...engine.jsonrpc import HEADER_MISMATCH, INVALID_REQUEST, JsonRpcRequest
from ...engine.stateless_meta import NAMED_BY, PROTOCOL_VERSION_KEY, MirroredHeader
from .errors import HttpError
from .request import McpRequest

__all__ = ["MirroredHeaders", "check_routing_headers", "decode_header_value", "refuse_non_request"]

MirroredHeaders: TypeAlias = Callable[[str], tuple[MirroredHeader, ...]]
"""The arguments a tool mirrors in ``Mcp-Param-*`` headers, by tool name (``McpServer.mirrored_headers``)."""

_ROUTING: Final = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")
_PARAM_PREFIX: Final = b"mcp-param-"


def decode_header_value(raw: bytes) -> str | None:
    """A routing header's value: plain visible ASCII, or the ``=?base64?...?=`` form decoded;
    None when it is neither (invalid characters, bad base64 or UTF-8)."""
    text = raw.decode("latin-1").strip(" \t")  # optional whitespace around a field value is not part of it
    if text.startswith("=?base64?") and text.endswith("?="):
        try:
            return base64.b64decode(text[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
    # Visible ASCII and spaces only: isprintable() refuses tabs and other control characters.
    if not text or not text.isascii() or not text.isprintable():
        return None
    return text


def _mismatch(message: str) -> HttpError:
    return HttpError(400, message, HEADER_MISMATCH)


def _as_header(value: Any, kind: str) -> str | None:
    """An argument's value as its mirrored header carries it (None: no header is sent)."""
    if value is None:
        return None
    if kind == "boolean":
        return "true" if value is True else ("false" if value is False else repr(value))
    return str(value)


def check_routing_headers(request: JsonRpcRequest, http: McpRequest, mirrored: MirroredHeaders | None) -> None:
    """HttpError (400 -32020) unless the routing headers of ``http`` agree with its body ``request``.

    ``mirrored`` names the arguments each tool mirrors (None: no tool mirrors any). A body
    without a complete envelope is left to the engine (-32602 comes first).
    """
    params = request.params
    if params is None:
        return
    meta = params.get("_meta")
    if type(meta) is not dict:
        return
    named = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(named, str):
        return
    found = http.headers
    if http.repeated:
        names = [name for name, _ in http.raw if name in _ROUTING or name.startswith(_PARAM_PREFIX)]
        if len(names) != len(set(names)):
            raise _mismatch("Bad request: a routing header (MCP-Protocol-Version, Mcp-*) appears more than once")
    version = http.version
    if version is None or version.decode("latin-1") != named:
        raise _mismatch("Bad request: the MCP-Protocol-Version header does not match the request's _meta")
    method = request.method
    header = found.get(b"mcp-method")
    # (Each header is compared plainly first: the usual request sends plain ASCII, never the base64 form.)
    if header is None or (header.decode("latin-1") != method and not _same(header, method)):
        raise _mismatch(f"Bad request: the Mcp-Method header must be the request's method ({method})")
    member = NAMED_BY.get(method)
    if member is not None:
        value = params.get(member)
        header = found.get(b"mcp-name")
        if (
            header is None
            or not isinstance(value, str)
            or (header.decode("latin-1") != value and not _same(header, value))
        ):
            raise _mismatch(f"Bad request: the Mcp-Name header must be the request's {member}")
        if mirrored is not None and method == "tools/call":
            headers = mirrored(value)
            if headers:  # the usual tool mirrors no argument: nothing more to compare
                _check_param_headers(headers, params, found)


def _same(header: bytes | None, value: Any) -> bool:
    """True when a routing header carries ``value`` (plainly, or in the base64 form)."""
    if header is None or not isinstance(value, str):
        return False
    plain = header.decode("latin-1")
    return plain == value or decode_header_value(header) == value


def _check_param_headers(mirrored: tuple[MirroredHeader, ...], body: dict[str, Any], found: dict[bytes, bytes]) -> None:
    arguments = body.get("arguments")
    for header in mirrored:
        want = _as_header(header.value_in(arguments), header.kind)
        raw = found.get(_PARAM_PREFIX + header.name.lower().encode("latin-1"))
        if want is None:
            if raw is not None:
                raise _mismatch(f"Bad request: Mcp-Param-{header.name} is sent but its argument is absent")
            continue
        if raw is None:
            raise _mismatch(f"Bad request: the Mcp-Param-{header.name} header is missing")
        got = decode_header_value(raw)
        if got is None:
            raise _mismatch(f"Bad request: the Mcp-Param-{header.name} header has invalid characters")
        if header.kind == "integer":
            try:
                same = int(got) == header.value_in(arguments)
            except ValueError:
                same = False
        else:
            same = got == want
        if not same:
            raise _mismatch(f"Bad request: the Mcp-Param-{header.name} header does not match its argument")


def refuse_non_request() -> HttpError:
    """The answer to a POST carrying a response (or anything but a request or a notification)."""
    return HttpError(
        400, "Bad request: a 2026-07-28 POST carries one JSON-RPC request or notification", INVALID_REQUEST
    )
