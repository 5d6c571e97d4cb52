"""``tools`` and ``call``: reach the server a SERVER word names (a URL, a registry name, a built-in,
or a command line), then list its tools or call one."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from .arguments import ArgumentError, convert_arguments, tool_signature
from .builtin import builtin_servers
from .errors import EXIT_FAILURE, PROG, BadUsage, Failure, debugging, describe_error
from .registry import registry_entry, registry_option
from .render import OutputDir, ProgressReporter, pretty_json, render_result, safe_stem
from .values import DURATION, pairs

if TYPE_CHECKING:
    from ..client.base import McpClient
    from ..client.config import ServerConfig
    from ..types import CallToolResult, Tool

T = TypeVar("T")


# --- reaching SERVER ------------------------------------------------------------------------------


class _Spec:
    """How to reach the server a ``tools``/``call`` SERVER argument names."""

    def __init__(self, label: str, make: Callable[[], McpClient]) -> None:
        self.label = label
        self.make = make
        self.mode: str | None = None  # the client's mode= when not "auto"


def _resolve_server(
    server: str, *, config: str | None, headers: Mapping[str, str], env: Mapping[str, str], sse: bool
) -> _Spec:
    """Turn SERVER into a way to connect: a URL, a registry name, a built-in, or a command line."""
    import shlex
    import shutil

    from ..client.config import ServerConfig, is_url

    if is_url(server):
        remote = ServerConfig(server, type="sse" if sse else "streamable", url=server, headers=dict(headers))
        return _Spec(server, lambda: _create_client(remote))
    entry = registry_entry(server, config)
    if entry is not None:
        return _Spec(f"{server} ({entry.describe()})", lambda: _create_client(entry))
    builtins = builtin_servers()
    if server in builtins:

        def in_memory() -> McpClient:
            from ..client.memory import InMemoryClient

            return InMemoryClient(builtins[server]())

        return _Spec(server, in_memory)
    try:
        words = shlex.split(server)
    except ValueError as error:
        raise BadUsage(f"cannot split {server!r} into a command line: {error}") from None
    if not words or (len(words) == 1 and shutil.which(words[0]) is None and not os.path.isfile(words[0])):
        known = ", ".join(sorted(builtins))
        raise BadUsage(
            f"unknown server {server!r}: not in the registry (see `{PROG} servers list`), not a built-in "
            f"({known}), not a URL, and not a command on PATH"
        )
    command = ServerConfig(shlex.join(words), type="stdio", command=words[0], args=words[1:], env=dict(env))
    return _Spec(command.name, lambda: _create_client(command))


def _create_client(config: ServerConfig) -> McpClient:
    from ..client.connect import create_client

    return create_client(config)


def _connect_failure(label: str, error: BaseException) -> Failure:
    text = describe_error(error)
    # The clients' own messages often name the server already ("Cannot reach MCP server at URL: ...").
    if label.partition(" ")[0] in text:
        return Failure(text[0].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text)
    return Failure(f"cannot connect to {label}: {text}")


async def _open(spec: _Spec, reporter: ProgressReporter) -> McpClient:
    """A connected, initialized client; Failure with one line when the server cannot be reached."""
    from ..client.config import ConfigError

    try:
        client = spec.make()
    except ConfigError as error:
        raise BadUsage(str(error)) from None
    except ImportError as error:
        raise Failure(f"cannot connect to {spec.label}: that client is not available ({error})") from error
    except (ValueError, OSError) as error:
        raise _connect_failure(spec.label, error) from error
    client.on_log = reporter.log
    if spec.mode is not None:
        client.mode = spec.mode
    if client.log_level is None:
        # The stateless revision sends logs only for requests that name a level; a handshake
        # server sends them unasked. Ask for all of them, as a handshake server would send.
        client.log_level = "debug"
    try:
        await client.initialize()
    except BaseException as error:
        await _close_quietly(client)
        if isinstance(error, Exception):
            raise _connect_failure(spec.label, error) from error
        raise
    return client


async def _close_quietly(client: McpClient) -> None:
    try:
        await client.close()
    except Exception:
        if debugging():
            raise


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a client command's coroutine. Library log records stay quiet unless --debug: what
    matters reaches the user as the command's one-line error."""
    import asyncio
    import logging

    if debugging():
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
        logging.getLogger("mcp_sse_server").setLevel(logging.DEBUG)
        return asyncio.run(coroutine)
    # Restored afterwards, so running main() inside another program (or a test) leaves its logging alone.
    package_logger = logging.getLogger("mcp_sse_server")
    propagate = package_logger.propagate
    quiet = logging.NullHandler()
    package_logger.addHandler(quiet)
    package_logger.propagate = False
    try:
        return asyncio.run(coroutine)
    finally:
        package_logger.removeHandler(quiet)
        package_logger.propagate = propagate


# --- the commands ---------------------------------------------------------------------------------

_connection_options: Final[list[Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
    click.option("--header", "headers", multiple=True, metavar="KEY=VALUE", help="An HTTP header for a URL server."),
    click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable for a command."),
    click.option("--sse", is_flag=True, help="The URL speaks the legacy HTTP+SSE transport (2024-11-05)."),
    click.option(
        "--mode",
        type=click.Choice(["auto", "legacy", "2026-07-28"]),
        default="auto",
        show_default=True,
        help="Protocol revisions: try 2026-07-28 and fall back to the handshake, or only one of them.",
    ),
]


def _with_connection_options(function: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_connection_options):
        function = option(function)
    return function


def _server_from_options(
    ctx: click.Context, server: str, headers: tuple[str, ...], env: tuple[str, ...], sse: bool, mode: str = "auto"
) -> _Spec:
    """SERVER resolved with the registry and the connection options the command was given."""
    spec = _resolve_server(server, config=registry_option(ctx), headers=pairs(headers), env=pairs(env), sse=sse)
    spec.mode = None if mode == "auto" else mode
    return spec


def describe_revision(client: McpClient) -> str:
    """One line: the protocol revision the client speaks with its server, and the server."""
    era = "stateless" if client.modern else "handshake"
    info = client.server_info or {}
    server = " ".join(str(info[key]) for key in ("name", "version") if info.get(key)) or "unnamed server"
    return f"Protocol revision {client.protocol_version} ({era}) with {server}"


def _first_line(text: str | None) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


@click.command()
@click.argument("server")
@_with_connection_options
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, with their schemas.")
@click.option("-l", "--long", "long", is_flag=True, help="Print whole descriptions.")
@click.option("-v", "--verbose", is_flag=True, help="Also say which protocol revision the server speaks (on stderr).")
@click.pass_context
def tools(
    ctx: click.Context,
    server: str,
    headers: tuple[str, ...],
    env: tuple[str, ...],
    sse: bool,
    mode: str,
    as_json: bool,
    long: bool,
    verbose: bool,
) -> None:
    """List the tools of SERVER: a registry name, a built-in (math, ...), a URL, or a command line."""
    spec = _server_from_options(ctx, server, headers, env, sse, mode)
    reporter = ProgressReporter(sys.stderr)

    async def run() -> list[Tool]:
        client = await _open(spec, reporter)
        if verbose:
            click.echo(describe_revision(client), err=True)
        try:
            return await client.list_tools()
        except Exception as error:
            raise Failure(f"{spec.label}: cannot list tools: {describe_error(error)}") from error
        finally:
            await _close_quietly(client)

    listed = _run(run())
    if as_json:
        click.echo(pretty_json([tool.to_dict() for tool in listed]))
        return
    if not listed:
        click.echo(f"{spec.label} has no tools.")
    for tool in listed:
        click.echo(tool_signature(tool))
        text = (tool.description or "").strip() if long else _first_line(tool.description)
        for line in text.splitlines():
            click.echo(f"    {line}")


@click.command(context_settings={"ignore_unknown_options": False})
@click.argument("server")
@click.argument("tool")
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--json", "json_text", metavar="OBJECT", help="Arguments as a JSON object; KEY=VALUE words override it.")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    help="Where to save images, audio and binary resources (default: a new temporary directory).",
)
@click.option("--structured", is_flag=True, help="Also print structured content when text accompanies it.")
@click.option("--raw", is_flag=True, help="Print the result exactly as received, as JSON.")
@click.option("--timeout", type=DURATION, help="Give up (and cancel the call) after this long.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]),
    help="Ask the server to send only log messages at this level or above.",
)
@_with_connection_options
@click.pass_context
def call(
    ctx: click.Context,
    server: str,
    tool: str,
    assignments: tuple[str, ...],
    json_text: str | None,
    output_dir: str | None,
    structured: bool,
    raw: bool,
    timeout: float | None,
    log_level: str | None,
    headers: tuple[str, ...],
    env: tuple[str, ...],
    sse: bool,
    mode: str,
) -> None:
    """Call TOOL on SERVER with KEY=VALUE arguments.

    SERVER is a registry name, a built-in (math, artifact_instructions, demo), a URL, or a command line
    for a stdio server (quote it). Values are read as the tool's input schema says: numbers, booleans
    (true/false), JSON for arrays and objects; strings stay as typed.

    \b
    Examples:
      mcp-sse-server call math add a=2 b=3
      mcp-sse-server call demo slow_count steps=5
      mcp-sse-server call http://127.0.0.1:8080/mcp get_artifact_instructions type=svg
    """
    spec = _server_from_options(ctx, server, headers, env, sse, mode)
    reporter = ProgressReporter(sys.stderr)

    async def run() -> CallToolResult:
        client = await _open(spec, reporter)
        try:
            known = client.tools if client.tools is not None else await client.list_tools()
            found = next((candidate for candidate in known if candidate.name == tool), None)
            if found is None:
                names = [candidate.name for candidate in known]
                shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
                raise BadUsage(f"unknown tool {tool!r} on {spec.label}; its tools are: {shown or 'none'}")
            try:
                arguments = convert_arguments(found.input_schema, assignments, json_text, tool=tool)
            except ArgumentError as error:
                raise BadUsage(str(error)) from None
            if log_level is not None:
                await client.set_log_level(log_level)
            try:
                return await client.call_tool(
                    tool, arguments, on_progress=reporter.progress, timeout=timeout if timeout is not None else True
                )
            except Exception as error:
                raise Failure(f"{tool} on {spec.label}: {describe_error(error)}") from error
            finally:
                reporter.finish()
        finally:
            await _close_quietly(client)

    result = _run(run())
    if raw:
        click.echo(pretty_json(result.to_dict()))
        ctx.exit(EXIT_FAILURE if result.is_error else 0)
    status = render_result(
        result,
        out=sys.stdout,
        err=sys.stderr,
        output_dir=OutputDir(output_dir),
        stem=safe_stem(tool),
        show_structured=structured,
    )
    ctx.exit(status)
