"""``serve``: load TARGET (the demo, a built-in, or your ``module:factory``) and serve it over
Streamable HTTP until Ctrl-C or SIGTERM, or over stdin and stdout (``--stdio``) until stdin ends.

What TARGET names is decided here once for every command: :func:`resolve_target` loads it for
``serve`` and for the client commands (which run it in-process), :func:`target_source` finds its
file for ``dev``."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from ..engine.skill_format import SkillFormatError
from ..transport.http.limits import DEFAULT_LIMITS, HttpLimits
from ..transport.http.settings import HttpSettings
from .auth import auth_options
from .builtin import DEMO, builtin_servers
from .errors import BadUsage, Failure, describe_error
from .render import safe_stem
from .settings import ServeSettings, SettingsCommand, print_config, settings_options, show_default
from .values import DURATION, SIZE

if TYPE_CHECKING:
    from ..engine.server import McpServer
    from ..engine.skills import SkillCatalog

_F = TypeVar("_F", bound=Callable[..., Any])


def limit_options(command: _F) -> _F:
    """One option per ``HttpLimits`` field: its help from the field's metadata, its default from DEFAULT_LIMITS.

    ``--max-sessions``, ``--header-timeout`` and so on take a count, a size
    (``64K``, ``4M``) or a duration (``500ms``, ``30m``); ``allowed_origins``
    and ``allowed_hosts`` are the repeatable ``--allowed-origin`` and
    ``--allowed-host``. Left out, a limit keeps its default.
    """
    for spec in reversed(dataclasses.fields(HttpLimits)):
        unit, text = spec.metadata["unit"], spec.metadata["help"]
        flag = "--" + spec.name.replace("_", "-")
        if unit in ("origins", "hosts"):
            option = click.option(
                flag.removesuffix("s"), spec.name, multiple=True, metavar=unit.upper().removesuffix("S"), help=text
            )
        else:
            kind: Any = {"bytes": SIZE, "seconds": DURATION}.get(unit, click.INT)
            shown = show_default(getattr(DEFAULT_LIMITS, spec.name), unit)
            option = click.option(flag, spec.name, type=kind, help=f"{text.removesuffix('.')} ({shown}).")
        command = option(command)
    return command


def http_options(command: _F) -> _F:
    """TARGET and the options of serving over HTTP, for ``serve`` and for ``dev``, which hands them
    on to the ``serve`` it runs."""
    decorators: list[Callable[[Any], Any]] = [
        click.argument("target", required=False),
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
        click.option(
            "--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="0 picks a free port."
        ),
        click.option("--path", "path", default="/mcp", show_default=True, help="The endpoint's path."),
        click.option("--certfile", type=click.Path(exists=True, dir_okay=False), help="TLS certificate chain (PEM)."),
        click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), help="TLS private key (PEM)."),
        click.option(
            "--json-response",
            is_flag=True,
            help="Answer a request that sends nothing before its result with one application/json body "
            "instead of an SSE stream, and accept clients whose Accept takes JSON only.",
        ),
        click.option(
            "--no-legacy-sse",
            is_flag=True,
            help="Do not serve the HTTP+SSE transport of revision 2024-11-05 (a stream at /sse and on a "
            "GET of the endpoint without a session, POSTs to /messages/). It is off with --workers above 1: "
            "its POSTs must reach the worker holding the stream.",
        ),
        limit_options,
        auth_options,
        click.option(
            "--skills",
            "skills",
            multiple=True,
            type=click.Path(exists=True, file_okay=False),
            metavar="DIR",
            help="Also serve the skills in DIR (a skill directory with a SKILL.md, or a directory of them) "
            "with the skills extension; repeatable.",
        ),
        click.option(
            "--log-level",
            type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
            default="info",
            show_default=True,
            help="Server log level (to stderr).",
        ),
        click.option(
            "--server-per-session",
            is_flag=True,
            help="Call a module:factory TARGET once per session even when it is marked @shared_server "
            "(unmarked factories always are).",
        ),
        click.option(
            "--backend",
            metavar="URL",
            help="Where sessions, streams, tasks and events are kept: memory: (this process, the default), or "
            "redis://HOST:PORT/DB (rediss:// with TLS, unix:///path.sock), shared with the other workers and "
            "hosts given the same URL (needs the redis extra); a scheme a module registers "
            "(stores.register_backend) works too.",
        ),
        click.option("--redis-url", metavar="URL", help="The older spelling of --backend, for a Redis URL."),
        click.option(
            "--workers",
            type=click.IntRange(1),
            default=1,
            show_default=True,
            help="Worker processes serving the one port (above 1 needs a shared --backend, such as Redis).",
        ),
        click.option(
            "--worker-ttl",
            type=DURATION,
            help="With a Redis --backend: how long after a worker's last heartbeat it counts as dead and another "
            "one fails its requests in flight (10s).",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


# What --stdio keeps of serve's parameters: every other one is about HTTP (and refused with it when
# given on the command line; from the environment or a --config file, ignored).
_STDIO_PARAMETERS: Final = frozenset({"target", "stdio", "log_level", "skills", "print_config"})


@click.command(cls=SettingsCommand)
@http_options
@click.option(
    "--stdio",
    is_flag=True,
    help="Serve one session over stdin and stdout instead of HTTP (for clients that start the server "
    "themselves); HTTP options are refused.",
)
@settings_options
@click.pass_context
def serve(ctx: click.Context, /, **_: Any) -> None:
    """Serve TARGET over Streamable HTTP and print its endpoint (or, with --stdio, over stdin/stdout).

    \b
    TARGET is one of:
      (nothing) or demo          the demo: math and artifact tools, resources, prompts
      math, artifact_instructions  a built-in server
      module:factory             your function returning an McpServer: called once per
                                 session, so each client has a server of its own (once in
                                 all when marked @shared_server)
      module:server              your McpServer itself: it serves every session
      path/to/file.py:factory    the same, from a file

    Limits left out keep the defaults shown in brackets. Ctrl-C or SIGTERM shuts down gracefully.

    \b
    Beyond this machine: --auth-issuer with --auth-jwks-uri (JWT access tokens) or
    --auth-introspection-url (RFC 7662) makes every request need a bearer token;
    --auth-resource URL is the public URL clients use (needed with --host 0.0.0.0).

    \b
    Older clients: the HTTP+SSE transport of revision 2024-11-05 is served too, its stream at
    /sse and on a GET of the endpoint without a session, its POSTs at /messages/;
    --no-legacy-sse turns it off (as --workers above 1 does).

    \b
    Several workers or hosts: --backend redis://... makes every `serve` given the same URL
    serve the same sessions; --workers N runs N processes on this port. MCP_REQUEST_STATE_KEYS
    (comma-separated secrets of 16 bytes or more, newest first) is the key ring sealing
    the requestState of 2026-07-28 requests: give every worker and host the same one.

    \b
    --stdio serves the one session of a client that starts this command itself:
      {"command": "mcp-sse-server", "args": ["serve", "my_app:build_server", "--stdio"]}

    \b
    Every option is also an environment variable and a key of a TOML file (--config PATH):
    --port is MCP_SSE_SERVER_PORT and port = 9000 in the file, TARGET is
    MCP_SSE_SERVER_TARGET and target = "app.py:build". The command line wins over the
    environment, which wins over the file. --print-config shows what serve would use.
    """
    import logging

    from .workers import check_backend, request_state_keys_set, serve_worker, serve_workers

    settings = ServeSettings.from_context(ctx)
    if ctx.params["print_config"]:
        click.echo(print_config(ctx, settings))
        return
    if settings.stdio:
        _refuse_http_options(ctx)
        _serve_stdio(settings.target, settings.log_level, settings.skills)
        return
    host, port, path, workers = settings.host, settings.port, settings.path, settings.workers
    certfile, keyfile, no_legacy_sse = settings.certfile, settings.keyfile, settings.no_legacy_sse
    if (certfile is None) != (keyfile is None):
        raise click.UsageError("--certfile and --keyfile go together")
    if not path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--path")
    if settings.backend is not None and settings.redis_url is not None:
        raise click.UsageError("--redis-url is the older spelling of --backend: give one of them")
    backend = settings.backend or settings.redis_url or "memory:"
    try:
        keys_set = request_state_keys_set()
    except ValueError as error:
        raise click.UsageError(f"MCP_REQUEST_STATE_KEYS: {error}") from error
    from ..transport.http.server import endpoint_url, is_wildcard_host

    auth = settings.auth.resource_server(
        endpoint_url(host, port, path, tls=certfile is not None),
        derivable=port != 0 and not is_wildcard_host(host),
    )
    _refuse_exposure(host, settings.limits, auth)
    resolved = resolve_target(settings.target).with_skills(load_skill_options(settings.skills))
    label, served = resolved.label, resolved.served(per_session=settings.server_per_session)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "settings": HttpSettings(path=path, limits=settings.limits),
    }
    # After the target is loaded: a module of the target's may register the backend's scheme.
    backend_options = {} if settings.worker_ttl is None else {"worker_ttl": settings.worker_ttl}
    shared = check_backend(backend, workers=workers, limits=settings.limits, options=backend_options)
    if workers > 1 and not no_legacy_sse:
        # A 2024-11-05 stream is one connection to one worker, and the kernel spreads the POSTs
        # that follow it over every worker: most would be refused (404). Off, predictably.
        click.echo(
            "Note: the 2024-11-05 HTTP+SSE transport is not served with --workers above 1 (its POSTs must "
            "reach the worker holding its stream); run one worker per port behind sticky routing for it.",
            err=True,
        )
        no_legacy_sse = True
    try:  # (built once here, with the auth settings and the TLS context: every worker inherits them)
        options["settings"] = options["settings"].with_changes(
            json_response=settings.json_response, legacy_sse=not no_legacy_sse, auth=auth
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    if certfile is not None and keyfile is not None:
        options["ssl"] = _ssl_context(certfile, keyfile)
    if shared and not keys_set:
        click.echo(
            "Warning: MCP_REQUEST_STATE_KEYS is not set: each worker seals 2026-07-28 requestState with its own "
            "key, so a retry reaching another worker is refused.",
            err=True,
        )
    if workers == 1:
        serve_worker(label, served, options, backend=backend, backend_options=backend_options)
    else:
        serve_workers(label, served, options, workers=workers, backend=backend, backend_options=backend_options)


# --- TARGET ---------------------------------------------------------------------------------------


_ATTRIBUTE: Final = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _split_target(target: str) -> tuple[str, str, bool]:
    """``(location, attribute, is_file)`` of ``module:attr`` or ``path/to/file.py:attr``."""
    location, _, attribute = target.rpartition(":")
    if not location or not attribute:
        raise BadUsage(f"{target!r} is not module:factory or path/to/file.py:factory")
    return location, attribute, location.endswith(".py") or os.sep in location or "/" in location


def is_python_target(word: str) -> bool:
    """Whether ``word`` has the shape of ``module:attr`` or ``path/to/file.py:attr``, by its spelling
    alone (nothing is imported): how the client commands tell it from a command line or a URL.

    >>> is_python_target("my_app:build"), is_python_target("app/server.py:mcp"), is_python_target("pkg.mod:a.b")
    (True, True, True)
    >>> is_python_target("python server.py"), is_python_target("http://h:8080/mcp"), is_python_target("host:8080")
    (False, False, False)
    """
    location, _, attribute = word.rpartition(":")
    if not location or any(character.isspace() for character in word) or not _ATTRIBUTE.fullmatch(attribute):
        return False
    return location.endswith(".py") or "/" in location or os.sep in location or bool(_ATTRIBUTE.fullmatch(location))


def _importable_from_cwd() -> None:
    # Like `python -m`: modules in the current directory are importable.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def _load_attribute(target: str) -> Any:
    """The object named by ``module:attr`` or ``path/to/file.py:attr`` (dots allowed in attr)."""
    import importlib
    import importlib.util

    location, attribute, is_file = _split_target(target)
    if is_file:
        path = os.path.abspath(location)
        if not os.path.isfile(path):
            raise BadUsage(f"no such file: {location}")
        # The file's directory goes on sys.path so it can import its neighbours, as `python file.py` would.
        sys.path.insert(0, os.path.dirname(path))
        name = "_mcp_target_" + safe_stem(os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise BadUsage(f"cannot load {location} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        _importable_from_cwd()
        try:
            module = importlib.import_module(location)
        except ModuleNotFoundError as error:
            if error.name and location.startswith(error.name):
                raise BadUsage(f"no module named {location!r}") from None
            raise
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise BadUsage(f"{location} has no attribute {attribute!r}") from None
    return value


def target_source(target: str | None) -> str:
    """The source file of ``serve``'s TARGET, found without running it: the file of
    ``path/to/file.py:attr``, the module's file of ``module:attr`` (a package's ``__init__.py``),
    the built-in servers' package for a built-in. BadUsage when there is none."""
    import importlib.util

    name = target or DEMO
    if name in builtin_servers():
        found = importlib.util.find_spec("..servers", __package__)
        assert found is not None and found.origin is not None  # this package's own
        return found.origin
    if ":" not in name:
        raise BadUsage(_unknown_target(name))
    location, _, is_file = _split_target(name)
    if is_file:
        if not os.path.isfile(location):
            raise BadUsage(f"no such file: {location}")
        return os.path.abspath(location)
    _importable_from_cwd()
    try:
        spec = importlib.util.find_spec(location)  # imports the parent packages of a dotted name, not the module
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        raise BadUsage(f"no module named {location!r}")
    if spec.origin is None or not os.path.isfile(spec.origin):
        raise BadUsage(f"{location} has no source file to watch")
    return spec.origin


@dataclasses.dataclass(frozen=True)
class Target:
    """What ``serve``'s TARGET names: its ``label``, a ``factory`` of its server, and whether one
    server may serve every session (``shared``) or each session gets its own."""

    label: str
    factory: Callable[[], McpServer]
    shared: bool
    instance: bool = False  # TARGET is an McpServer itself, not a factory

    def served(self, *, per_session: bool = False) -> McpServer | Callable[[], McpServer]:
        """One server for every session, or the factory to call once per session.

        The isolation rule: a server object and a built-in are shared; a
        ``module:factory`` keeps the seed's contract (called once per session)
        unless it is marked with ``shared_server``; ``per_session`` calls any
        factory per session.
        """
        if per_session and self.instance:
            raise BadUsage(f"--server-per-session needs a factory: {self.label} is an McpServer itself")
        if per_session or not self.shared:
            return self.factory
        return self.factory()

    def with_skills(self, catalogs: Sequence[SkillCatalog]) -> Target:
        """This target with ``catalogs`` added to every server it builds (``--skills``): the first
        server is built now, so that a skill clashing with the target's resources fails before the
        port opens, and is what the factory's next call returns."""
        if not catalogs:
            return self
        factory = self.factory

        def build() -> McpServer:
            server = factory()
            for catalog in catalogs:
                server.add_skills(catalog)
            return server

        try:
            first = [build()]
        except SkillFormatError as error:
            raise BadUsage(f"--skills: {error}") from None

        def skilled() -> McpServer:
            return first.pop() if first else build()

        return dataclasses.replace(self, factory=skilled)


def load_skill_options(paths: Sequence[str]) -> list[SkillCatalog]:
    """The catalogs ``--skills`` names, loaded once (every server built shares them)."""
    from ..engine.skills import load_skills

    catalogs = []
    for path in paths:
        try:
            catalogs.append(load_skills(path))
        except SkillFormatError as error:
            raise BadUsage(f"--skills {path}: {error}") from None
    return catalogs


def _unknown_target(name: str) -> str:
    known = ", ".join(sorted(builtin_servers()))
    return f"unknown server {name!r}; use a built-in ({known}) or module:factory / path/to/file.py:factory"


def resolve_target(target: str | None) -> Target:
    """The ``Target`` of ``serve``'s TARGET: none (the demo), a built-in name, ``module:factory``
    or ``module:server``.

    The factory is called once now, so a broken one fails before the port
    opens; that first server is what the factory's next call returns, so no
    server is built in vain.
    """
    from ..engine.server import McpServer, is_shared_server

    builtins = builtin_servers()
    name = target or DEMO
    if name in builtins:
        factory = builtins[name]
        shared = True  # ours: no per-client state, nothing sent outside a request
    elif ":" in name:
        factory = _load_attribute(name)
        if isinstance(factory, McpServer):
            instance = factory
            return Target(name, lambda: instance, shared=True, instance=True)
        if not callable(factory):
            raise BadUsage(f"{name} is not callable")
        shared = is_shared_server(factory)
    else:
        raise BadUsage(_unknown_target(name))
    first = factory()
    if not isinstance(first, McpServer):
        raise BadUsage(f"{name} returned {type(first).__name__}, not an McpServer")
    pending = [first]

    def built() -> McpServer:
        if pending:
            return pending.pop()
        server = factory()
        if not isinstance(server, McpServer):
            raise TypeError(f"{name} returned {type(server).__name__}, not an McpServer")
        return server

    return Target(name, built, shared=shared)


# --- serving --------------------------------------------------------------------------------------


def bind_options(*, host: str, port: int, path: str, **limits: Any) -> dict[str, Any]:
    """The keyword arguments for ``McpHttpServer.bind``: ``host``, ``port`` and one ``HttpSettings``
    with the ``path`` and one ``HttpLimits``, in which limits given as None or empty keep their
    defaults. ValueError for a limit ``HttpLimits`` refuses.

    >>> options = bind_options(host="127.0.0.1", port=0, path="/mcp", max_sessions=None, allowed_origins=("https://a.b",))
    >>> options["settings"].limits == DEFAULT_LIMITS.with_changes(allowed_origins={"https://a.b"}), sorted(options)
    (True, ['host', 'port', 'settings'])
    """
    given: dict[str, Any] = {}
    for name, value in limits.items():
        if isinstance(value, tuple):
            if value:
                given[name] = value
        elif value is not None:
            given[name] = value
    settings = HttpSettings(path=path, limits=DEFAULT_LIMITS.with_changes(**given))
    return {"host": host, "port": port, "settings": settings}


def _ssl_context(certfile: str, keyfile: str) -> Any:
    import ssl

    from ..transport.http.server import server_ssl_context

    try:
        return server_ssl_context(certfile, keyfile)
    except (ssl.SSLError, OSError) as error:
        raise Failure(f"cannot load the TLS certificate and key: {describe_error(error)}") from error


def _refuse_http_options(ctx: click.Context) -> None:
    """A usage error naming the first HTTP option given on the command line alongside --stdio (from
    the environment or a --config file, one may serve both ways: they are ignored)."""
    from click.core import ParameterSource

    for parameter in ctx.command.params:
        if parameter.name in _STDIO_PARAMETERS or not isinstance(parameter, click.Option):
            continue
        if ctx.get_parameter_source(parameter.name or "") is ParameterSource.COMMANDLINE:
            raise BadUsage(f"{parameter.opts[0]} is an HTTP option: it does not go with --stdio")


def _refuse_exposure(host: str, limits: HttpLimits, auth: object | None) -> None:
    """The transport's rule for listening beyond loopback (``McpHttpServer.bind``), said in the
    options' words before it would be said in HttpSettings' (which name Python parameters)."""
    from ..transport.http.security import is_loopback_host
    from ..transport.http.server import is_wildcard_host

    exposed = is_wildcard_host(host) or not is_loopback_host(host)
    if exposed and auth is None and not limits.allowed_origins:
        raise BadUsage(
            f"--host {host or '(all interfaces)'} exposes the server beyond this machine: check bearer "
            "tokens (--auth-issuer with --auth-jwks-uri or --auth-introspection-url, and --auth-resource "
            "URL), or name the browser origins allowed to connect with --allowed-origin ORIGIN "
            "(with authentication in front)"
        )


def _serve_stdio(target: str | None, log_level: str, skills: tuple[str, ...] = ()) -> None:
    """Load TARGET and serve its one session over stdin and stdout until stdin ends."""
    import asyncio
    import logging

    from ..transport.stdio import serve_stdio
    from ..transport.stdio_fds import protocol_stdio

    # Stdout and stdin are the protocol's from before the target is imported: what its code prints,
    # and the programs it runs, write to stderr and read nothing (transport/stdio_fds.py).
    with protocol_stdio():
        resolved = resolve_target(target).with_skills(load_skill_options(skills))
        logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
        # One session, so one server: a per-session factory's first call (made while resolving) is it.
        server = resolved.factory()
        click.echo(f"Serving {resolved.label} over stdio", err=True)
        asyncio.run(serve_stdio(server))
