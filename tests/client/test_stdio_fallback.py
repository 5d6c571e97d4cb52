"""The session fallback over stdio (client/fallback.py, rule 4): a stdio server that speaks
2026-07-28 but can only ask the client over a session (elicitation pushed on the session) gets
our client moved onto a session of it, by ``initialize`` on the same process when it takes it,
else by starting it again; the choice is remembered per command (client/era_memo.py) and logged.

Real peers: ``fastmcp run`` (fastmcp 4, eliciting_fastmcp_server.py), the official Python SDK's
MCPServer (eliciting_sdk_stdio_server.py), both of which refuse ``initialize`` on a process that
spoke 2026-07-28; a hand-written server that takes it (dual_era_stdio_server.py); and this
package's own server, whose elicitation is an ``input_required`` round and needs no fallback.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_sse_server.client import StdioClient
from mcp_sse_server.client.era_memo import MEMO_SESSION, recall_era
from mcp_sse_server.client.hooks import RequestEvent, ServerRequestEvent

HERE = Path(__file__).parent
REPO = HERE.parents[1]
MODERN = "2026-07-28"
MOVED = "this client now speaks"  # the fallback's log line


class Stderr:
    """An ``on_stderr`` that keeps the lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"colour": "teal"}}


Command = tuple[str, list[str], dict[str, str]]
"""A program, its arguments and the environment it is given."""


def fastmcp_command() -> Command:
    python = os.environ.get("MCP_TEST_FASTMCP_PYTHON") or str(REPO / ".tools/fastmcp/bin/python")
    script = os.path.join(os.path.dirname(python), "fastmcp")
    if not os.path.isfile(script):
        pytest.skip("fastmcp is not set up: run `source scripts/setup.sh && setup_fastmcp` (scripts/test.sh does)")
    # `fastmcp run FILE`, as its docs say; PYTHONPATH cleared so that it imports its own mcp, not ours.
    return script, ["run", str(HERE / "eliciting_fastmcp_server.py")], {"PYTHONPATH": ""}


def sdk_command() -> Command:
    pytest.importorskip("mcp.server.mcpserver")  # the official SDK 2.x, in this virtualenv
    return sys.executable, [str(HERE / "eliciting_sdk_stdio_server.py")], {}


def client(command: Command, runs: Path | None = None, **options: Any) -> StdioClient:
    program, args, env = command
    if runs is not None:
        env = {**env, "ELICIT_RUNS": str(runs)}
    options.setdefault("request_timeout", 30.0)
    options.setdefault("on_stderr", Stderr())
    return StdioClient(program, args, env, cwd=HERE, **options)


def runs_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("peer", [fastmcp_command, sdk_command], ids=["fastmcp", "official-sdk"])
async def test_elicitation_refused_at_2026_07_28_goes_on_in_a_session_and_is_remembered(
    peer: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    command = peer()
    runs = tmp_path / "runs"
    caplog.set_level(logging.INFO, logger="mcp_sse_server.client")
    async with client(command, runs, elicitation_handler=elicit) as ours:
        assert ours.stateless and ours.protocol_version == MODERN
        result = await ours.call_tool("ask_colour")
        assert not result.is_error and result.content[0].text == "you said teal"  # type: ignore[union-attr]
        # Both peers refuse initialize on a process that spoke 2026-07-28: it was started again.
        assert ours.era == "session" and ours.protocol_version != MODERN and ours.transport.starts == 2
        assert ours.fallback_session is None  # no second connection: the client itself moved
        assert runs_in(runs) == 2  # the refused run, and the repeated one
        again = await ours.call_tool("ask_colour")
        assert again.content[0].text == "you said teal" and ours.transport.starts == 2  # type: ignore[union-attr]
    moved = [record.getMessage() for record in caplog.records if MOVED in record.getMessage()]
    assert len(moved) == 1 and "elicitation/create" in moved[0] and "on a new process" in moved[0]
    assert ours.transport.identity is not None and recall_era(ours.transport.identity) == MEMO_SESSION

    # A later client of the same command goes straight to a session: one process, one run.
    async with client(command, runs, elicitation_handler=elicit) as later:
        assert later.era == "session" and later.transport.starts == 1
        result = await later.call_tool("ask_colour")
        assert result.content[0].text == "you said teal" and runs_in(runs) == 4  # type: ignore[union-attr]


async def test_without_the_fallback_or_a_handler_the_failure_stands(tmp_path: Path) -> None:
    command = fastmcp_command()
    async with client(command, elicitation_handler=elicit, session_fallback=False) as ours:
        refused = await ours.call_tool("ask_colour")
        assert refused.is_error and "unavailable on 2026-07-28" in refused.content[0].text  # type: ignore[union-attr]
        assert ours.stateless and ours.transport.starts == 1
    async with client(command) as unhandled:  # no elicitation handler: nothing a session would change
        refused = await unhandled.call_tool("ask_colour")
        assert refused.is_error and unhandled.stateless and unhandled.transport.starts == 1
        assert (await unhandled.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
    assert ours.transport.identity is not None and recall_era(ours.transport.identity) == MODERN


async def test_a_server_that_takes_initialize_on_the_same_process_is_not_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stderr = Stderr()
    caplog.set_level(logging.INFO, logger="mcp_sse_server.client")
    command: Command = (sys.executable, [str(HERE / "dual_era_stdio_server.py")], {})
    sent: list[RequestEvent] = []
    asked: list[ServerRequestEvent] = []
    hooks: dict[str, list[Any]] = {"request": [sent.append], "server_request": [asked.append]}
    async with client(command, elicitation_handler=elicit, on_stderr=stderr, event_hooks=hooks) as ours:
        assert ours.stateless
        result = await ours.call_tool("ask_colour")
        assert result.content[0].text == "you said teal"  # type: ignore[union-attr]
        assert ours.era == "session" and ours.protocol_version == "2025-11-25" and ours.transport.starts == 1
    assert stderr.lines == ["initialized 1"]
    # The event hooks saw the refused call, the handshake on the same process and the repeated call.
    assert [event.method for event in sent] == ["server/discover", "tools/call", "initialize", "tools/call"]
    assert [(event.method, event.id) for event in asked] == [("elicitation/create", "ask-1")]
    assert any("on the same process" in record.getMessage() for record in caplog.records)


async def test_our_own_server_elicits_at_2026_07_28_without_the_fallback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sse_server.client")
    command: Command = (
        sys.executable,
        [str(HERE / "eliciting_ours_stdio_server.py")],
        {"PYTHONPATH": str(REPO / "src")},
    )
    async with client(command, elicitation_handler=elicit) as ours:
        result = await ours.call_tool("ask_colour")
        assert result.content[0].text == "you said teal"  # type: ignore[union-attr]
        assert ours.stateless and ours.transport.starts == 1
    assert not any(MOVED in record.getMessage() for record in caplog.records)
