"""The wire data of the stateless revision (2026-07-28): ``_meta`` keys, caching hints, mirrored
headers; and the names of tasks on the wire, which server and client share.

Plain constants and pure functions, low in the package, so that what only
needs the wire (``server.py`` registering a tool, the HTTP routing checks,
clients) depends on data and not on ``StatelessEndpoint`` (``stateless.py``),
which serves requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "NAMED_BY",
    "PROTOCOL_VERSION_KEY",
    "RELATED_TASK",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "TASKS_EXTENSION",
    "CachePolicy",
    "MirroredHeader",
    "has_envelope",
    "mirrored_headers",
]

# The ``_meta`` keys of a stateless request (the envelope) and of its results.
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

# The requests whose target goes in the Mcp-Name header, and the parameter that names it.
NAMED_BY: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

# Tasks (tasks.py): the extension a 2026-07-28 request declares to get tasks, and the ``_meta``
# key that ties a 2025-11-25 core task's messages to it (``{"taskId": ...}``).
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"


def has_envelope(params: Any) -> bool:
    """True when a request's params carry a stateless protocol version in ``_meta``."""
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION_KEY in meta


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """What cacheable results say about caching: ``ttl_ms`` (0: stale at once) and
    ``scope`` ("private": only for the same authorization; "public": shareable)."""

    ttl_ms: int = 0
    scope: Literal["private", "public"] = "private"

    def __post_init__(self) -> None:
        if type(self.ttl_ms) is not int or self.ttl_ms < 0:
            raise ValueError(f"ttl_ms must be a non-negative integer, not {self.ttl_ms!r}")
        if self.scope not in ("private", "public"):
            raise ValueError(f'scope must be "private" or "public", not {self.scope!r}')


@dataclass(frozen=True, slots=True)
class MirroredHeader:
    """A tool argument a 2026-07-28 client also sends as an ``Mcp-Param-<name>`` header
    (``x-mcp-header`` in the tool's input schema), for routing by proxies."""

    name: str  # the header's suffix, as declared
    path: tuple[str, ...]  # where the argument sits in the arguments object
    kind: str  # "string", "integer" or "boolean"

    def value_in(self, arguments: Any) -> Any:
        """The argument's value, or None when it is absent."""
        value = arguments
        for key in self.path:
            if type(value) is not dict:
                return None
            value = value.get(key)
        return value


# RFC 9110 section 5.6.2: the characters of a header field name ("token").
_TOKEN_CHARS: Final = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def mirrored_headers(schema: dict[str, Any]) -> tuple[MirroredHeader, ...]:
    """The ``x-mcp-header`` declarations of an input schema, reached through ``properties`` only.

    ValueError for one the specification forbids (not a token, repeated, on a
    type other than string, integer or boolean).
    """
    found: list[MirroredHeader] = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        properties = node.get("properties") if type(node) is dict else None
        if type(properties) is not dict:
            return
        for key, prop in properties.items():
            if type(prop) is not dict:
                continue
            declared = prop.get("x-mcp-header")
            if declared is not None:
                kind = prop.get("type")
                if not isinstance(declared, str) or not declared or not set(declared) <= _TOKEN_CHARS:
                    raise ValueError(f"x-mcp-header of {'.'.join((*path, key))} must be a non-empty header token")
                if kind not in ("string", "integer", "boolean"):
                    raise ValueError(
                        f"x-mcp-header of {'.'.join((*path, key))} needs a string, integer or boolean property"
                    )
                found.append(MirroredHeader(declared, (*path, key), kind))
            walk(prop, (*path, key))

    walk(schema, ())
    names = [header.name.lower() for header in found]
    if len(set(names)) != len(names):
        raise ValueError("x-mcp-header names must be unique (case-insensitively) within a tool")
    return tuple(found)
