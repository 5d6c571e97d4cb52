"""``tools`` and ``call`` against a stdio server named by its command line."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from fixtures.commands import Cli

pytest.importorskip("mcp.server.mcpserver", reason="the official MCP SDK (test dependency mcp>=2) is not installed")

SERVER = shlex.join([sys.executable, str(Path(__file__).with_name("sdk_stdio_server.py"))])


def test_tools_of_a_stdio_server(cli: Cli) -> None:
    done = cli("tools", SERVER)
    assert done.returncode == 0, done.stderr
    assert "shout(text: string, times?: integer)" in done.stdout.splitlines()


def test_call_a_stdio_server_with_converted_arguments(cli: Cli) -> None:
    done = cli("call", SERVER, "shout", "text=hi", "times=3")
    assert (done.returncode, done.stdout) == (0, "HI HI HI\n"), done.stderr
    done = cli("call", SERVER, "total", "values=[1, 2.5]")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "3.5"


def test_a_failing_stdio_tool_exits_1(cli: Cli) -> None:
    done = cli("call", SERVER, "fail", "reason=boom")
    assert done.returncode == 1
    assert done.stdout == ""


def test_bad_arguments_for_a_stdio_tool(cli: Cli) -> None:
    done = cli("call", SERVER, "shout", "text=hi", "times=many")
    assert done.returncode == 2
    assert done.stderr.endswith("Error: argument 'times' must be an integer, got 'many'\n")


def test_a_stdio_server_registered_by_name(cli: Cli, tmp_path: Path) -> None:
    server = str(Path(__file__).with_name("sdk_stdio_server.py"))
    done = cli("servers", "add", "shouty", "--command", sys.executable, "--arg", server)
    assert done.returncode == 0, done.stderr
    done = cli("call", "shouty", "shout", "text=ok")
    assert (done.returncode, done.stdout) == (0, "OK\n"), done.stderr


def test_a_command_that_is_not_a_server_fails_in_one_line(cli: Cli) -> None:
    done = cli("call", shlex.join([sys.executable, "-c", "pass"]), "anything")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_a_missing_program_fails_in_one_line(cli: Cli) -> None:
    done = cli("call", "no-such-program-xyz --flag", "anything")
    assert done.returncode == 1
    assert "no-such-program-xyz" in done.stderr
    assert "Traceback" not in done.stderr


def test_env_reaches_the_stdio_server(cli: Cli) -> None:
    done = cli("call", SERVER, "getenv", "name=CLI_TEST_VALUE", "--env", "CLI_TEST_VALUE=42")
    assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr
