"""The old home of the stateless revision's endpoint: kept for one release, import ``stateless``.

The package calls the 2026-07-28 era "stateless" (and the handshake revisions
"session"), so ``ModernEndpoint`` is now ``stateless.StatelessEndpoint`` and
the wire constants live in ``stateless_meta``. Every name this module had is
still importable from here, under its old name.
"""

from __future__ import annotations

from . import stateless
from .stateless import *  # noqa: F403  (every name of stateless, under the same name)
from .stateless import StatelessEndpoint, StatelessHost

__all__ = ["ModernEndpoint", "ModernHost"]
__all__ += stateless.__all__

ModernEndpoint = StatelessEndpoint
"""The old name of ``stateless.StatelessEndpoint``."""

ModernHost = StatelessHost
"""The old name of ``stateless.StatelessHost``."""
