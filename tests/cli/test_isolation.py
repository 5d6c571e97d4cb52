"""Isolation by construction, for real: ``serve file.py:factory`` (no flag) gives each client a
server of its own, so a log a background task sends with ``server.log`` reaches only the client
whose server it is, live and replayed with ``Last-Event-ID``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.isolation import FACTORY, Client, Tally, soak
from fixtures.served import Served


@pytest.fixture
def served(tmp_path: Path, cli_env: dict[str, str]) -> Iterator[Served]:
    (tmp_path / "app.py").write_text(FACTORY)
    server = Served([f"{tmp_path / 'app.py'}:build", "--port", "0"], tmp_path, cli_env)
    try:
        yield server
    finally:
        server.kill()


async def test_one_sessions_background_logs_never_reach_another_live_or_replayed(served: Served) -> None:
    tally = Tally()
    alice, bob = Client(served.url, "alice", tally), Client(served.url, "bob", tally)
    try:
        await alice.open()
        await bob.open()
        for number in range(3):
            await alice.round(number, count=8)
            await bob.round(number, count=3)
    finally:
        await alice.close()
        await bob.close()
    assert tally.errors == []
    assert tally.checks == 3 * 2 * 8  # every check of every round ran


async def test_four_clients_side_by_side_see_only_their_own_events(served: Served) -> None:
    tally = await soak(served.url, clients=4, rounds=4)
    assert tally.errors == []
    assert tally.checks == 4 * 4 * 8
