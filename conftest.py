"""The doctests of src/mcp_sse_server run with the suite (testpaths: tests and src).

Only that package is collected for doctests. ``--doctest-modules`` would import every module
under tests/ as well, and the helper scripts there (stdio servers, SDK peers) run when imported.
An example that cannot run here (a server, the network, ``await``) is marked ``# doctest: +SKIP``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

PACKAGE = Path(__file__).resolve().parent / "src" / "mcp_sse_server"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> DoctestModule | None:
    if parent.config.option.doctestmodules:
        return None  # --doctest-modules given: pytest collects them itself
    if file_path.suffix == ".py" and file_path.name != "__main__.py" and file_path.is_relative_to(PACKAGE):
        return DoctestModule.from_parent(parent, path=file_path)
    return None
