"""One event loop for a script or a command: uvloop when it is installed, else asyncio's own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["run_loop"]


def run_loop(main: Awaitable[None]) -> None:
    """Run ``main`` to completion in a new event loop (uvloop's when it is installed), as
    ``asyncio.run`` does."""
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main)  # type: ignore[arg-type]
