"""Hosts on a real network: network namespaces made by the test (tests/fixtures/netns.py), wired to
one bridge: a Redis Cluster of 3 primaries and 3 replicas on machine ``redis``, three hosts
``h0``, ``h1``, ``h2`` each running ``serve --workers 2 --redis-url redis+cluster://...`` on an
address of its own, and clients on a fifth machine (tests/stores/roaming_clients.py, run there).

Two clients per host, each with a session opened on its host, call ``add`` with sums that name
them. A few seconds in, one host is struck: its cable cut (``eth0`` down), or its ``serve`` process
group killed (SIGKILL). What must hold, and is checked: the clients of the other hosts are served
throughout (every request answered, right); each client of the struck host, retrying on the next
host with the same ``Mcp-Session-Id``, is served there (the session roams through Redis: adopted,
not lost); no answer is wrong or another session's. The figures are printed (``-s`` shows them).

Every namespace, veth and process is gone when the module ends, whatever happened; every wait is
bounded. Where namespaces cannot be made (not root, no ``ip``) the tests skip, saying why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fixtures.netns import Network, network_running
from fixtures.redis_cluster import RedisCluster, redis_cluster_running

from .serving import SRC, WAIT, Served

HOSTS = 3
CLIENTS_PER_HOST = 2
PORT = 8000
STRIKE_AT = 3.0  # seconds after every session is open
RUN_FOR = 12.0  # seconds of calls in all
PACE = 0.05  # seconds between one client's calls (the traffic is bounded: at most ~20 calls a second each)
CONNECT_TIMEOUT = 1.0
READ_TIMEOUT = 5.0
TESTS = SRC.parent / "tests"
# Listening beyond loopback without tokens, a server takes only requests of the origins it allows:
# the clients say they are this one, which every host allows.
ORIGIN = "http://app.test"


@dataclass
class Topology:
    network: Network
    cluster: RedisCluster
    hosts: list[str]  # the hosts' machine names


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    with network_running() as network:
        redis_address = network.add("redis", 2)
        hosts = [f"h{n}" for n in range(HOSTS)]
        for n, host in enumerate(hosts):
            network.add(host, 11 + n)
        network.add("clients", 100)
        directory = tmp_path_factory.mktemp("netns-cluster")
        with redis_cluster_running(directory, host=redis_address, prefix=network.prefix("redis")) as cluster:
            yield Topology(network, cluster, hosts)


def kill_group(served: Served) -> None:
    """SIGKILL to the ``serve`` process and its workers (its process group)."""
    if served.process.poll() is None:
        try:
            os.killpg(served.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    served.process.wait(timeout=WAIT)


@pytest.fixture
def hosts(topology: Topology, tmp_path: Path) -> Iterator[list[Served]]:
    """``serve --workers 2`` on every host (started side by side), killed after the test."""
    started: list[Served | BaseException | None] = [None] * HOSTS

    def start(n: int) -> None:
        machine = topology.hosts[n]
        address = topology.network.machines[machine]
        args = ["--host", address, "--port", str(PORT), "--workers", "2", "--redis-url", topology.cluster.url]
        args += ["--allowed-origin", ORIGIN]
        try:
            started[n] = Served(args, tmp_path, prefix=topology.network.prefix(machine), own_group=True)
        except BaseException as error:  # (reported below, after every host is known)
            started[n] = error

    threads = [threading.Thread(target=start, args=(n,), daemon=True) for n in range(HOSTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT + 5)
    served = [item for item in started if isinstance(item, Served)]
    try:
        problems = [item for item in started if not isinstance(item, Served)]
        assert not problems, f"a host did not start: {problems}"
        yield served
    finally:
        for item in served:
            kill_group(item)


@dataclass
class Run:
    """What the clients saw, and when the host was struck (monotonic seconds, shared by every namespace)."""

    clients: list[dict[str, Any]]
    struck_at: float


def run_clients(
    topology: Topology,
    hosts: list[Served],
    directory: Path,
    strike: Callable[[], None],
    strike_at: float = STRIKE_AT,
    **options: Any,
) -> Run:
    """The clients, two per host, on their machine; ``strike`` called ``strike_at`` s after every
    session is open; ``options`` add to their configuration (tests/stores/roaming_clients.py)."""
    directory.mkdir()
    ready, out = directory / "ready", directory / "out.json"
    config = {
        "urls": [served.url for served in hosts],
        "homes": [n for n in range(HOSTS) for _ in range(CLIENTS_PER_HOST)],
        "run_for": RUN_FOR,
        "pace": PACE,
        "connect_timeout": CONNECT_TIMEOUT,
        "read_timeout": READ_TIMEOUT,
        "origin": ORIGIN,
        "ready": str(ready),
        "out": str(out),
        **options,
    }
    run_for = float(config["run_for"])
    (directory / "clients.json").write_text(json.dumps(config))
    command = [*topology.network.prefix("clients"), sys.executable, "-m", "stores.roaming_clients"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)])}
    with (directory / "clients.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, str(directory / "clients.json")], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=directory
        )
    try:
        deadline = time.monotonic() + WAIT
        while not ready.exists():
            assert process.poll() is None, f"the clients ended early: {_log(directory)} {_read(out)}"
            assert time.monotonic() < deadline, f"the clients never opened their sessions: {_log(directory)}"
            time.sleep(0.05)
        begun = float(ready.read_text())
        time.sleep(max(0.0, begun + strike_at - time.monotonic()))
        struck_at = time.monotonic()
        strike()
        status = process.wait(timeout=run_for + READ_TIMEOUT + WAIT)
        assert status == 0, f"the clients exited with {status}: {_log(directory)} {_read(out)}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)
    result = json.loads(out.read_text())
    return Run(result["clients"], struck_at)


def _log(directory: Path) -> str:
    return (directory / "clients.log").read_text(errors="replace")[-4000:]


def _read(path: Path) -> str:
    return path.read_text()[:4000] if path.exists() else ""


def check(run: Run, victim: int, what: str) -> None:
    """The must-holds (see the module's docstring), and the figures printed."""
    calls = [(client, *call) for client in run.clients for call in client["calls"]]
    kinds = Counter(kind for *_, kind in calls)
    details = [f"client {client['number']}: {detail}" for client in run.clients for detail in client["details"]]
    assert kinds["wrong"] == 0 and kinds["lost"] == 0 and kinds["failed"] == 0, details
    struck = [client for client in run.clients if client["home"] == victim]
    others = [client for client in run.clients if client["home"] != victim]
    adopted_after = []
    for client in struck:
        moved = [call for call in client["calls"] if call[3] == "ok" and call[2] != victim and call[0] > run.struck_at]
        assert moved, f"client {client['number']} (session {client['session_id']}) never served elsewhere: {details}"
        first = moved[0]
        adopted_after.append(first[1] - run.struck_at)
        # Once adopted, served there to the end (its new host is healthy).
        assert all(call[3] == "ok" for call in client["calls"] if call[0] >= first[0]), details
        # Before the strike, served at home.
        assert all(call[3] == "ok" and call[2] == victim for call in client["calls"] if call[1] < run.struck_at)
    adopted_by = max(adopted_after)
    for client in others:
        # Served throughout, at home: every request answered, right, also while the struck host's
        # clients were moving and after they had moved.
        assert all(call[3] == "ok" and call[2] == client["home"] for call in client["calls"]), details
        assert any(call[0] > run.struck_at + adopted_by for call in client["calls"]), "served to the end"
    during = [call for client, *call in calls if call[0] >= run.struck_at and call[1] <= run.struck_at + adopted_by]
    struck_kinds = Counter(call[3] for client in struck for call in client["calls"])
    slowest = max(end - start for _, start, end, *_ in calls)
    print(
        f"\n{what}: {HOSTS} hosts x serve --workers 2 on a 3+3 Redis Cluster, {len(run.clients)} clients "
        f"({CLIENTS_PER_HOST} a host), struck {STRIKE_AT:.0f} s into {RUN_FOR:.0f} s; requests {len(calls)}: "
        f"{dict(kinds)}; the struck host's clients: {dict(struck_kinds)}, adopted by another host "
        f"{', '.join(f'{s:.2f}' for s in adopted_after)} s after the strike; until the last adoption "
        f"{sum(1 for c in during if c[3] == 'ok')} requests served, "
        f"{sum(1 for c in during if c[3] != 'ok')} not (unreachable or refused, each retried on the next host); "
        f"the other hosts' clients {sum(len(c['calls']) for c in others)} requests, all served; "
        f"slowest request {slowest:.2f} s; wrong answers or another session's data 0"
    )


def test_a_hosts_cable_cut_leaves_the_others_serving_and_its_sessions_adopted(
    topology: Topology, hosts: list[Served], tmp_path: Path
) -> None:
    victim = 0
    machine = topology.hosts[victim]
    try:
        run = run_clients(topology, hosts, tmp_path / "cut", lambda: topology.network.cut(machine))
        check(run, victim, "cable cut")
        # The cable mended: the same host (its workers not restarted) serves every session again,
        # those it never saw too, each client calling it alone from 1 s before the mend.
        sessions = [client["session_id"] for client in run.clients]
        back = run_clients(
            topology,
            hosts,
            tmp_path / "mend",
            lambda: topology.network.mend(machine),
            strike_at=1.0,
            run_for=5.0,
            sessions=sessions,
            homes=[victim] * len(sessions),
            stay=True,
        )
    finally:
        topology.network.mend(machine)
    assert all(served.process.poll() is None for served in hosts)  # (a cut host is not a dead one)
    check_back(back, victim)


def check_back(run: Run, host: int) -> None:
    """Every client, calling ``host`` alone, served there after the mend and from then on."""
    details = [f"client {client['number']}: {detail}" for client in run.clients for detail in client["details"]]
    served_after = []
    for client in run.clients:
        assert all(call[2] == host and call[3] in ("ok", "unreachable", "refused") for call in client["calls"]), details
        served = [call for call in client["calls"] if call[3] == "ok"]
        assert served, f"client {client['number']} not served again: {details}"
        assert all(call[3] == "ok" for call in client["calls"] if call[0] >= served[0][0]), details
        served_after.append(served[0][1] - run.struck_at)
    kinds = Counter(call[3] for client in run.clients for call in client["calls"])
    print(
        f"cable mended: the cut host served all {len(run.clients)} sessions again "
        f"{min(served_after):.2f}-{max(served_after):.2f} s after the mend, its workers not restarted; "
        f"requests {sum(kinds.values())}: {dict(kinds)}"
    )


def test_a_killed_host_leaves_the_others_serving_and_its_sessions_adopted(
    topology: Topology, hosts: list[Served], tmp_path: Path
) -> None:
    victim = 1
    run = run_clients(topology, hosts, tmp_path / "kill", lambda: kill_group(hosts[victim]))
    check(run, victim, "host killed")
    assert hosts[victim].process.returncode == -signal.SIGKILL
    assert all(served.process.poll() is None for n, served in enumerate(hosts) if n != victim)
