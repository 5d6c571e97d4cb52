"""The ``mcp-sse-server`` group with its global options, and :func:`main`, which turns every way a
command can end into one line and an exit status.

The commands are one table (``COMMANDS``: name -> the module defining it), each module imported
only when its command runs or the group's help lists them: ``call`` does not pay for ``serve``'s
settings, ``install``'s app formats or ``dev``'s file watching."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

import click

from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, PROG, debugging, describe_error, enable_debug

# Every command: its name and the module of this package that defines it under that name.
COMMANDS: Final[dict[str, str]] = {
    "serve": "serve",
    "dev": "dev",
    "servers": "registry",
    "login": "login",
    "tools": "call",
    "call": "call",
    "task": "task",
    "resources": "browse",
    "prompts": "browse",
    "skills": "skills",
    "inspect": "browse",
    "install": "install",
}


class _Commands(click.Group):
    """A group whose commands come from ``COMMANDS``, each module imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(f"{__package__}.{module}"), cmd_name)
        assert isinstance(command, click.Command), cmd_name
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    help="The server registry file (mcp_server.json) to use instead of the per-user one (also $MCP_SSE_SERVER_CONFIG).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and library logs (also MCP_SSE_SERVER_DEBUG=1).")
@click.version_option(None, "-V", "--version", package_name="mcp-sse-server", prog_name=PROG)
@click.pass_context
def cli(ctx: click.Context, config: str | None, debug: bool) -> None:
    """Serve Model Context Protocol servers over Streamable HTTP or stdio, and use any MCP server from the shell.

    \b
    Start here:
      mcp-sse-server serve                  the demo server at http://127.0.0.1:8080/mcp
      mcp-sse-server tools math             the tools of the built-in math server
      mcp-sse-server call math add a=2 b=3  call one
      mcp-sse-server inspect app.py:build   everything your server offers, run in-process
      mcp-sse-server dev app.py:build       serve it, restarting whenever you save
    """
    if debug:
        enable_debug()
    ctx.obj = {"config": config}


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the command line; never returns (exits with 0, 1 for failures, 2 for usage errors)."""
    try:
        status = cli.main(args=list(argv) if argv is not None else None, prog_name=PROG, standalone_mode=False)
    except click.ClickException as error:
        if debugging() and error.__cause__ is not None:
            import traceback

            traceback.print_exception(error.__cause__)
        error.show()
        status = error.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("Interrupted.", err=True)
        status = EXIT_INTERRUPTED
    except SystemExit:
        raise
    except Exception as error:
        if debugging():
            raise
        click.echo(f"Error: {describe_error(error)}", err=True)
        click.echo(f"(run `{PROG} --debug ...` for the traceback)", err=True)
        status = EXIT_FAILURE
    sys.exit(status if isinstance(status, int) else 0)
