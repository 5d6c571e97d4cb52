"""The client commands take every TARGET ``serve`` takes: ``file.py:factory``, ``module:factory`` and
``module:server`` run in-process, the factory called once for the one client, and nothing the
server's code prints reaches the command's stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixtures.commands import Cli, Main


def test_tools_of_a_file_factory(cli: Cli, shop: Path) -> None:
    done = cli("tools", "shop.py:build")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "add(a: integer, b?: number)",
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
    assert "not a URL, not path/to/file.py[:attr] or module:attr, and not a command on PATH" in err


# --- one grammar: a bare file.py, and every form for two commands ---------------------------------

APP = """\
from mcp_sse_server import McpServer

mcp = McpServer("app", "1.0.0")


@mcp.tool
def long_job(seconds: float = 1.0) -> str:
    \"\"\"Pretend to work.\"\"\"
    return f"worked {seconds:g}s"
"""


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """``app.py``: an McpServer named ``mcp``, no factory."""
    path = tmp_path / "app.py"
    path.write_text(APP)
    return path


def test_a_bare_file_serves_its_mcp_and_says_so(cli: Cli, app: Path) -> None:
    done = cli("tools", "app.py")
    assert (done.returncode, done.stdout) == (0, "long_job(seconds?: number)\n    Pretend to work.\n"), done.stderr
    assert "Using app.py:mcp (the McpServer named mcp)\n" in done.stderr
    done = cli("call", "app.py", "long_job", "seconds=2")
    assert (done.returncode, done.stdout) == (0, "worked 2s\n"), done.stderr


@pytest.mark.parametrize(
    ("source", "chosen"),
    [
        # `server` comes before `mcp`; a factory counts as well as a server
        (APP + "\n\ndef server():\n    return mcp\n", "Using app.py:server (the factory named server)"),
        # no default name: the one McpServer, however many names it has
        (APP + "\nweather = mcp\ndel mcp\nalias = weather\n", "Using app.py:weather (the only McpServer it defines)"),
    ],
)
def test_which_attribute_a_bare_file_serves(cli: Cli, tmp_path: Path, source: str, chosen: str) -> None:
    (tmp_path / "app.py").write_text(source)
    done = cli("inspect", "app.py")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("Using")] == [chosen]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "x = 1\n",
            "Error: empty.py defines no McpServer: none named server, mcp, app, and no other at module level; "
            "name a factory, as empty.py:build\n",
        ),
        (
            "from mcp_sse_server import McpServer\na = McpServer('a')\nb = McpServer('b')\n",
            "Error: empty.py defines several McpServers (a, b): name one, as empty.py:a\n",
        ),
    ],
)
def test_a_bare_file_with_none_or_several_servers_names_them(
    main: Main, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, message: str
) -> None:
    (tmp_path / "empty.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    for command in ("tools", "inspect"):
        assert main(command, "empty.py") == (2, "", message)


def test_a_missing_file_is_no_such_file_not_a_command(main: Main) -> None:
    # Before, `tools x.py` ran x.py as a command: "command 'x.py' not found".
    assert main("tools", "no_such_file_here.py") == (2, "", "Error: no such file: no_such_file_here.py\n")


def test_every_form_of_target_for_two_commands(cli: Cli, app: Path, tmp_path: Path, serve: Any) -> None:
    import sys

    stdio = f"{sys.executable} -m mcp_sse_server serve --stdio app.py:mcp"
    added = cli(
        "servers",
        "add",
        "configured",
        "--command",
        sys.executable,
        "--arg",
        "-m",
        "--arg",
        "mcp_sse_server",
        "--arg",
        "serve",
        "--arg",
        str(app) + ":mcp",
        "--arg",
        "--stdio",
    )
    assert added.returncode == 0, added.stderr
    served = serve(["app.py:mcp", "--port", "0"])
    url = served.url
    for target in ("app.py", "app.py:mcp", f"{app}:mcp", "app:mcp", stdio, "configured", url):
        listed = cli("tools", target)
        assert (listed.returncode, listed.stdout.splitlines()[:1]) == (0, ["long_job(seconds?: number)"]), (
            target,
            listed.stderr,
        )
        inspected = cli("inspect", target)
        assert inspected.returncode == 0, (target, inspected.stderr)
        assert "  long_job(seconds?: number)" in inspected.stdout.splitlines(), target


def test_resolve_target_is_the_grammar_serve_uses(app: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sse_server.cli.targets import resolve_target, target_source

    monkeypatch.chdir(app.parent)
    resolved = resolve_target("app.py")
    assert resolved.label == "app.py:mcp" and resolved.instance
    assert target_source("app.py") == str(app)
    with pytest.raises(Exception, match="is a URL: serve serves your Python"):
        resolve_target("http://127.0.0.1:1/mcp")


# --- a URL that wants a token -------------------------------------------------------------------


def test_a_url_that_wants_a_token_says_so_and_how_to_give_one(cli: Cli, serve: Any) -> None:
    from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey

    key = SigningKey("targets-key", "RS256")
    key_set = KeySetServer([key])
    try:
        served = serve(
            [
                "demo",
                "--port",
                "0",
                "--auth-issuer",
                ISSUER,
                "--auth-jwks-uri",
                key_set.url,
                "--auth-resource",
                RESOURCE,
            ]
        )
        # Before: "cannot connect to URL: the protected-resource metadata URL must be https ..." or
        # "cannot reach ...", with no word of a token.
        done = cli("tools", served.url)
        assert done.returncode == 1
        assert done.stderr.startswith(f"Error: {served.url} requires authorization (HTTP 401)"), done.stderr
        assert 'Pass a token with --header Authorization="Bearer TOKEN"' in done.stderr
        assert f"or sign in first with `mcp-sse-server login {served.url}`" in done.stderr
        assert done.stderr.count("\n") == 1
        refused = cli("tools", served.url, "--header", "Authorization=Bearer not-a-token")
        assert refused.returncode == 1
        assert refused.stderr.startswith(f"Error: {served.url} refused the Authorization header given (HTTP 401)")
        accepted = cli("tools", served.url, "--header", f"Authorization=Bearer {key.sign()}")
        assert accepted.returncode == 0 and "add(a: number, b: number)" in accepted.stdout, accepted.stderr
    finally:
        key_set.close()


def test_serve_reads_a_bare_file_as_the_client_commands_do(cli: Cli, app: Path) -> None:
    import shlex
    import sys

    # Before, `serve app.py` said "unknown server 'app.py'".
    served = shlex.join([sys.executable, "-m", "mcp_sse_server", "serve", "app.py", "--stdio"])
    done = cli("call", served, "long_job", "seconds=3")
    assert (done.returncode, done.stdout) == (0, "worked 3s\n"), done.stderr
    missing = cli("serve", "no_such_file_here.py", "--stdio")
    assert (missing.returncode, missing.stderr) == (2, "Error: no such file: no_such_file_here.py\n")
