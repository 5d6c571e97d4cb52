"""The one table of transports: every name a transport is known by, how a server is served over it,
and how a client reaches a server over it.

Rules:

1. A transport is registered once, as a ``TransportEntry``: its ``name`` (what
   ``ServerConfig.transport`` says), the other ``aliases`` a config's ``type`` may give it (compared
   with case, ``-`` and ``_`` ignored), what a config names its server by (``address``: a ``url``, a
   ``command`` to run, or the name of an in-process ``server``), how ``McpServer.run`` serves a
   server over it (``serve``: a function of the server and run's options that serves until it is
   stopped, or None when the transport is not served that way), and how a client is made for a
   config naming it (``connect``: a function of the ``ServerConfig`` and the client's options
   returning an ``McpClient``).
2. ``serve`` and ``connect`` may be given as ``"module:attribute"`` strings, resolved on first
   use, so that the table costs no import: a program that never starts an HTTP server never
   imports uvicorn, one that never speaks stdio never imports the subprocess machinery. The
   engine names the package's own transports that way: the modules named sit above it, and are
   imported only when a server is run or a client made over them.
3. Everything that knows transports by name reads this table: ``McpServer.run``, the config
   reader (``client.config``), the client connector (``client.connect``) and the command line.
   A transport of one's own is one ``register_transport`` call, and then works in all of them.
4. A name or alias names one transport: registering another under a name already taken is a
   ``ValueError`` unless ``replace=True`` (for tests and deliberate overrides).

>>> entry("Streamable-HTTP").name, entry("memory").name, entry("carrier pigeon")
('streamable', 'inmemory', None)
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "Address",
    "TransportEntry",
    "entry",
    "is_url",
    "names",
    "register_transport",
    "resolve",
    "transports",
    "unregister_transport",
]

Address: TypeAlias = Literal["url", "command", "server"]
"""What a config names its server by: an endpoint URL, a program to run, an in-process server's name."""


@dataclass(frozen=True, slots=True)
class TransportEntry:
    """One transport (rules in the module docstring)."""

    name: str
    address: Address
    aliases: tuple[str, ...] = ()
    serve: Callable[..., Any] | str | None = None
    connect: Callable[..., Any] | str | None = None
    description: str = ""

    def served_by(self) -> Callable[..., Any] | None:
        """``serve``, resolved (None when this transport is not served by ``McpServer.run``)."""
        return None if self.serve is None else resolve(self.serve)

    def connector(self) -> Callable[..., Any]:
        """``connect``, resolved."""
        if self.connect is None:
            raise LookupError(f"no client connects over the {self.name} transport")
        return resolve(self.connect)


_FOLDED: Final = re.compile(r"[-_\s]")
_entries: dict[str, TransportEntry] = {}  # by name, in registration order
_by_alias: dict[str, TransportEntry] = {}  # folded name or alias -> entry


def is_url(text: str | None) -> bool:
    """True for an ``http://`` or ``https://`` URL: what a config or a TARGET names an HTTP server by."""
    return isinstance(text, str) and text[:8].lower().startswith(("http://", "https://"))


def _fold(name: str) -> str:
    return _FOLDED.sub("", name).lower()


def register_transport(transport: TransportEntry, *, replace: bool = False) -> None:
    """Add ``transport`` to the table (rule 4 for a name already taken)."""
    keys = {_fold(transport.name), *(_fold(alias) for alias in transport.aliases)}
    taken = {key: _by_alias[key].name for key in keys if key in _by_alias}
    if taken and not replace:
        clash = ", ".join(f"{key!r} ({owner})" for key, owner in sorted(taken.items()))
        raise ValueError(f"transport {transport.name!r}: already registered names: {clash}")
    old = _entries.pop(transport.name, None)
    if old is not None:
        for key in [key for key, owner in _by_alias.items() if owner is old]:
            del _by_alias[key]
    _entries[transport.name] = transport
    for key in keys:
        _by_alias[key] = transport


def unregister_transport(name: str) -> None:
    """Remove the transport ``name`` (for tests that registered one of their own)."""
    old = _entries.pop(name)
    for key in [key for key, owner in _by_alias.items() if owner is old]:
        del _by_alias[key]


def entry(name: str) -> TransportEntry | None:
    """The transport a config's ``type`` (or ``run``'s argument) names, by name or alias."""
    return _by_alias.get(_fold(name))


def transports() -> tuple[TransportEntry, ...]:
    """Every registered transport, in registration order."""
    return tuple(_entries.values())


def names() -> tuple[str, ...]:
    """Every name and alias a config's ``type`` may use, names first."""
    found = [transport.name for transport in _entries.values()]
    found += [alias for transport in _entries.values() for alias in transport.aliases]
    return tuple(found)


def resolve(reference: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or the ``"module:attribute"`` it names (imported now)."""
    if not isinstance(reference, str):
        return reference
    module, _, attribute = reference.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return found


# The package's own transports. The 2024-11-05 HTTP+SSE transport and Streamable HTTP are served
# by the same HTTP server (run("http")); stdio by run("stdio").
for _transport in (
    TransportEntry(
        "inmemory",
        "server",
        aliases=("memory",),
        connect="mcp_sse_server.client.connect:connect_in_memory",
        description="a server in this process, by its registry name",
    ),
    TransportEntry(
        "streamable",
        "url",
        aliases=("http", "streamable-http"),
        serve="mcp_sse_server.transport.http.server:run_http",
        connect="mcp_sse_server.client.connect:connect_streamable",
        description="Streamable HTTP",
    ),
    TransportEntry(
        "sse",
        "url",
        connect="mcp_sse_server.client.connect:connect_sse",
        description="the HTTP+SSE transport of revision 2024-11-05",
    ),
    TransportEntry(
        "stdio",
        "command",
        serve="mcp_sse_server.transport.stdio:run_stdio",
        connect="mcp_sse_server.client.connect:connect_stdio",
        description="a program's stdin and stdout",
    ),
):
    register_transport(_transport)
