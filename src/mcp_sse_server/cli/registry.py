"""The server registry (mcp_server.json): the ``servers list/add/remove`` commands, and looking a
name up in it for ``tools`` and ``call``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from ..engine import transports
from .errors import BadUsage, Failure, describe_error
from .render import pretty_json
from .values import pairs

if TYPE_CHECKING:
    from ..client.config import ServerConfig
    from ..client.provider import McpServerProvider


def registry_option(ctx: click.Context) -> str | None:
    """The ``--config`` given to the top-level command: the registry file to use instead of the default."""
    config: str | None = ctx.find_root().obj["config"]
    return config


def open_registry(config: str | None) -> McpServerProvider:
    """The registry at ``config``, or at the per-user default; nothing is read or created yet."""
    from ..client.provider import McpServerProvider

    return McpServerProvider(config)


@contextmanager
def _registry_errors() -> Iterator[None]:
    """A registry that cannot be read or written fails the command with one line."""
    from ..client.config import ConfigError

    try:
        yield
    except (ConfigError, OSError) as error:
        raise Failure(describe_error(error)) from error


def registry_entry(name: str, config: str | None) -> ServerConfig | None:
    """The registry's entry for ``name``, if any, without creating the registry file as a side effect.

    A registry that cannot be read is reported and skipped, so a broken file does not
    stop ``call math ...`` from reaching the built-in server.
    """
    from ..client.config import ServerConfig
    from ..client.provider import ConfigFileError, default_config_path
    from ..servers.defaults import DEFAULT_SERVERS

    path = os.path.expanduser(config) if config is not None else os.fspath(default_config_path())
    if not os.path.exists(path):
        default = DEFAULT_SERVERS.get(name)
        return ServerConfig.from_dict(dict(default), name) if default is not None else None
    provider = open_registry(path)
    try:
        return provider.get(name) if name in provider else None
    except (ConfigFileError, OSError) as error:
        click.echo(f"Warning: ignoring the server registry: {describe_error(error)}", err=True)
        return None


@click.group()
def servers() -> None:
    """List, add and remove servers in the registry (mcp_server.json)."""


@servers.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON, as the file holds them.")
@click.pass_context
def servers_list(ctx: click.Context, as_json: bool) -> None:
    """List the configured servers and where the registry lives."""
    provider = open_registry(registry_option(ctx))
    with _registry_errors():
        entries = provider.list()
    if as_json:
        click.echo(pretty_json({entry.name: entry.to_dict() for entry in entries}))
        return
    click.echo(f"Registry: {provider.path}")
    if not entries:
        click.echo("No servers configured.")
        return
    width = max(len(entry.name) for entry in entries)
    for entry in entries:
        click.echo(f"  {entry.name:<{width}}  {entry.describe()}")


@servers.command("add")
@click.argument("name")
@click.option("--url", help="The server's URL (Streamable HTTP, or legacy SSE with --type sse).")
@click.option("--command", "command", help="The command that starts a stdio server.")
@click.option("--arg", "args", multiple=True, metavar="ARG", help="An argument for --command (repeatable).")
@click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable (repeatable).")
@click.option("--header", "headers", multiple=True, metavar="KEY=VALUE", help="An HTTP header (repeatable).")
@click.option("--inmemory", metavar="BUILTIN", help="A built-in in-memory server: math or artifact_instructions.")
@click.option(
    "--type",
    "kind",
    metavar="TYPE",
    help="The transport (inmemory, streamable or http, sse, stdio, or one registered); inferred from --url, "
    "--command or --inmemory when left out.",
)
@click.option("--replace", is_flag=True, help="Replace a server of the same name.")
@click.pass_context
def servers_add(
    ctx: click.Context,
    name: str,
    url: str | None,
    command: str | None,
    args: tuple[str, ...],
    env: tuple[str, ...],
    headers: tuple[str, ...],
    inmemory: str | None,
    kind: str | None,
    replace: bool,
) -> None:
    """Add server NAME to the registry.

    \b
    Examples:
      mcp-sse-server servers add calc --inmemory math
      mcp-sse-server servers add local --url http://127.0.0.1:8080/mcp
      mcp-sse-server servers add files --command npx --arg -y --arg some-mcp-server --env DEBUG=1
    """
    from ..client.config import ConfigError, ServerConfig

    chosen = [value for value in (url, command, inmemory) if value]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --url, --command or --inmemory")
    if (args or env) and command is None:
        raise click.UsageError("--arg and --env go with --command")
    if headers and url is None:
        raise click.UsageError("--header goes with --url")
    given, address, default = (
        ("--url", "url", "streamable")
        if url is not None
        else ("--command", "command", "stdio")
        if command is not None
        else ("--inmemory", "server", "inmemory")
    )
    kind = kind or default
    found = transports.entry(kind)
    if found is None:
        raise click.BadParameter(f"{kind!r} is not one of {', '.join(transports.names())}", param_hint="--type")
    if found.address != address:
        raise click.UsageError(f"{given} does not fit --type {kind}")
    if address == "server":
        from ..servers.factory import MemoryServerFactory

        if inmemory not in MemoryServerFactory.commands():
            known = ", ".join(MemoryServerFactory.commands())
            raise BadUsage(f"unknown built-in server {inmemory!r} for --inmemory; known: {known}")
    try:
        config = ServerConfig(
            name,
            type=kind,
            command=command if command is not None else inmemory,
            args=list(args),
            env=pairs(env),
            url=url,
            headers=pairs(headers),
        )
    except ConfigError as error:
        raise BadUsage(str(error)) from None
    provider = open_registry(registry_option(ctx))
    with _registry_errors():
        if name in provider and not replace:
            raise Failure(f"a server named {name!r} is already in {provider.path}; add --replace to replace it")
        provider.add_mcp_server(name, config)
    click.echo(f"Added {name} ({config.describe()}) to {provider.path}")


@servers.command("remove")
@click.argument("name")
@click.pass_context
def servers_remove(ctx: click.Context, name: str) -> None:
    """Remove server NAME from the registry."""
    provider = open_registry(registry_option(ctx))
    with _registry_errors():
        if name not in provider:
            known = ", ".join(repr(known) for known in provider.names()) or "none"
            raise Failure(f"no server named {name!r} in {provider.path} (configured: {known})")
        provider.remove_mcp_server(name)
    click.echo(f"Removed {name} from {provider.path}")
