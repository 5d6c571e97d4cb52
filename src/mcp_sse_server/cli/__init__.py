"""The ``mcp-sse-server`` command: serve a server over Streamable HTTP or stdio, manage the
server registry, and use any MCP server: its tools, resources and prompts.

    mcp-sse-server serve                       # the demo server on http://127.0.0.1:8080/mcp
    mcp-sse-server serve math --port 9000      # a built-in server
    mcp-sse-server serve my_app:build_server   # your own factory, called once per session
    mcp-sse-server serve my_app:build_server --stdio   # one session over stdin/stdout
    mcp-sse-server dev my_app.py:build_server  # serve it, restarted whenever a source file changes
    mcp-sse-server servers list
    mcp-sse-server tools math
    mcp-sse-server call math add a=2 b=3
    mcp-sse-server call my_app.py:build_server search query=cats   # in-process
    mcp-sse-server call http://127.0.0.1:8080/mcp slow_count steps=5
    mcp-sse-server call "python my_server.py" search query=cats
    mcp-sse-server resources demo demo://readme
    mcp-sse-server prompts demo calculate expression=2+3
    mcp-sse-server inspect demo

Start-up must stay fast (``--help`` is typed often), so the modules of this
package import only click and each other at the top; the HTTP stack, the
clients and the servers are imported inside the commands that need them.

Exit status: 0 on success, 1 for a failure (an unreachable server, an
``isError`` result), 2 for a usage error (a bad argument, an unknown tool or
server), 130 when interrupted.

Modules: ``app`` (the group, global options, :func:`main`), ``targets`` (the one TARGET
grammar every command reads), ``serve`` and ``settings`` (its options from flags, the
environment and a TOML file), ``dev``, ``install`` and ``app_configs`` (entries in the
configuration files of the apps people use), ``workers`` (``serve``'s processes and backends), ``registry``
(``servers``), ``reach`` (the client commands' TARGET and connection options),
``call`` (``tools`` and ``call``), ``elicit`` and ``answers`` (what ``call`` answers
when a tool asks: forms, web pages, sampling), ``browse`` (``resources``, ``prompts``,
``inspect``), ``arguments`` (tool arguments and signatures from the input
schema), ``render`` (results, progress, logs), ``values`` (durations, sizes,
KEY=VALUE), ``builtin`` (servers named by one word) and ``errors`` (exit
statuses, error kinds, --debug).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .app import cli, main
from .arguments import ArgumentError, convert_arguments, convert_value
from .render import OutputDir, ProgressReporter, render_result
from .targets import resolve_target
from .values import parse_duration, parse_size

if TYPE_CHECKING:
    from .serve import bind_options


def __getattr__(name: str) -> Any:
    # ``bind_options`` lives with ``serve``, which a command other than serve never imports.
    if name == "bind_options":
        from .serve import bind_options

        return bind_options
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ArgumentError",
    "OutputDir",
    "ProgressReporter",
    "bind_options",
    "cli",
    "convert_arguments",
    "convert_value",
    "main",
    "parse_duration",
    "parse_size",
    "render_result",
    "resolve_target",
]
