"""``install``: put TARGET into the MCP configuration of an app (Claude Desktop, Claude Code,
Cursor, VS Code, Windsurf, Gemini CLI, Goose), or print the entry (``--print``).

What the app is told to run, by TARGET's kind (the grammar of ``targets.py``):

1. Your Python (``file.py``, ``file.py:attr``, ``module:attr``) or a built-in: this interpreter,
   by its absolute path, running ``-m mcp_sse_server serve TARGET --stdio``. The app starts it
   from a directory of its own choosing, so a file is written as an absolute path (a bare
   ``file.py`` is loaded once now and written with the attribute it serves), and a module gets
   ``PYTHONPATH`` set to this directory unless ``--env PYTHONPATH=...`` says otherwise.
2. A quoted command: split as a shell would, and written as given.
3. A URL: reached over Streamable HTTP, with the ``--header`` values.
4. A registry name: its entry (a URL with its headers, or a command with its env).

The files, their shapes and merging are ``app_configs.py``'s.
"""

from __future__ import annotations

import os
import sys

import click

from .app_configs import APPS, AppFormat, Launch, backup, default_path, merged, read_config, render, write_config
from .errors import BadUsage
from .registry import registry_option
from .values import pairs


def _python_launch(target: str, env: dict[str, str]) -> Launch:
    """Rule 1: this interpreter serving ``target`` over stdio, wherever the app starts it."""
    from .render import stdout_to_stderr
    from .targets import is_bare_file, python_target, split_target

    if is_bare_file(target):
        with stdout_to_stderr():  # what the file prints at import must not mix with --print's output
            target, _ = python_target(target)
    location, attribute, is_file = split_target(target)
    if is_file:
        if not os.path.isfile(location):
            raise BadUsage(f"no such file: {location}")
        target = f"{os.path.abspath(location)}:{attribute}"
    else:
        env = {"PYTHONPATH": os.getcwd(), **env}
    return Launch(sys.executable, ("-m", "mcp_sse_server", "serve", target, "--stdio"), env)


def launch_for(target: str, *, env: dict[str, str], headers: dict[str, str], config: str | None) -> Launch:
    """What the app runs or reaches for ``target`` (the rules in the module docstring)."""
    import shlex
    import shutil

    from ..engine.transports import is_url
    from .builtin import builtin_servers
    from .registry import registry_entry
    from .targets import is_python_target

    if is_url(target):
        if env:
            raise BadUsage("--env goes with a server the app starts, not with a URL")
        return Launch(url=target, headers=headers)
    if headers:
        raise BadUsage("--header goes with a URL")
    if is_python_target(target):
        return _python_launch(target, env)
    entry = registry_entry(target, config)
    if entry is not None and entry.url is not None and entry.type in (None, "streamable", "http"):
        return Launch(url=entry.url, headers={**entry.headers, **headers})
    if entry is not None and entry.command is not None and entry.type in (None, "stdio"):
        return Launch(entry.command, tuple(entry.args), {**entry.env, **env})
    if target in builtin_servers() or (entry is not None and entry.type == "inmemory"):
        name = entry.command if entry is not None and entry.command else target
        return Launch(sys.executable, ("-m", "mcp_sse_server", "serve", name, "--stdio"), env)
    if entry is not None:
        raise BadUsage(f"{target} is a {entry.type} server in the registry: install takes stdio and Streamable HTTP")
    try:
        words = shlex.split(target)
    except ValueError as error:
        raise BadUsage(f"cannot split {target!r} into a command line: {error}") from None
    if not words or (shutil.which(words[0]) is None and not os.path.isfile(words[0])):
        raise BadUsage(
            f"unknown server {target!r}: not a URL, not path/to/file.py[:attr] or module:attr, not a built-in, "
            "not in the registry, and not a command on PATH"
        )
    return Launch(words[0], tuple(words[1:]), env)


def default_name(target: str) -> str:
    """A name for the entry from TARGET: a file's or module's name, a URL's host, a command's program.

    >>> default_name("src/weather.py:mcp"), default_name("pkg.tools:build"), default_name("https://h.example/mcp")
    ('weather', 'tools', 'h.example')
    """
    import re
    import shlex
    from urllib.parse import urlsplit

    from ..engine.transports import is_url

    if is_url(target):
        stem = urlsplit(target).hostname or "server"
    elif ":" in target and " " not in target:
        location = target.rpartition(":")[0]
        if location.endswith(".py"):
            stem = os.path.splitext(os.path.basename(location))[0]
        else:  # a module: its last dotted part
            stem = location.rpartition(".")[2]
    elif target.endswith(".py") and " " not in target:
        stem = os.path.splitext(os.path.basename(target))[0]
    else:
        try:
            words = shlex.split(target) or [target]
        except ValueError:
            words = [target]
        # `python server.py`, `npx -y some-server`: the last word names the server better than the runner.
        runner = os.path.basename(words[0]) in ("python", "python3", "node", "npx", "uvx", "deno", "bun")
        stem = os.path.splitext(os.path.basename(words[-1] if runner else words[0]))[0]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "server"


def _config_path(app: str, given: str | None) -> str | None:
    if given is not None:
        return os.path.expanduser(given)
    return default_path(app, platform=sys.platform, home=os.path.expanduser("~"), environ=os.environ)


@click.command()
@click.argument("target")
@click.option("--client", "app", required=True, type=click.Choice(list(APPS)), help="The app to configure.")
@click.option("--name", help="The server's name in the app (default: from TARGET).")
@click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable for the server.")
@click.option("--header", "headers", multiple=True, metavar="KEY=VALUE", help="An HTTP header for a URL.")
@click.option(
    "--config-file", type=click.Path(dir_okay=False), help="The app's config file (default: where the app keeps it)."
)
@click.option("--print", "print_only", is_flag=True, help="Print the entry instead of writing it.")
@click.pass_context
def install(
    ctx: click.Context,
    /,
    target: str,
    app: str,
    name: str | None,
    env: tuple[str, ...],
    headers: tuple[str, ...],
    config_file: str | None,
    print_only: bool,
) -> None:
    """Add TARGET to an app's MCP servers, or print the entry (--print).

    \b
    TARGET is your path/to/file.py (its server, mcp or app), path/to/file.py:attr or
    module:attr (run with this Python: `serve TARGET --stdio`), a built-in, a registry name,
    a URL (Streamable HTTP, with --header), or a quoted command line.

    \b
    The entry is merged into the app's file (other entries and settings kept; a backup
    FILE.bak first); a file that cannot be parsed is refused, naming its line.
      mcp-sse-server install weather.py --client claude-desktop
      mcp-sse-server install https://mcp.example.com/mcp --client vscode --header Authorization="Bearer ..."
      mcp-sse-server install my_app:build --client goose --env API_KEY=... --print
    """
    launch = launch_for(target, env=pairs(env), headers=pairs(headers), config=registry_option(ctx))
    chosen = APPS[app]
    entry_name = name or default_name(target)
    entry = chosen.entry(launch, entry_name)
    path = None if print_only else _config_path(app, config_file)
    if path is None:
        if not print_only:
            why = f"{chosen.title} documents no config file on {sys.platform}" if chosen.paths else "--client json"
            click.echo(f"{why}: printing the entry (give --config-file to write it into a file).", err=True)
        click.echo(render(chosen.wrapped(entry, entry_name), yaml=chosen.yaml), nl=False)
        return
    _write(chosen, path, entry_name, entry)


def _has_comments(path: str) -> bool:
    with open(path, encoding="utf-8") as handle:
        return any(line.lstrip().startswith("#") or " #" in line for line in handle)


def _write(chosen: AppFormat, path: str, name: str, entry: dict[str, object]) -> None:
    data = read_config(path, yaml=chosen.yaml)
    replaced = merged(data, chosen.key, name, entry, path)
    saved = backup(path)
    write_config(path, render(data, yaml=chosen.yaml))
    if chosen.yaml and saved and _has_comments(saved):
        click.echo(f"Comments in {path} are not kept by the rewrite; {saved} has them.", err=True)
    what = "Replaced" if replaced else "Added"
    click.echo(f"{what} {name} in {path} for {chosen.title}" + (f" (the old file is {saved})" if saved else "") + ".")
    click.echo(f"Restart {chosen.title} (or reload its MCP servers) to use it.")
