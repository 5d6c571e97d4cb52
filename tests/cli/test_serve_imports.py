"""What `serve` loads: a server built from Tool objects never pays for pydantic (the decorators' dependency)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SERVER = """
from mcp_sse_server import McpServer, Tool

def build():
    server = McpServer("plain")
    server.add_tool(Tool("add", {"type": "object"}, lambda arguments, context: "3"))
    return server
"""


def loaded_after(code: str, modules: tuple[str, ...], cwd: Path) -> str:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code`` in ``cwd``."""
    script = f"import sys\n{code}\nprint(sorted(name for name in {modules!r} if name in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_serving_a_plain_factory_does_not_load_pydantic(tmp_path: Path) -> None:
    (tmp_path / "plain_server.py").write_text(SERVER)
    code = "from mcp_sse_server.cli.serve import resolve_target\nresolve_target('plain_server:build')"
    assert loaded_after(code, ("pydantic", "mcp_sse_server.servers.demo"), tmp_path) == "[]"


def test_serving_on_the_memory_backend_does_not_load_redis_py(tmp_path: Path) -> None:
    """serve checks its --backend before it listens; for memory: that loads no Redis client (70 ms)."""
    code = (
        "from mcp_sse_server.cli.workers import check_backend\n"
        "from mcp_sse_server.transport.http import HttpLimits\n"
        "assert check_backend('memory:', workers=1, limits=HttpLimits(), options={}) is False"
    )
    assert loaded_after(code, ("redis", "mcp_sse_server.stores.redis_setup"), tmp_path) == "[]"
