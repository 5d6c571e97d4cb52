"""Clients of revision 2024-11-05 against our servers: the official Python SDK 1.2.1's client
(tests/cli/old_sdk_client.py, in its own virtualenv: ``setup_old_sdk``) lists the demo's tools
and calls one, over stdio (``serve --stdio``) and over the HTTP+SSE transport of ``serve``; the
SDK 2.3 client on that transport does too. Without the 1.2.1 virtualenv its tests skip, which
``MCP_TEST_NO_SKIP=1`` turns into failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.served import Served

ROOT = Path(__file__).resolve().parents[2]
CLIENT = str(Path(__file__).with_name("old_sdk_client.py"))
CLI = str(Path(sys.executable).with_name("mcp-sse-server"))  # the environment running the tests
TIMEOUT = 60.0


def old_python() -> str:
    python = os.environ.get("MCP_TEST_OLD_SDK_PYTHON") or str(ROOT / ".tools" / "mcp-1.2.1" / "bin" / "python")
    if not os.path.isfile(python):
        pytest.skip("the official SDK 1.2.1 is not set up: run `source scripts/setup.sh && setup_old_sdk`")
    return python


def run_client(*args: str, python: str | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [python or old_python(), CLIENT, *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_sdk_1_2_1_client_uses_the_demo_over_stdio() -> None:
    result = run_client("stdio", CLI, "serve", "demo", "--stdio")
    assert result["revision"] == "2024-11-05"
    assert {"add", "divide", "get_artifact_instructions"} <= set(result["tools"])
    assert result == {**result, "text": ["5"], "isError": False}


@pytest.fixture
def demo(serve: Callable[[list[str]], Served]) -> Served:
    """The demo served by ``serve`` on a free port (HTTP+SSE at /sse beside Streamable HTTP)."""
    return serve(["demo", "--port", "0"])


def test_the_sdk_1_2_1_client_uses_the_demo_over_http_and_sse(demo: Served) -> None:
    result = run_client("sse", demo.url.rsplit("/", 1)[0] + "/sse")
    assert result["revision"] == "2024-11-05"
    assert "add" in result["tools"] and result["text"] == ["5"] and not result["isError"]


def test_the_sdk_2_3_client_uses_the_demo_over_http_and_sse(demo: Served) -> None:
    # (the same script runs on the SDK 2.3 of the test environment: its sse_client and ClientSession)
    result = run_client("sse", demo.url.rsplit("/", 1)[0] + "/sse", python=sys.executable)
    assert result["revision"] in ("2025-11-25", "2025-06-18")
    assert "add" in result["tools"] and result["text"] == ["5"] and not result["isError"]
