"""The official MCP conformance suite (@modelcontextprotocol/conformance) against our server.

The suite's test client is the TypeScript SDK; the server is the fixture in
tests/fixtures/conformance_server.py, bound in this process on a loopback port.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from fixtures.conformance_server import build_server
from mcp_sse_server.transport.http import McpHttpServer

from .conftest import require_node

SPEC_SCENARIOS = 26


# The two suite versions, side by side through an npm alias (tests/node/package.json);
# only the second has the 2026-07-28 scenarios and --spec-version 2025-11-25 runs.
SUITE = "@modelcontextprotocol/conformance"  # 0.1.16
SUITE_NEXT = "conformance-next"  # 0.2.0-alpha.12


async def run_suite(endpoint: str, output: Path, *arguments: str, suite: str = SUITE) -> tuple[int, str]:
    node, modules = require_node()
    process = await asyncio.create_subprocess_exec(
        node,
        os.path.join(modules, suite, "dist", "index.js"),
        "server",
        "--url",
        endpoint,
        "-o",
        str(output),
        *arguments,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    stdout, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, stdout.decode(errors="replace")


def checks_by_scenario(output: Path) -> dict[str, list[dict[str, Any]]]:
    """scenario name -> its checks, from the suite's checks.json files."""
    results: dict[str, list[dict[str, Any]]] = {}
    for path in output.glob("server-*/checks.json"):
        # Folders are named server-<scenario>-<timestamp like 2026-01-31T12-00-00-000Z>.
        scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", path.parent.name.removeprefix("server-"))
        results[scenario] = json.loads(path.read_text())
    return results


def failures(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    return [
        f"{scenario}: {check.get('id')} {check.get('errorMessage', '')}"
        for scenario, checks in results.items()
        for check in checks
        if check.get("status") == "FAILURE"
    ]


@pytest.fixture
async def server() -> Any:
    http = await McpHttpServer.bind(build_server(), port=0)  # one server for every session
    try:
        yield http
    finally:
        await http.close(deadline=1)


async def test_every_2025_06_18_scenario_passes(server: McpHttpServer, tmp_path: Path) -> None:
    status, log = await run_suite(server.endpoint, tmp_path, "--spec-version", "2025-06-18")
    results = checks_by_scenario(tmp_path)
    assert not failures(results), failures(results)
    assert status == 0, log
    assert len(results) == SPEC_SCENARIOS, sorted(results)
    assert {"server-initialize", "tools-call-sampling", "tools-call-elicitation", "resources-subscribe"} <= set(results)
    assert all(checks and all(c.get("status") == "SUCCESS" for c in checks) for checks in results.values()), log


def warnings_and_failures(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    return [
        f"{scenario}: {check.get('id')} {check.get('status')} {check.get('errorMessage', '')}"
        for scenario, checks in results.items()
        for check in checks
        if check.get("status") not in ("SUCCESS", "INFO")
    ]


async def test_every_scenario_of_the_0_1_16_suite_passes_pending_ones_included(
    server: McpHttpServer, tmp_path: Path
) -> None:
    status, log = await run_suite(server.endpoint, tmp_path, "--suite", "all")
    results = checks_by_scenario(tmp_path)
    assert not warnings_and_failures(results), warnings_and_failures(results)
    assert status == 0, log
    # the pending scenarios run too: JSON Schema 2020-12 and SSE polling (resumable streams)
    assert {"json-schema-2020-12", "server-sse-polling", "elicitation-sep1034-defaults"} <= set(results)


@pytest.mark.parametrize("revision", ["2025-11-25", "2025-06-18"])
async def test_the_0_2_0_suite_passes_for_each_handshake_revision(
    server: McpHttpServer, tmp_path: Path, revision: str
) -> None:
    status, log = await run_suite(server.endpoint, tmp_path, "--spec-version", revision, suite=SUITE_NEXT)
    results = checks_by_scenario(tmp_path)
    assert not warnings_and_failures(results), warnings_and_failures(results)
    assert status == 0, log
    assert "server-session-lifecycle" in results and len(results) >= 27
