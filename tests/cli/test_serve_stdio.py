"""``serve TARGET --stdio``: one session over stdin and stdout, driven by our ``StdioClient``, by the
CLI, and by hand; stdout carries protocol messages only, and HTTP options are refused."""

from __future__ import annotations

import asyncio
import json
import queue
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from fixtures.commands import COMMAND_TIMEOUT, Cli, Main
from mcp_sse_server.client import StdioClient
from mcp_sse_server.engine.types import TextContent

SERVE_STDIO = [sys.executable, "-m", "mcp_sse_server", "serve"]


async def test_our_stdio_client_and_a_file_factory(shop: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    stderr: list[str] = []
    client = StdioClient(
        SERVE_STDIO[0],
        [*SERVE_STDIO[1:], "shop.py:build", "--stdio"],
        env=cli_env,
        cwd=tmp_path,
        inherit_env=False,
        on_stderr=stderr.append,
    )
    async with asyncio.timeout(COMMAND_TIMEOUT), client:
        built = await client.call_tool("builds", {})
        assert built.structured_content == {"result": 1}  # one session: the factory was called once
        shouted = await client.call_tool("shout", {"text": "hi"})
        assert shouted.content == [TextContent("HI")]
        read = await client.read_resource("shop://items/3")
        assert [content.to_dict()["text"] for content in read.contents] == ["item 3"]
    # What the server's code printed, and the program its tool ran, came out on stderr.
    for line in ("importing shop", "Serving shop.py:build over stdio", "shouting", "from a subprocess"):
        assert line in [text.rstrip("\n") for text in stderr], stderr


def test_the_cli_through_serve_stdio(cli: Cli, shop: Path) -> None:
    command = shlex.join([*SERVE_STDIO, "shop.py:build", "--stdio"])
    done = cli("tools", command)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "add(a: integer, b?: number)"
    done = cli("call", shlex.join([*SERVE_STDIO, "shop:instance", "--stdio"]), "builds")
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr  # the McpServer itself
    done = cli("inspect", shlex.join([*SERVE_STDIO, "--stdio"]), "--mode", "session")  # the demo, by default
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Server: mcp-sse-server-demo ")


def test_stdout_carries_protocol_messages_only(shop: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    process = subprocess.Popen(
        [*SERVE_STDIO, "shop.py:build", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=cli_env,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        process.stdin.flush()

    def answer() -> dict[str, Any]:
        reply: dict[str, Any] = json.loads(lines.get(timeout=COMMAND_TIMEOUT))  # JSON, or the test fails here
        return reply

    try:
        info = {"name": "by-hand", "version": "1"}
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info},
            }
        )
        assert answer()["result"]["serverInfo"]["name"] == "shop"
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "hey"}}})
        reply = answer()
        assert reply["id"] == 2 and reply["result"]["content"] == [{"type": "text", "text": "HEY"}]
        assert process.stdin is not None
        process.stdin.close()  # end of the session
        status = process.wait(timeout=COMMAND_TIMEOUT)
        assert process.stderr is not None
        stderr = process.stderr.read()
    finally:
        process.kill()
        process.wait(timeout=COMMAND_TIMEOUT)
    assert status == 0, stderr
    assert lines.empty()  # nothing else was written to stdout
    assert "shouting\n" in stderr and "from a subprocess\n" in stderr and "importing shop\n" in stderr


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (["--port", "9000"], "--port"),
        (["--host", "0.0.0.0"], "--host"),
        (["--workers", "2"], "--workers"),
        (["--redis-url", "redis://127.0.0.1:1/0"], "--redis-url"),
        (["--max-sessions", "3"], "--max-sessions"),
        (["--allowed-origin", "https://a.example"], "--allowed-origin"),
        (["--server-per-session"], "--server-per-session"),
    ],
)
def test_http_options_are_refused_with_stdio(main: Main, options: list[str], flag: str) -> None:
    status, out, err = main("serve", "math", "--stdio", *options)
    assert (status, out) == (2, "")
    assert err == f"Error: {flag} is an HTTP option: it does not go with --stdio\n"


def test_a_bad_target_with_stdio_is_one_line(main: Main) -> None:
    status, out, err = main("serve", "missing.py:build", "--stdio")
    assert (status, out, err) == (2, "", "Error: no such file: missing.py\n")


@pytest.mark.parametrize("stdin", ["/dev/null", "requests"])
def test_a_stdin_the_event_loop_cannot_wait_on_is_read_to_its_end(
    stdin: str, shop: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # /dev/null (a device epoll refuses) hung the server; a regular file is read as it is.
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n")
    with open(requests if stdin == "requests" else stdin, "rb") as source:
        done = subprocess.run(
            [*SERVE_STDIO, f"{shop}:build", "--stdio"],
            stdin=source,
            capture_output=True,
            env=cli_env,
            timeout=COMMAND_TIMEOUT,
        )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"ERROR" not in done.stderr
    expected = [{"jsonrpc": "2.0", "id": 1, "result": {}}] if stdin == "requests" else []
    assert [json.loads(line) for line in done.stdout.splitlines()] == expected
