"""``tools`` and ``call`` against HTTP servers written with the official Python SDK: its Streamable HTTP
server and its legacy HTTP+SSE server (``--sse``). The server script is the client tests' shared peer."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.commands import COMMAND_TIMEOUT, Cli

PEER = Path(__file__).parent.parent / "client" / "sdk_peer.py"

pytest.importorskip("mcp.server.mcpserver", reason="the official MCP SDK (test dependency mcp>=2) is not installed")
if not PEER.exists():
    pytest.skip(f"{PEER} (the SDK peer server) is missing", allow_module_level=True)


def _wait_until_listening(port: int, process: subprocess.Popen[str]) -> None:
    # The peer prints its port before uvicorn listens on it; poll until a connection is accepted.
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the SDK peer exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("the SDK peer never listened")


def _peer(mode: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(PEER), mode], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        port = int(line.split()[1])
        _wait_until_listening(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(COMMAND_TIMEOUT)


@pytest.fixture(scope="module")
def sdk_http() -> Iterator[str]:
    yield from _peer("http")


@pytest.fixture(scope="module")
def sdk_sse() -> Iterator[str]:
    yield from _peer("sse")


def test_call_the_sdks_streamable_http_server(cli: Cli, sdk_http: str) -> None:
    url = f"{sdk_http}/mcp"
    listed = cli("tools", url)
    assert listed.returncode == 0, listed.stderr
    assert "add(a: number, b: number)" in listed.stdout.splitlines()
    assert cli("call", url, "add", "a=2", "b=3").stdout == "5\n"
    refused = cli("call", url, "divide", "a=1", "b=0")
    assert (refused.returncode, refused.stderr) == (1, "Cannot divide by zero: 'b' must not be 0\n")


def test_progress_and_logs_from_the_sdks_server(cli: Cli, sdk_http: str) -> None:
    url = f"{sdk_http}/mcp"
    slow = cli("call", url, "slow", "steps=2")
    assert (slow.returncode, slow.stdout) == (0, "done 2\n"), slow.stderr
    assert "progress: 1/2 (50%) step 1\n" in slow.stderr
    assert "progress: 2/2 (100%) step 2\n" in slow.stderr
    chatty = cli("call", url, "chatty")
    assert chatty.stdout == "logged\n"
    assert '[info] peer: first\n[warning] peer: {"n": 2}\n' in chatty.stderr


def test_call_the_sdks_legacy_sse_server(cli: Cli, sdk_sse: str) -> None:
    url = f"{sdk_sse}/sse"
    done = cli("call", "--sse", url, "add", "a=2", "b=3")
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr
    assert cli("tools", "--sse", url).returncode == 0


def test_a_legacy_server_registered_by_name(cli: Cli, sdk_sse: str) -> None:
    assert cli("servers", "add", "legacy", "--url", f"{sdk_sse}/sse", "--type", "sse").returncode == 0
    done = cli("call", "legacy", "add", "a=1", "b=1")
    assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr


def test_tools_verbose_names_the_revision_spoken(cli: Cli, sdk_http: str) -> None:
    """The SDK server speaks 2026-07-28, which the CLI prefers; --mode session keeps the handshake."""
    url = f"{sdk_http}/mcp"
    modern = cli("tools", "--verbose", url)
    assert modern.returncode == 0, modern.stderr
    assert "Protocol revision 2026-07-28 (stateless) with sdk-peer\n" in modern.stderr
    assert modern.stdout.startswith("add(")
    legacy = cli("tools", "-v", "--mode", "session", url)
    assert "Protocol revision 2025-11-25 (session) with sdk-peer" in legacy.stderr
    assert legacy.stdout == modern.stdout


def test_call_answers_the_sdk_servers_questions(cli: Cli, sdk_http: str) -> None:
    """Its elicitation is answered by --answer (both revisions); its sampling is refused in one sentence."""
    url = f"{sdk_http}/mcp"
    for mode in ("auto", "session"):
        done = cli("call", url, "resolve_user", "--mode", mode, "--answer", "colour=blue")
        assert (done.returncode, done.stdout) == (0, "accept: blue\n"), done.stderr
    refused = cli("call", url, "resolve_model", "question=hi")
    assert refused.returncode == 1
    assert "asked for a model completion (sampling/createMessage), and this command runs no model" in refused.stderr
