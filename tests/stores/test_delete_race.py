"""A worker serving a session from its copy of the record never serves a session another worker
ended: a DELETE answered on worker A, then at once a request on worker B (which holds a copy), is
a 404, many times over, with real ``serve --redis-url`` processes and keep-alive connections."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .serving import ACCEPT, WAIT, RawSession, Served, two_workers_on_redis

ROUNDS = 40


@pytest.fixture
def two_workers(redis_url: str, tmp_path: Path) -> Iterator[tuple[Served, Served]]:
    with two_workers_on_redis(redis_url, tmp_path) as (a, b, _):
        yield a, b


def _tools_list(http: httpx.Client, url: str, headers: dict[str, str], request_id: int) -> int:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}}
    return http.post(url, json=body, headers=headers).status_code


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_a_delete_on_one_worker_is_a_404_at_once_on_another(two_workers: tuple[Served, Served], version: str) -> None:
    a, b = two_workers
    on_a = httpx.Client(headers={"accept": ACCEPT}, timeout=httpx.Timeout(WAIT))
    on_b = httpx.Client(headers={"accept": ACCEPT}, timeout=httpx.Timeout(WAIT))
    try:
        for round_ in range(ROUNDS):
            opened = RawSession(a.url, version=version, close_connections=False)
            opened.open()
            headers = opened.headers()
            opened.close()
            for n in range(2):  # B adopts the session, then serves it from its copy
                assert _tools_list(on_b, b.url, headers, n + 1) == 200
            assert on_a.delete(a.url, headers=headers).status_code == 204
            status = _tools_list(on_b, b.url, headers, 3)
            assert status == 404, f"round {round_}: B served a session A had ended ({status})"
    finally:
        on_a.close()
        on_b.close()


def test_a_delete_racing_a_request_leaves_no_session_behind(two_workers: tuple[Served, Served]) -> None:
    a, b = two_workers
    on_a = httpx.Client(headers={"accept": ACCEPT}, timeout=httpx.Timeout(WAIT))
    on_b = httpx.Client(headers={"accept": ACCEPT}, timeout=httpx.Timeout(WAIT))
    outcomes: set[int] = set()
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for round_ in range(ROUNDS):
                opened = RawSession(a.url, close_connections=False)
                opened.open()
                headers = opened.headers()
                opened.close()
                assert _tools_list(on_b, b.url, headers, 1) == 200
                deleting = pool.submit(on_a.delete, a.url, headers=headers)
                racing = pool.submit(_tools_list, on_b, b.url, headers, 2)
                assert deleting.result().status_code == 204
                outcomes.add(racing.result())  # before or after the DELETE: either answer is right
                status = _tools_list(on_b, b.url, headers, 3)
                assert status == 404, f"round {round_}: B served a session A had ended ({status})"
    finally:
        on_a.close()
        on_b.close()
    assert outcomes <= {200, 404}, outcomes
