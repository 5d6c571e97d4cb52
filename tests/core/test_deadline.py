"""within_deadline: asyncio.timeout's rules, with the timer armed only once the call suspends."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mcp_sse_server.engine.deadline import within_deadline


async def immediate(value: Any) -> Any:
    return value


async def sleeps(seconds: float, value: Any = "slept") -> Any:
    await asyncio.sleep(seconds)
    return value


async def test_a_call_that_never_suspends_returns_its_value_and_arms_no_timer() -> None:
    loop = asyncio.get_running_loop()
    scheduled = len(loop._scheduled)  # type: ignore[attr-defined]
    assert await within_deadline(immediate(42), 0.001) == 42
    assert len(loop._scheduled) == scheduled  # type: ignore[attr-defined]


async def test_a_call_that_suspends_and_finishes_in_time_returns_its_value() -> None:
    assert await within_deadline(sleeps(0.01), 5) == "slept"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_call_past_its_deadline_is_cancelled_and_raises_timeout_error() -> None:
    seen: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with pytest.raises(TimeoutError):
        await within_deadline(slow(), 0.05)
    assert seen == ["cancelled"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    await asyncio.sleep(0)  # the task is not left with a pending cancellation


async def test_the_deadline_counts_from_the_start_not_from_the_first_suspension() -> None:
    loop = asyncio.get_running_loop()
    armed_for: list[float] = []

    async def busy_then_wait() -> None:
        time.sleep(0.05)  # noqa: ASYNC251 - busy on the loop before it ever suspends
        await asyncio.sleep(0)  # first suspension: the timer is armed now
        armed_for.extend(handle.when() for handle in loop._scheduled if "_expire" in repr(handle))  # type: ignore[attr-defined]

    started = loop.time()
    await within_deadline(busy_then_wait(), 10)
    assert len(armed_for) == 1
    assert armed_for[0] <= started + 10 + 0.01  # not started + 0.05 + 10


async def test_a_cancellation_from_elsewhere_stays_a_cancelled_error() -> None:
    task = asyncio.create_task(within_deadline(sleeps(5), 10))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_an_exception_from_the_call_passes_through_before_and_after_suspending() -> None:
    async def fails_at_once() -> None:
        raise ValueError("at once")

    async def fails_later() -> None:
        await asyncio.sleep(0.01)
        raise KeyError("later")

    with pytest.raises(ValueError, match="at once"):
        await within_deadline(fails_at_once(), 1)
    with pytest.raises(KeyError, match="later"):
        await within_deadline(fails_later(), 1)


async def test_a_call_that_swallows_the_cancellation_returns_and_leaves_the_task_clean() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "finished anyway"
        return "slept"

    assert await within_deadline(stubborn(), 0.05) == "finished anyway"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    await asyncio.sleep(0.01)  # no stray cancellation arrives here


async def test_values_sent_into_the_call_reach_it() -> None:
    # A future's result is sent into the awaiting coroutine: the forwarding must pass it on.
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    loop.call_later(0.01, future.set_result, "from the future")

    async def waits() -> str:
        return await future

    assert await within_deadline(waits(), 5) == "from the future"
