"""``serve``: the HTTP+SSE transport of revision 2024-11-05 served beside Streamable HTTP, unless
``--no-legacy-sse``; with ``--workers`` above 1 too (a POST reaching a worker other than the
stream's goes there through Redis), where the official SDK 1.2.1 client completes its session."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import httpx

from fixtures.commands import Main
from fixtures.served import WAIT, Served

SSE = {"accept": "text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def check_legacy_stream(url: str, posts: int = 1) -> None:
    """A stream at /sse names its messages URL; an initialize posted there is answered on the
    stream, and ``posts`` - 1 pings after it (each POST on a connection of its own)."""
    with (
        httpx.Client(timeout=WAIT) as client,
        httpx.Client(timeout=WAIT, headers={"connection": "close"}) as poster,
        client.stream("GET", urljoin(url, "/sse"), headers=SSE) as stream,
    ):
        assert stream.status_code == 200
        lines = stream.iter_lines()
        assert next(lines) == "event: endpoint"
        messages = next(lines).removeprefix("data: ")
        assert messages.startswith("/messages/?session_id=")
        assert poster.post(urljoin(url, messages), json=INIT).status_code == 202
        data = next(line for line in lines if line.startswith("data: "))
        assert json.loads(data[6:])["result"]["protocolVersion"] == "2025-06-18"
        for n in range(2, posts + 1):
            ping = {"jsonrpc": "2.0", "id": n, "method": "ping"}
            assert poster.post(urljoin(url, messages), json=ping).status_code == 202
            data = next(line for line in lines if line.startswith("data: "))
            assert json.loads(data[6:]) == {"jsonrpc": "2.0", "id": n, "result": {}}


def test_served_by_default_and_turned_off(serve: Callable[[list[str]], Served]) -> None:
    check_legacy_stream(serve(["math", "--port", "0"]).url)
    off = serve(["math", "--port", "0", "--no-legacy-sse"]).url
    with httpx.Client(timeout=WAIT) as client:
        assert client.get(urljoin(off, "/sse"), headers=SSE).status_code == 404
        assert client.get(off, headers=SSE).status_code == 400  # a session-less GET, as before


def test_served_with_several_workers(serve: Callable[[list[str]], Served], tmp_path: Path) -> None:
    from cli.test_old_clients import old_python, run_client
    from fixtures.redis_server import redis_running

    python = old_python()
    (tmp_path / "redis").mkdir()
    with redis_running(tmp_path / "redis") as redis:
        server = serve(["demo", "--port", "0", "--redis-url", redis.url, "--workers", "2"])
        for _ in range(3):  # (the kernel spreads the connections, POSTs included, over both workers)
            check_legacy_stream(server.url, posts=8)
            result = run_client("sse", urljoin(server.url, "/sse"), python=python)
            assert result["revision"] == "2024-11-05"
            assert "add" in result["tools"] and result["text"] == ["5"] and not result["isError"]
        status, stderr = server.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert "Traceback" not in stderr and "not served with --workers" not in stderr, stderr


def test_the_option_is_in_the_help_and_is_an_http_option(main: Main) -> None:
    status, out, _ = main("serve", "--help")
    assert status == 0
    assert "--no-legacy-sse Do not serve the HTTP+SSE transport of revision 2024-11-05" in " ".join(out.split())
    assert "--no-legacy-sse" in main("dev", "--help")[1]
    status, _, err = main("serve", "math", "--stdio", "--no-legacy-sse")
    assert status == 2
    assert "--no-legacy-sse is an HTTP option" in err
