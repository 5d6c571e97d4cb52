"""Suite-wide settings.

``scripts/test.sh`` sets MCP_TEST_NO_SKIP=1: there every peer (Node 22, the
conformance suite, the official SDKs) is installed, so a test that skips has
lost its peer, and that is a failure, not a pass.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

NO_SKIP = os.environ.get("MCP_TEST_NO_SKIP") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if NO_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped under MCP_TEST_NO_SKIP=1 (scripts/test.sh installs every peer): {reason}"
