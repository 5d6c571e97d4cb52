"""``tools`` and ``call`` against a stdio server that the ``server/discover`` probe breaks: the
official Python SDK 1.2.1 (tests/client/old_sdk_peer.py) exits on it, and the command starts it
again and speaks ``initialize``. Without ``setup_old_sdk`` (scripts/setup.sh) the tests skip,
which ``MCP_TEST_NO_SKIP=1`` turns into failures."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from fixtures.commands import Cli

REPO = Path(__file__).parents[2]
PEER = str(REPO / "tests" / "client" / "old_sdk_peer.py")


def old_server() -> str:
    python = os.environ.get("MCP_TEST_OLD_SDK_PYTHON") or str(REPO / ".tools/mcp-1.2.1/bin/python")
    if not os.path.exists(python):
        pytest.skip("the official SDK 1.2.1 is not set up: run `source scripts/setup.sh && setup_old_sdk`")
    return shlex.join([python, PEER, "stdio"])


def test_tools_of_the_sdk_1_2_1_stdio_server(cli: Cli) -> None:
    listed = cli("tools", "--verbose", old_server())
    assert listed.returncode == 0, listed.stderr
    assert "add(a: number, b: number)" in listed.stdout
    assert "2024-11-05 (session)" in listed.stdout + listed.stderr


def test_call_the_sdk_1_2_1_stdio_server(cli: Cli) -> None:
    done = cli("call", old_server(), "add", "a=2", "b=3")
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr


def test_mode_2026_07_28_fails_in_one_line(cli: Cli) -> None:
    refused = cli("tools", "--mode", "2026-07-28", old_server())
    assert refused.returncode == 1
    assert "exited with code 1 when asked server/discover" in refused.stderr
    assert "does not speak 2026-07-28" in refused.stderr
