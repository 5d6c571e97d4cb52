"""``serve``'s settings, one ``ServeSettings``, from the command line, the environment and a TOML file.

Rules:

1. Every ``serve`` option ``--some-name`` is also the environment variable
   ``MCP_SSE_SERVER_SOME_NAME`` and the key ``some-name`` of the TOML file that
   ``--config PATH`` names; TARGET is ``MCP_SSE_SERVER_TARGET`` and ``target``.
   ``--config`` itself is ``MCP_SSE_SERVER_SERVE_CONFIG`` (``MCP_SSE_SERVER_CONFIG``
   is the group's: the client registry file).
2. The command line wins over the environment, which wins over the file, which
   wins over the default: click's own order of sources (the file is its
   ``default_map``), so each value is parsed by the option's own type, as on the
   command line (``30s``, ``4M``, ``https://a.example``).
3. In the file a switch is ``true``/``false``, a repeatable option an array (or
   one string), a number may be written bare (``port = 9000``, seconds and
   bytes by default); paths are read from the working directory, as on the
   command line. In the environment a switch is 1/0, true/false, yes/no or
   on/off and a repeatable option a list split on spaces (``--skills``: on
   ``:``, like PATH). An empty variable counts as unset.
4. A key the file does not know, a value of the wrong shape or one the option
   refuses is a usage error naming where it came from: the file and line, or
   the variable.
5. ``--print-config`` prints the settings ``serve`` would use, as a TOML file
   with each value's source in a comment, and serves nothing. Secrets are
   masked: the password (and token-like query parameters) of a URL, and the
   whole value of an option whose name says it holds a token, secret, password,
   credentials or an authorization header (``--auth-client-secret-env`` names a
   variable, not a secret), and the values of ``--header`` (serve ``--openapi``'s API headers).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar

import click
from click.core import ParameterSource

from ..transport.http.limits import DEFAULT_LIMITS, HttpLimits
from .auth import AuthSettings
from .errors import BadUsage, describe_error
from .values import DURATION, SIZE

__all__ = [
    "CONFIG_VARIABLE",
    "ENV_PREFIX",
    "ServeSettings",
    "SettingsCommand",
    "print_config",
    "settings_options",
    "show_default",
]

ENV_PREFIX: Final = "MCP_SSE_SERVER"
CONFIG_VARIABLE: Final = f"{ENV_PREFIX}_SERVE_CONFIG"
# Parameters that say what to do with the settings, not settings: neither in the file nor printed.
_NOT_SETTINGS: Final = frozenset({"help", "config", "print_config"})
_FILE: Final = "mcp_sse_server.settings.file"  # ctx.meta key: the FileSource read, if any
# Words of a name (split on _ or -) that say its value is a secret: not "header" alone (--max-header-bytes).
_SECRET_WORDS: Final = (
    r"(?:^|[_-])"
    r"(?:tokens?|secrets?|password|passwd|pwd|authorization|auth[_-]header|credentials?|api[_-]?key)"
    r"(?:[_-]|$)"
)
_LIMITS: Final = frozenset(spec.name for spec in dataclasses.fields(HttpLimits))
_MASK: Final = "***"

_F = TypeVar("_F", bound=Callable[..., Any])


def show_default(value: Any, unit: str) -> str:
    """A default as the options spell it: ``4MiB``, ``30m``, ``12h``, ``15s``, ``1000``.

    >>> show_default(4 * 1024 * 1024, "bytes"), show_default(1800.0, "seconds"), show_default(64, "count")
    ('4MiB', '30m', '64')
    """
    if unit == "bytes":
        for suffix, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
            if value >= size and value % size == 0:
                return f"{value // size}{suffix}"
        return str(value)
    if unit == "seconds":
        for suffix, seconds in (("h", 3600), ("m", 60)):
            if value >= seconds and value % seconds == 0:
                return f"{value / seconds:g}{suffix}"
        return f"{value:g}s"
    return str(value)


# --- the sources -----------------------------------------------------------------------------------


def key_of(parameter: click.Parameter) -> str:
    """The TOML key of a parameter: its long flag without the dashes (``max-sessions``), or its name."""
    if isinstance(parameter, click.Option):
        long = [flag for flag in parameter.opts if flag.startswith("--")]
        if long:
            return long[0][2:]
    return parameter.name or ""


def variable_of(parameter: click.Parameter) -> str:
    """The environment variable a parameter is read from (rule 1): ``MCP_SSE_SERVER_`` and its key,
    upper-cased, dashes as underscores (``--allowed-origin``: ``MCP_SSE_SERVER_ALLOWED_ORIGIN``)."""
    if isinstance(parameter.envvar, str):
        return parameter.envvar
    return f"{ENV_PREFIX}_{key_of(parameter).upper().replace('-', '_')}"


@dataclasses.dataclass(frozen=True)
class FileSource:
    """The TOML file read for ``--config``: its ``path`` and the line of each top-level key."""

    path: str
    lines: Mapping[str, int]

    def where(self, key: str) -> str:
        line = self.lines.get(key)
        return self.path if line is None else f"{self.path}:{line}"


def source_of(ctx: click.Context, parameter: click.Parameter) -> str:
    """Where a parameter's value came from, for people: ``command line``, the variable, ``file:line``
    or ``default``."""
    source = ctx.get_parameter_source(parameter.name or "")
    if source is ParameterSource.COMMANDLINE:
        return "command line"
    if source is ParameterSource.ENVIRONMENT:
        return variable_of(parameter)
    if source is ParameterSource.DEFAULT_MAP:
        found: FileSource | None = ctx.meta.get(_FILE)
        return found.where(key_of(parameter)) if found is not None else "defaults"
    return "default"


def _key_lines(text: str) -> dict[str, int]:
    """The 1-based line of each top-level key of a TOML text (and of each table header), for errors."""
    lines: dict[str, int] = {}
    in_table = False
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"\s*\[+\s*[\"']?([^\]\"'.]+)", line)
        if header is not None:
            in_table = True
            lines.setdefault(header.group(1).strip(), number)
            continue
        key = re.match(r"\s*[\"']?([A-Za-z0-9_-]+)[\"']?\s*=", line)
        if key is not None and not in_table:
            lines.setdefault(key.group(1), number)
    return lines


def _file_value(parameter: click.Parameter, value: Any, where: str) -> Any:
    """A TOML value as the option's own type takes it (rule 3); BadUsage for a wrong shape."""
    if isinstance(value, dict):
        raise BadUsage(f"{where}: {key_of(parameter)} is a table; settings are top-level keys")
    if isinstance(parameter, click.Option) and parameter.is_flag:
        if not isinstance(value, bool):
            raise BadUsage(f"{where}: {key_of(parameter)} is a switch: true or false, not {value!r}")
        return value
    if parameter.multiple:
        items = value if isinstance(value, list) else [value]
        return [_scalar(parameter, item, where) for item in items]
    if isinstance(value, list):
        raise BadUsage(f"{where}: {key_of(parameter)} takes one value, not an array")
    return _scalar(parameter, value, where)


def _scalar(parameter: click.Parameter, value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadUsage(f"{where}: {key_of(parameter)} takes a string or a number, not {value!r}")
    return value if isinstance(value, str) else str(value)


def _read_file(ctx: click.Context, parameter: click.Parameter, path: str | None) -> None:
    """The ``--config`` callback (eager): the file's settings become the command's defaults."""
    if path is None:
        return
    import tomllib  # (here: only serve with a file needs it, every command imports this module)

    given = "--config" if ctx.get_parameter_source("config") is ParameterSource.COMMANDLINE else CONFIG_VARIABLE
    try:
        with open(path, "rb") as file:
            text = file.read().decode("utf-8")
    except FileNotFoundError:
        raise BadUsage(f"{given} {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadUsage(f"{given} {path}: {describe_error(error)}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BadUsage(f"{path}: not TOML: {error}") from None
    source = FileSource(path, _key_lines(text))
    by_key = {key_of(p): p for p in ctx.command.params if p.name not in _NOT_SETTINGS}
    defaults: dict[str, Any] = {}
    for key, value in data.items():
        found = by_key.get(key)
        if found is None:
            raise BadUsage(f"{source.where(key)}: unknown key {key!r}{_suggestion(key, by_key)}")
        defaults[found.name or key] = _file_value(found, value, source.where(key))
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[_FILE] = source


def _suggestion(key: str, known: Mapping[str, object]) -> str:
    import difflib

    spelled = key.replace("_", "-")
    close = [spelled] if spelled in known else difflib.get_close_matches(spelled, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def settings_options(command: _F) -> _F:
    """``--config`` and ``--print-config`` (rules above)."""
    command = click.option(
        "--print-config",
        is_flag=True,
        allow_from_autoenv=False,
        help="Print the settings serve would use (TOML, each with its source, secrets masked) and exit.",
    )(command)
    return click.option(
        "--config",
        "config",
        type=click.Path(dir_okay=False),
        metavar="PATH",
        envvar=CONFIG_VARIABLE,
        allow_from_autoenv=False,
        is_eager=True,
        expose_value=False,
        callback=_read_file,
        help=f"A TOML file of settings: each key an option's name (port = 9000, max-sessions = 100); "
        f"also ${CONFIG_VARIABLE}.",
    )(command)


class SettingsCommand(click.Command):
    """A command whose parameters are also read from their environment variables (rule 1), and
    whose option errors name the source of a refused value: the variable, or the file and line,
    when it did not come from the command line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for parameter in self.params:
            if parameter.name not in _NOT_SETTINGS and parameter.envvar is None:
                parameter.envvar = variable_of(parameter)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.BadParameter as error:
            if error.param is not None and error.param.name not in _NOT_SETTINGS:
                source = source_of(ctx, error.param)
                if source not in ("command line", "default"):
                    error.param_hint = f"{source} ({_flag(error.param)})"
            raise


def _flag(parameter: click.Parameter) -> str:
    return f"--{key_of(parameter)}" if isinstance(parameter, click.Option) else (parameter.name or "").upper()


# --- the settings ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """Everything ``serve`` was told, from every source, checked: what it serves (``target``, over
    ``stdio`` or HTTP), where, how, and the ``limits`` and ``auth`` of the endpoint. Built by
    ``from_context`` only: the defaults are the options' own."""

    target: str | None
    stdio: bool
    otel: bool
    openapi: str | None
    base_url: str | None
    header: tuple[str, ...]
    gateway: str | None
    host: str
    port: int
    path: str
    certfile: str | None
    keyfile: str | None
    json_response: bool
    no_legacy_sse: bool
    skills: tuple[str, ...]
    log_level: str
    server_per_session: bool
    backend: str | None
    redis_url: str | None
    workers: int
    worker_ttl: float | None
    limits: HttpLimits
    auth: AuthSettings

    @classmethod
    def from_context(cls, ctx: click.Context) -> ServeSettings:
        """The settings in ``ctx.params``; BadUsage, naming the value's source, for a limit
        ``HttpLimits`` refuses. Every parameter must be a field, a limit or an auth option."""
        params = {name: value for name, value in ctx.params.items() if name not in _NOT_SETTINGS}
        auth = AuthSettings.take(params)
        limits = DEFAULT_LIMITS
        for name in _LIMITS:
            value = params.pop(name, None)
            if value is None or value == ():
                continue
            try:
                limits = limits.with_changes(**{name: value})
            except ValueError as error:
                raise BadUsage(f"{_described(ctx, name)}: {error}") from None
        return cls(**params, limits=limits, auth=auth)


def _described(ctx: click.Context, name: str) -> str:
    parameter = next(p for p in ctx.command.params if p.name == name)
    source = source_of(ctx, parameter)
    return _flag(parameter) if source == "command line" else f"{_flag(parameter)} (from {source})"


# --- --print-config --------------------------------------------------------------------------------


def print_config(ctx: click.Context, settings: ServeSettings) -> str:
    """The TOML text of ``--print-config``: every setting with its source, secrets masked."""
    lines = [
        f"# serve's settings: command line > environment ({ENV_PREFIX}_*) > --config file > default",
    ]
    lines.extend(_config_lines(ctx, settings))
    return "\n".join(lines)


def _config_lines(ctx: click.Context, settings: ServeSettings) -> Iterator[str]:
    for parameter in ctx.command.params:
        name = parameter.name or ""
        if name in _NOT_SETTINGS:
            continue
        key, source = key_of(parameter), source_of(ctx, parameter)
        if name in _LIMITS:
            value = getattr(settings.limits, name)
        elif name.startswith("auth_"):
            value = getattr(settings.auth, name)
        else:
            value = getattr(settings, name)
        if value is None or value == () or value == frozenset():
            yield f"# {key}: not set ({source})"
            continue
        unit = "seconds" if parameter.type is DURATION else "bytes" if parameter.type is SIZE else ""
        yield f"{key} = {_toml(_masked(name, value), unit)}  # {source}"


@functools.cache
def _secret_name() -> re.Pattern[str]:
    # Compiled on first use: every command imports this module, only --print-config masks.
    return re.compile(_SECRET_WORDS, re.IGNORECASE)


def _masked(name: str, value: Any) -> Any:
    """``value`` with its secrets masked (rule 5).

    >>> _masked("auth_token", "abc"), _masked("max_header_bytes", 4096), _masked("auth_client_secret_env", "VAR")
    ('***', 4096, 'VAR')
    """
    if _secret_name().search(name) and not name.endswith("_env"):
        return _MASK
    if name == "header":  # serve --openapi's 'NAME: VALUE' headers: an API key, most often
        return tuple(f"{item.partition(':')[0].strip()}: {_MASK}" for item in value)
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, tuple | frozenset):
        return tuple(mask_url(item) if isinstance(item, str) else item for item in value)
    return value


def mask_url(text: str) -> str:
    """``text`` with the password of a URL and its token-like query parameters masked.

    >>> mask_url("redis://:hunter2@cache:6379/0"), mask_url("rediss://me:pw@h/0?password=x&db=1")
    ('redis://:***@cache:6379/0', 'rediss://me:***@h/0?password=***&db=1')
    >>> mask_url("https://a.example"), mask_url("/path/to/cert.pem")
    ('https://a.example', '/path/to/cert.pem')
    """
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return text
    if not parts.scheme or (not parts.netloc and not parts.query):
        return text
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{_MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, _MASK if _secret_name().search(k) or k.lower() in ("key", "pass") else v) for k, v in pairs], safe="*"
        )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _toml(value: Any, unit: str) -> str:
    """``value`` written as TOML, durations and sizes as the options spell them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, frozenset | tuple | list):
        return "[" + ", ".join(_toml(item, unit) for item in sorted(value, key=str)) + "]"
    if unit in ("seconds", "bytes"):
        return json.dumps(show_default(value, unit))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)
