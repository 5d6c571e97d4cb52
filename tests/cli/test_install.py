"""``install``: the entry each app's documentation shows, written into its file (parsed back here),
merged with what the file held (other entries and unknown keys kept, a backup first), a file that
cannot be parsed refused by file and line, and the written command really serving over stdio."""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures.commands import Cli, Main
from mcp_sse_server.cli.app_configs import APPS, default_path

APP = """\
from mcp_sse_server import McpServer

mcp = McpServer("weather", "1.0.0")


@mcp.tool
def forecast(city: str) -> str:
    \"\"\"Tomorrow's weather in CITY.\"\"\"
    return f"sunny in {city}"
"""


@pytest.fixture
def weather(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``weather.py`` in the working directory (of ``main`` and of ``cli``)."""
    path = tmp_path / "weather.py"
    path.write_text(APP)
    monkeypatch.chdir(tmp_path)
    return path


def _load(path: Path) -> Any:
    text = path.read_text()
    return yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)


def _served_command(weather: Path) -> list[str]:
    return [sys.executable, "-m", "mcp_sse_server", "serve", f"{weather}:mcp", "--stdio"]


# --- the entry each app reads, round-tripped through its file ---------------------------------------


STDIO_ENTRIES = {
    "claude-desktop": lambda words: {"command": words[0], "args": words[1:]},
    "claude-code": lambda words: {"type": "stdio", "command": words[0], "args": words[1:]},
    "cursor": lambda words: {"command": words[0], "args": words[1:]},
    "vscode": lambda words: {"type": "stdio", "command": words[0], "args": words[1:]},
    "windsurf": lambda words: {"command": words[0], "args": words[1:]},
    "gemini": lambda words: {"command": words[0], "args": words[1:]},
    "goose": lambda words: {
        "name": "weather",
        "type": "stdio",
        "cmd": words[0],
        "args": words[1:],
        "enabled": True,
        "timeout": 300,
    },
    "json": lambda words: {"type": "stdio", "command": words[0], "args": words[1:]},
}


@pytest.mark.parametrize("app", sorted(APPS))
def test_a_file_target_round_trips_through_each_apps_file(main: Main, weather: Path, app: str) -> None:
    config = weather.parent / ("config.yaml" if APPS[app].yaml else "config.json")
    status, out, err = main("install", "weather.py", "--client", app, "--config-file", str(config))
    assert status == 0, err
    assert "Using weather.py:mcp (the McpServer named mcp)" in err  # a bare file: its attribute chosen now
    assert out.startswith(f"Added weather in {config} for {APPS[app].title}.\n")
    written = _load(config)
    assert written == {APPS[app].key: {"weather": STDIO_ENTRIES[app](_served_command(weather))}}


HTTP_ENTRIES = {
    "claude-code": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "cursor": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "vscode": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "windsurf": {"serverUrl": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "gemini": {"httpUrl": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "goose": {
        "name": "remote",
        "type": "streamable_http",
        "uri": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "Bearer t"},
        "enabled": True,
        "timeout": 300,
    },
}


@pytest.mark.parametrize("app", sorted(HTTP_ENTRIES))
def test_a_url_with_headers_round_trips(main: Main, tmp_path: Path, app: str) -> None:
    config = tmp_path / ("config.yaml" if APPS[app].yaml else "config.json")
    args = ["https://mcp.example.com/mcp", "--client", app, "--name", "remote", "--header", "Authorization=Bearer t"]
    status, _, err = main("install", *args, "--config-file", str(config))
    assert status == 0, err
    assert _load(config) == {APPS[app].key: {"remote": HTTP_ENTRIES[app]}}


def test_claude_desktop_refuses_a_url_saying_where_remote_servers_go(main: Main) -> None:
    status, _, err = main("install", "https://mcp.example.com/mcp", "--client", "claude-desktop", "--print")
    assert status == 2
    assert (
        "takes only servers it starts (stdio): add a remote server in Claude Desktop under Settings > Connectors" in err
    )


# --- the documented examples -----------------------------------------------------------------------


def test_claude_code_matches_its_documented_http_example(main: Main) -> None:
    # From code.claude.com/docs/en/mcp (project scope, .mcp.json), the remote server example.
    documented = {"mcpServers": {"shared-server": {"type": "http", "url": "https://example.com/mcp"}}}
    status, out, err = main(
        "install", "https://example.com/mcp", "--client", "claude-code", "--name", "shared-server", "--print"
    )
    assert status == 0, err
    assert json.loads(out) == documented


def test_cursor_matches_its_documented_stdio_example(
    main: Main, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From cursor.com/docs/mcp, the stdio server example of mcp.json.
    documented = {
        "mcpServers": {"server-name": {"command": "npx", "args": ["-y", "mcp-server"], "env": {"API_KEY": "value"}}}
    }
    runner = tmp_path / "bin" / "npx"  # a stand-in on PATH: install checks the program exists
    runner.parent.mkdir()
    runner.write_text("#!/bin/sh\n")
    runner.chmod(runner.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{runner.parent}{os.pathsep}{os.environ['PATH']}")
    args = ["npx -y mcp-server", "--client", "cursor", "--name", "server-name", "--env", "API_KEY=value", "--print"]
    status, out, err = main("install", *args)
    assert status == 0, err
    assert json.loads(out) == documented


def test_vscode_matches_its_documented_example(main: Main) -> None:
    # From code.visualstudio.com/docs/copilot/reference/mcp-configuration: top-level "servers",
    # "type" on every entry; the HTTP server example.
    documented = {"servers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp"}}}
    args = ["https://api.githubcopilot.com/mcp", "--client", "vscode", "--name", "github", "--print"]
    status, out, err = main("install", *args)
    assert status == 0, err
    assert json.loads(out) == documented


# --- merging into a file that holds more ---------------------------------------------------------------


def test_merging_keeps_other_entries_and_unknown_keys_and_backs_up_first(main: Main, weather: Path) -> None:
    config = weather.parent / "settings.json"
    before = {
        "theme": "Dracula",
        "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"], "trust": True}},
        "futureSetting": {"nested": [1, 2]},
    }
    original = json.dumps(before, indent=4)
    config.write_text(original)
    status, out, err = main("install", "weather.py:mcp", "--client", "gemini", "--config-file", str(config))
    assert status == 0, err
    assert f"(the old file is {config}.bak)" in out
    after = _load(config)
    assert after["theme"] == "Dracula" and after["futureSetting"] == {"nested": [1, 2]}
    assert after["mcpServers"]["git"] == before["mcpServers"]["git"]
    assert after["mcpServers"]["weather"]["args"][-2:] == [f"{weather}:mcp", "--stdio"]
    assert (weather.parent / "settings.json.bak").read_text() == original
    # Again: the entry is replaced, not doubled, and the first backup is kept.
    status, out, _ = main("install", "weather.py:mcp", "--client", "gemini", "--config-file", str(config))
    assert status == 0 and out.startswith("Replaced weather in")
    assert (weather.parent / "settings.json.bak").read_text() == original
    assert (weather.parent / "settings.json.bak.1").exists()
    assert sorted(_load(config)["mcpServers"]) == ["git", "weather"]


def test_merging_into_goose_yaml_keeps_its_settings(main: Main, weather: Path) -> None:
    config = weather.parent / "config.yaml"
    config.write_text(
        "# my goose\nGOOSE_PROVIDER: anthropic\nextensions:\n  developer:\n    bundled: true\n"
        "    enabled: true\n    name: developer\n    timeout: 300\n    type: builtin\n"
    )
    status, _, err = main("install", "weather.py:mcp", "--client", "goose", "--config-file", str(config))
    assert status == 0, err
    assert "Comments in" in err  # said, since the rewrite drops them (the backup keeps them)
    after = _load(config)
    assert after["GOOSE_PROVIDER"] == "anthropic"
    assert after["extensions"]["developer"]["type"] == "builtin"
    assert after["extensions"]["weather"]["cmd"] == sys.executable


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("broken.json", '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n', "broken.json:3: not valid JSON"),
        ("broken.yaml", "extensions:\n  a: [1, 2\nother: 3\n", "broken.yaml:3: not valid YAML"),
        ("list.json", "[1, 2]\n", "list.json:1: the file holds a list, not an object"),
    ],
)
def test_a_file_that_cannot_be_parsed_is_refused_by_file_and_line(
    main: Main, weather: Path, name: str, text: str, message: str
) -> None:
    config = weather.parent / name
    config.write_text(text)
    app = "goose" if name.endswith(".yaml") else "cursor"
    status, out, err = main("install", "weather.py:mcp", "--client", app, "--config-file", str(config))
    assert (status, out) == (1, "")
    assert err.startswith(f"Error: {weather.parent}{os.sep}{message}"), err  # file:line
    assert config.read_text() == text  # untouched
    assert not list(weather.parent.glob(f"{name}.bak*"))


# --- where each app keeps its file, and what is refused ------------------------------------------------


def test_default_paths_per_system() -> None:
    home = {"linux": "/home/ann", "darwin": "/Users/ann", "win32": "C:\\Users\\ann"}
    environ = {"APPDATA": "C:\\Users\\ann\\AppData\\Roaming"}

    def where(app: str, system: str) -> str | None:
        return default_path(app, platform=system, home=home[system], environ=environ)

    assert (
        where("claude-desktop", "darwin") == "/Users/ann/Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert where("claude-desktop", "win32") == "C:\\Users\\ann\\AppData\\Roaming\\Claude\\claude_desktop_config.json"
    assert where("claude-desktop", "linux") is None  # no Linux app, no documented file
    assert where("cursor", "win32") == "C:\\Users\\ann\\.cursor\\mcp.json"
    assert where("goose", "linux") == "/home/ann/.config/goose/config.yaml"
    assert where("goose", "win32") == "C:\\Users\\ann\\AppData\\Roaming\\Block\\goose\\config\\config.yaml"
    assert where("windsurf", "darwin") == "/Users/ann/.codeium/windsurf/mcp_config.json"
    assert where("gemini", "linux") == "/home/ann/.gemini/settings.json"
    assert (where("vscode", "linux"), where("claude-code", "win32")) == (".vscode/mcp.json", ".mcp.json")


def test_writes_the_apps_own_file_and_the_entry_serves(cli: Cli, weather: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "HOME": str(weather.parent / "home")}
    done = cli("install", "weather.py", "--client", "cursor", env=env)
    assert done.returncode == 0, done.stderr
    config = weather.parent / "home" / ".cursor" / "mcp.json"
    entry = _load(config)["mcpServers"]["weather"]
    # What Cursor would run: it serves the tool over stdio.
    command = shlex.join([entry["command"], *entry["args"]])
    listed = cli("tools", command, env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == "forecast(city: string)"


def test_a_module_target_gets_this_directory_on_its_path(main: Main, weather: Path) -> None:
    status, out, err = main("install", "weather:mcp", "--client", "claude-code", "--print")
    assert status == 0, err
    entry = json.loads(out)["mcpServers"]["weather"]
    assert entry["env"] == {"PYTHONPATH": str(weather.parent)}
    assert entry["args"] == ["-m", "mcp_sse_server", "serve", "weather:mcp", "--stdio"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["https://h.example/mcp", "--env", "A=1"], "Error: --env goes with a server the app starts, not with a URL\n"),
        (["weather.py:mcp", "--header", "A=1"], "Error: --header goes with a URL\n"),
        (["no-such-program-xyz --flag"], "Error: unknown server 'no-such-program-xyz --flag': not a URL"),
        (["missing.py:mcp"], "Error: no such file: missing.py\n"),
    ],
)
def test_usage_errors(main: Main, weather: Path, args: list[str], message: str) -> None:
    status, out, err = main("install", *args, "--client", "cursor", "--print")
    assert (status, out) == (2, "")
    assert err.startswith(message)
