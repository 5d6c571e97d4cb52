"""A Redis Cluster primary killed under load: two ``serve`` processes on a 3+3 cluster of the test's
own, four clients (a session each) calling as fast as they can, alternating between the processes,
and the primary holding the first client's session killed (SIGKILL) a few seconds in.

What must hold, and is checked: no wrong answer and no answer of another session; every request
either served or refused with 503 and ``Retry-After`` (nothing else, no request hanging past
``HANG``); every client served again within ``BACK_WITHIN`` seconds of the replica's promotion,
by the same processes (no restart). The figures are printed (``-s`` shows them).

And a whole shard lost (a primary and its replica): CLUSTERDOWN everywhere is a 503 with
``Retry-After`` at once, and the same process serves again once the shard is back.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from fixtures.redis_cluster import ClusterNode, RedisCluster, redis_cluster_running, sync_client

from .serving import WAIT, answer_of, serving

SOAK = 30.0  # seconds of load in all (the soak)
KILL_AT = 5.0  # seconds into it
BACK_WITHIN = 15.0  # seconds after the promotion
HANG = 10.0  # a request not answered in this long has hung
CLIENTS = 4


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    """A cluster for this test alone (it loses a node)."""
    with redis_cluster_running(tmp_path / "cluster") as cluster:
        yield cluster


@dataclass
class Outcome:
    """What one client saw: (start, end, kind) per request, kind one of ``ok``, ``refused`` (503 with
    Retry-After), ``lost`` (404: the session's record was lost), and anything else is a failure."""

    calls: list[tuple[float, float, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    session_id: str | None = None


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "connection": "close", "mcp-protocol-version": "2025-11-25"}


class Client:
    """One session, opened again if the cluster lost it; each request on a new connection, to
    the processes in turn."""

    def __init__(self, number: int, urls: list[str], outcome: Outcome) -> None:
        self.number = number
        self.urls = urls
        self.outcome = outcome
        self.http = httpx.Client(headers=HEADERS, timeout=httpx.Timeout(HANG))
        self.session_id: str | None = None
        self.sent = 0

    def url(self) -> str:
        self.sent += 1
        return self.urls[self.sent % len(self.urls)]

    def classify(self, reply: httpx.Response, started: float) -> str:
        if reply.status_code == 503 and reply.headers.get("retry-after", "").isdigit():
            return "refused"
        if reply.status_code == 404:
            return "lost"
        if reply.status_code not in (200, 202):
            self.outcome.failures.append(f"client {self.number}: HTTP {reply.status_code} {reply.read()[:200]!r}")
            return "failed"
        return "ok"

    def open(self) -> str:
        started = time.monotonic()
        try:
            reply = self.http.post(self.url(), json=INITIALIZE)
            kind = self.classify(reply, started)
            if kind == "ok":
                self.session_id = reply.headers["mcp-session-id"]
                headers = {"mcp-session-id": self.session_id}
                done = self.http.post(
                    self.url(), json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
                )
                kind = self.classify(done, started)
        except httpx.HTTPError as error:
            self.outcome.failures.append(f"client {self.number}: initialize: {error!r}")
            kind = "failed"
        self.outcome.calls.append((started, time.monotonic(), kind))
        return kind

    def call(self, n: int) -> None:
        a, b = self.number * 1_000_000, n  # the sum names the client: another session's answer is wrong
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": a, "b": b}},
        }
        started = time.monotonic()
        kind = "failed"
        try:
            assert self.session_id is not None
            headers = {"mcp-session-id": self.session_id}
            with self.http.stream("POST", self.url(), json=body, headers=headers) as reply:
                kind = self.classify(reply, started)
                if kind == "ok":
                    answer: dict[str, Any] = answer_of(reply, n)
                    text = answer.get("result", {}).get("content", [{}])[0].get("text")
                    if text != str(a + b):
                        self.outcome.failures.append(f"client {self.number}: wrong answer to {n}: {answer}")
                        kind = "wrong"
        except (httpx.HTTPError, AssertionError) as error:
            self.outcome.failures.append(f"client {self.number}: request {n}: {error!r}")
        self.outcome.calls.append((started, time.monotonic(), kind))
        if kind == "lost":
            self.session_id = None

    def run(self, until: float) -> None:
        n = 0
        try:
            while time.monotonic() < until:
                if self.session_id is None:
                    if self.open() != "ok":
                        time.sleep(0.1)
                    continue
                n += 1
                self.call(n)
                if self.outcome.calls[-1][2] == "refused":
                    time.sleep(0.1)  # (a client told to retry does not spin)
        finally:
            self.outcome.session_id = self.session_id
            self.http.close()


def promoted(cluster: RedisCluster, killed: ClusterNode) -> bool:
    """A live node sees three primaries that are not failing, none of them the killed one."""
    return killed not in cluster.primaries() and len(cluster.primaries()) == 3


def node_of_session(cluster: RedisCluster, session_id: str) -> ClusterNode:
    client = sync_client(cluster.url)
    try:
        port = client.get_node_from_key(f"mcp:{{{session_id}}}").port
    finally:
        client.close()
    return next(node for node in cluster.nodes if node.port == port)


def test_a_primary_killed_during_a_soak_of_four_clients(own_cluster: RedisCluster, tmp_path: Path) -> None:
    args = ["--port", "0", "--redis-url", own_cluster.url]
    with serving(args, tmp_path) as a, serving(args, tmp_path) as b:
        outcomes = [Outcome() for _ in range(CLIENTS)]
        clients = [Client(number, [a.url, b.url], outcomes[number]) for number in range(CLIENTS)]
        begun = time.monotonic()
        until = begun + SOAK
        threads = [threading.Thread(target=client.run, args=(until,), daemon=True) for client in clients]
        for thread in threads:
            thread.start()
        time.sleep(KILL_AT)
        session_id = clients[0].session_id
        assert session_id is not None, outcomes[0].failures
        victim = node_of_session(own_cluster, session_id)
        victim.stop()  # SIGKILL
        killed_at = time.monotonic()
        deadline = killed_at + WAIT
        while not promoted(own_cluster, victim):
            assert time.monotonic() < deadline, "no replica was promoted"
            time.sleep(0.05)
        promoted_at = time.monotonic()
        for thread in threads:
            thread.join(SOAK + HANG)
            assert not thread.is_alive(), "a client hung"
        # Served after the soak by the same processes, on every session the soak ended with.
        for client in clients:
            if client.session_id is not None:
                client.http = httpx.Client(headers=HEADERS, timeout=httpx.Timeout(HANG))
                client.call(10_000_000)
                assert client.outcome.calls[-1][2] == "ok", client.outcome.failures
        assert a.process.poll() is None and b.process.poll() is None

    calls = [call for outcome in outcomes for call in outcome.calls]
    kinds = Counter(kind for _, _, kind in calls)
    not_ok = [(start, end, kind) for start, end, kind in calls if kind != "ok"]
    last_refusal = max((end for _, end, _ in not_ok), default=killed_at)
    back = [
        min((start for start, _, kind in outcome.calls if kind == "ok" and start > last_refusal), default=None)
        for outcome in outcomes
    ]
    slowest = max(end - start for start, end, _ in calls)
    print(
        f"\nfailover soak: {CLIENTS} clients, {SOAK:.0f} s, primary killed at {KILL_AT:.0f} s; "
        f"promotion {promoted_at - killed_at:.2f} s after the kill; requests {len(calls)}: {dict(kinds)}; "
        f"refusals from {min((s for s, _, _ in not_ok), default=killed_at) - killed_at:+.2f} s "
        f"to {last_refusal - killed_at:+.2f} s after the kill "
        f"({last_refusal - promoted_at:+.2f} s after the promotion); slowest request {slowest:.2f} s; "
        f"failures {sum(len(outcome.failures) for outcome in outcomes)}; "
        f"after the soak: workers {a.process.pid} and {b.process.pid} still the same processes"
    )
    failures = [failure for outcome in outcomes for failure in outcome.failures]
    assert failures == []  # no wrong answer, no other session's answer, no 5xx but 503, no hang
    assert set(kinds) <= {"ok", "refused", "lost"}
    # (a 404 may only be a session whose creation was acknowledged but not yet replicated: Redis's
    # own promise; the first client's session, on the killed primary since seconds before, survived)
    assert all(kind != "lost" for _, _, kind in outcomes[0].calls)
    assert slowest < HANG
    assert last_refusal - promoted_at < BACK_WITHIN  # every request after that was served
    assert all(first is not None for first in back)  # and every client was served again
    assert kinds["ok"] > 100


def replicas_of(cluster: RedisCluster, primary: ClusterNode) -> list[ClusterNode]:
    primary_id = primary.call("CLUSTER", "MYID").strip()
    by_port = {node.port: node for node in cluster.nodes}
    found = []
    for line in primary.call("CLUSTER", "NODES").splitlines():
        fields = line.split()
        if fields[3] == primary_id:
            found.append(by_port[int(fields[1].split("@")[0].rsplit(":", 1)[1])])
    return found


def test_a_cluster_down_is_a_503_with_retry_after_and_served_again_once_back(
    own_cluster: RedisCluster, tmp_path: Path
) -> None:
    """A shard with no node left (a primary and its replica killed) puts the cluster in
    ``cluster_state:fail``: every live node answers CLUSTERDOWN, for the slots it still holds
    too. A session on a live shard, first seen by the other process (which reads its record),
    is then refused with 503 and ``Retry-After`` (not a 500, not a wait), a new session too
    (the lost shard's part of the sessions index); served again once the shard is back."""
    args = ["--port", "0", "--redis-url", own_cluster.url]
    with serving(args, tmp_path) as a, serving(args, tmp_path) as b:
        client = Client(0, [a.url], Outcome())
        assert client.open() == "ok"
        home = node_of_session(own_cluster, client.session_id or "")
        victim = next(node for node in own_cluster.primaries() if node is not home)
        shard = [victim, *replicas_of(own_cluster, victim)]
        assert len(shard) == 2
        for node in shard:
            node.stop()
        live = next(node for node in own_cluster.nodes if node.process is not None)
        deadline = time.monotonic() + WAIT
        while "cluster_state:fail" not in live.call("CLUSTER", "INFO"):
            assert time.monotonic() < deadline, "the cluster never noticed the lost shard"
            time.sleep(0.05)
        client.urls = [b.url]  # (b has never served it: it asks the session's live shard)
        for n in (1, 2):
            client.call(n)
            started, ended, kind = client.outcome.calls[-1]
            assert kind == "refused", client.outcome.failures
            assert ended - started < HANG
        fresh = Client(1, [b.url], Outcome())
        assert fresh.open() == "refused", fresh.outcome.failures
        for node in shard:  # (their nodes.conf kept the slots: the shard comes back, empty)
            node.start()
        own_cluster.wait_until_formed()
        deadline = time.monotonic() + WAIT
        while True:
            client.call(3)  # (its record was on a shard that stayed up: the session is served again)
            if client.outcome.calls[-1][2] == "ok":
                break
            assert client.outcome.calls[-1][2] == "refused", client.outcome.failures
            assert time.monotonic() < deadline, "not served again"
            time.sleep(0.2)
        assert a.process.poll() is None and b.process.poll() is None  # the same processes throughout
