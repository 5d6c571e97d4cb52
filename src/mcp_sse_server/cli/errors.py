"""What every command shares about failing: the program's name, the exit statuses, the two kinds of
error a command raises, one-line descriptions of exceptions, and the --debug switch that decides
whether tracebacks and library logs are shown."""

from __future__ import annotations

import os
import sys
from typing import IO, Any, Final

import click

PROG: Final = "mcp-sse-server"
EXIT_FAILURE: Final = 1
EXIT_INTERRUPTED: Final = 130

# Read through debugging(): a name imported from here would not see --debug turn it on.
_debug = bool(os.environ.get("MCP_SSE_SERVER_DEBUG"))


def debugging() -> bool:
    """Whether --debug or MCP_SSE_SERVER_DEBUG asked for tracebacks and library logs."""
    return _debug


def enable_debug() -> None:
    """Turn on tracebacks and library logs for the rest of the process (the --debug option)."""
    global _debug
    _debug = True


class Failure(click.ClickException):
    """Something went wrong that is not the user's syntax: exit status 1, one line."""

    exit_code = EXIT_FAILURE


class BadUsage(click.UsageError):
    """A usage error about what was asked for (a bad argument, an unknown tool or server): exit status 2,
    shown as one line, since the command's usage summary would not help."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file or sys.stderr)


def describe_error(error: BaseException) -> str:
    """One readable line for an exception, without a traceback."""
    from ..engine.jsonrpc import CONNECTION_CLOSED, McpError

    if isinstance(error, McpError):
        if error.code == CONNECTION_CLOSED:  # the clients' connection failures: the code adds nothing
            return error.message
        # str(): subclasses may say more than the message (UrlElicitationRequiredError adds its URLs).
        return f"{error} (JSON-RPC error {error.code})"
    if isinstance(error, TimeoutError):
        return str(error) or "timed out"
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"no such file or command: {error.filename}"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror[0].lower() + error.strerror[1:]
    text = str(error)
    return text if text else type(error).__name__
