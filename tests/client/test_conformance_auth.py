"""The official conformance suite's ``auth/*`` client scenarios against our OAuth client
(``tests/client/conformance_client.py`` with ``client.oauth.OAuth``), each at every revision
it lists, with both suite versions.

Each run starts the suite's MCP server and authorization server on loopback and our client
with the server's URL; a scenario passes when the suite's verdict is PASSED (no FAILURE and no
WARNING among its checks) and the checks that prove the scenario's point are among its
successes. The runs are started together, four at a time, when the first test needs one, and
each test waits for its own: the 75 runs take about half a minute on a quiet machine.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from fixtures.node import node_setup
from fixtures.peers import PYTHON, python_env

CLIENT = str(Path(__file__).parent / "conformance_client.py")
NEXT, CURRENT = "conformance-next", "@modelcontextprotocol/conformance"

# Scenario -> the revisions each suite lists for it ("extension": run without --spec-version).
NEXT_RUNS: dict[str, tuple[str, ...]] = {
    "metadata-default": ("2025-11-25", "2026-07-28"),
    "metadata-var1": ("2025-11-25", "2026-07-28"),
    "metadata-var2": ("2025-11-25", "2026-07-28"),
    "metadata-var3": ("2025-11-25", "2026-07-28"),
    "basic-cimd": ("2025-11-25", "2026-07-28"),
    "scope-from-www-authenticate": ("2025-11-25", "2026-07-28"),
    "scope-from-scopes-supported": ("2025-11-25", "2026-07-28"),
    "scope-omitted-when-undefined": ("2025-11-25", "2026-07-28"),
    "scope-step-up": ("2025-11-25", "2026-07-28"),
    "scope-retry-limit": ("2025-11-25", "2026-07-28"),
    "token-endpoint-auth-basic": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "token-endpoint-auth-post": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "token-endpoint-auth-none": ("2025-06-18", "2025-11-25", "2026-07-28"),
    "pre-registration": ("2025-11-25", "2026-07-28"),
    "2025-03-26-oauth-metadata-backcompat": ("2025-03-26",),
    "2025-03-26-oauth-endpoint-fallback": ("2025-03-26",),
    "resource-mismatch": ("2026-07-28",),
    "offline-access-scope": ("2026-07-28",),
    "offline-access-not-supported": ("2026-07-28",),
    "authorization-server-migration": ("2026-07-28",),
    "iss-supported": ("2026-07-28",),
    "iss-not-advertised": ("2026-07-28",),
    "iss-supported-missing": ("2026-07-28",),
    "iss-wrong-issuer": ("2026-07-28",),
    "iss-unexpected": ("2026-07-28",),
    "iss-normalized": ("2026-07-28",),
    "metadata-issuer-mismatch": ("2026-07-28",),
    "client-credentials-jwt": ("extension",),
    "client-credentials-basic": ("extension",),
    "enterprise-managed-authorization": ("extension",),
    "dpop": ("extension",),
    "dpop-nonce": ("extension",),
    "wif-jwt-bearer": ("extension",),
}
CURRENT_RUNS: dict[str, tuple[str, ...]] = {
    **{name: ("2025-11-25",) for name in NEXT_RUNS if name.startswith(("metadata-var", "scope-"))},
    "metadata-default": ("2025-11-25",),
    "basic-cimd": ("2025-11-25",),
    "token-endpoint-auth-basic": ("2025-06-18", "2025-11-25"),
    "token-endpoint-auth-post": ("2025-06-18", "2025-11-25"),
    "token-endpoint-auth-none": ("2025-06-18", "2025-11-25"),
    "pre-registration": ("2025-11-25",),
    "2025-03-26-oauth-metadata-backcompat": ("2025-03-26",),
    "2025-03-26-oauth-endpoint-fallback": ("2025-03-26",),
    "resource-mismatch": ("draft",),
    "offline-access-scope": ("draft",),
    "offline-access-not-supported": ("draft",),
    "client-credentials-jwt": ("extension",),
    "client-credentials-basic": ("extension",),
    "cross-app-access-complete-flow": ("extension",),
}

# The successes that prove each scenario's point (the runs have more; all must pass).
_FLOW = {"authorization-server-metadata", "authorization-request", "token-request"}
_RESOURCE = {"resource-parameter-in-authorization", "resource-parameter-in-token", "resource-parameter-consistency"}
KEY_CHECKS: dict[str, set[str]] = {
    "metadata-default": {"prm-pathbased-requested", "client-registration", *_FLOW, *_RESOURCE},
    "metadata-var1": {"client-registration", *_FLOW},
    "metadata-var2": {"client-registration", *_FLOW},
    "metadata-var3": {"client-registration", *_FLOW},
    "basic-cimd": {"cimd-client-id-used", *_FLOW},
    "scope-from-www-authenticate": {"scope-from-www-authenticate"},
    "scope-from-scopes-supported": {"scope-from-scopes-supported"},
    "scope-omitted-when-undefined": {"scope-omitted-when-undefined"},
    "scope-step-up": {"scope-step-up-initial", "scope-step-up-escalation"},
    "scope-retry-limit": {"scope-retry-limit"},
    "token-endpoint-auth-basic": {"token-endpoint-auth-method", *_RESOURCE},
    "token-endpoint-auth-post": {"token-endpoint-auth-method", *_RESOURCE},
    "token-endpoint-auth-none": {"token-endpoint-auth-method", *_RESOURCE},
    "pre-registration": {"pre-registration-auth", *_FLOW},
    "2025-03-26-oauth-metadata-backcompat": {"client-registration", *_FLOW},
    "2025-03-26-oauth-endpoint-fallback": {"client-registration", "authorization-request", "token-request"},
    "resource-mismatch": {"resource-mismatch-rejected"},
    "offline-access-scope": {"sep-2207-offline-access-requested"},
    "offline-access-not-supported": {"sep-2207-offline-access-not-requested"},
    "authorization-server-migration": {
        "sep-2352-reregister-on-as-change",
        "sep-2352-no-reuse-on-as-change",
        "sep-2352-no-cross-as-credential-reuse",
    },
    "iss-supported": {"sep-2468-client-compare-iss-supported", "token-request"},
    "iss-not-advertised": {"sep-2468-client-proceed-no-iss", "token-request"},
    "iss-supported-missing": {"sep-2468-client-reject-missing-iss"},
    "iss-wrong-issuer": {"sep-2468-client-compare-iss-supported"},
    "iss-unexpected": {"sep-2468-client-compare-iss-unadvertised"},
    "iss-normalized": {"sep-2468-client-no-normalization"},
    "metadata-issuer-mismatch": {"sep-2468-client-validate-metadata-issuer"},
    "client-credentials-jwt": {"client-credentials-jwt-verified", "valid-bearer-token"},
    "client-credentials-basic": {"client-credentials-basic-auth", "valid-bearer-token"},
    "enterprise-managed-authorization": {"complete-flow-token-exchange", "complete-flow-jwt-bearer"},
    "cross-app-access-complete-flow": {"complete-flow-token-exchange", "complete-flow-jwt-bearer"},
    "dpop": {"sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof"},
    "dpop-nonce": {"sep-1932-client-as-nonce", "sep-1932-client-rs-nonce"},
    "wif-jwt-bearer": {"wif-assertion-verified", "valid-bearer-token"},
}
# 0.1.16 checks the resource parameter in the token-endpoint scenarios only.
CURRENT_KEY_CHECKS = {**KEY_CHECKS, "metadata-default": {"prm-pathbased-requested", "client-registration", *_FLOW}}

# Where the client is expected to stop with an error (it refuses what the server did).
MAY_EXIT_NON_ZERO = frozenset(
    {
        "resource-mismatch",
        "scope-retry-limit",
        "iss-supported-missing",
        "iss-wrong-issuer",
        "iss-unexpected",
        "iss-normalized",
        "metadata-issuer-mismatch",
    }
)

RUNS = [(NEXT, name, version) for name, versions in NEXT_RUNS.items() for version in versions] + [
    (CURRENT, name, version) for name, versions in CURRENT_RUNS.items() for version in versions
]


class Run:
    """One finished scenario run: the runner's exit status, its log, and the checks it wrote."""

    def __init__(self, status: int, log: str, checks: list[dict[str, Any]]) -> None:
        self.status = status
        self.log = log
        self.checks = checks


def run_scenario(suite: str, name: str, version: str, node: str, modules: str) -> Run:
    entry = os.path.join(modules, suite, "dist", "index.js")
    with tempfile.TemporaryDirectory(prefix="conformance-auth-") as output:
        command = [node, entry, "client", "--command", shlex.join([PYTHON, CLIENT]), "--scenario", f"auth/{name}"]
        command += ["--timeout", "90000"]  # the suite's own bound (30 s by default), for a busy machine
        if version != "extension":
            command += ["--spec-version", version]
        try:
            finished = subprocess.run(
                [*command, "-o", output],
                capture_output=True,
                text=True,
                timeout=180,
                env={**os.environ, **python_env(), "NO_COLOR": "1"},
            )
        except subprocess.TimeoutExpired as expired:
            return Run(-1, f"timed out after {expired.timeout} s", [])
        files = list(Path(output).glob("**/checks.json"))
        checks: list[dict[str, Any]] = json.loads(files[0].read_text()) if files else []
        return Run(finished.returncode, finished.stdout + finished.stderr, checks)


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[tuple[str, str, str], Future[Run]]]:
    found = node_setup()
    if found is None:
        pytest.skip("node is not set up: run `source scripts/setup.sh && setup_node` (scripts/test.sh does)")
    node, modules = found
    for suite in (NEXT, CURRENT):
        if not os.path.isfile(os.path.join(modules, suite, "dist", "index.js")):
            pytest.skip(f"{suite} is not installed in {modules} (see tests/node/package.json)")
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield {key: pool.submit(run_scenario, *key, node, modules) for key in RUNS}


@pytest.mark.parametrize(("suite", "name", "version"), RUNS, ids=[f"{s.split('/')[-1]}-{n}-{v}" for s, n, v in RUNS])
def test_auth_scenario_passes(
    runs: dict[tuple[str, str, str], Future[Run]], suite: str, name: str, version: str
) -> None:
    run = runs[(suite, name, version)].result(timeout=600)
    verdicts = {check["id"]: check["status"] for check in run.checks}
    refused = {check: status for check, status in verdicts.items() if status in ("FAILURE", "WARNING")}
    assert not refused, run.log
    succeeded = {check for check, status in verdicts.items() if status == "SUCCESS"}
    key = (KEY_CHECKS if suite == NEXT else CURRENT_KEY_CHECKS)[name]
    assert key <= succeeded, (key - succeeded, run.log)
    assert "OVERALL: PASSED" in run.log, run.log
    if name not in MAY_EXIT_NON_ZERO:
        assert run.status == 0, run.log
