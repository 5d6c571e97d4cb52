"""The client commands take every TARGET ``serve`` takes: ``file.py:factory``, ``module:factory`` and
``module:server`` run in-process, the factory called once for the one client, and nothing the
server's code prints reaches the command's stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.commands import Cli, Main


def test_tools_of_a_file_factory(cli: Cli, shop: Path) -> None:
    done = cli("tools", "shop.py:build")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "add(a: integer, [b: number])",
        "    Add two numbers, rounding down.",
        "shout(text: string)",
        "    Shout TEXT.",
        "builds()",
        "    How many times this process called the factory.",
    ]
    assert "importing shop" in done.stderr  # the module's print(), kept off stdout


def test_call_a_file_factory_builds_one_server(cli: Cli, shop: Path) -> None:
    done = cli("call", f"{shop}:build", "add", "a=2", "b=3.5")  # an absolute path works as well
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr
    done = cli("call", "shop.py:build", "builds")
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr  # called once, for the one client


def test_a_module_factory_and_a_server_object(cli: Cli, shop: Path) -> None:
    done = cli("call", "shop:build", "add", "a=1", "b=1")  # found in the working directory, as `serve` finds it
    assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr
    done = cli("call", "shop:instance", "builds")
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr  # an McpServer itself: no factory called


def test_what_the_servers_code_prints_goes_to_stderr(cli: Cli, shop: Path) -> None:
    done = cli("call", "shop.py:build", "shout", "text=hi")
    assert (done.returncode, done.stdout) == (0, "HI\n"), done.stderr
    # print() in the handler (a worker thread), and a program the tool ran
    assert "shouting\n" in done.stderr and "from a subprocess\n" in done.stderr
    listed = cli("tools", "shop.py:build", "--json")
    assert [tool["name"] for tool in json.loads(listed.stdout)] == ["add", "shout", "builds"]


def test_a_target_a_client_cannot_use_is_a_failure_in_one_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def build():\n    raise RuntimeError('no database')\n")
    done = cli("tools", "broken.py:build")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: no database\n")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tools", "missing.py:build"], "Error: no such file: missing.py\n"),
        (["tools", "no_such_module_xyz:build"], "Error: no module named 'no_such_module_xyz'\n"),
        (["resources", "json:nothing"], "Error: json has no attribute 'nothing'\n"),
        (["inspect", "json:JSONDecoder"], "Error: json:JSONDecoder returned JSONDecoder, not an McpServer\n"),
        (["prompts", "nowhere"], "Error: unknown server 'nowhere': not in the registry"),
    ],
)
def test_usage_errors_about_targets(main: Main, args: list[str], message: str) -> None:
    status, out, err = main(*args)
    assert (status, out) == (2, "")
    assert err.startswith(message)
    assert err.count("\n") == 1


def test_the_unknown_server_message_names_every_kind_of_target(main: Main) -> None:
    _, _, err = main("tools", "nowhere")
    assert "not a URL, not module:attr or path/to/file.py:attr, and not a command on PATH" in err
