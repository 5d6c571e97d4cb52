"""Probes that break no server: a stdio server that the ``server/discover`` probe kills or
confuses is started again and spoken to with ``initialize``; an HTTP server that answers the
probe with a non-JSON-RPC error gets ``initialize``; the era found is remembered per server
(client/era_memo.py) so a session server is not probed twice.

The real peer is the official Python SDK 1.2.1 (``old_sdk_peer.py``, in the virtualenv that
``setup_old_sdk`` in scripts/setup.sh makes): its stdio server writes nothing on
``server/discover``, its session dies on the validation error while its stdin reader stays
blocked, and the process exits with code 1 at the next line. Without that virtualenv its tests
skip, which ``MCP_TEST_NO_SKIP=1`` (scripts/test.sh) turns into failures.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_sse_server.client import McpClient, McpConnectionError, StdioClient, StreamableHttpClient
from mcp_sse_server.client.era_memo import (
    MEMO_SESSION,
    clear_era_memo,
    forget_era,
    http_identity,
    recall_era,
    remember_era,
    stdio_identity,
)
from mcp_sse_server.client.stdio import StdioClientTransport, StdioConnection, probe_recovery
from mcp_sse_server.engine.transport import Transport

from .probe_refusing_http_server import serving

HERE = Path(__file__).parent
OLD_PEER = str(HERE / "old_sdk_peer.py")
BREAKING = str(HERE / "probe_breaking_stdio_server.py")
REPO = HERE.parents[1]


def old_sdk_python() -> str:
    python = os.environ.get("MCP_TEST_OLD_SDK_PYTHON") or str(REPO / ".tools/mcp-1.2.1/bin/python")
    if not os.path.exists(python):
        pytest.skip("the official SDK 1.2.1 is not set up: run `source scripts/setup.sh && setup_old_sdk`")
    return python


class Stderr:
    """An ``on_stderr`` that keeps the lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)


def old_sdk_client(**options: Any) -> StdioClient:
    return StdioClient(old_sdk_python(), [OLD_PEER, "stdio"], **options)


async def test_the_sdk_1_2_1_server_is_started_again_and_remembered(caplog: pytest.LogCaptureFixture) -> None:
    first = Stderr()
    with caplog.at_level(logging.DEBUG, logger="mcp_sse_server.client"):
        async with old_sdk_client(on_stderr=first) as client:
            assert (client.era, client.protocol_version, client.transport.starts) == ("session", "2024-11-05", 2)
            assert {tool.name for tool in await client.list_tools()} == {"add", "echo"}
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.content[0].text == "5"  # type: ignore[union-attr]
    # The traceback of the first process (what the probe did to it) is logged, not passed through.
    assert first.count("OLD-SDK-PEER-START") == 1 and first.count("Traceback") == 0
    said = [record.getMessage() for record in caplog.records if "not shown" in record.getMessage()]
    assert len(said) == 1 and "validation errors for ClientRequest" in said[0]
    caplog.clear()
    assert recall_era(stdio_identity(old_sdk_python(), [OLD_PEER, "stdio"], None, {})) == MEMO_SESSION

    second = Stderr()
    with caplog.at_level(logging.DEBUG, logger="mcp_sse_server.client"):
        async with old_sdk_client(on_stderr=second) as client:
            assert (client.era, client.transport.starts) == ("session", 1)
            assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
    assert second.count("OLD-SDK-PEER-START") == 1 and second.count("validation errors") == 0
    assert any("skipping server/discover" in record.getMessage() for record in caplog.records)


class Recording(StdioClientTransport):
    """A stdio transport that keeps every connection it opened."""

    opened: list[StdioConnection]

    async def connect(self) -> Transport:
        connection = await super().connect()
        self.opened = [*getattr(self, "opened", []), connection]  # type: ignore[list-item]
        return connection


async def test_the_dead_process_and_its_stderr_reader_are_released() -> None:
    recording = Recording(old_sdk_python(), [OLD_PEER, "stdio"], on_stderr=lambda line: None)
    async with McpClient(recording) as client:
        await client.list_tools()
        dead, live = recording.opened
        # The first process was reaped (exit code known) and its stdout and stderr readers ended.
        assert dead.process is not None and dead.process.returncode == 1
        assert dead._tasks and all(task.done() for task in dead._tasks)
        assert live.process is not None and live.process.returncode is None
    assert live.process.returncode is not None


async def test_no_memo_with_remember_era_off() -> None:
    async with old_sdk_client(on_stderr=lambda line: None, remember_era=False) as client:
        assert client.transport.starts == 2
    assert recall_era(stdio_identity(old_sdk_python(), [OLD_PEER, "stdio"], None, {})) is None


async def test_mode_2026_07_28_says_what_the_sdk_1_2_1_server_did() -> None:
    client = old_sdk_client(on_stderr=lambda line: None, mode="2026-07-28")
    with pytest.raises(McpConnectionError) as refused:
        await client.initialize()
    message = refused.value.message
    assert "exited with code 1 when asked server/discover" in message
    assert "does not speak 2026-07-28" in message
    process = client.transport.process
    assert client.transport.starts == 1 and process is not None and process.returncode is not None


@pytest.mark.parametrize("mode", ["garbage", "malformed", "notify", "exit"])
async def test_a_server_the_probe_confuses_is_started_again(mode: str) -> None:
    stderr = Stderr()
    client = StdioClient(sys.executable, [BREAKING, mode], on_stderr=stderr, probe_timeout=1.5)
    async with client:
        assert (client.era, client.protocol_version, client.transport.starts) == ("session", "2025-06-18", 2)
        assert (await client.call_tool("echo", {"text": mode})).content[0].text == mode  # type: ignore[union-attr]
    # What the first process wrote is held back (logged at debug); the second got initialize only.
    assert stderr.count("PROBE-SERVER-START") == 1 and stderr.count("METHOD server/discover") == 0
    assert stderr.count("METHOD initialize") == 1


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("garbage", "with a line that is not JSON-RPC: Welcome to the server!"),
        ("notify", "sent no answer to server/discover within 1.5 s"),
        ("exit", "exited with code 3 when asked server/discover"),
    ],
)
async def test_mode_2026_07_28_refuses_a_confused_server(mode: str, said: str) -> None:
    client = StdioClient(sys.executable, [BREAKING, mode], on_stderr=lambda line: None, probe_timeout=1.5)
    client.mode = "2026-07-28"
    with pytest.raises(McpConnectionError, match="does not speak 2026-07-28") as refused:
        await client.initialize()
    assert said in refused.value.message
    assert client.transport.starts == 1


async def test_a_banner_on_stdout_before_a_late_answer_is_no_broken_server() -> None:
    async with StdioClient(sys.executable, [BREAKING, "banner"], on_stderr=lambda line: None) as client:
        assert (client.era, client.transport.starts) == ("stateless", 1)


async def test_a_remembered_session_server_that_turned_stateless_is_probed_again() -> None:
    identity = stdio_identity(sys.executable, [BREAKING, "stateless"], None, {})
    remember_era(identity, MEMO_SESSION)
    stderr = Stderr()
    async with StdioClient(sys.executable, [BREAKING, "stateless"], on_stderr=stderr) as client:
        assert (client.era, client.protocol_version) == ("stateless", "2026-07-28")
        assert client.server_info == {"name": "probe-server", "version": "1"}
    assert stderr.count("METHOD initialize") == 1 and stderr.count("METHOD server/discover") == 1
    assert stderr.count("PROBE-SERVER-START") == 1  # a well server's stderr is passed on after its answer
    assert recall_era(identity) == "2026-07-28"


async def test_a_remembered_stateless_server_that_now_breaks_is_remembered_as_a_session() -> None:
    identity = stdio_identity(sys.executable, [BREAKING, "garbage"], None, {})
    remember_era(identity, "2026-07-28")
    async with StdioClient(sys.executable, [BREAKING, "garbage"], on_stderr=lambda line: None) as client:
        assert (client.era, client.transport.starts) == ("session", 2)
    assert recall_era(identity) == MEMO_SESSION


@pytest.mark.parametrize("status", [500, 404, 405])
async def test_an_http_probe_refused_without_json_rpc_falls_back(status: int) -> None:
    with serving(status) as server:
        async with StreamableHttpClient(server.url) as client:
            assert (client.era, client.protocol_version) == ("session", "2025-06-18")
            assert (await client.call_tool("echo", {"text": "ok"})).content[0].text == "ok"  # type: ignore[union-attr]
        assert server.methods.count("server/discover") == 1
        assert recall_era(http_identity(server.url)) == MEMO_SESSION
        async with StreamableHttpClient(server.url + "?again=1") as client:  # origin + path: the same server
            assert client.era == "session"
        assert server.methods.count("server/discover") == 1 and server.methods.count("initialize") == 2


def test_the_memo_keys() -> None:
    base = stdio_identity("python", ["s.py"], None, {})
    assert base != stdio_identity("python", ["s.py"], "/tmp", {})
    assert base != stdio_identity("python", ["s.py"], None, {"A": "1"})
    assert base != stdio_identity("python", ["s.py", "x"], None, {})
    assert stdio_identity("python", [], None, {"A": "1", "B": "2"}) == stdio_identity(
        "python", [], None, {"B": "2", "A": "1"}
    )
    assert http_identity("HTTP://Host:80/mcp#x") == http_identity("http://host/mcp")
    assert http_identity("http://host/mcp") != http_identity("http://host/other")
    assert http_identity("http://host/mcp") != http_identity("https://host/mcp")
    remember_era(base, MEMO_SESSION)
    forget_era(base)
    assert recall_era(base) is None
    remember_era(base, MEMO_SESSION)
    clear_era_memo()
    assert recall_era(base) is None


def test_probe_recovery_is_for_timeouts_and_connection_errors() -> None:
    assert probe_recovery("auto", McpConnectionError("gone")) == "restart"
    assert probe_recovery("2026-07-28", McpConnectionError("gone")) == "refuse"
    assert probe_recovery("auto", RuntimeError()) is None
