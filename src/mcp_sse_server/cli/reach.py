"""Reaching the server a client command's TARGET names, for ``tools``, ``call``, ``resources``,
``prompts`` and ``inspect``: a URL, a registry name, a built-in, your ``file.py``,
``file.py:attr`` or ``module:attr`` (run in this process), or a command line for a stdio server
(the grammar is ``targets.py``'s, the same for every command).

:func:`with_target` gives a command its TARGET argument and connection options as one
:class:`ServerSpec`; :func:`connected` opens the client and closes it again; :func:`run` runs
the command's coroutine.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from .builtin import builtin_servers
from .errors import PROG, BadUsage, Failure, debugging, describe_error
from .registry import registry_entry, registry_option
from .render import ProgressReporter, stdout_to_stderr
from .values import pairs

if TYPE_CHECKING:
    from ..client.base import McpClient
    from ..client.config import ServerConfig

T = TypeVar("T")
_F = TypeVar("_F", bound=Callable[..., Any])


class ServerSpec:
    """How to reach the server a TARGET names: its ``label`` for messages, and ``make``, which
    builds the (not yet connected) client."""

    def __init__(
        self, label: str, make: Callable[[], McpClient], *, url: str | None = None, headers: Mapping[str, str] = {}
    ) -> None:
        self.label = label
        self.make = make
        self.mode: str | None = None  # the client's mode= when not "auto"
        self.url = url  # a URL TARGET, asked once more when connecting fails (see authorization_failure)
        self.headers = dict(headers)

    @contextlib.contextmanager
    def failing(self, what: str) -> Iterator[None]:
        """A request that fails inside fails the command in one line: ``LABEL: cannot WHAT: why``."""
        try:
            yield
        except click.ClickException:
            raise
        except Exception as error:
            raise Failure(f"{self.label}: cannot {what}: {describe_error(error)}") from error


def resolve_server(
    target: str, *, config: str | None, headers: Mapping[str, str], env: Mapping[str, str], sse: bool
) -> ServerSpec:
    """Turn TARGET into a way to connect: a URL, a registry name, a built-in, ``file.py``,
    ``file.py:attr`` or ``module:attr`` (in-process, loaded as ``serve`` loads it), or a command line."""
    import shlex
    import shutil

    from ..client.config import ServerConfig
    from ..engine.transports import is_url
    from .targets import is_python_target, resolve_target

    if is_url(target):
        # A URL server that asks for a token gets one through OAuth (a token kept by `login`, else
        # the browser), unless the command line gives the Authorization header itself.
        static = any(name.lower() == "authorization" for name in headers)
        remote = ServerConfig(
            target,
            type="sse" if sse else "streamable",
            url=target,
            headers=dict(headers),
            auth=None if static else "oauth",
        )
        return ServerSpec(target, lambda: _create_client(remote), url=target, headers=headers)
    entry = registry_entry(target, config)
    if entry is not None:
        return ServerSpec(f"{target} ({entry.describe()})", lambda: _create_client(entry))
    builtins = builtin_servers()
    if target in builtins or is_python_target(target):
        # What the target's own code prints must not mix with the command's output.
        with stdout_to_stderr():
            resolved = resolve_target(target)

        def in_memory() -> McpClient:
            from ..client.memory import InMemoryClient

            # One client, so one server: a per-session factory's first call (made while resolving) is it.
            return InMemoryClient(resolved.factory())

        return ServerSpec(resolved.label, in_memory)
    try:
        words = shlex.split(target)
    except ValueError as error:
        raise BadUsage(f"cannot split {target!r} into a command line: {error}") from None
    if not words or (len(words) == 1 and shutil.which(words[0]) is None and not os.path.isfile(words[0])):
        known = ", ".join(sorted(builtins))
        raise BadUsage(
            f"unknown server {target!r}: not in the registry (see `{PROG} servers list`), not a built-in "
            f"({known}), not a URL, not path/to/file.py[:attr] or module:attr, and not a command on PATH"
        )
    command = ServerConfig(shlex.join(words), type="stdio", command=words[0], args=words[1:], env=dict(env))
    return ServerSpec(command.name, lambda: _create_client(command))


def _create_client(config: ServerConfig) -> McpClient:
    from ..client.connect import create_client

    return create_client(config)


def _connect_failure(label: str, error: BaseException) -> Failure:
    text = describe_error(error)
    # The clients' own messages often name the server already ("Cannot reach MCP server at URL: ...").
    if label.partition(" ")[0] in text:
        return Failure(text[0].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text)
    return Failure(f"cannot connect to {label}: {text}")


async def open_client(spec: ServerSpec, reporter: ProgressReporter) -> McpClient:
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
        # The stateless revision sends logs only for requests that name a level; a session
        # server sends them unasked. Ask for all of them, as a session server would send.
        client.log_level = "debug"
    try:
        await client.initialize()
    except BaseException as error:
        await close_quietly(client)
        if isinstance(error, Exception):
            refused = await authorization_failure(spec, error)
            raise (refused or _connect_failure(spec.label, error)) from error
        raise
    return client


async def authorization_failure(spec: ServerSpec, error: Exception) -> Failure | None:
    """The failure to show when a URL server could not be used because it wants authorization.

    Whatever went wrong on the way (the OAuth discovery refusing an http metadata URL, an
    authorization server out of reach), the user's question is "does it want a token, and how
    do I give one?". So the URL is asked once more, plainly: an answer of 401 or 403 says so,
    and the message names ``--header Authorization=...`` and ``login``. None when the server
    did not answer that way (the usual failure message stands).
    """
    import httpx

    if spec.url is None:
        return None
    # An empty JSON object: refused before it is read by a server that wants a token, and by any
    # other a bad request that starts no session.
    probe_headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    try:
        async with httpx.AsyncClient(timeout=10.0, headers=spec.headers, trust_env=False) as http:
            answer = await http.post(spec.url, content=b"{}", headers=probe_headers)
    except (httpx.HTTPError, ValueError):
        return None
    if answer.status_code not in (401, 403):
        return None
    given = any(name.lower() == "authorization" for name in spec.headers)
    if given:
        what = f"{spec.url} refused the Authorization header given (HTTP {answer.status_code})"
    else:
        what = f"{spec.url} requires authorization (HTTP {answer.status_code}), and signing in did not work"
    return Failure(
        f'{what}: {describe_error(error)}. Pass a token with --header Authorization="Bearer TOKEN", '
        f"or sign in first with `{PROG} login {spec.url}`"
    )


async def close_quietly(client: McpClient) -> None:
    """Close ``client``; a failure to close is not the command's failure (unless --debug)."""
    try:
        await client.close()
    except Exception:
        if debugging():
            raise


@contextlib.asynccontextmanager
async def connected(spec: ServerSpec, reporter: ProgressReporter) -> AsyncIterator[McpClient]:
    """``async with connected(spec, reporter) as client:`` an initialized client, closed afterwards."""
    client = await open_client(spec, reporter)
    try:
        yield client
    finally:
        await close_quietly(client)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a client command's coroutine. Library log records stay quiet unless --debug: what
    matters reaches the user as the command's one-line error. Whatever an in-process server
    prints goes to stderr, so stdout holds the command's output alone (print it after this returns)."""
    import asyncio
    import logging

    with stdout_to_stderr():
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


async def listed(spec: ServerSpec, what: str, listing: Coroutine[Any, Any, list[T]]) -> list[T]:
    """The items ``listing`` returns; none when the server does not offer them (-32601)."""
    from ..engine.jsonrpc import METHOD_NOT_FOUND, McpError

    with spec.failing(f"list {what}"):
        try:
            return await listing
        except McpError as error:
            if error.code == METHOD_NOT_FOUND:
                return []
            raise


def unknown_name(kind: str, name: str, spec: ServerSpec, names: list[str]) -> BadUsage:
    """The usage error for a tool or prompt ``name`` the server does not list, naming those it does."""
    shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
    return BadUsage(f"unknown {kind} {name!r} on {spec.label}; its {kind}s are: {shown or 'none'}")


def revision_text(client: McpClient) -> str:
    """The protocol revision the client speaks with its server: ``2026-07-28 (stateless)``."""
    return f"{client.protocol_version} ({'stateless' if client.stateless else 'session'})"


def server_text(info: Mapping[str, Any] | None) -> str:
    """A server's name and version from its serverInfo: ``math 1.0.0``."""
    info = info or {}
    return " ".join(str(info[key]) for key in ("name", "version") if info.get(key)) or "unnamed server"


def describe_revision(client: McpClient) -> str:
    """One line: the protocol revision the client speaks with its server, and the server."""
    return f"Protocol revision {revision_text(client)} with {server_text(client.server_info)}"


# --- TARGET and the connection options -----------------------------------------------------------

_CONNECTION_OPTIONS: Final[list[Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
    click.option("--header", "headers", multiple=True, metavar="KEY=VALUE", help="An HTTP header for a URL server."),
    click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable for a command."),
    click.option("--sse", is_flag=True, help="The URL speaks the legacy HTTP+SSE transport (2024-11-05)."),
    click.option(
        "--mode",
        type=click.Choice(["auto", "session", "2026-07-28"]),
        default="auto",
        show_default=True,
        help="Protocol revisions: try the stateless 2026-07-28 and fall back to a session, or only one of them.",
    ),
]

TARGET_HELP: Final = (
    "TARGET is a registry name, a built-in (demo, math, artifact_instructions), a URL, your "
    "path/to/file.py (its server, mcp or app), path/to/file.py:attr or module:attr (an McpServer or a "
    "factory, run in this process, as `serve` takes it), or a command line for a stdio server (quote it)."
)


def with_target(command: _F) -> _F:
    """The TARGET argument and the connection options (--header, --env, --sse, --mode), handed to
    ``command`` as one ``spec`` (a :class:`ServerSpec`). Put it right under ``@click.command()``:
    TARGET is then the first argument."""

    @functools.wraps(command)
    def resolved(
        *args: Any, target: str, headers: tuple[str, ...], env: tuple[str, ...], sse: bool, mode: str, **kwargs: Any
    ) -> Any:
        ctx = click.get_current_context()
        spec = resolve_server(target, config=registry_option(ctx), headers=pairs(headers), env=pairs(env), sse=sse)
        spec.mode = None if mode == "auto" else mode
        return command(*args, spec=spec, **kwargs)

    decorated: Callable[..., Any] = resolved
    for option in reversed(_CONNECTION_OPTIONS):
        decorated = option(decorated)
    return click.argument("target")(decorated)  # type: ignore[return-value, unused-ignore]
