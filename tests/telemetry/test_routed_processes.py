"""Trace context across two real ``serve --redis-url --otel`` processes on one redis-server, both
exporting over OTLP/HTTP to one local receiver (opentelemetry-test-utils' ``OtlpProtoTestServer``):
a call runs on worker A, its ``notifications/cancelled`` reaches worker B, which routes it to A
through Redis with its trace context. The receiver then holds one trace with spans from both
processes (told apart by ``service.name``; the target is a factory: a server per session): B's
SERVER span of the cancel, and A's span of the cancelled call, which links to B's span and has a
``cancel (routed)`` event. A routed elicitation answer (the client's reply POSTed to B for a
request A sent) is counted on A, and A's CLIENT span of the question links to B's context."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("redis")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from fixtures.redis_cluster import sync_client
from fixtures.redis_server import RedisServer
from stores.serving import SRC, TEST_SERVER, TESTS, WAIT, RawSession, Served, sse_events

receiver_module = pytest.importorskip("opentelemetry.test._otlp_test_server")

TRACE_ID = "6e0c63257de34c92bf9efcd03927272e"
CALL_PARENT = f"00-{TRACE_ID}-2a3b4c5d6e7f8091-01"
CANCEL_PARENT = f"00-{TRACE_ID}-1f2e3d4c5b6a7988-01"


@pytest.fixture
def receiver() -> Iterator[Any]:
    with receiver_module.OtlpProtoTestServer() as server:
        yield server


@pytest.fixture
def workers(redis_server: RedisServer, receiver: Any, tmp_path: Path) -> Iterator[tuple[Served, Served]]:
    """Workers A and B: ``serve target.py:build --redis-url ... --otel`` (the tests' server),
    each its own ``service.name``; stopped by SIGTERM (which flushes their exporters) by the test."""
    url = redis_server.url  # (db 0: the other tests there use random key prefixes, these the default)
    (tmp_path / "target.py").write_text(TEST_SERVER)
    args = [f"{tmp_path / 'target.py'}:build", "--port", "0", "--redis-url", url, "--otel"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)]),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
        "OTEL_METRIC_EXPORT_INTERVAL": "600000",  # (the shutdown's flush exports the points)
    }
    started: list[Served] = []
    try:
        for name in ("worker-a", "worker-b"):
            started.append(Served(args, tmp_path, {**env, "OTEL_SERVICE_NAME": name}))
        yield started[0], started[1]
    finally:
        for served in started:
            served.kill()
        client = sync_client(url)
        try:
            keys = list(client.scan_iter("mcp:*"))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


def collected(receiver: Any, names: set[str]) -> list[Any]:
    """Every span the receiver got, once spans of all ``names`` are among them (within WAIT s)."""
    spans: list[Any] = []
    deadline = time.monotonic() + WAIT
    while not names <= {recorded.span.name for recorded in spans}:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"spans received: {sorted(r.span.name for r in spans)}; wanted {sorted(names)}")
        try:
            spans.append(receiver.get_span(timeout=left))
        except TimeoutError:
            continue
    return spans + receiver.drain_spans()


def service(recorded: Any) -> str:
    return next(a.value.string_value for a in recorded.resource.attributes if a.key == "service.name")


def opened(url: str) -> RawSession:
    """A 2025-11-25 session on ``url`` whose client can answer ``elicitation/create``."""
    session = RawSession(url)
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": session.version,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    reply = session.http.post(url, json=initialize)
    assert reply.status_code == 200, reply.text
    session.session_id = reply.headers["mcp-session-id"]
    done = session.http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session.headers()
    )
    assert done.status_code == 202, done.text
    return session


def stop_both(a: Served, b: Served) -> None:
    for served in (a, b):
        status, stderr = served.stop(signal.SIGTERM)
        assert status == 0 and "Traceback" not in stderr, stderr


def test_a_cancel_routed_between_two_processes_is_one_trace(workers: tuple[Served, Served], receiver: Any) -> None:
    a, b = workers
    session = RawSession(a.url)
    session.open()
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "wait", "arguments": {}, "_meta": {"traceparent": CALL_PARENT}},
    }
    cancel = {"requestId": 7, "reason": "enough", "_meta": {"traceparent": CANCEL_PARENT}}
    seen: list[dict[str, Any]] = []
    try:
        with session.http.stream("POST", a.url, json=call, headers=session.headers()) as reply:
            assert reply.status_code == 200, reply.read()
            for event in sse_events(reply):
                seen.append(event)
                if '"waiting"' in event["data"]:  # the tool runs on A: cancel it on B
                    sent = httpx.post(
                        b.url,
                        json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel},
                        headers={**session.headers(), "accept": "application/json, text/event-stream"},
                        timeout=WAIT,
                    )
                    assert sent.status_code == 202, sent.text
        assert not [e for e in seen if '"result"' in e["data"]]  # cancelled: the call got no answer
    finally:
        session.close()
    stop_both(a, b)
    spans = collected(receiver, {"tools/call wait", "notifications/cancelled"})
    (running,) = [r for r in spans if r.span.name == "tools/call wait"]
    (forwarded,) = [r for r in spans if r.span.name == "notifications/cancelled"]
    assert service(running) == "worker-a" and service(forwarded) == "worker-b"  # two processes
    assert running.span.trace_id.hex() == TRACE_ID == forwarded.span.trace_id.hex()  # one trace
    assert running.span.parent_span_id.hex() == CALL_PARENT.split("-")[2]
    # (a factory's servers: the endpoint still has the telemetry that sees the HTTP request)
    attributes = {a.key: a.value for a in running.span.attributes}
    assert attributes["client.address"].string_value == "127.0.0.1"
    assert attributes["network.protocol.version"].string_value == "1.1"
    assert forwarded.span.parent_span_id.hex() == CANCEL_PARENT.split("-")[2]
    # What B sent through Redis: its span's context, linked from A's span with the routed event.
    assert [link.span_id for link in running.span.links] == [forwarded.span.span_id]
    assert "cancel (routed)" in [event.name for event in running.span.events]


def test_an_answer_routed_between_two_processes_is_counted_where_it_arrives(
    workers: tuple[Served, Served], receiver: Any
) -> None:
    a, b = workers
    session = opened(a.url)
    call = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "tools/call",
        "params": {"name": "elicit", "arguments": {}, "_meta": {"traceparent": CALL_PARENT}},
    }
    answers: list[str] = []
    try:
        with session.http.stream("POST", a.url, json=call, headers=session.headers()) as reply:
            assert reply.status_code == 200, reply.read()
            for event in sse_events(reply):
                message = httpx.Response(200, content=event["data"]).json() if event["data"] else {}
                if message.get("method") == "elicitation/create":  # A asks: the answer goes to B
                    answer = {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"action": "accept", "content": {"name": "Ada"}},
                    }
                    sent = httpx.post(
                        b.url,
                        json=answer,
                        headers={
                            **session.headers(),
                            "accept": "application/json, text/event-stream",
                            "traceparent": CANCEL_PARENT,
                        },
                        timeout=WAIT,
                    )
                    assert sent.status_code == 202, sent.text
                elif message.get("id") == 8:
                    answers.append(message["result"]["content"][0]["text"])
    finally:
        session.close()
    assert answers == ["accept: Ada"]
    stop_both(a, b)
    spans = collected(receiver, {"tools/call elicit", "elicitation/create"})
    (running,) = [r for r in spans if r.span.name == "tools/call elicit"]
    assert service(running) == "worker-a" and running.span.trace_id.hex() == TRACE_ID
    # A asked in a CLIENT span under the call; the answer B routed links it to B's context (the
    # traceparent header of the POST that brought it).
    (asked,) = [r for r in spans if r.span.name == "elicitation/create"]
    assert service(asked) == "worker-a" and asked.span.kind == 3  # SPAN_KIND_CLIENT
    assert asked.span.parent_span_id == running.span.span_id
    assert "answer (routed)" in [event.name for event in asked.span.events]
    assert [link.span_id.hex() for link in asked.span.links] == [CANCEL_PARENT.split("-")[2]]
    routed = receiver.wait_for_metric(name="mcp_sse_server.routed.messages", timeout=WAIT)
    assert service(routed) == "worker-a"
    points = [({a.key: a.value.string_value for a in p.attributes}, p.as_int) for p in routed.metric.sum.data_points]
    assert points == [({"mcp_sse_server.message.type": "answer"}, 1)]
