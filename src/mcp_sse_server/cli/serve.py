"""``serve``: load TARGET (the demo, a built-in, or your ``module:factory``) and serve it over
Streamable HTTP until Ctrl-C or SIGTERM, or over stdin and stdout (``--stdio``) until stdin ends.

What TARGET names is read one way by every command (``targets.py``); its ``resolve_target``,
``target_source`` and ``is_python_target`` are importable from here too. The settings come from the
command line, the environment and a ``--config`` file (``settings.py``)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from ..engine.skill_format import SkillFormatError
from ..transport.http.limits import DEFAULT_LIMITS, HttpLimits
from ..transport.http.settings import HttpSettings
from .auth import auth_options
from .errors import BadUsage, Failure, describe_error
from .settings import ServeSettings, SettingsCommand, print_config, settings_options, show_default
from .targets import Target as Target
from .targets import is_python_target as is_python_target
from .targets import resolve_target as resolve_target
from .targets import target_source as target_source
from .values import DURATION, SIZE

if TYPE_CHECKING:
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
_STDIO_PARAMETERS: Final = frozenset(
    {"target", "stdio", "otel", "log_level", "skills", "print_config", "openapi", "base_url", "header", "gateway"}
)


@click.command(cls=SettingsCommand)
@http_options
@click.option(
    "--stdio",
    is_flag=True,
    help="Serve one session over stdin and stdout instead of HTTP (for clients that start the server "
    "themselves); HTTP options are refused.",
)
@click.option(
    "--otel",
    is_flag=True,
    help="OpenTelemetry: a span and metrics for every request (needs the otel extra). With opentelemetry-sdk "
    "and opentelemetry-exporter-otlp-proto-http installed they are exported over OTLP/HTTP as the OTEL_* "
    "variables say (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, ...).",
)
@click.option(
    "--openapi",
    "openapi",
    metavar="SPEC",
    type=click.Path(exists=True, dir_okay=False),
    help="Serve the operations of this OpenAPI 3 spec (JSON or YAML) as tools that call the API, instead of TARGET.",
)
@click.option("--base-url", metavar="URL", help="With --openapi: the API's base URL (else the spec's first server).")
@click.option(
    "--header",
    "header",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="With --openapi: a header sent on every API call (an API key, say); repeatable.",
)
@click.option(
    "--gateway",
    "gateway",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="Serve every server of this mcpServers JSON file, each under its namespace (tool ns_name, "
    "resource ns+uri), instead of TARGET; backends start on first use.",
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
      path/to/file.py            its server, mcp or app (else its one McpServer)

    Limits left out keep the defaults shown in brackets. Ctrl-C or SIGTERM shuts down gracefully.

    \b
    Beyond this machine: --auth-issuer with --auth-jwks-uri (JWT access tokens) or
    --auth-introspection-url (RFC 7662) makes every request need a bearer token;
    --auth-resource URL is the public URL clients use (needed with --host 0.0.0.0).

    \b
    Older clients: the HTTP+SSE transport of revision 2024-11-05 is served too, its stream at
    /sse and on a GET of the endpoint without a session, its POSTs at /messages/;
    --no-legacy-sse turns it off. With several workers or hosts, a POST reaching a worker other
    than the one holding its stream goes there through the shared backend.

    \b
    Several workers or hosts: --backend redis://... makes every `serve` given the same URL
    serve the same sessions; --workers N runs N processes on this port. MCP_REQUEST_STATE_KEYS
    (comma-separated secrets of 16 bytes or more, newest first) is the key ring sealing
    the requestState of 2026-07-28 requests: give every worker and host the same one.

    \b
    An HTTP API described by OpenAPI 3: --openapi spec.yaml --base-url URL serves each of its
    operations as a tool calling the API (--header 'X-Api-Key: ...' for the API's own key).

    \b
    Servers you already have: --gateway servers.json serves every entry of its mcpServers
    (stdio commands, URLs) through one endpoint, each under its namespace.

    \b
    --stdio serves the one session of a client that starts this command itself:
      {"command": "mcp-sse-server", "args": ["serve", "my_app:build_server", "--stdio"]}

    \b
    Every option is also an environment variable and a key of a TOML file (--config PATH):
    --port is MCP_SSE_SERVER_PORT and port = 9000 in the file, TARGET is
    MCP_SSE_SERVER_TARGET and target = "app.py:build". The command line wins over the
    environment, which wins over the file. --print-config shows what serve would use.
    """
    settings = ServeSettings.from_context(ctx)
    if ctx.params["print_config"]:
        click.echo(print_config(ctx, settings))
        return
    stop_otel = _start_otel() if settings.otel else None
    try:
        _serve(ctx, settings, stop_otel is not None)
    finally:
        if stop_otel is not None:
            stop_otel()


def _start_otel() -> Callable[[], None]:
    """``--otel``: the providers from the ``OTEL_*`` variables (telemetry/setup.py); BadUsage naming
    the extra without the OpenTelemetry API."""
    from ..telemetry.setup import install_from_environment

    try:
        return install_from_environment()
    except ImportError as error:
        raise BadUsage(f"--otel: {error}") from None


def _serve(ctx: click.Context, settings: ServeSettings, otel: bool) -> None:
    import logging

    from .workers import check_backend, request_state_keys_set, serve_worker, serve_workers

    if settings.stdio:
        _refuse_http_options(ctx)
        _serve_stdio(lambda: _resolve(settings), settings.log_level, settings.skills, otel=otel)
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
        backend=backend,
        workers=workers,
    )
    _refuse_exposure(host, settings.limits, auth)
    resolved = _resolve(settings).with_skills(load_skill_options(settings.skills))
    label, served = resolved.label, resolved.served(per_session=settings.server_per_session)
    if otel:
        from ..telemetry.setup import instrument

        served = instrument(served)
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


# --- TARGET (read by targets.py, as for every command) ---------------------------------------------


def _resolve(settings: ServeSettings) -> Target:
    """TARGET, or with ``--openapi`` the server its spec describes (built now: a bad spec or a
    missing base URL is said before the port opens)."""
    if settings.gateway is not None:
        return _gateway(settings)
    if settings.openapi is None:
        if settings.base_url is not None or settings.header:
            raise BadUsage("--base-url and --header go with --openapi")
        return resolve_target(settings.target)
    if settings.target is not None:
        raise BadUsage(f"--openapi serves its spec: it does not go with TARGET ({settings.target})")
    from ..openapi import OpenApiError, from_openapi

    headers: dict[str, str] = {}
    for header in settings.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            raise BadUsage(f"--header {header!r}: give it as 'NAME: VALUE'")
        headers[name.strip()] = value.strip()
    try:
        server = from_openapi(settings.openapi, base_url=settings.base_url, headers=headers)
    except OpenApiError as error:
        raise BadUsage(f"--openapi {settings.openapi}: {error}") from None
    return Target(f"openapi:{settings.openapi}", lambda: server, shared=True, instance=True)


def _gateway(settings: ServeSettings) -> Target:
    """``--gateway FILE``: one server for the file's mcpServers (``proxy/gateway.py``), read now: a
    bad entry is said before the port opens."""
    if settings.target is not None or settings.openapi is not None:
        raise BadUsage("--gateway serves its file: it does not go with TARGET or --openapi")
    from ..client.config import ConfigError
    from ..proxy.gateway import from_config

    assert settings.gateway is not None
    try:
        server = from_config(settings.gateway)
    except (ConfigError, OSError) as error:
        raise BadUsage(f"--gateway {settings.gateway}: {error}") from None
    return Target(f"gateway:{settings.gateway}", lambda: server, shared=True, instance=True)


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


def _serve_stdio(
    resolve: Callable[[], Target], log_level: str, skills: tuple[str, ...] = (), *, otel: bool = False
) -> None:
    """Load TARGET (``resolve``) and serve its one session over stdin and stdout until stdin ends."""
    import asyncio
    import logging

    from ..transport.stdio import serve_stdio
    from ..transport.stdio_fds import protocol_stdio

    # Stdout and stdin are the protocol's from before the target is imported: what its code prints,
    # and the programs it runs, write to stderr and read nothing (transport/stdio_fds.py).
    with protocol_stdio():
        resolved = resolve().with_skills(load_skill_options(skills))
        logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
        # One session, so one server: a per-session factory's first call (made while resolving) is it.
        server = resolved.factory()
        if otel:
            from ..telemetry.setup import instrument

            server = instrument(server)
        click.echo(f"Serving {resolved.label} over stdio", err=True)
        asyncio.run(serve_stdio(server))
