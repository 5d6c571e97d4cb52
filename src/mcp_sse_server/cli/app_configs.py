"""The MCP configuration files of the apps ``install`` writes to: where each app keeps its file
(per operating system, as the app documents it), the shape of one server entry in it, and
merging an entry into a file that already holds others.

Rules:

1. One :class:`Launch` says what the app runs (``command``/``args``/``env``) or reaches (``url``/
   ``headers``); each :class:`AppFormat` turns it into that app's entry, leaving out what is empty.
2. A file is read whole and changed in one place, ``<key>.<name>``: every other entry and every
   key this module does not know is written back as read. An entry of the same name is replaced.
3. Before an existing file is changed it is copied to ``<file>.bak`` (``.bak.1``, ``.bak.2`` ...
   when that exists); the new text is written to a temporary file beside it and moved over it.
4. A file that cannot be parsed is refused, naming ``file:line``, and left alone; so is one whose
   top level (or ``<key>``) is not an object. An empty file counts as empty config.
5. Goose's file is YAML: read with PyYAML's safe loader and written with its safe dumper (its
   comments are not kept: the backup has them); every other app's file is JSON (no comments).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any, Final

from .errors import BadUsage, Failure


@dataclasses.dataclass(frozen=True)
class Launch:
    """What an app starts (a stdio server: ``command``, ``args``, ``env``) or reaches (``url``, ``headers``)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: an app's entry leaves out an empty ``env`` or ``headers``."""
    return {key: value for key, value in fields.items() if value not in (None, {}, [])}


def _stdio(*, typed: bool) -> Callable[[Launch, str], dict[str, Any]]:
    def entry(launch: Launch, name: str) -> dict[str, Any]:
        env = dict(launch.env)
        return _given(type="stdio" if typed else None, command=launch.command, args=list(launch.args), env=env)

    return entry


def _http(url_key: str, *, typed: bool) -> Callable[[Launch, str], dict[str, Any]]:
    def entry(launch: Launch, name: str) -> dict[str, Any]:
        return _given(type="http" if typed else None, **{url_key: launch.url}, headers=dict(launch.headers))

    return entry


def _goose_stdio(launch: Launch, name: str) -> dict[str, Any]:
    return _given(
        name=name,
        type="stdio",
        cmd=launch.command,
        args=list(launch.args),
        envs=dict(launch.env),
        enabled=True,
        timeout=300,
    )


def _goose_http(launch: Launch, name: str) -> dict[str, Any]:
    return _given(
        name=name, type="streamable_http", uri=launch.url, headers=dict(launch.headers), enabled=True, timeout=300
    )


@dataclasses.dataclass(frozen=True)
class AppFormat:
    """One app's config file: its ``title``, the top-level ``key`` its entries live under, its
    default ``paths`` per ``sys.platform`` family (``~`` and ``%APPDATA%`` expanded), and how a
    stdio and an HTTP :class:`Launch` become an entry (``http`` None: the file takes no URLs)."""

    title: str
    key: str
    paths: Mapping[str, str]
    stdio: Callable[[Launch, str], dict[str, Any]]
    http: Callable[[Launch, str], dict[str, Any]] | None
    yaml: bool = False
    note: str = ""  # said when the app has no documented file here, or takes no URLs

    def entry(self, launch: Launch, name: str) -> dict[str, Any]:
        """The entry for ``launch`` named ``name``; BadUsage when this app's file cannot hold it."""
        if launch.url is None:
            return self.stdio(launch, name)
        if self.http is None:
            raise BadUsage(f"{self.title}'s config file takes only servers it starts (stdio): {self.note}")
        return self.http(launch, name)

    def wrapped(self, entry: Mapping[str, Any], name: str) -> dict[str, Any]:
        """The entry as the file holds it: ``{key: {name: entry}}``."""
        return {self.key: {name: dict(entry)}}


def _json_app(title: str, path: str | None, url_key: str = "url", *, key: str = "mcpServers", typed: bool) -> AppFormat:
    """An app whose JSON file holds ``{key: {name: entry}}``, at ``path`` on every system."""
    paths = dict.fromkeys(("linux", "darwin", "win32"), path) if path else {}
    return AppFormat(title, key, paths, _stdio(typed=typed), _http(url_key, typed=typed))


APPS: Final[Mapping[str, AppFormat]] = {
    # modelcontextprotocol.io "Connect to local MCP servers"; the app exists for macOS and Windows only.
    "claude-desktop": AppFormat(
        "Claude Desktop",
        "mcpServers",
        {
            "darwin": "~/Library/Application Support/Claude/claude_desktop_config.json",
            "win32": "%APPDATA%\\Claude\\claude_desktop_config.json",
        },
        _stdio(typed=False),
        None,
        note="add a remote server in Claude Desktop under Settings > Connectors",
    ),
    # code.claude.com/docs/en/mcp: project scope is .mcp.json (user scope: top-level mcpServers of ~/.claude.json).
    "claude-code": _json_app("Claude Code", ".mcp.json", typed=True),
    # cursor.com/docs/mcp: ~/.cursor/mcp.json for every project (.cursor/mcp.json for one).
    "cursor": _json_app("Cursor", "~/.cursor/mcp.json", typed=False),
    # code.visualstudio.com/docs/copilot/reference/mcp-configuration: .vscode/mcp.json, "servers", "type" required.
    "vscode": _json_app("VS Code", ".vscode/mcp.json", key="servers", typed=True),
    # docs.windsurf.com/windsurf/cascade/mcp: ~/.codeium/windsurf/mcp_config.json, serverUrl for HTTP.
    "windsurf": _json_app("Windsurf", "~/.codeium/windsurf/mcp_config.json", "serverUrl", typed=False),
    # geminicli.com/docs/tools/mcp-server: ~/.gemini/settings.json, httpUrl for Streamable HTTP.
    "gemini": _json_app("Gemini CLI", "~/.gemini/settings.json", "httpUrl", typed=False),
    # block.github.io/goose/docs/guides/config-files: extensions in config.yaml.
    "goose": AppFormat(
        "Goose",
        "extensions",
        {
            "linux": "~/.config/goose/config.yaml",
            "darwin": "~/.config/goose/config.yaml",
            "win32": "%APPDATA%\\Block\\goose\\config\\config.yaml",
        },
        _goose_stdio,
        _goose_http,
        yaml=True,
    ),
    # Any app reading the common mcpServers shape: written only where --config-file says.
    "json": _json_app("an mcpServers file", None, typed=True),
}


def platform_family(platform: str) -> str:
    """``linux``, ``darwin`` or ``win32`` for a ``sys.platform`` value (BSDs read as Linux)."""
    return "win32" if platform.startswith(("win", "cygwin")) else "darwin" if platform == "darwin" else "linux"


def default_path(app: str, *, platform: str, home: str, environ: Mapping[str, str]) -> str | None:
    """Where ``app`` keeps its config on ``platform``, or None where it documents none; a relative
    path (project scope) is relative to the working directory."""
    import ntpath
    import posixpath

    template = APPS[app].paths.get(platform_family(platform))
    if template is None:
        return None
    windows = platform_family(platform) == "win32"
    if template.startswith("%APPDATA%"):
        appdata = environ.get("APPDATA") or ntpath.join(home, "AppData", "Roaming")
        return appdata + template[len("%APPDATA%") :]
    if template.startswith("~/"):
        rest = template[2:].split("/")
        return ntpath.join(home, *rest) if windows else posixpath.join(home, *rest)
    return template.replace("/", "\\") if windows else template


# --- reading and writing a file ------------------------------------------------------------------


def read_config(path: str, *, yaml: bool) -> dict[str, Any]:
    """The config in ``path`` as a dict (empty for a missing or blank file); Failure naming
    ``path:line`` when it cannot be parsed, or when its top level is not an object."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise Failure(f"cannot read {path}: {error}") from error
    if not text.strip():
        return {}
    data = _parse_yaml(path, text) if yaml else _parse_json(path, text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise Failure(f"{path}:1: the file holds a {type(data).__name__}, not an object; fix it or give --config-file")
    return data


def _parse_json(path: str, text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise Failure(
            f"{path}:{error.lineno}: not valid JSON ({error.msg}, column {error.colno}); "
            "fix it or give --config-file: nothing was changed"
        ) from None


def _parse_yaml(path: str, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f"{mark.line + 1}" if mark is not None else "1"
        problem = getattr(error, "problem", None) or "cannot be read safely"
        raise Failure(
            f"{path}:{line}: not valid YAML ({problem}); fix it or give --config-file: nothing was changed"
        ) from None


def merged(data: dict[str, Any], key: str, name: str, entry: Mapping[str, Any], path: str) -> bool:
    """Put ``entry`` at ``data[key][name]``, keeping everything else; True when it replaced one."""
    servers = data.setdefault(key, {})
    if servers is None:
        servers = data[key] = {}
    if not isinstance(servers, dict):
        raise Failure(f"{path}: its {key!r} is a {type(servers).__name__}, not an object; fix it: nothing was changed")
    replaced = name in servers
    servers[name] = dict(entry)
    return replaced


def render(data: Mapping[str, Any], *, yaml: bool) -> str:
    """``data`` as the file's text."""
    if yaml:
        import yaml as pyyaml

        text: str = pyyaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, default_flow_style=False)
        return text
    import json

    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def backup(path: str) -> str | None:
    """Copy ``path`` to the first free of ``path.bak``, ``path.bak.1``, ...; None when there is no file."""
    import shutil

    if not os.path.exists(path):
        return None
    for number in range(1000):
        candidate = f"{path}.bak" + (f".{number}" if number else "")
        if not os.path.exists(candidate):
            shutil.copy2(path, candidate)
            return candidate
    raise Failure(f"{path}: a thousand backups exist already; remove some of them")


def write_config(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it, so a reader never sees half a file."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else None
    handle, temporary = tempfile.mkstemp(prefix=".install-", dir=directory, text=True)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
