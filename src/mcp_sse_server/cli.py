"""The ``mcp-sse-server`` command: serve a server over Streamable HTTP, manage the
server registry, and list or call the tools of any MCP server.

    mcp-sse-server serve                       # the demo server on http://127.0.0.1:8080/mcp
    mcp-sse-server serve math --port 9000      # a built-in server
    mcp-sse-server serve my_app:build_server   # your own factory, called once per session
    mcp-sse-server servers list
    mcp-sse-server tools math
    mcp-sse-server call math add a=2 b=3
    mcp-sse-server call http://127.0.0.1:8080/mcp slow_count steps=5
    mcp-sse-server call "python my_server.py" search query=cats

Start-up must stay fast (``--help`` is typed often), so this module imports
only click at the top; the HTTP stack, the clients and the servers are
imported inside the commands that need them.

Exit status: 0 on success, 1 for a failure (an unreachable server, an
``isError`` result), 2 for a usage error (a bad argument, an unknown tool or
server), 130 when interrupted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Final, NoReturn

import click

if TYPE_CHECKING:
    from .client.base import McpClient
    from .client.config import ServerConfig
    from .server import McpServer
    from .types import CallToolResult, Tool

__all__ = [
    "ArgumentError",
    "OutputDir",
    "ProgressReporter",
    "cli",
    "convert_arguments",
    "convert_value",
    "main",
    "parse_duration",
    "parse_size",
    "render_result",
    "resolve_target",
]

PROG: Final = "mcp-sse-server"
DEMO: Final = "demo"
EXIT_FAILURE: Final = 1
EXIT_INTERRUPTED: Final = 130

_debug = bool(os.environ.get("MCP_SSE_SERVER_DEBUG"))


# --- errors ---------------------------------------------------------------------------------------


class Failure(click.ClickException):
    """Something went wrong that is not the user's syntax: exit status 1, one line."""

    exit_code = EXIT_FAILURE


class BadUsage(click.UsageError):
    """A usage error about what was asked for (a bad argument, an unknown tool or server): exit status 2,
    shown as one line, since the command's usage summary would not help."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file or sys.stderr)


class ArgumentError(ValueError):
    """A tool argument that cannot be used; the message names it and says why."""


def describe_error(error: BaseException) -> str:
    """One readable line for an exception, without a traceback."""
    from .jsonrpc import CONNECTION_CLOSED, McpError

    if isinstance(error, McpError):
        if error.code == CONNECTION_CLOSED:  # the clients' connection failures: the code adds nothing
            return error.message
        return f"{error.message} (JSON-RPC error {error.code})"
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


# --- durations and sizes --------------------------------------------------------------------------

_DURATION_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE_UNITS: Final = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
}


def _split_unit(text: str) -> tuple[float, str]:
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", text)
    if match is None:
        raise ValueError(text)
    return float(match.group(1)), match.group(2).lower()


def parse_duration(text: str) -> float:
    """Seconds from ``"90"``, ``"90s"``, ``"30m"``, ``"12h"``, ``"1.5d"`` or ``"500ms"``.

    >>> parse_duration("30m"), parse_duration("12h"), parse_duration("2.5")
    (1800.0, 43200.0, 2.5)
    """
    try:
        value, unit = _split_unit(text)
        seconds = value * _DURATION_UNITS[unit or "s"]
    except (ValueError, KeyError):
        raise ValueError(f"{text!r} is not a duration; use seconds or a unit: 500ms, 90s, 30m, 12h, 1d") from None
    if seconds <= 0:
        raise ValueError(f"{text!r}: a duration must be positive")
    return seconds


def parse_size(text: str) -> int:
    """Bytes from ``"4194304"``, ``"4M"``/``"4MiB"`` (binary) or ``"4MB"`` (decimal).

    >>> parse_size("4M"), parse_size("64kb"), parse_size("100")
    (4194304, 64000, 100)
    """
    try:
        value, unit = _split_unit(text)
        size = int(value * _SIZE_UNITS[unit])
    except (ValueError, KeyError):
        raise ValueError(f"{text!r} is not a size; use bytes or a unit: 64K, 4M, 4MB, 1G") from None
    if size <= 0:
        raise ValueError(f"{text!r}: a size must be positive")
    return size


class _Parsed(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click
    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name = name
        self._parse = parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self._parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


DURATION: Final = _Parsed("duration", parse_duration)
SIZE: Final = _Parsed("size", parse_size)


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    """``["K=V", ...]`` as a dict; a usage error for an item without ``=``."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not {what}=VALUE")
        out[key] = value
    return out


# --- tool arguments -------------------------------------------------------------------------------

# Which reading of a command-line word wins when a schema allows several types.
_TYPE_ORDER: Final = ("null", "boolean", "integer", "number", "array", "object", "string")
_TRUE: Final = frozenset({"true", "yes", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "off", "0"})
_JSON_INT = r"[+-]?\d+"
_JSON_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_ARTICLES: Final = {
    "null": "null",
    "boolean": "a boolean (true or false)",
    "integer": "an integer",
    "number": "a number",
    "array": "a JSON array such as [1, 2]",
    "object": 'a JSON object such as {"k": 1}',
    "string": "a string",
}


def _resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow local ``$ref``s (``#/...``) so the property's own type is found."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and seen < 32:
        node: Any = root
        for part in schema["$ref"][1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            return {}
        schema = node
        seen += 1
    return schema


def _schema_types(schema: Mapping[str, Any], root: Mapping[str, Any]) -> set[str] | None:
    """The JSON types a schema admits; None when it does not say."""
    schema = _resolve_ref(schema, root)
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            found: set[str] = set()
            for branch in branches:
                types = _schema_types(branch, root) if isinstance(branch, Mapping) else None
                if types is None:
                    return None
                found |= types
            return found
    branches = schema.get("allOf")
    if isinstance(branches, list):
        for branch in branches:
            types = _schema_types(branch, root) if isinstance(branch, Mapping) else None
            if types is not None:
                return types
    return None


def _read_as(kind: str, raw: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``raw`` reads as JSON type ``kind``."""
    import json
    import math
    import re

    if kind == "string":
        return True, raw
    if kind == "null":
        return raw == "null", None
    if kind == "boolean":
        word = raw.strip().lower()
        return (True, True) if word in _TRUE else (True, False) if word in _FALSE else (False, None)
    if kind == "integer":
        if re.fullmatch(_JSON_INT, raw.strip()):
            return True, int(raw)
        if re.fullmatch(_JSON_NUMBER, raw.strip()):
            value = float(raw)
            if math.isfinite(value) and value.is_integer():  # 3.0 and 1e3 are integers in JSON Schema
                return True, int(value)
        return False, None
    if kind == "number":
        if re.fullmatch(_JSON_INT, raw.strip()):
            return True, int(raw)  # integers stay exact
        if re.fullmatch(_JSON_NUMBER, raw.strip()):
            value = float(raw)
            return (True, value) if math.isfinite(value) else (False, None)
        return False, None
    if kind in ("array", "object"):
        try:
            value = json.loads(raw)
        except ValueError:
            return False, None
        return isinstance(value, list if kind == "array" else dict), value
    return False, None


def convert_value(name: str, raw: str, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """Read a command-line word as the JSON value that ``schema`` asks for.

    >>> convert_value("a", "2", {"type": "number"}), convert_value("f", "yes", {"type": "boolean"})
    (2, True)
    >>> convert_value("s", "007", {"type": "string"})
    '007'
    """
    import json

    root = schema if root is None else root
    schema = _resolve_ref(schema, root)
    enum = schema.get("enum")
    if "const" in schema:
        enum = [schema["const"]]
    if isinstance(enum, list):
        if raw in enum:
            return raw
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        # Compare types too: in Python 1 == True, but the schema means one or the other.
        if any(member == value and type(member) is type(value) for member in enum):
            return value
        shown = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in enum)
        raise ArgumentError(f"argument {name!r} must be one of: {shown}; got {raw!r}")
    types = _schema_types(schema, root)
    if types is None:
        # No declared type: take JSON when it parses (numbers, booleans, lists), the word otherwise.
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    for kind in _TYPE_ORDER:
        if kind in types:
            ok, value = _read_as(kind, raw)
            if ok:
                return value
    wanted = " or ".join(_ARTICLES.get(kind, kind) for kind in _TYPE_ORDER if kind in types) or "a value"
    raise ArgumentError(f"argument {name!r} must be {wanted}, got {raw!r}")


def _property_schema(
    key: str, schema: Mapping[str, Any], root: Mapping[str, Any], tool: str
) -> Mapping[str, Any] | None:
    """The schema for argument ``key``; None for "anything"; ArgumentError when not accepted."""
    import re

    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    if isinstance(properties.get(key), Mapping):
        return properties[key]  # type: ignore[no-any-return]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        for pattern, sub in patterns.items():
            try:
                if re.search(pattern, key) and isinstance(sub, Mapping):
                    return sub
            except re.error:
                continue
    extra = schema.get("additionalProperties")
    # An unknown key is refused unless the schema explicitly allows extras or declares no
    # properties at all: a silently ignored typo is worse than an error.
    if extra is False or (extra is None and properties):
        known = ", ".join(properties) if properties else "no arguments"
        raise ArgumentError(f"unknown argument {key!r} for {tool}; it takes: {known}")
    return extra if isinstance(extra, Mapping) else None


def convert_arguments(
    schema: Mapping[str, Any], assignments: Sequence[str], json_text: str | None = None, *, tool: str = "the tool"
) -> dict[str, Any]:
    """Build a tool's arguments from ``key=value`` words and an optional JSON object.

    Each value is read as the type the input schema gives its key; ``key=value``
    words override keys of the JSON object. ArgumentError names the first
    problem: a word without ``=``, a key given twice, an unknown key, a value of
    the wrong type, or a missing required argument.

    >>> schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    ...           "required": ["a", "b"]}
    >>> convert_arguments(schema, ["a=2", "b=3.5"])
    {'a': 2, 'b': 3.5}
    """
    import json

    arguments: dict[str, Any] = {}
    if json_text is not None:
        try:
            loaded = json.loads(json_text)
        except ValueError as error:
            raise ArgumentError(f"--json is not valid JSON: {error}") from None
        if not isinstance(loaded, dict):
            raise ArgumentError("--json must be a JSON object such as '{\"a\": 1}'")
        for key in loaded:
            _property_schema(key, schema, schema, tool)
        arguments.update(loaded)
    seen: set[str] = set()
    for word in assignments:
        key, sep, raw = word.partition("=")
        if not sep or not key:
            raise ArgumentError(f"{word!r} is not key=value")
        if key in seen:
            raise ArgumentError(f"argument {key!r} is given twice")
        seen.add(key)
        sub = _property_schema(key, schema, schema, tool)
        arguments[key] = convert_value(key, raw, sub if sub is not None else {}, schema)
    required = schema.get("required")
    if isinstance(required, list):
        missing = [key for key in required if isinstance(key, str) and key not in arguments]
        if missing:
            properties = schema.get("properties")
            takes = ", ".join(properties) if isinstance(properties, Mapping) else ", ".join(required)
            raise ArgumentError(f"missing required argument {missing[0]!r} for {tool}; it takes: {takes}")
    return arguments


# --- printing results -----------------------------------------------------------------------------


class OutputDir:
    """Where images, audio and blobs from results are saved; a temporary directory is made on first use."""

    def __init__(self, path: str | None) -> None:
        self._path = path

    @property
    def path(self) -> str:
        if self._path is None:
            import tempfile

            self._path = tempfile.mkdtemp(prefix=f"{PROG}-")
        os.makedirs(self._path, exist_ok=True)
        return self._path

    def save(self, stem: str, data: bytes, mime_type: str | None) -> str:
        """Write ``data`` to a new file named after ``stem`` (never overwriting one); return its path."""
        import mimetypes

        extension = (mimetypes.guess_extension(mime_type or "") or ".bin") if mime_type else ".bin"
        directory = self.path
        candidate = os.path.join(directory, f"{stem}{extension}")
        counter = 1
        while True:
            try:
                with open(candidate, "xb") as handle:
                    handle.write(data)
                return candidate
            except FileExistsError:
                counter += 1
                candidate = os.path.join(directory, f"{stem}-{counter}{extension}")


def _safe_stem(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "result"


def _decode(data: str) -> bytes | None:
    import base64
    import binascii

    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _size(count: int) -> str:
    return f"{count} bytes" if count < 10240 else f"{count / 1024:.0f} KiB"


def render_result(
    result: CallToolResult,
    *,
    out: IO[str],
    err: IO[str],
    output_dir: OutputDir,
    stem: str = "result",
    show_structured: bool = False,
) -> int:
    """Print a tool result for people; return the exit status (1 for an isError result).

    Text blocks print as text. Structured content prints as indented JSON when
    no text block says something else (a text block that is just the JSON of
    the structured content is replaced by it) or when ``show_structured``.
    Images, audio and binary resources are saved under ``output_dir`` and their
    paths printed; resource links and embedded resources get a summary line.
    An isError result goes to ``err``.
    """
    import json

    from .types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents

    stream = err if result.is_error else out
    structured = result.structured_content
    printed_structured = False

    def emit(text: str) -> None:
        stream.write(text if text.endswith("\n") else text + "\n")

    def emit_structured() -> None:
        nonlocal printed_structured
        if structured is not None and not printed_structured:
            printed_structured = True
            emit(json.dumps(structured, indent=2, ensure_ascii=False))

    readable_text = False
    for block in result.content:
        if isinstance(block, TextContent):
            if structured is not None and _is_json_of(block.text, structured):
                continue
            readable_text = True
    if result.is_error and not result.content and structured is None:
        emit("the tool reported an error without a message")
    for index, block in enumerate(result.content, start=1):
        if isinstance(block, TextContent):
            if structured is not None and _is_json_of(block.text, structured):
                if not readable_text:
                    emit_structured()
                continue
            emit(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            data = _decode(block.data)
            if data is None:
                emit(f"[{kind} {block.mime_type}: invalid base64 data, not saved]")
            else:
                path = output_dir.save(f"{stem}-{index}", data, block.mime_type)
                emit(f"[{kind} {block.mime_type}, {_size(len(data))}, saved to {path}]")
        elif isinstance(block, ResourceLink):
            details = ", ".join(
                part for part in (block.mime_type, _size(block.size) if isinstance(block.size, int) else None) if part
            )
            line = f"[resource link {block.uri}" + (f" ({block.name})" if block.name else "")
            line += (f", {details}" if details else "") + "]"
            if block.description:
                line += f" {block.description}"
            emit(line)
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            mime = f", {resource.mime_type}" if resource.mime_type else ""
            if isinstance(resource, TextResourceContents):
                emit(f"[resource {resource.uri}{mime}, {len(resource.text)} characters]")
                emit(resource.text)
            else:
                data = _decode(resource.blob)
                if data is None:
                    emit(f"[resource {resource.uri}{mime}: invalid base64 data, not saved]")
                else:
                    path = output_dir.save(f"{stem}-{index}", data, resource.mime_type)
                    emit(f"[resource {resource.uri}{mime}, {_size(len(data))}, saved to {path}]")
    if structured is not None and (show_structured or not readable_text):
        emit_structured()
    stream.flush()
    return EXIT_FAILURE if result.is_error else 0


def _is_json_of(text: str, value: Any) -> bool:
    import json

    stripped = text.strip()
    if not stripped.startswith("{"):
        return False
    try:
        return bool(json.loads(stripped) == value)
    except ValueError:
        return False


# --- progress and log notifications -----------------------------------------------------------------


def _printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters shown as escapes: a server must not be able to drive the
    user's terminal (move the cursor, retitle the window) through a progress or log message."""
    import re

    pattern = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]" if keep_newlines else r"[\x00-\x08\x0a-\x1f\x7f-\x9f]"
    return re.sub(pattern, lambda match: repr(match.group())[1:-1], text)


class ProgressReporter:
    """Shows progress notifications on ``stream`` (a bar on a terminal, plain lines otherwise) and
    log notifications as lines, keeping the two from overwriting each other."""

    def __init__(self, stream: IO[str], *, tty: bool | None = None, width: int | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self._width = width
        self._bar: str | None = None

    def _columns(self) -> int:
        if self._width is not None:
            return self._width
        import shutil

        return max(40, shutil.get_terminal_size((80, 24)).columns)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        amount = f"{progress:g}" + (f"/{total:g}" if total else "")
        message = _printable(message) if message else None
        if not self.tty:
            percent = f" ({100 * progress / total:.0f}%)" if total else ""
            self.stream.write(f"progress: {amount}{percent}" + (f" {message}" if message else "") + "\n")
            self.stream.flush()
            return
        columns = self._columns()
        if total:
            fraction = min(max(progress / total, 0.0), 1.0)
            cells = 24
            filled = round(fraction * cells)
            bar = f"[{'#' * filled}{'.' * (cells - filled)}] {fraction * 100:3.0f}% {amount}"
        else:
            bar = f"[{'.' * 24}] {amount}"
        if message:
            bar += f" {message}"
        self._bar = bar[: columns - 1]
        self.stream.write("\r\x1b[2K" + self._bar)
        self.stream.flush()

    def log(self, params: Mapping[str, Any]) -> None:
        import json

        level = params.get("level", "info")
        logger = params.get("logger")
        data = params.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        line = _printable(f"[{level}]" + (f" {logger}:" if logger else "") + f" {text}", keep_newlines=True)
        if self.tty and self._bar is not None:
            self.stream.write("\r\x1b[2K" + line + "\n" + self._bar)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """Clear the bar so the result starts on a clean line."""
        if self.tty and self._bar is not None:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._bar = None


# --- resolving servers ------------------------------------------------------------------------------


def _builtin_servers() -> dict[str, Callable[[], McpServer]]:
    from .servers.demo import build_demo_server
    from .servers.factory import MemoryServerFactory

    builders: dict[str, Callable[[], McpServer]] = {DEMO: build_demo_server}
    for name in MemoryServerFactory.commands():
        builders[name] = lambda name=name: MemoryServerFactory.create_memory_server(name)  # type: ignore[misc]
    return builders


def _load_attribute(target: str) -> Any:
    """The object named by ``module:attr`` or ``path/to/file.py:attr`` (dots allowed in attr)."""
    import importlib
    import importlib.util

    location, _, attribute = target.rpartition(":")
    if not location or not attribute:
        raise BadUsage(f"{target!r} is not module:factory or path/to/file.py:factory")
    if location.endswith(".py") or os.sep in location or "/" in location:
        path = os.path.abspath(location)
        if not os.path.isfile(path):
            raise BadUsage(f"no such file: {location}")
        # The file's directory goes on sys.path so it can import its neighbours, as `python file.py` would.
        sys.path.insert(0, os.path.dirname(path))
        name = "_mcp_target_" + _safe_stem(os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise BadUsage(f"cannot load {location} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        # Like `python -m`: modules in the current directory are importable.
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
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


def resolve_target(target: str | None) -> tuple[str, Callable[[], McpServer]]:
    """``(label, factory)`` for ``serve``'s TARGET: none (the demo), a built-in name, or ``module:factory``.

    The factory is called once now, so a broken one fails before the port
    opens; that first server is handed to the first session, so it is still
    one call per session.
    """
    from .server import McpServer

    builtins = _builtin_servers()
    name = target or DEMO
    if name in builtins:
        factory = builtins[name]
        label = name
    elif ":" in name:
        factory = _load_attribute(name)
        label = name
        if isinstance(factory, McpServer):
            raise BadUsage(
                f"{name} is an McpServer instance; point at a function that builds one, since every session "
                "needs its own"
            )
        if not callable(factory):
            raise BadUsage(f"{name} is not callable")
    else:
        known = ", ".join(sorted(builtins))
        raise BadUsage(f"unknown server {name!r}; use a built-in ({known}) or module:factory / path/to/file.py:factory")
    first = factory()
    if not isinstance(first, McpServer):
        raise BadUsage(f"{name} returned {type(first).__name__}, not an McpServer")
    pending = [first]

    def per_session() -> McpServer:
        if pending:
            return pending.pop()
        server = factory()
        if not isinstance(server, McpServer):
            raise TypeError(f"{label} returned {type(server).__name__}, not an McpServer")
        return server

    return label, per_session


class _Spec:
    """How to reach the server a ``tools``/``call`` SERVER argument names."""

    def __init__(self, label: str, make: Callable[[], McpClient]) -> None:
        self.label = label
        self.make = make


def _registry_entry(name: str, config: str | None) -> ServerConfig | None:
    """The registry's entry for ``name``, if any, without creating the registry file as a side effect.

    A registry that cannot be read is reported and skipped, so a broken file does not
    stop ``call math ...`` from reaching the built-in server.
    """
    from .client.config import ServerConfig
    from .client.provider import DEFAULT_SERVERS, ConfigFileError, McpServerProvider, default_config_path

    path = os.path.expanduser(config) if config is not None else os.fspath(default_config_path())
    if not os.path.exists(path):
        default = DEFAULT_SERVERS.get(name)
        return ServerConfig.from_dict(dict(default), name) if default is not None else None
    provider = McpServerProvider(path)
    try:
        return provider.get(name) if name in provider else None
    except (ConfigFileError, OSError) as error:
        click.echo(f"Warning: ignoring the server registry: {describe_error(error)}", err=True)
        return None


def _resolve_server(
    server: str, *, config: str | None, headers: Mapping[str, str], env: Mapping[str, str], sse: bool
) -> _Spec:
    """Turn SERVER into a way to connect: a URL, a registry name, a built-in, or a command line."""
    import shlex
    import shutil

    from .client.config import ServerConfig, is_url

    if is_url(server):
        remote = ServerConfig(server, type="sse" if sse else "streamable", url=server, headers=dict(headers))
        return _Spec(server, lambda: _create_client(remote))
    entry = _registry_entry(server, config)
    if entry is not None:
        return _Spec(f"{server} ({entry.describe()})", lambda: _create_client(entry))
    builtins = _builtin_servers()
    if server in builtins:

        def in_memory() -> McpClient:
            from .client.memory import InMemoryClient

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
    from .client.connect import create_client

    return create_client(config)


def _connect_failure(label: str, error: BaseException) -> Failure:
    text = describe_error(error)
    # The clients' own messages often name the server already ("Cannot reach MCP server at URL: ...").
    if label.partition(" ")[0] in text:
        return Failure(text[0].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text)
    return Failure(f"cannot connect to {label}: {text}")


async def _open(spec: _Spec, reporter: ProgressReporter) -> McpClient:
    """A connected, initialized client; Failure with one line when the server cannot be reached."""
    from .client.config import ConfigError

    try:
        client = spec.make()
    except ConfigError as error:
        raise BadUsage(str(error)) from None
    except ImportError as error:
        raise Failure(f"cannot connect to {spec.label}: that client is not available ({error})") from error
    except (ValueError, OSError) as error:
        raise _connect_failure(spec.label, error) from error
    client.on_log = reporter.log
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
        if _debug:
            raise


def _tool_signature(tool: Tool) -> str:
    schema = tool.input_schema
    properties = schema.get("properties")
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    parts: list[str] = []
    if isinstance(properties, Mapping):
        for key, sub in properties.items():
            types = _schema_types(sub, schema) if isinstance(sub, Mapping) else None
            kind = "|".join(t for t in _TYPE_ORDER if t in types) if types else "any"
            if isinstance(sub, Mapping) and isinstance(sub.get("enum"), list):
                kind = "|".join(str(v) for v in sub["enum"])
            parts.append(f"{key}: {kind}" if key in required else f"[{key}: {kind}]")
    return f"{tool.name}({', '.join(parts)})"


def _first_line(text: str | None) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def _run(coroutine: Any) -> Any:
    """Run a client command's coroutine. Library log records stay quiet unless --debug: what
    matters reaches the user as the command's one-line error."""
    import asyncio
    import logging

    if _debug:
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


# --- the commands ------------------------------------------------------------------------------------


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
    """Serve Model Context Protocol servers over Streamable HTTP, and use any MCP server from the shell.

    \b
    Start here:
      mcp-sse-server serve                  the demo server at http://127.0.0.1:8080/mcp
      mcp-sse-server tools math             the tools of the built-in math server
      mcp-sse-server call math add a=2 b=3  call one
    """
    global _debug
    _debug = _debug or debug
    ctx.obj = {"config": config}


@cli.command()
@click.argument("target", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="0 picks a free port.")
@click.option("--path", "path", default="/mcp", show_default=True, help="The endpoint's path.")
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A browser origin allowed to connect, e.g. https://app.example.com (repeatable); required to listen "
    "beyond loopback.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST",
    help="A Host header accepted besides loopback names and the bound address (repeatable; * for any).",
)
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False), help="TLS certificate chain (PEM).")
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), help="TLS private key (PEM).")
@click.option("--max-sessions", type=click.IntRange(min=1), help="Most sessions live at once (1000).")
@click.option("--session-idle-timeout", type=DURATION, help="End a session after this much client silence (30m).")
@click.option("--session-max-lifetime", type=DURATION, help="End every session this long after it began (12h).")
@click.option("--max-request-bytes", type=SIZE, help="Largest POST body; larger ones get 413 (4MiB).")
@click.option("--max-request-streams", type=click.IntRange(min=1), help="Most requests in flight per session (64).")
@click.option(
    "--backlog-limit",
    type=click.IntRange(min=0),
    help="Server messages kept for a session until its GET stream opens (256).",
)
@click.option(
    "--replay-buffer-size",
    type=click.IntRange(min=0),
    help="Stream events kept for a reconnect with Last-Event-ID (256).",
)
@click.option("--shutdown-deadline", type=DURATION, help="How long shutdown waits for requests in flight (10s).")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    help="Server log level (to stderr).",
)
def serve(
    target: str | None,
    host: str,
    port: int,
    path: str,
    certfile: str | None,
    keyfile: str | None,
    log_level: str,
    **limits: Any,
) -> None:
    """Serve TARGET over Streamable HTTP and print its endpoint.

    \b
    TARGET is one of:
      (nothing) or demo          the demo: math and artifact tools, resources, prompts
      math, artifact_instructions  a built-in server
      module:factory             your function returning an McpServer (called per session)
      path/to/file.py:factory    the same, from a file

    Limits left out keep the defaults shown in brackets. Ctrl-C or SIGTERM shuts down gracefully.
    """
    import logging

    if (certfile is None) != (keyfile is None):
        raise click.UsageError("--certfile and --keyfile go together")
    if not path.startswith("/"):
        raise click.BadParameter("must start with /", param_hint="--path")
    label, factory = resolve_target(target)
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    options = bind_options(host=host, port=port, path=path, **limits)
    if certfile is not None and keyfile is not None:
        options["ssl_context"] = _ssl_context(certfile, keyfile)
    _serve_forever(label, factory, options)


def bind_options(*, host: str, port: int, path: str, **limits: Any) -> dict[str, Any]:
    """The keyword arguments for ``McpHttpServer.bind``: limits given as None or empty are left to its defaults.

    >>> bind_options(host="127.0.0.1", port=0, path="/mcp", max_sessions=None, allowed_origins=("https://a.b",))
    {'host': '127.0.0.1', 'port': 0, 'path': '/mcp', 'allowed_origins': ['https://a.b']}
    """
    options: dict[str, Any] = {"host": host, "port": port, "path": path}
    for name, value in limits.items():
        if isinstance(value, tuple):
            if value:
                options[name] = list(value)
        elif value is not None:
            options[name] = value
    return options


def _ssl_context(certfile: str, keyfile: str) -> Any:
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(certfile, keyfile)
    except (ssl.SSLError, OSError) as error:
        raise Failure(f"cannot load the TLS certificate and key: {describe_error(error)}") from error
    return context


def _serve_forever(label: str, factory: Callable[[], McpServer], options: dict[str, Any]) -> None:
    import asyncio
    import signal

    async def run() -> None:
        try:
            from .transport.http import McpHttpServer
        except ImportError as error:
            raise Failure(f"the HTTP transport is not available: {error}") from error
        try:
            http = await McpHttpServer.bind(on_session=factory, **options)
        except OSError as error:
            raise Failure(f"cannot listen on {options['host']}:{options['port']}: {describe_error(error)}") from error
        except ValueError as error:
            raise click.UsageError(str(error)) from error
        click.echo(f"Serving {label} at {http.endpoint}")
        sys.stdout.flush()
        click.echo("Press Ctrl-C to stop.", err=True)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        main_task = asyncio.current_task()
        signals = (signal.SIGINT, signal.SIGTERM)

        def on_signal() -> None:
            if stop.is_set() and main_task is not None:
                main_task.cancel()  # a second signal: stop waiting for the graceful close
            stop.set()

        installed: list[signal.Signals] = []
        for number in signals:
            try:
                loop.add_signal_handler(number, on_signal)
                installed.append(number)
            except (NotImplementedError, RuntimeError):  # Windows: KeyboardInterrupt still works
                pass
        try:
            await stop.wait()
            click.echo("Shutting down...", err=True)
        finally:
            try:
                await http.close()
            finally:
                for number in installed:
                    loop.remove_signal_handler(number)

    try:
        import uvloop

        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        try:
            runner.run(run())
        except asyncio.CancelledError:
            raise SystemExit(EXIT_INTERRUPTED) from None


# --- servers -------------------------------------------------------------------------------------------


@cli.group()
def servers() -> None:
    """List, add and remove servers in the registry (mcp_server.json)."""


def _provider(ctx: click.Context) -> Any:
    from .client.provider import McpServerProvider

    return McpServerProvider(ctx.find_root().obj["config"])


def _registry_failure(error: Exception) -> Failure:
    return Failure(describe_error(error))


@servers.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON, as the file holds them.")
@click.pass_context
def servers_list(ctx: click.Context, as_json: bool) -> None:
    """List the configured servers and where the registry lives."""
    import json

    from .client.config import ConfigError

    provider = _provider(ctx)
    try:
        entries = provider.list()
    except (ConfigError, OSError) as error:
        raise _registry_failure(error) from error
    if as_json:
        click.echo(json.dumps({entry.name: entry.to_dict() for entry in entries}, indent=2, ensure_ascii=False))
        return
    click.echo(f"Registry: {provider.path}")
    if not entries:
        click.echo("No servers configured.")
        return
    width = max(len(entry.name) for entry in entries)
    for entry in entries:
        click.echo(f"  {entry.name:<{width}}  {entry.describe()}")


@servers.command("add")
@click.argument("name")
@click.option("--url", help="The server's URL (Streamable HTTP, or legacy SSE with --type sse).")
@click.option("--command", "command", help="The command that starts a stdio server.")
@click.option("--arg", "args", multiple=True, metavar="ARG", help="An argument for --command (repeatable).")
@click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable (repeatable).")
@click.option("--header", "headers", multiple=True, metavar="KEY=VALUE", help="An HTTP header (repeatable).")
@click.option("--inmemory", metavar="BUILTIN", help="A built-in in-memory server: math or artifact_instructions.")
@click.option(
    "--type",
    "kind",
    type=click.Choice(["inmemory", "streamable", "http", "streamable-http", "sse", "stdio"]),
    help="The transport; inferred from --url, --command or --inmemory when left out.",
)
@click.option("--replace", is_flag=True, help="Replace a server of the same name.")
@click.pass_context
def servers_add(
    ctx: click.Context,
    name: str,
    url: str | None,
    command: str | None,
    args: tuple[str, ...],
    env: tuple[str, ...],
    headers: tuple[str, ...],
    inmemory: str | None,
    kind: str | None,
    replace: bool,
) -> None:
    """Add server NAME to the registry.

    \b
    Examples:
      mcp-sse-server servers add calc --inmemory math
      mcp-sse-server servers add local --url http://127.0.0.1:8080/mcp
      mcp-sse-server servers add files --command npx --arg -y --arg some-mcp-server --env DEBUG=1
    """
    from .client.config import ConfigError, ServerConfig

    chosen = [value for value in (url, command, inmemory) if value]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --url, --command or --inmemory")
    if (args or env) and command is None:
        raise click.UsageError("--arg and --env go with --command")
    if headers and url is None:
        raise click.UsageError("--header goes with --url")
    if url is not None:
        kind = kind or "streamable"
        if kind not in ("streamable", "http", "streamable-http", "sse"):
            raise click.UsageError(f"--url does not fit --type {kind}")
    elif command is not None:
        kind = kind or "stdio"
        if kind != "stdio":
            raise click.UsageError(f"--command does not fit --type {kind}")
    else:
        kind = kind or "inmemory"
        if kind != "inmemory":
            raise click.UsageError(f"--inmemory does not fit --type {kind}")
        from .servers.factory import MemoryServerFactory

        if inmemory not in MemoryServerFactory.commands():
            known = ", ".join(MemoryServerFactory.commands())
            raise BadUsage(f"unknown built-in server {inmemory!r} for --inmemory; known: {known}")
    try:
        config = ServerConfig(
            name,
            type=kind,
            command=command if command is not None else inmemory,
            args=list(args),
            env=_pairs(env, "KEY"),
            url=url,
            headers=_pairs(headers, "KEY"),
        )
    except ConfigError as error:
        raise BadUsage(str(error)) from None
    provider = _provider(ctx)
    try:
        if name in provider and not replace:
            raise Failure(f"a server named {name!r} is already in {provider.path}; add --replace to replace it")
        provider.add_mcp_server(name, config)
    except (ConfigError, OSError) as error:
        raise _registry_failure(error) from error
    click.echo(f"Added {name} ({config.describe()}) to {provider.path}")


@servers.command("remove")
@click.argument("name")
@click.pass_context
def servers_remove(ctx: click.Context, name: str) -> None:
    """Remove server NAME from the registry."""
    from .client.config import ConfigError

    provider = _provider(ctx)
    try:
        if name not in provider:
            known = ", ".join(repr(known) for known in provider.names()) or "none"
            raise Failure(f"no server named {name!r} in {provider.path} (configured: {known})")
        provider.remove_mcp_server(name)
    except (ConfigError, OSError) as error:
        raise _registry_failure(error) from error
    click.echo(f"Removed {name} from {provider.path}")


# --- tools and call ---------------------------------------------------------------------------------------

_connection_options: Final[list[Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
    click.option("--header", "headers", multiple=True, metavar="KEY=VALUE", help="An HTTP header for a URL server."),
    click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable for a command."),
    click.option("--sse", is_flag=True, help="The URL speaks the legacy HTTP+SSE transport (2024-11-05)."),
]


def _with_connection_options(function: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_connection_options):
        function = option(function)
    return function


@cli.command()
@click.argument("server")
@_with_connection_options
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, with their schemas.")
@click.option("-l", "--long", "long", is_flag=True, help="Print whole descriptions.")
@click.pass_context
def tools(
    ctx: click.Context,
    server: str,
    headers: tuple[str, ...],
    env: tuple[str, ...],
    sse: bool,
    as_json: bool,
    long: bool,
) -> None:
    """List the tools of SERVER: a registry name, a built-in (math, ...), a URL, or a command line."""
    spec = _resolve_server(
        server, config=ctx.find_root().obj["config"], headers=_pairs(headers, "KEY"), env=_pairs(env, "KEY"), sse=sse
    )
    reporter = ProgressReporter(sys.stderr)

    async def run() -> list[Tool]:
        client = await _open(spec, reporter)
        try:
            return await client.list_tools()
        except Exception as error:
            raise Failure(f"{spec.label}: cannot list tools: {describe_error(error)}") from error
        finally:
            await _close_quietly(client)

    listed = _run(run())
    if as_json:
        import json

        click.echo(json.dumps([tool.to_dict() for tool in listed], indent=2, ensure_ascii=False))
        return
    if not listed:
        click.echo(f"{spec.label} has no tools.")
    for tool in listed:
        click.echo(_tool_signature(tool))
        text = (tool.description or "").strip() if long else _first_line(tool.description)
        for line in text.splitlines():
            click.echo(f"    {line}")


@cli.command(context_settings={"ignore_unknown_options": False})
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
    spec = _resolve_server(
        server, config=ctx.find_root().obj["config"], headers=_pairs(headers, "KEY"), env=_pairs(env, "KEY"), sse=sse
    )
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
        import json

        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        ctx.exit(EXIT_FAILURE if result.is_error else 0)
    status = render_result(
        result,
        out=sys.stdout,
        err=sys.stderr,
        output_dir=OutputDir(output_dir),
        stem=_safe_stem(tool),
        show_structured=structured,
    )
    ctx.exit(status)


# --- entry point ------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the command line; never returns (exits with 0, 1 for failures, 2 for usage errors)."""
    try:
        status = cli.main(args=list(argv) if argv is not None else None, prog_name=PROG, standalone_mode=False)
    except click.ClickException as error:
        if _debug and error.__cause__ is not None:
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
        if _debug:
            raise
        click.echo(f"Error: {describe_error(error)}", err=True)
        click.echo(f"(run `{PROG} --debug ...` for the traceback)", err=True)
        status = EXIT_FAILURE
    sys.exit(status if isinstance(status, int) else 0)
