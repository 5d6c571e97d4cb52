"""The command run for real: in-memory servers, the registry, argument and usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.commands import COMMAND_TIMEOUT, Cli, Main
from fixtures.served import default_signals


def test_console_script_is_installed_and_answers_help(cli_env: dict[str, str]) -> None:
    script = Path(sys.executable).with_name("mcp-sse-server")
    if not script.exists():
        pytest.skip("the package is not installed with its console script in this environment")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=cli_env, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0
    for command in ("serve", "servers", "tools", "call"):
        assert command in done.stdout


def test_help_imports_neither_the_http_stack_nor_the_clients(cli: Cli) -> None:
    done = cli("--help")  # warm-up is irrelevant: this checks what gets imported, not how fast
    assert done.returncode == 0
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mcp_sse_server", "--help"],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines() if "|" in line}
    for heavy in ("uvicorn", "httpx", "httpcore", "starlette", "mcp_sse_server.client.http", "mcp_sse_server.cli"):
        if heavy == "mcp_sse_server.cli":
            assert heavy in imported  # sanity: the trace covers the CLI itself
        else:
            assert heavy not in imported, f"{heavy} is imported for --help"


def test_version(cli: Cli) -> None:
    done = cli("--version")
    assert done.returncode == 0
    assert "mcp-sse-server" in done.stdout


def test_call_math_add_prints_the_sum(cli: Cli) -> None:
    done = cli("call", "math", "add", "a=2", "b=3")
    assert (done.returncode, done.stdout, done.stderr) == (0, "5\n", "")


def test_integers_stay_exact(cli: Cli) -> None:
    done = cli("call", "math", "power", "base=2", "exponent=100")
    assert done.stdout == f"{2**100}\n"


def test_json_arguments(cli: Cli) -> None:
    done = cli("call", "math", "multiply", "--json", '{"a": 6, "b": 7}')
    assert (done.returncode, done.stdout) == (0, "42\n")


def test_an_is_error_result_exits_1_with_its_message(cli: Cli) -> None:
    done = cli("call", "math", "divide", "a=1", "b=0")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "zero" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["call", "math", "add", "a=x", "b=1"], "Error: argument 'a' must be a number, got 'x'\n"),
        (["call", "math", "add", "a=1"], "Error: missing required argument 'b' for add; it takes: a, b\n"),
        (["call", "math", "add", "a=1", "b=2", "c=3"], "Error: unknown argument 'c' for add; it takes: a, b\n"),
        (["call", "math", "add", "a"], "Error: 'a' is not key=value\n"),
        (["call", "math", "nope"], "Error: unknown tool 'nope' on math; its tools are: add, subtract,"),
        (["call", "maht", "add"], "Error: unknown server 'maht': not in the registry"),
        (["tools", "no-such-command-anywhere"], "Error: unknown server 'no-such-command-anywhere'"),
        (["serve", "nope"], "Error: unknown server 'nope'; use a built-in (artifact_instructions, demo, math)"),
        (["serve", "no_such_module_xyz:build"], "Error: no module named 'no_such_module_xyz'"),
        (["serve", "missing.py:build"], "Error: no such file: missing.py"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(main: Main, args: list[str], message: str) -> None:
    status, _, err = main(*args)  # in-process: the same main() the command runs, without a process per case
    assert status == 2
    assert err.startswith(message)
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_usage_errors_in_a_real_process(cli: Cli) -> None:
    done = cli("call", "math", "add", "a=x", "b=1")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "Error: argument 'a' must be a number, got 'x'\n")


def test_click_usage_errors_exit_2(cli: Cli) -> None:
    done = cli("call", "math")
    assert done.returncode == 2
    assert "Missing argument 'TOOL'" in done.stderr


def test_tools_lists_signatures_and_descriptions(cli: Cli) -> None:
    done = cli("tools", "math")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == "add(a: number, b: number)"
    assert lines[1].startswith("    Add two numbers")
    assert "log(x: number, base?: number)" in lines
    assert "factorial(n: integer)" in lines


def test_tools_as_json(cli: Cli) -> None:
    done = cli("tools", "artifact_instructions", "--json")
    [tool] = json.loads(done.stdout)
    assert tool["name"] == "get_artifact_instructions"
    assert tool["inputSchema"]["required"] == ["type"]


def test_enum_arguments_are_checked_before_the_call(cli: Cli) -> None:
    done = cli("call", "artifact_instructions", "get_artifact_instructions", "type=pdf")
    assert done.returncode == 2
    assert "must be one of: code, documents, html, svg, mermaid, react" in done.stderr
    done = cli("call", "artifact_instructions", "get_artifact_instructions", "type=svg")
    assert done.returncode == 0
    assert "viewBox" in done.stdout


def test_progress_and_logs_reach_stderr_as_lines_off_a_terminal(cli: Cli) -> None:
    done = cli("call", "demo", "slow_count", "steps=2", "interval=0")
    assert done.returncode == 0
    assert done.stdout == "Counted to 2.\n"
    assert "progress: 1/2 (50%) step 1 of 2\n" in done.stderr
    assert "progress: 2/2 (100%) step 2 of 2\n" in done.stderr
    assert '[info] slow_count: {"event": "start", "steps": 2}\n' in done.stderr


def test_log_level_is_sent_to_the_server(cli: Cli) -> None:
    done = cli("call", "demo", "slow_count", "steps=2", "interval=0", "--log-level", "info")
    assert "[info] slow_count" in done.stderr
    assert "[debug]" not in done.stderr


def test_images_are_saved_in_the_output_dir(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "images"
    done = cli("call", "demo", "draw_swatch", "color=#00ff00", "--output-dir", str(out))
    assert done.returncode == 0
    [saved] = list(out.iterdir())
    assert saved.suffix == ".png"
    assert saved.read_bytes().startswith(b"\x89PNG")
    assert f"saved to {saved}]" in done.stdout
    assert "[resource link demo://swatch.png" in done.stdout


def test_raw_prints_the_result_as_received(cli: Cli) -> None:
    done = cli("call", "math", "add", "a=2", "b=3", "--raw")
    raw = json.loads(done.stdout)
    assert raw["content"] == [{"type": "text", "text": "5"}] and raw["structuredContent"] == {"result": 5}
    assert raw["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "math"  # as received, stamp included
    done = cli("call", "math", "divide", "a=1", "b=0", "--raw")
    assert done.returncode == 1
    assert json.loads(done.stdout)["isError"] is True


def test_unreachable_url_is_one_line_and_exit_1(cli: Cli) -> None:
    done = cli("tools", "http://127.0.0.1:9/mcp")  # the discard port: nothing listens on it
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ")
    assert "127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr


def test_debug_shows_the_traceback(cli: Cli) -> None:
    done = cli("--debug", "tools", "http://127.0.0.1:9/mcp")
    assert done.returncode != 0
    assert "Traceback" in done.stderr


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def build():\n    return 42\n", "returned int, not an McpServer"),
        ("build = 3\n", "is not callable"),
        ("", "has no attribute 'build'"),
    ],
)
def test_a_bad_factory_is_a_usage_error_before_listening(cli: Cli, tmp_path: Path, source: str, message: str) -> None:
    (tmp_path / "bad.py").write_text(source)
    done = cli("serve", "bad.py:build", "--port", "0")
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_certfile_without_keyfile_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("x")
    done = cli("serve", "--certfile", str(tmp_path / "cert.pem"))
    assert done.returncode == 2
    assert "--certfile and --keyfile go together" in done.stderr


# --- the registry ---------------------------------------------------------------------------------------


def test_servers_add_list_remove_with_a_config_file(cli: Cli, tmp_path: Path) -> None:
    registry = tmp_path / "elsewhere" / "servers.json"
    config = ["--config", str(registry)]
    done = cli(*config, "servers", "list")
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == f"Registry: {registry}"
    assert "Math" in done.stdout  # the default in-memory servers

    done = cli(*config, "servers", "add", "calc", "--inmemory", "math")
    assert (done.returncode, done.stdout) == (0, f"Added calc (inmemory math) to {registry}\n")
    done = cli(
        *config, "servers", "add", "web", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization=Bearer x"
    )
    assert done.returncode == 0
    done = cli(*config, "servers", "add", "local", "--command", "python", "--arg", "-m", "--arg", "srv", "--env", "A=1")
    assert done.returncode == 0

    listed = cli(*config, "servers", "list").stdout
    assert "calc" in listed and "inmemory math" in listed
    assert "streamable http://127.0.0.1:9/mcp" in listed
    assert "stdio python -m srv" in listed
    assert "Bearer" not in listed  # headers may hold secrets

    saved = json.loads(registry.read_text())["mcpServers"]
    assert saved["local"] == {"type": "stdio", "command": "python", "args": ["-m", "srv"], "env": {"A": "1"}}
    assert saved["web"]["headers"] == {"Authorization": "Bearer x"}

    # a registered name is callable
    done = cli(*config, "call", "calc", "add", "a=1", "b=2")
    assert (done.returncode, done.stdout) == (0, "3\n")

    done = cli(*config, "servers", "add", "calc", "--inmemory", "artifact_instructions")
    assert done.returncode == 1
    assert "already" in done.stderr and "--replace" in done.stderr
    done = cli(*config, "servers", "add", "calc", "--inmemory", "artifact_instructions", "--replace")
    assert done.returncode == 0

    done = cli(*config, "servers", "remove", "calc")
    assert (done.returncode, done.stdout) == (0, f"Removed calc from {registry}\n")
    assert "calc" not in json.loads(registry.read_text())["mcpServers"]
    done = cli(*config, "servers", "remove", "calc")
    assert done.returncode == 1
    assert "no server named 'calc'" in done.stderr


def test_config_comes_from_the_environment_too(cli: Cli, cli_env: dict[str, str]) -> None:
    done = cli("servers", "list")
    assert done.stdout.splitlines()[0] == f"Registry: {cli_env['MCP_SSE_SERVER_CONFIG']}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["servers", "add", "x"], "give exactly one of --url, --command or --inmemory"),
        (["servers", "add", "x", "--url", "http://a", "--command", "b"], "give exactly one of"),
        (["servers", "add", "x", "--inmemory", "nope"], "unknown built-in server 'nope'"),
        (["servers", "add", "x", "--url", "ftp://a"], "expected an http:// or https:// URL"),
        (["servers", "add", "x", "--arg", "1", "--url", "http://a"], "--arg and --env go with --command"),
        (["servers", "add", "x", "--command", "y", "--type", "sse"], "--command does not fit --type sse"),
        (["servers", "add", "x", "--command", "y", "--env", "NOEQUALS"], "'NOEQUALS' is not KEY=VALUE"),
    ],
)
def test_servers_add_usage_errors(main: Main, args: list[str], message: str) -> None:
    status, _, err = main(*args)
    assert status == 2
    assert message in err


def test_a_broken_registry_is_reported_with_its_path_and_line(cli: Cli, cli_env: dict[str, str]) -> None:
    registry = Path(cli_env["MCP_SSE_SERVER_CONFIG"])
    registry.parent.mkdir(parents=True)
    registry.write_text('{"mcpServers": {\n  "x": [1]\n}}\n')
    done = cli("servers", "list")
    assert done.returncode == 1
    assert str(registry) in done.stderr and ":2:" in done.stderr
    assert registry.read_text() == '{"mcpServers": {\n  "x": [1]\n}}\n'  # never replaced
    # ... and does not stop built-in servers from working
    done = cli("call", "math", "add", "a=1", "b=1")
    assert (done.returncode, done.stdout) == (0, "2\n")
    assert "Warning: ignoring the server registry" in done.stderr


def test_calling_does_not_create_the_registry(cli: Cli, cli_env: dict[str, str]) -> None:
    assert cli("call", "Math", "add", "a=1", "b=1").stdout == "2\n"  # a default registry entry
    assert not Path(cli_env["MCP_SSE_SERVER_CONFIG"]).exists()


# --- long calls ------------------------------------------------------------------------------------------


def test_timeout_gives_up_with_one_line(cli: Cli) -> None:
    done = cli("call", "demo", "slow_count", "steps=100", "interval=2", "--timeout", "200ms")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "Error: slow_count on demo: tools/call got no response within 0.2 s"


def test_ctrl_c_during_a_call_exits_130(cli_env: dict[str, str]) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_sse_server", "call", "demo", "slow_count", "steps=100", "interval=2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env,
        preexec_fn=default_signals,  # Ctrl-C as from a terminal, whatever this process inherited
    )
    try:
        assert process.stderr is not None
        assert process.stderr.readline().startswith("[info] slow_count:")  # the call is running
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=COMMAND_TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == 130
    assert out == ""
    assert err.strip() == "Interrupted."


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_is_a_bar_on_a_terminal(cli_env: dict[str, str]) -> None:
    import pty

    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_sse_server", "call", "demo", "slow_count", "steps=2", "interval=0"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            env=cli_env,
            timeout=COMMAND_TIMEOUT,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal side is closed: everything was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    assert done.stdout == "Counted to 2.\n"
    text = shown.decode()
    assert "\r\x1b[2K[############............]  50% 1/2 step 1 of 2" in text
    assert "\r\x1b[2K[########################] 100% 2/2 step 2 of 2" in text
    assert text.endswith("\r\x1b[2K")  # the bar is cleared before the result prints
    assert "progress:" not in text
