"""``mcp_sse_server.middleware`` exports each built-in lazily (``engine/_lazy.py``): importing the
package, or the server, loads none of their modules, nor redis-py."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

from mcp_sse_server.engine._lazy import type_checking_exports
from mcp_sse_server.engine.middleware import Middleware


def test_every_export_resolves_and_the_built_ins_are_middleware() -> None:
    package = importlib.import_module("mcp_sse_server.middleware")
    exports = type_checking_exports(inspect.getsource(package))
    assert sorted(package.__all__) == sorted(exports) == dir(package)
    for name, module in exports.items():
        assert getattr(package, name) is getattr(importlib.import_module(module, package.__name__), name)
    for name in ("RequestLog", "RateLimit", "ResponseCache", "ResultLimit", "ErrorPolicy"):
        assert issubclass(getattr(package, name), Middleware)


def test_nothing_loads_before_it_is_used() -> None:
    code = (
        "import sys, mcp_sse_server, mcp_sse_server.middleware as m; from mcp_sse_server import McpServer; "
        "McpServer('s', middleware=[m.RequestLog()]); "
        "print(sorted(n for n in sys.modules if n.startswith(('mcp_sse_server.middleware.', 'redis'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['mcp_sse_server.middleware.caller', 'mcp_sse_server.middleware.request_log']"
