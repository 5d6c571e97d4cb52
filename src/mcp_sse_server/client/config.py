"""ServerConfig: one entry of ``mcp_server.json``, validated, with its transport resolved.

The file shape is the one ChatMCP and most MCP clients use::

    {"mcpServers": {"Math": {"type": "inmemory", "command": "math"},
                    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
                    "local": {"command": "npx", "args": ["-y", "some-server"], "env": {"DEBUG": "1"}}}}

How an entry is routed (``ServerConfig.transport``):

- ``type`` ``inmemory``: a built-in server; ``command`` is its name (``math``, ``artifact_instructions``
  or one registered with ``MemoryServerFactory.register``);
- ``type`` ``streamable`` (also ``http``, ``streamable-http``, ``streamableHttp``): Streamable HTTP to ``url``;
- ``type`` ``sse``: the legacy HTTP+SSE transport (2024-11-05) to ``url``;
- ``type`` ``stdio``: spawn ``command`` with ``args`` and ``env``;
- no ``type``: an ``http://`` or ``https://`` URL in ``url`` or (as ChatMCP writes it) in ``command``
  means Streamable HTTP, anything else stdio.

The type names are the transport table's (``engine/transports.py``), where a transport of
one's own is registered; they are matched ignoring case, ``-`` and ``_``. Errors name the field that is wrong,
as a path into the file (``mcpServers.foo.args[1]: expected a string, got number``); fields this
module does not know are kept in ``extra`` and written back unchanged.

>>> ServerConfig.from_dict({"command": "https://example.com/mcp"}, name="remote").transport
'streamable'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from ..engine import transports
from ..engine.jsonrpc import json_type
from ..engine.transports import is_url
from .oauth.config import auth_problem

__all__ = ["ConfigError", "ServerConfig", "TransportName", "format_location", "is_url", "normalize_type"]

TransportName = str
"""A transport's name in the transport table: ``inmemory``, ``streamable``, ``sse``, ``stdio`` or one registered."""

_KNOWN_KEYS: Final = frozenset({"type", "command", "args", "env", "url", "headers", "auth", "auto_approve"})
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")

Location = tuple[str | int, ...]


def format_location(location: Location) -> str:
    """``("mcpServers", "a b", "args", 1)`` -> ``mcpServers["a b"].args[1]``."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.match(part):
            text += f".{part}" if text else part
        else:
            text += "[" + _quote(part) + "]"
    return text or "config"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ConfigError(ValueError):
    """A server config is invalid; ``location`` is the path of the bad field in the file."""

    def __init__(self, location: Location, problem: str) -> None:
        self.location = location
        self.problem = problem
        super().__init__(f"{format_location(location)}: {problem}")

    @property
    def field(self) -> str:
        """The bad field as text, e.g. ``mcpServers.foo.args``."""
        return format_location(self.location)


def _valid_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
        return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False


def normalize_type(value: str) -> TransportName | None:
    """The transport a ``type`` names, or None when it names none."""
    found = transports.entry(value.strip())
    return None if found is None else found.name


def _address(name: TransportName) -> transports.Address:
    """What a config for the transport ``name`` names its server by (the table's ``address``)."""
    found = transports.entry(name)
    assert found is not None  # names come from normalize_type or the defaults
    return found.address


def _known_types() -> str:
    """The type names, each transport with its aliases: ``streamable (or http, streamable-http)``."""
    return ", ".join(t.name + (f" (or {', '.join(t.aliases)})" if t.aliases else "") for t in transports.transports())


def _optional_str(value: Any, location: Location) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(location, f"expected a string, got {json_type(value)}")


def _str_list(value: Any, location: Location) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ConfigError(location, f"expected a list of strings, got {json_type(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError((*location, index), f"expected a string, got {json_type(item)}")
    return list(value)


def _str_map(value: Any, location: Location) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(location, f"expected an object of strings, got {json_type(value)}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise ConfigError(location, f"expected string keys, got {json_type(key)}")
        if not isinstance(item, str):
            raise ConfigError((*location, key), f"expected a string, got {json_type(item)}")
    return dict(value)


@dataclass
class ServerConfig:
    """One MCP server: how to reach it and whether its tools run without asking.

    ``type`` is kept as written (None when absent); ``transport`` is where it
    routes. ``auth`` (a URL server's) is ``"oauth"`` or an object of OAuth
    settings (``client.oauth.config``). ``extra`` holds fields this package does not know, so saving the
    config does not drop them. Construction validates, raising ConfigError.
    """

    name: str
    type: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: str | dict[str, Any] | None = None
    auto_approve: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check(self._default_location())

    def _default_location(self) -> Location:
        return ("mcpServers", self.name) if isinstance(self.name, str) and self.name else ()

    def _check(self, where: Location) -> None:
        if not isinstance(self.name, str):
            raise ConfigError((*where, "name"), f"expected a string, got {json_type(self.name)}")
        if self.type is not None:
            if not isinstance(self.type, str):
                raise ConfigError((*where, "type"), f"expected a string, got {json_type(self.type)}")
            if normalize_type(self.type) is None:
                raise ConfigError((*where, "type"), f"unknown type {self.type!r}; expected one of {_known_types()}")
        self.command = _optional_str(self.command, (*where, "command"))
        self.url = _optional_str(self.url, (*where, "url"))
        self.args = _str_list(self.args, (*where, "args"))
        self.env = _str_map(self.env, (*where, "env"))
        self.headers = _str_map(self.headers, (*where, "headers"))
        if self.auth is not None:
            problem = auth_problem(self.auth)
            if problem is not None:
                raise ConfigError((*where, "auth", *problem[0]), problem[1])
        if not isinstance(self.auto_approve, bool):
            raise ConfigError((*where, "auto_approve"), f"expected true or false, got {json_type(self.auto_approve)}")
        if not isinstance(self.extra, dict):
            raise ConfigError(where, "extra must be a dict")
        if self.url is not None and not _valid_url(self.url):
            raise ConfigError((*where, "url"), f"expected an http:// or https:// URL, got {self.url!r}")
        by_url = _address(self._route(where)) == "url"
        if by_url and self.url is None and not _valid_url(self.command or ""):
            raise ConfigError((*where, "command"), f"expected an http:// or https:// URL, got {self.command!r}")
        if self.auth is not None and not by_url:
            raise ConfigError((*where, "auth"), "only a URL server (streamable or sse) takes auth")

    def _route(self, where: Location) -> TransportName:
        kind = normalize_type(self.type) if self.type is not None else None
        command = self.command or None
        if kind is None:
            if self.url is not None or is_url(command):
                return "streamable"
            if command is None:
                raise ConfigError(where, 'needs a "command" (a program or in-memory server) or a "url"')
            return "stdio"
        address = _address(kind)
        if address == "url":
            if self.url is None and not is_url(command):
                raise ConfigError((*where, "url"), f"required when type is {self.type!r} (an http:// or https:// URL)")
        elif command is None:
            what = "the in-memory server's name" if address == "server" else "the program to run"
            raise ConfigError((*where, "command"), f"required when type is {self.type!r} ({what})")
        elif address == "command" and is_url(command):
            raise ConfigError((*where, "command"), f"is a URL, but type is {kind}; use type streamable or sse")
        return kind

    @property
    def transport(self) -> TransportName:
        """Where this config routes: ``inmemory``, ``streamable``, ``sse`` or ``stdio``."""
        return self._route(self._default_location())

    @property
    def endpoint(self) -> str | None:
        """The URL of a remote server: ``url``, or ``command`` when that is a URL (ChatMCP's form)."""
        if self.url is not None:
            return self.url
        return self.command if is_url(self.command) else None

    def describe(self) -> str:
        """A short human description, e.g. ``stdio: npx -y server`` (no headers or env: they may hold secrets)."""
        kind = self.transport
        address = _address(kind)
        if address == "url":
            return f"{kind} {self.endpoint}"
        if address == "server":
            return f"{kind} {self.command}"
        return f"{kind} " + " ".join([self.command or "", *self.args])

    @classmethod
    def from_dict(cls, data: Any, name: str | None = None, *, location: Location | None = None) -> ServerConfig:
        """Validate one entry. ``name`` is its key in ``mcpServers``; without it, ``data["name"]`` is used.

        ``location`` is where the entry sits, for error messages (default ``mcpServers.<name>``).
        """
        given_name = name
        if name is None and isinstance(data, Mapping):
            raw_name = data.get("name", "")
            if not isinstance(raw_name, str):
                raise ConfigError((*(location or ()), "name"), f"expected a string, got {json_type(raw_name)}")
            name = raw_name
        name = name or ""
        where = location if location is not None else (("mcpServers", name) if name else ())
        if not isinstance(data, Mapping):
            raise ConfigError(where, f"expected an object, got {json_type(data)}")
        # a "name" inside an entry whose key is the name is not ours to interpret: keep it
        consumed = _KNOWN_KEYS if given_name is not None else _KNOWN_KEYS | {"name"}
        extra = {key: value for key, value in data.items() if key not in consumed}
        auto_approve = data.get("auto_approve", False)
        config = cls.__new__(cls)
        config.name = name
        config.type = data.get("type")
        config.command = data.get("command")
        config.args = data.get("args")  # type: ignore[assignment]  # checked just below
        config.env = data.get("env")  # type: ignore[assignment]
        config.url = data.get("url")
        config.headers = data.get("headers")  # type: ignore[assignment]
        config.auth = data.get("auth")
        config.auto_approve = False if auto_approve is None else auto_approve
        config.extra = extra
        config._check(where)
        return config

    def to_dict(self, *, with_name: bool = False) -> dict[str, Any]:
        """The entry as written in ``mcp_server.json`` (empty fields left out, unknown fields kept)."""
        data: dict[str, Any] = {"name": self.name} if with_name else {}
        if self.type is not None:
            data["type"] = self.type
        if self.command is not None:
            data["command"] = self.command
        if self.args:
            data["args"] = list(self.args)
        if self.env:
            data["env"] = dict(self.env)
        if self.url is not None:
            data["url"] = self.url
        if self.headers:
            data["headers"] = dict(self.headers)
        if self.auth is not None:
            data["auth"] = self.auth
        if self.auto_approve:
            data["auto_approve"] = True
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data
