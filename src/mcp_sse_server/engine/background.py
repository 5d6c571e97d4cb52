"""``in_background``: run a coroutine as a task nobody awaits, without losing it.

The event loop keeps only weak references to tasks, so a task nobody holds can
be collected mid-run; this module holds each one until it is done. Use it for
work whose outcome nobody waits for (writing a record back, ending a session
after its response). A failure is logged by asyncio ("Task exception was
never retrieved"), so the work should catch what it expects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["in_background"]

T = TypeVar("T")

_running: set[asyncio.Task[Any]] = set()


def in_background(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Start ``work`` on the running loop and keep it referenced until it is done."""
    task = asyncio.get_running_loop().create_task(work)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task
