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


async def run_suite(endpoint: str, output: Path, *arguments: str) -> tuple[int, str]:
    node, modules = require_node()
    process = await asyncio.create_subprocess_exec(
        node,
        os.path.join(modules, ".bin", "conformance"),
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
    http = await McpHttpServer.bind(on_session=build_server, port=0)
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


@pytest.mark.parametrize("scenario", ["dns-rebinding-protection", "server-sse-multiple-streams"])
async def test_active_suite_scenario_passes(server: McpHttpServer, tmp_path: Path, scenario: str) -> None:
    status, log = await run_suite(server.endpoint, tmp_path, "--scenario", scenario)
    results = checks_by_scenario(tmp_path)
    assert list(results) == [scenario], log
    assert not failures(results), failures(results)
    assert status == 0, log
    assert results[scenario] and all(c.get("status") == "SUCCESS" for c in results[scenario]), log


# Revision 2025-11-25 server features (json-schema-2020-12 is in the pending suite: named explicitly).
@pytest.mark.parametrize(
    "scenario", ["json-schema-2020-12", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"]
)
async def test_2025_11_25_feature_scenario_passes(server: McpHttpServer, tmp_path: Path, scenario: str) -> None:
    status, log = await run_suite(server.endpoint, tmp_path, "--scenario", scenario)
    results = checks_by_scenario(tmp_path)
    assert list(results) == [scenario], log
    assert not failures(results), failures(results)
    assert status == 0, log
    assert results[scenario] and all(c.get("status") == "SUCCESS" for c in results[scenario]), log
