"""initialize_mcp_server: from a server config to a connected client that knows its tools.

>>> async def demo() -> None:  # doctest: +SKIP
...     client = await initialize_mcp_server({"name": "Math", "type": "inmemory", "command": "math"})
...     try:
...         print(len(client.tools or []))  # 19
...     finally:
...         await client.close()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..engine import transports
from .base import McpClient
from .config import ConfigError, ServerConfig

if TYPE_CHECKING:
    from ..engine.server import McpServer

__all__ = [
    "ServerRegistry",
    "ServerStartError",
    "connect_in_memory",
    "connect_sse",
    "connect_stdio",
    "connect_streamable",
    "create_client",
    "initialize_mcp_server",
]


class ServerRegistry(Protocol):
    """Where ``inmemory`` configs find their server: ``MemoryServerFactory`` is one (the default).

    ``create_memory_server`` raises LookupError for a command it does not know.
    """

    def create_memory_server(self, command: str) -> McpServer: ...

    def commands(self) -> list[str]: ...


def builtin_servers() -> ServerRegistry:
    """The built-in registry, ``MemoryServerFactory``; the servers package is imported only now."""
    from ..servers.factory import MemoryServerFactory

    return MemoryServerFactory


logger = logging.getLogger("mcp_sse_server.client")


class ServerStartError(RuntimeError):
    """A configured server could not be started, initialized or asked for its tools.

    The underlying error is the ``__cause__``; ``server_name`` and ``config`` say which server.
    """

    def __init__(self, config: ServerConfig, problem: str) -> None:
        self.config = config
        self.server_name = config.name
        label = repr(config.name) if config.name else "server"
        super().__init__(f"could not start MCP {label} ({config.describe()}): {problem}")


def _as_config(config: ServerConfig | Mapping[str, Any]) -> ServerConfig:
    return config if isinstance(config, ServerConfig) else ServerConfig.from_dict(config)


def create_client(
    config: ServerConfig | Mapping[str, Any], *, server_registry: ServerRegistry | None = None, **client_options: Any
) -> McpClient:
    """The client for ``config``, not yet connected (``initialize_mcp_server`` also connects).

    ``client_options`` go to the client's constructor (``request_timeout``,
    ``sampling_handler``, ``client_name``, ...). An ``inmemory`` config's server
    comes from ``server_registry`` (default: the built-in servers). Raises
    ConfigError for a bad config.
    """
    config = _as_config(config)
    found = transports.entry(config.transport)
    assert found is not None  # ServerConfig routes to registered transports only
    connect = found.connector()
    if found.address == "server":
        client_options["server_registry"] = server_registry
    client: McpClient = connect(config, **client_options)
    return client


# --- the package's own transports (engine/transports.py names these) -------------------------


def connect_in_memory(
    config: ServerConfig, *, server_registry: ServerRegistry | None = None, **client_options: Any
) -> McpClient:
    """An in-memory config's client: its server from ``server_registry`` (the built-in servers by default)."""
    from .memory import InMemoryClient

    assert config.command is not None  # guaranteed by validation
    registry = builtin_servers() if server_registry is None else server_registry
    try:
        server = registry.create_memory_server(config.command)
    except LookupError:
        where = ("mcpServers", config.name, "command") if config.name else ("command",)
        known = ", ".join(registry.commands())
        raise ConfigError(where, f"unknown in-memory server {config.command!r}; known: {known}") from None
    return InMemoryClient(server, **client_options)


def connect_stdio(config: ServerConfig, **client_options: Any) -> McpClient:
    """A stdio config's client: it starts ``command`` with ``args`` and ``env``."""
    from .stdio import StdioClient

    assert config.command is not None
    return StdioClient(config.command, args=list(config.args), env=dict(config.env), **client_options)


def connect_streamable(config: ServerConfig, **client_options: Any) -> McpClient:
    """A Streamable HTTP config's client (with the config's OAuth, unless ``auth`` is given)."""
    from .http import StreamableHttpClient

    return StreamableHttpClient(*_url_client_arguments(config, client_options), **client_options)


def connect_sse(config: ServerConfig, **client_options: Any) -> McpClient:
    """A 2024-11-05 HTTP+SSE config's client (with the config's OAuth, unless ``auth`` is given)."""
    from .sse import SseClient

    return SseClient(*_url_client_arguments(config, client_options), **client_options)


def _url_client_arguments(config: ServerConfig, client_options: dict[str, Any]) -> tuple[str]:
    """The endpoint of a URL config; puts its headers and OAuth into ``client_options``."""
    assert config.endpoint is not None
    client_options["headers"] = dict(config.headers)
    if config.auth is not None and "auth" not in client_options:
        from .oauth.config import oauth_from_config

        try:
            client_options["auth"] = oauth_from_config(config.auth)
        except ValueError as error:
            path, why = error.args
            where = ("mcpServers", config.name, "auth") if config.name else ("auth",)
            raise ConfigError((*where, *path), why) from None
    return (config.endpoint,)


async def _close_quietly(client: McpClient) -> None:
    try:
        await client.close()
    except Exception:  # the start error is what the caller needs to see
        logger.debug("closing a client that failed to start also failed", exc_info=True)


async def initialize_mcp_server(
    config: ServerConfig | Mapping[str, Any],
    *,
    startup_timeout: float | None = None,
    server_registry: ServerRegistry | None = None,
    **client_options: Any,
) -> McpClient:
    """Build the client ``config`` routes to, initialize it and list its tools (``client.tools``).

    The caller owns the returned client and closes it. A bad config raises
    ConfigError naming the field; a server that cannot be reached, fails the
    handshake or the tool listing raises ServerStartError after everything
    opened for it is closed again. ``startup_timeout`` bounds the whole start
    (each request is also bounded by the client's ``request_timeout``);
    ``server_registry`` is passed to ``create_client``.
    """
    config = _as_config(config)
    try:
        client = create_client(config, server_registry=server_registry, **client_options)
    except ConfigError:
        raise
    except ImportError as error:
        raise ServerStartError(config, f"the {config.transport} client is not available: {error}") from error
    except Exception as error:
        raise ServerStartError(config, str(error) or type(error).__name__) from error
    try:
        async with asyncio.timeout(startup_timeout):
            await client.initialize()
            await client.list_tools()
    except BaseException as error:
        await _close_quietly(client)
        if isinstance(error, TimeoutError) and startup_timeout is not None and not str(error):
            raise ServerStartError(config, f"no answer within {startup_timeout:g} s") from error
        if isinstance(error, Exception):
            raise ServerStartError(config, str(error) or type(error).__name__) from error
        raise
    return client
