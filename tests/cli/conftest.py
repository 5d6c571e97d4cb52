"""Run the real ``mcp-sse-server`` command in a subprocess, isolated from the user's registry."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# A safety net so a hung command fails its test instead of the run; no test waits this long when it works.
COMMAND_TIMEOUT = 60.0

Cli = Callable[..., subprocess.CompletedProcess[str]]
Main = Callable[..., tuple[int, str, str]]


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


# A server of your own, as `serve`, `dev` and the client commands take it: `shop.py:build` (a factory),
# `shop:build` (the module), `shop:instance` (an McpServer). Its code prints, and runs a program that
# prints, so the tests can check that none of it reaches a command's stdout (or a stdio stream).
SHOP = '''\
import subprocess
import sys

from mcp_sse_server import McpServer

print("importing shop")
built = []


def build():
    """The factory: counts its calls."""
    built.append(1)
    return make()


def make():
    server = McpServer("shop", "2.0.0", title="The Shop", instructions="Sells things.\\nAsk nicely.")

    @server.tool
    def add(a: int, b: float = 0.0) -> int:
        """Add two numbers, rounding down."""
        return int(a + b)

    @server.tool
    def shout(text: str) -> str:
        """Shout TEXT."""
        print("shouting")
        subprocess.run([sys.executable, "-c", "print('from a subprocess')"], check=True)
        return text.upper()

    @server.tool
    def builds() -> int:
        """How many times this process called the factory."""
        return len(built)

    @server.resource("shop://about", title="About the shop", mime_type="text/plain")
    def about() -> str:
        """What the shop is."""
        return "We sell things.\\n"

    @server.resource("shop://logo.png", mime_type="image/png")
    def logo() -> bytes:
        return b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8)

    @server.resource("shop://items/{item}")
    def item(item: str) -> str:
        """One item of the shop."""
        return f"item {item}"

    @server.prompt
    def greet(who: str, tone: str = "warm") -> str:
        """Greet someone."""
        return f"Say hello to {who}, {tone}ly."

    return server


instance = make()
'''


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """``shop.py`` in the working directory of the ``cli`` commands (tmp_path)."""
    path = tmp_path / "shop.py"
    path.write_text(SHOP)
    return path
