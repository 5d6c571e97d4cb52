"""RateLimit with the in-process buckets: a caller's budget, its refill, the refusal's code and
retry-after, which methods count, and an MRTR call counted once."""

from __future__ import annotations

import pytest

from fixtures.sessions import Connect
from mcp_sse_server.middleware import RATE_LIMITED, MemoryBuckets, RateLimit

from .conftest import build, envelope


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_session_gets_burst_calls_then_a_refusal_with_retry_after(connect: Connect) -> None:
    clock = Clock()
    server = build(RateLimit(rate=2.0, burst=3, store=MemoryBuckets(clock=clock)))
    client = await connect(server)  # initialize and ping are not counted
    for _ in range(3):
        await client.result("tools/call", {"name": "echo", "arguments": {}})
    refused = await client.error("tools/list")
    assert (refused.code, refused.message, refused.data) == (RATE_LIMITED, "Rate limit exceeded", {"retryAfterMs": 500})
    assert len(server.runs) == 3  # type: ignore[attr-defined]
    await client.result("ping")  # never refused
    clock.now += 0.5
    await client.result("tools/list")
    assert (await client.error("tools/list")).code == RATE_LIMITED


async def test_each_session_has_its_own_bucket_on_http() -> None:
    from fixtures.asgi import open_session
    from mcp_sse_server.transport.http import McpHttpApp

    app = McpHttpApp(build(RateLimit(rate=0.001, burst=1)))
    first, second = await open_session(app), await open_session(app)
    await first.result("tools/list")
    assert (await first.request("tools/list")).messages[-1]["error"]["code"] == RATE_LIMITED
    await second.result("tools/list")


async def test_only_the_methods_given_count(connect: Connect) -> None:
    client = await connect(build(RateLimit(rate=0.001, burst=1, methods={"tools/call"})))
    for _ in range(3):
        await client.result("tools/list")
    await client.result("tools/call", {"name": "echo", "arguments": {}})
    assert (await client.error("tools/call", {"name": "echo", "arguments": {}})).code == RATE_LIMITED


async def test_an_mrtr_call_counts_once_whatever_its_rounds(connect: Connect) -> None:
    # Anonymous stateless requests share one bucket; a budget of 1 is one call.
    server = build(RateLimit(rate=0.001, burst=1))
    client = await connect(server, initialize=False)
    call = {**envelope({"elicitation": {"form": {}}}), "name": "greet", "arguments": {}}
    first = await client.result("tools/call", call)
    assert first["resultType"] == "input_required"
    answer = {"action": "accept", "content": {"name": "Ada"}}
    done = await client.result(
        "tools/call", {**call, "inputResponses": {"q1": answer}, "requestState": first["requestState"]}
    )
    assert done["content"][0]["text"] == "hello Ada"
    assert (await client.error("tools/call", call)).code == RATE_LIMITED  # a new call: the budget is spent


def test_bad_settings_are_refused() -> None:
    for rate, burst in ((0, 1), (float("inf"), 1), (1, 0)):
        with pytest.raises(ValueError):
            RateLimit(rate=rate, burst=burst)
    with pytest.raises(ValueError):
        MemoryBuckets(max_keys=0)


async def test_the_in_process_store_keeps_at_most_max_keys() -> None:
    buckets = MemoryBuckets(max_keys=2, clock=Clock())
    assert [await buckets.take(key, 1.0, 1) for key in ("a", "b", "a", "c")] == [0, 0, 1000, 0]
    assert await buckets.take("b", 1.0, 1) == 0  # "b" was forgotten (least recently seen): a full bucket again
