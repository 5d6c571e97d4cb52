"""Run the real ``mcp-sse-server`` command in a subprocess, isolated from the user's registry."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.commands import COMMAND_TIMEOUT, SHOP, Cli, Main
from fixtures.served import Served


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["MCP_SSE_SERVER_CONFIG"] = str(tmp_path / "registry" / "mcp_server.json")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env.pop("MCP_SSE_SERVER_DEBUG", None)
    return env


@pytest.fixture
def cli(cli_env: dict[str, str], tmp_path: Path) -> Cli:
    """``cli("call", "math", "add", "a=2", "b=3")`` runs ``python -m mcp_sse_server`` and returns the result."""

    def run(
        *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcp_sse_server", *args],
            capture_output=True,
            text=True,
            input=input,
            env=env or cli_env,
            cwd=tmp_path,
            timeout=COMMAND_TIMEOUT,
        )

    return run


@pytest.fixture
def main(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Main:
    """``main("call", ...)`` runs the command's entry point in this process: ``(status, stdout, stderr)``.

    For cases that fail before any server work, where a process per case would only cost time.
    """
    from mcp_sse_server import cli as command
    from mcp_sse_server.cli import errors

    for key in ("MCP_SSE_SERVER_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(key, cli_env[key])
    monkeypatch.setattr(errors, "_debug", False)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            command.main(list(args))
        out, err = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 1), out, err

    return run


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """``shop.py`` (``SHOP``) in the working directory of the ``cli`` commands (tmp_path)."""
    path = tmp_path / "shop.py"
    path.write_text(SHOP)
    return path


@pytest.fixture
def serve(cli_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[[list[str]], Served]]:
    """``serve(args)``: a ``serve`` process, killed after the test."""
    started: list[Served] = []

    def start(args: list[str]) -> Served:
        served = Served(args, tmp_path, cli_env)
        started.append(served)
        return served

    yield start
    for served in started:
        served.kill()
