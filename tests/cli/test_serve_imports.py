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


def test_serving_a_plain_factory_does_not_load_pydantic(tmp_path: Path) -> None:
    (tmp_path / "plain_server.py").write_text(SERVER)
    code = (
        "import sys\n"
        "from mcp_sse_server.cli.serve import resolve_target\n"
        "resolve_target('plain_server:build')\n"
        "print(sorted(name for name in ('pydantic', 'mcp_sse_server.servers.demo') if name in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"


def test_serving_on_the_memory_backend_does_not_load_redis_py(tmp_path: Path) -> None:
    """serve checks its --backend before it listens; for memory: that loads no Redis client (70 ms)."""
    code = (
        "import sys\n"
        "from mcp_sse_server.cli.workers import check_backend\n"
        "from mcp_sse_server.transport.http import HttpLimits\n"
        "assert check_backend('memory:', workers=1, limits=HttpLimits(), options={}) is False\n"
        "print(sorted(name for name in ('redis', 'mcp_sse_server.stores.redis_setup') if name in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"
