"""The old home of the client's stateless-revision helpers: kept for one release, import
``mcp_sse_server.client.stateless``.

The package calls the 2026-07-28 era "stateless" (and the handshake revisions
"session"), so ``is_modern_error`` is now ``stateless.is_stateless_error``. Every
name this module had is still importable from here, under its old name.
"""

from __future__ import annotations

from . import stateless
from .stateless import *  # noqa: F403  (every name of stateless, under the same name)
from .stateless import is_stateless_error

__all__ = ["is_modern_error"]
__all__ += stateless.__all__

is_modern_error = is_stateless_error
"""The old name of ``stateless.is_stateless_error``."""
