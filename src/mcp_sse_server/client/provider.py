"""McpServerProvider: the registry of MCP servers in ``mcp_server.json`` and the clients started from it.

Where the file lives (the first that applies):

1. the ``path`` given to ``McpServerProvider(path)``;
2. ``$MCP_SSE_SERVER_CONFIG``;
3. ``$XDG_CONFIG_HOME/mcp-sse-server/mcp_server.json`` (``%APPDATA%`` on Windows);
4. ``~/.config/mcp-sse-server/mcp_server.json``.

A missing file is created (mode 0600: entries may hold tokens) with the
default servers: ``default_servers`` if given, else the built-in in-memory
servers "Math" and "Artifact Instructions" (``servers.defaults.DEFAULT_SERVERS``). A default that
is absent from an existing file (by name, and no in-memory server runs its
command under another name) is listed anyway and written with the next
change; removing one with ``remove_mcp_server`` records its name under
``"removedDefaults"`` so it stays removed.

Every change is a read-modify-write under an exclusive lock on
``mcp_server.json.lock``, so providers in several threads or processes never
lose each other's entries, and it is written atomically (a temporary file in
the same directory, fsync, rename) so a crash leaves the old file or the new
one, never a mix. Fields and top-level keys this package does not know are
written back unchanged. A file that is not valid JSON, or not the expected
shape, raises ConfigFileError naming the file, line and column; it is never
replaced.

>>> async def demo() -> None:  # doctest: +SKIP
...     async with McpServerProvider() as provider:
...         provider.add_mcp_server("files", {"command": "npx", "args": ["-y", "some-mcp-server"]})
...         client = await provider.start("Math")
...         print([tool.name for tool in provider.tools("Math")])
...         started = await provider.start_all()  # every configured server, concurrently
...         print(sorted(started.clients), started.errors)  # a failure is reported, not raised
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import errno
import json
import logging
import os
import re
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from ..engine.types import Tool
from .base import McpClient
from .config import ConfigError, Location, ServerConfig, format_location, normalize_type

if TYPE_CHECKING:
    from .connect import ServerRegistry

__all__ = [
    "CONFIG_ENV",
    "ConfigFileError",
    "McpServerProvider",
    "StartedServers",
    "default_config_path",
]

logger = logging.getLogger("mcp_sse_server.client")

CONFIG_ENV: Final = "MCP_SSE_SERVER_CONFIG"
FILE_NAME: Final = "mcp_server.json"
APP_DIR: Final = "mcp-sse-server"
REMOVED_DEFAULTS: Final = "removedDefaults"

Defaults = Mapping[str, Mapping[str, Any]]


def _builtin_defaults() -> Defaults:
    # the built-in servers live in the servers package; the client layer only reads their entries
    from ..servers.defaults import DEFAULT_SERVERS

    return DEFAULT_SERVERS


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_SERVERS":  # moved to mcp_sse_server.servers.defaults; kept readable here
        return _builtin_defaults()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError as error:  # LK_LOCK gives up after about 10 s; keep waiting like flock does
                if error.errno != errno.EDEADLK:
                    raise

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where ``mcp_server.json`` lives when no path is given (see the module docstring)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = env.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
    else:
        # the XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored
        xdg = env.get("XDG_CONFIG_HOME")
        base = xdg if xdg and os.path.isabs(xdg) else str(Path.home() / ".config")
    return Path(base) / APP_DIR / FILE_NAME


class ConfigFileError(ConfigError):
    """``mcp_server.json`` cannot be used: not JSON, or not the expected shape.

    ``path``, ``line`` and ``column`` (1-based; None when unknown) say where.
    """

    def __init__(
        self,
        path: Path,
        problem: str,
        *,
        location: Location = (),
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.column = column
        super().__init__(location, problem)
        where = str(path)
        if line is not None:
            where += f":{line}" + (f":{column}" if column is not None else "")
        field = f"{format_location(location)}: " if location else ""
        self.args = (f"{where}: {field}{problem}",)


# --- finding a JSON path in the text, to report shape errors with a line -----------

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _locate(text: str, location: Location) -> int | None:
    """The offset where the value at ``location`` starts in valid JSON ``text``; None if absent."""
    try:
        index = _skip(text, 0)
        for part in location:
            if isinstance(part, str):
                if text[index] != "{":
                    return None
                index = _skip(text, index + 1)
                found = None
                while text[index] == '"':
                    key, index = json.decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
                    index = _skip(text, _skip(text, index) + 1)  # past the colon
                    if key == part:
                        found = index  # keep looking: like json.loads, the last duplicate wins
                    index = _skip(text, _DECODER.raw_decode(text, index)[1])
                    if text[index] == ",":
                        index = _skip(text, index + 1)
                if found is None:
                    return None
                index = found
            else:
                if text[index] != "[":
                    return None
                index = _skip(text, index + 1)
                for _ in range(part):
                    index = _skip(text, _DECODER.raw_decode(text, index)[1])
                    if text[index] != ",":
                        return None
                    index = _skip(text, index + 1)
                if text[index] == "]":
                    return None
        return index
    except (ValueError, IndexError):
        return None


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# --- file operations -----------------------------------------------------------


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    # flock belongs to the open file description, so every holder opens its own:
    # that excludes other threads of this process as well as other processes
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers and crashes see the old file or the new one."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.chmod(temporary, stat.S_IMODE(os.stat(path).st_mode))
        except FileNotFoundError:
            pass  # a new file keeps mkstemp's 0600
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    if sys.platform != "win32":
        # make the rename itself durable
        with suppress(OSError):
            directory = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)


StatKey = tuple[int, int, int, int]


def _read(path: Path) -> tuple[bytes, StatKey] | None:
    try:
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            return file.read(), (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
    except FileNotFoundError:
        return None


def _stat_key(path: Path) -> StatKey | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


def _serialize(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _has_default(servers: Mapping[str, Any], name: str, entry: Mapping[str, Any]) -> bool:
    if name in servers:
        return True
    if "command" not in entry or normalize_type(str(entry.get("type", ""))) != "inmemory":
        return False
    # the same built-in server kept under another name counts as present
    return any(
        isinstance(other, Mapping)
        and isinstance(other.get("type"), str)
        and normalize_type(other["type"]) == "inmemory"
        and other.get("command") == entry["command"]
        for other in servers.values()
    )


def _add_defaults(document: dict[str, Any], defaults: Defaults) -> None:
    servers = document.setdefault("mcpServers", {})
    removed = document.get(REMOVED_DEFAULTS) or []
    for name, entry in defaults.items():
        if name not in removed and not _has_default(servers, name, entry):
            servers[name] = copy.deepcopy(dict(entry))


@dataclass(slots=True)
class StartedServers:
    """What ``McpServerProvider.start_all()`` did: a client per started server, an error per failed one."""

    clients: dict[str, McpClient] = field(default_factory=dict)
    """The connected clients (tools listed), by server name, in configuration order."""
    errors: dict[str, Exception] = field(default_factory=dict)
    """Why each of the others did not start (ConfigError, ServerStartError, KeyError), by server name."""

    @property
    def ok(self) -> bool:
        """True when every server started."""
        return not self.errors


class McpServerProvider:
    """The servers configured in ``mcp_server.json``, and the clients started from them.

    Reading is lazy (nothing touches the disk until the first call) and
    follows changes other processes make to the file. ``client_options`` go to
    every client ``start`` creates (``request_timeout``, ``sampling_handler``,
    ...). ``default_servers`` replaces the built-in default entries (``{}`` for
    none); ``server_registry`` builds the in-memory servers (default: the
    built-in ``MemoryServerFactory``, imported only when one starts). Safe to
    share between threads; ``start``/``stop``/``close`` belong to one event loop.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        client_options: Mapping[str, Any] | None = None,
        startup_timeout: float | None = None,
        default_servers: Defaults | None = None,
        server_registry: ServerRegistry | None = None,
    ) -> None:
        self.path = Path(path).expanduser() if path is not None else default_config_path()
        self.default_servers: Defaults = _builtin_defaults() if default_servers is None else default_servers
        self.server_registry = server_registry
        self.client_options = dict(client_options or {})
        self.startup_timeout = startup_timeout
        self._lock = threading.RLock()
        self._servers: dict[str, ServerConfig] | None = None
        self._seen: StatKey | None = None
        self._clients: dict[str, McpClient] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    # --- the file ------------------------------------------------------------------

    @property
    def _target(self) -> Path:
        # follow a symlinked config (dotfile managers) instead of replacing the link
        return Path(os.path.realpath(self.path))

    def _parse(self, raw: bytes, path: Path) -> tuple[dict[str, Any], dict[str, ServerConfig]]:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = raw.count(b"\n", 0, error.start) + 1
            raise ConfigFileError(path, "not UTF-8 text", line=line) from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigFileError(path, f"invalid JSON: {error.msg}", line=error.lineno, column=error.colno) from None

        def fail(location: Location, problem: str) -> ConfigFileError:
            for depth in range(len(location), -1, -1):  # a missing field is reported at its parent
                offset = _locate(text, location[:depth])
                if offset is not None:
                    line, column = _line_column(text, offset)
                    return ConfigFileError(path, problem, location=location, line=line, column=column)
            return ConfigFileError(path, problem, location=location)

        if not isinstance(document, dict):
            raise fail((), 'expected a JSON object like {"mcpServers": {...}}')
        entries = document.get("mcpServers", {})
        if not isinstance(entries, dict):
            raise fail(("mcpServers",), "expected an object mapping server names to their configs")
        removed = document.get(REMOVED_DEFAULTS, [])
        if not isinstance(removed, list) or not all(isinstance(name, str) for name in removed):
            raise fail((REMOVED_DEFAULTS,), "expected a list of server names")
        servers: dict[str, ServerConfig] = {}
        for name, entry in entries.items():
            if not name.strip():
                raise fail(("mcpServers", name), "server names must not be empty")
            try:
                servers[name] = ServerConfig.from_dict(entry, name, location=("mcpServers", name))
            except ConfigError as error:
                raise fail(error.location, error.problem) from None
        return document, servers

    def _remember(self, document: dict[str, Any], servers: dict[str, ServerConfig], key: StatKey | None) -> None:
        view = dict(servers)
        with_defaults = copy.deepcopy(document)
        _add_defaults(with_defaults, self.default_servers)
        for name, entry in with_defaults["mcpServers"].items():
            if name not in view:
                view[name] = ServerConfig.from_dict(entry, name)
        self._servers = view
        self._seen = key

    def load(self) -> None:
        """Read the file now (creating it when missing); ConfigFileError if it is invalid."""
        with self._lock:
            target = self._target
            current = _read(target)
            if current is None:
                self._update(lambda document: None)
                return
            raw, key = current
            document, servers = self._parse(raw, target)
            self._remember(document, servers, key)

    def _view(self) -> dict[str, ServerConfig]:
        with self._lock:
            if self._servers is None or _stat_key(self._target) != self._seen:
                self.load()
            assert self._servers is not None
            return self._servers

    def _update(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Read-modify-write under the file lock; the file is written only when something changed."""
        with self._lock:
            target = self._target
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with _file_lock(target.with_name(target.name + ".lock")):
                current = _read(target)
                if current is None:
                    document: dict[str, Any] = {"mcpServers": {}}
                    before = None
                else:
                    document, _ = self._parse(current[0], target)  # invalid: raise, never overwrite
                    before = copy.deepcopy(document)
                _add_defaults(document, self.default_servers)
                change(document)
                if document == before and current is not None:
                    _, servers = self._parse(current[0], target)
                    self._remember(document, servers, current[1])
                    return
                data = _serialize(document)
                _, servers = self._parse(data, target)
                _write_atomic(target, data)
                self._remember(document, servers, _stat_key(target))

    # --- the registry ------------------------------------------------------------------

    def list(self) -> builtins.list[ServerConfig]:
        """Every configured server, in file order (defaults not yet in the file last)."""
        return builtins.list(self._view().values())

    def names(self) -> builtins.list[str]:
        return builtins.list(self._view())

    def get(self, name: str) -> ServerConfig:
        """The config of ``name``; KeyError naming the known servers when there is none."""
        servers = self._view()
        config = servers.get(name)
        if config is None:
            known = ", ".join(repr(known) for known in servers) or "none"
            raise KeyError(f"no MCP server named {name!r} in {self.path} (configured: {known})")
        return config

    def __contains__(self, name: object) -> bool:
        return name in self._view()

    def add_mcp_server(self, name: str, config: ServerConfig | Mapping[str, Any]) -> ServerConfig:
        """Add ``name``, or replace its config; saved at once. Returns the config as saved."""
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(("mcpServers",), "a server name must be a non-empty string")
        if isinstance(config, ServerConfig):
            entry = config.to_dict()
        else:
            entry = ServerConfig.from_dict({k: v for k, v in config.items() if k != "name"}, name).to_dict()
        saved = ServerConfig.from_dict(entry, name)

        def change(document: dict[str, Any]) -> None:
            document["mcpServers"][name] = entry
            removed = document.get(REMOVED_DEFAULTS)
            if isinstance(removed, builtins.list) and name in removed:
                removed.remove(name)
                if not removed:
                    del document[REMOVED_DEFAULTS]

        self._update(change)
        return saved

    def remove_mcp_server(self, name: str) -> bool:
        """Remove ``name`` from the file; False if it was not configured. A running client keeps running."""
        found = False

        def change(document: dict[str, Any]) -> None:
            nonlocal found
            found = document["mcpServers"].pop(name, None) is not None
            if name in self.default_servers:
                removed = document.setdefault(REMOVED_DEFAULTS, [])
                if name not in removed:
                    removed.append(name)

        self._update(change)
        return found

    # --- clients -------------------------------------------------------------------------

    async def start(self, name: str) -> McpClient:
        """A connected client for ``name``, its tools listed; the running one if already started.

        ConfigError for a bad entry, ServerStartError when the server does not start.
        """
        from .connect import initialize_mcp_server

        lock = self._starting.setdefault(name, asyncio.Lock())
        async with lock:
            client = self._clients.get(name)
            if client is not None:
                if client.connection is not None and not client.connection.closed:
                    return client
                await self.stop(name)  # it died: start afresh
            config = self.get(name)
            client = await initialize_mcp_server(
                config,
                startup_timeout=self.startup_timeout,
                server_registry=self.server_registry,
                **self.client_options,
            )
            self._clients[name] = client
            return client

    async def start_all(self, names: Iterable[str] | None = None) -> StartedServers:
        """Start every configured server (or those in ``names``) at once.

        The servers start concurrently; one that fails is reported in
        ``errors`` under its name and does not stop the others, which are in
        ``clients``. Servers already running are returned as they are. Close
        them with ``stop_all()`` (or ``close()``).
        """
        wanted = builtins.list(dict.fromkeys(self.names() if names is None else names))

        async def start_one(name: str) -> McpClient | Exception:
            try:
                return await self.start(name)
            except Exception as error:  # reported per server; cancellation still propagates
                return error

        outcomes = await asyncio.gather(*(start_one(name) for name in wanted))
        started = StartedServers()
        for name, outcome in zip(wanted, outcomes, strict=True):
            if isinstance(outcome, Exception):
                started.errors[name] = outcome
            else:
                started.clients[name] = outcome
        return started

    def client(self, name: str) -> McpClient | None:
        """The started client of ``name``, or None."""
        return self._clients.get(name)

    def tools(self, name: str) -> builtins.list[Tool]:
        """The tools ``name`` listed when it started (or at its last ``list_tools()``)."""
        client = self._clients.get(name)
        if client is None:
            raise KeyError(f"MCP server {name!r} is not started; call start({name!r}) first")
        return builtins.list(client.tools or [])

    async def stop(self, name: str) -> bool:
        """Close the client of ``name``; False if it was not started."""
        client = self._clients.pop(name, None)
        if client is None:
            return False
        await client.close()
        return True

    async def stop_all(self) -> builtins.list[str]:
        """Close every started client, concurrently; the names that were running.

        A client that fails to close is still forgotten (its error is logged), so
        everything gets closed and the next ``start`` begins afresh.
        """
        clients, self._clients = self._clients, {}
        outcomes = await asyncio.gather(*(client.close() for client in clients.values()), return_exceptions=True)
        for name, outcome in zip(clients, outcomes, strict=True):
            if isinstance(outcome, Exception):
                logger.debug("closing the client of %r failed", name, exc_info=outcome)
        return builtins.list(clients)

    async def close(self) -> None:
        """Close every started client (errors are not raised: everything gets closed)."""
        await self.stop_all()

    async def __aenter__(self) -> McpServerProvider:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()
