"""Suite-wide settings.

``scripts/test.sh`` sets MCP_TEST_NO_SKIP=1: there every peer (Node 22, the
conformance suite, the official SDKs) is installed, so a test that skips has
lost its peer, and that is a failure, not a pass.

The Redis fixtures both tests/stores and tests/http_transport (its ``redis``
deployment) use live here, so one redis-server serves the whole run:
``redis_server`` (session-scoped, started on first use) and ``redis_prefix``
(a fresh key prefix per test; ``fixtures.redis_server.client_for`` deletes its
keys). redis-py is imported only when a test asks for a server.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fixtures.redis_server import RedisServer

NO_SKIP = os.environ.get("MCP_TEST_NO_SKIP") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives a real Chromium (tests/browser; skips without one)")


@pytest.fixture(autouse=True)
def _fresh_era_memo() -> Iterator[None]:
    """Every test starts with an empty era memo (client/era_memo.py): what one test's server
    spoke must not make another's client skip its probe."""
    from mcp_sse_server.client.era_memo import clear_era_memo

    clear_era_memo()
    yield
    clear_era_memo()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    from fixtures.redis_server import redis_running  # skips without redis-py (importorskip)

    with redis_running(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_prefix() -> str:
    return f"t{secrets.token_hex(6)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if NO_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped under MCP_TEST_NO_SKIP=1 (scripts/test.sh installs every peer): {reason}"
