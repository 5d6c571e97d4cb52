"""``serve``'s settings from the command line, the environment (``MCP_SSE_SERVER_*``) and a TOML file
(``--config``): every option from each, their precedence, ``--print-config`` with secrets masked,
and errors that name where a refused value came from."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from fixtures.commands import Cli, Main
from fixtures.served import Served
from mcp_sse_server.cli.serve import serve as SERVE
from mcp_sse_server.cli.values import DURATION, SIZE

NOT_SETTINGS = {"help", "config", "print_config"}
SETTINGS = [parameter for parameter in SERVE.params if parameter.name not in NOT_SETTINGS]


def printed(out: str) -> dict[str, tuple[str | None, str]]:
    """``--print-config``'s lines as ``{key: (value or None when not set, source)}``."""
    found: dict[str, tuple[str | None, str]] = {}
    for line in out.splitlines()[1:]:
        unset = re.fullmatch(r"# (\S+): not set \((.+)\)", line)
        if unset is not None:
            found[unset[1]] = (None, unset[2])
            continue
        match = re.fullmatch(r"(\S+) = (.+)  # (.+)", line)
        assert match is not None, line
        found[match[1]] = (match[2], match[3])
    return found


def key(parameter: click.Parameter) -> str:
    if isinstance(parameter, click.Option):
        return parameter.opts[0].removeprefix("--")
    return parameter.name or ""


def variable(parameter: click.Parameter) -> str:
    return "MCP_SSE_SERVER_" + key(parameter).upper().replace("-", "_")


def a_value(parameter: click.Parameter, tmp_path: Path) -> str:
    """A value the parameter takes, as the command line spells it."""
    if isinstance(parameter, click.Option) and parameter.is_flag:
        return "true"
    kind = parameter.type
    if kind is DURATION:
        return "7s"
    if kind is SIZE:
        return "3K"
    if isinstance(kind, click.Choice):
        return str(kind.choices[-1])
    if isinstance(kind, click.IntRange | type(click.INT)):
        return "3"
    if isinstance(kind, click.Path):
        if not kind.file_okay:
            return str(tmp_path)
        (tmp_path / "some.pem").write_text("-")
        return str(tmp_path / "some.pem")
    if parameter.name and "origin" in parameter.name:
        return "https://a.example"
    if parameter.name and ("url" in parameter.name or parameter.name in ("backend", "auth_issuer")):
        return "https://issuer.example/x"
    return "some-word"


def test_every_option_is_read_from_its_environment_variable(
    main: Main, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for parameter in SETTINGS:
        value = a_value(parameter, tmp_path)
        monkeypatch.setenv(variable(parameter), "1" if value == "true" else value)
    status, out, err = main("serve", "--print-config")
    assert status == 0, err
    shown = printed(out)
    assert set(shown) == {key(parameter) for parameter in SETTINGS}
    for parameter in SETTINGS:
        assert shown[key(parameter)][1] == variable(parameter), key(parameter)
    assert shown["allowed-origin"][1] == "MCP_SSE_SERVER_ALLOWED_ORIGIN"  # the option's name, not Python's
    assert shown["port"][0] == "3" and shown["session-idle-timeout"][0] == '"7s"' and shown["stdio"][0] == "true"


def test_every_option_is_read_from_the_file_and_named_by_its_line(main: Main, tmp_path: Path) -> None:
    lines = ["# every setting of serve"]
    for parameter in SETTINGS:
        value = a_value(parameter, tmp_path)
        if value == "true":
            lines.append(f"{key(parameter)} = true")
        elif parameter.multiple:
            lines.append(f'{key(parameter)} = ["{value}"]')
        else:
            lines.append(f'{key(parameter)} = "{value}"')
    (tmp_path / "serve.toml").write_text("\n".join(lines) + "\n")
    status, out, err = main("serve", "--config", str(tmp_path / "serve.toml"), "--print-config")
    assert status == 0, err
    shown = printed(out)
    for number, parameter in enumerate(SETTINGS, start=2):
        assert shown[key(parameter)][1] == f"{tmp_path / 'serve.toml'}:{number}", key(parameter)
    assert shown["max-request-bytes"][0] == '"3KiB"' and shown["allowed-origin"][0] == '["https://a.example"]'


def test_the_command_line_wins_over_the_environment_which_wins_over_the_file(
    main: Main, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('target = "math"\nport = 9001\nmax-sessions = 50\nhost = "127.0.0.2"\n')
    monkeypatch.setenv("MCP_SSE_SERVER_PORT", "9100")
    monkeypatch.setenv("MCP_SSE_SERVER_HOST", "127.0.0.3")
    monkeypatch.setenv("MCP_SSE_SERVER_SERVE_CONFIG", str(config))  # the file named by its variable
    status, out, err = main("serve", "--print-config", "--host", "127.0.0.4", "--json-response")
    assert status == 0, err
    shown = printed(out)
    assert shown["host"] == ('"127.0.0.4"', "command line")
    assert shown["port"] == ("9100", "MCP_SSE_SERVER_PORT")
    assert shown["max-sessions"] == ("50", f"{config}:3")
    assert shown["target"] == ('"math"', f"{config}:1")
    assert shown["json-response"] == ("true", "command line")
    assert shown["path"] == ('"/mcp"', "default")
    assert shown["session-max-lifetime"] == ('"12h"', "default")  # the limit's own default, shown
    # --config on the command line wins over the variable too
    other = tmp_path / "other.toml"
    other.write_text("port = 7000\n")
    monkeypatch.delenv("MCP_SSE_SERVER_PORT")
    status, out, _ = main("serve", "--config", str(other), "--print-config")
    assert printed(out)["port"] == ("7000", f"{other}:1") and printed(out)["target"][0] is None


def test_secrets_are_masked_and_variable_names_are_not(
    main: Main, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(
        'backend = "rediss://me:hunter2@cache.example:6380/0"\n'
        'auth-client-secret-env = "MY_SECRET_VAR"\n'
        'auth-introspection-url = "https://issuer.example/introspect?token=tok123&x=1"\n'
    )
    monkeypatch.setenv("MCP_SSE_SERVER_REDIS_URL", "redis://:s3cret@127.0.0.1:6379/0?password=again")
    status, out, err = main("serve", "--config", str(config), "--print-config")
    assert status == 0, err
    for secret in ("hunter2", "s3cret", "again", "tok123"):
        assert secret not in out
    shown = printed(out)
    assert shown["backend"][0] == '"rediss://me:***@cache.example:6380/0"'
    assert shown["redis-url"][0] == '"redis://:***@127.0.0.1:6379/0?password=***"'
    assert shown["auth-introspection-url"][0] == '"https://issuer.example/introspect?token=***&x=1"'
    assert shown["auth-client-secret-env"][0] == '"MY_SECRET_VAR"'  # a variable's name, not its secret


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port = 9000\nprot = 1\n", "serve.toml:2: unknown key 'prot' (did you mean 'port'?)"),
        ("\nmax_sessions = 5\n", "serve.toml:2: unknown key 'max_sessions' (did you mean 'max-sessions'?)"),
        ('port = "x"\n', "Invalid value for {config}:1 (--port): 'x' is not a valid integer"),
        ('host = "h"\nsession-idle-timeout = "soon"\n', "Invalid value for {config}:2 (--session-idle-timeout)"),
        ("max-header-count = 0\n", "--max-header-count (from {config}:1): max_header_count must be a positive"),
        ('json-response = "yes"\n', "serve.toml:1: json-response is a switch: true or false, not 'yes'"),
        ("port = [1, 2]\n", "serve.toml:1: port takes one value, not an array"),
        ("[limits]\nmax-sessions = 3\n", "serve.toml:1: unknown key 'limits'"),
        ("port = [1\n", "serve.toml: not TOML"),
    ],
)
def test_a_bad_file_is_a_usage_error_naming_the_file_and_line(
    main: Main, tmp_path: Path, text: str, message: str
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(text)
    status, out, err = main("serve", "--config", str(config))
    assert status == 2
    assert message.format(config=config) in err
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("MCP_SSE_SERVER_PORT", "abc", "Invalid value for MCP_SSE_SERVER_PORT (--port): 'abc'"),
        ("MCP_SSE_SERVER_JSON_RESPONSE", "maybe", "Invalid value for MCP_SSE_SERVER_JSON_RESPONSE (--json-response)"),
        ("MCP_SSE_SERVER_WORKER_TTL", "-1s", "Invalid value for MCP_SSE_SERVER_WORKER_TTL (--worker-ttl)"),
        ("MCP_SSE_SERVER_MAX_HEADER_COUNT", "0", "--max-header-count (from MCP_SSE_SERVER_MAX_HEADER_COUNT)"),
        ("MCP_SSE_SERVER_SERVE_CONFIG", "/no/such.toml", "MCP_SSE_SERVER_SERVE_CONFIG /no/such.toml: no such file"),
    ],
)
def test_a_bad_variable_is_a_usage_error_naming_the_variable(
    main: Main, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    status, _, err = main("serve", "--print-config")
    assert status == 2
    assert message in err


def test_stdio_ignores_http_settings_from_the_environment_and_refuses_them_on_the_command_line(cli: Cli) -> None:
    import os

    env = {**os.environ, "MCP_SSE_SERVER_PORT": "9000", "MCP_SSE_SERVER_STDIO": "1", "MCP_SSE_SERVER_TARGET": "math"}
    done = cli("serve", input="", env=env)  # stdin ends at once: the one session is over
    assert done.returncode == 0, done.stderr
    assert "Serving math over stdio" in done.stderr
    refused = cli("serve", "--port", "9000", input="", env=env)
    assert refused.returncode == 2
    assert "--port is an HTTP option" in refused.stderr


def test_a_server_serves_with_settings_from_the_file_and_the_environment(
    cli: Cli, cli_env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('target = "math"\nport = 0\npath = "/from-file"\n')
    server = Served(["--config", str(config)], tmp_path, {**cli_env, "MCP_SSE_SERVER_PATH": "/from-env"})
    try:
        assert server.label == "math"
        assert server.url == f"http://127.0.0.1:{server.port}/from-env"
        done = cli("call", server.url, "add", "a=2", "b=3")
        assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr
    finally:
        server.kill()


def test_what_print_config_prints_is_a_config_file_giving_the_same_settings(main: Main, tmp_path: Path) -> None:
    status, first, err = main(
        "serve", "math", "--max-sessions", "9", "--allowed-origin", "https://a.example", "--print-config"
    )
    assert status == 0, err
    (tmp_path / "printed.toml").write_text(first)
    status, again, err = main("serve", "--config", str(tmp_path / "printed.toml"), "--print-config")
    assert status == 0, err
    values = {name: value for name, (value, _) in printed(first).items()}
    assert {name: value for name, (value, _) in printed(again).items()} == values
    assert values["max-sessions"] == "9" and values["target"] == '"math"'
