"""The ``mcp-sse-server`` group with its global options, and :func:`main`, which turns every way a
command can end into one line and an exit status."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from .browse import inspect, prompts, resources
from .call import call, tools
from .dev import dev
from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, PROG, debugging, describe_error, enable_debug
from .install import install
from .login import login
from .registry import servers
from .serve import serve
from .skills import skills
from .task import task


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


for _command in (serve, dev, servers, login, tools, call, task, resources, prompts, skills, inspect, install):
    cli.add_command(_command)


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
