"""What idle sessions cost in Redis: bytes per session record, measured on a real server.

    .venv/bin/python scripts/redis_session_cost.py [--url redis://127.0.0.1:6379/0] [--sessions 1000]

Without --url it starts its own redis-server (no persistence, a temp dir, a free
loopback port) and stops it afterwards. It creates N idle sessions as the app
does after initialize (a 2025-11-25 record with typical client info and
capabilities; no events), then reports ``INFO memory`` ``used_memory`` before
and after, and ``MEMORY USAGE`` of one record key and of the two index sorted sets.
With --url it writes under a fresh prefix and deletes its keys at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from redis.asyncio import Redis

from mcp_sse_server.engine.records import SessionRecord
from mcp_sse_server.stores.redis import RedisSessionStore


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _record(session_id: str, now: float) -> SessionRecord:
    return SessionRecord(
        session_id,
        now,
        now,
        revision="2025-11-25",
        client_info={"name": "claude-ai", "version": "0.1.0"},
        client_capabilities={"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}},
        log_level=None,
        subscriptions=[],
    )


async def _measure(url: str, sessions: int) -> dict[str, Any]:
    client = Redis.from_url(url)
    prefix = f"cost{secrets.token_hex(4)}"
    store = RedisSessionStore(client, prefix=prefix)
    try:
        info: Any = await client.info("memory")
        before = int(info["used_memory"])
        now = time.time()
        ids = [secrets.token_urlsafe(32) for _ in range(sessions)]  # as the app mints them
        for session_id in ids:
            await store.create(_record(session_id, now))
        info = await client.info("memory")
        after = int(info["used_memory"])
        record_bytes = await client.memory_usage(store.key(ids[0]), samples=0)
        seen = await client.memory_usage(store.seen_key, samples=0)
        born = await client.memory_usage(store.born_key, samples=0)
        version: Any = await client.info("server")
        return {
            "redis_version": version["redis_version"],
            "sessions": sessions,
            "used_memory_delta": after - before,
            "per_session": (after - before) / sessions,
            "record_key": record_bytes,
            "index_seen": seen,
            "index_born": born,
            "index_per_session": ((seen or 0) + (born or 0)) / sessions,
        }
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an existing Redis (default: start a private redis-server)")
    parser.add_argument("--sessions", type=int, default=1000)
    options = parser.parse_args()
    process = None
    url = options.url
    directory = None
    if url is None:
        executable = shutil.which("redis-server")
        if executable is None:
            print("redis-server is not installed (scripts/setup.sh: setup_redis)", file=sys.stderr)
            return 1
        directory = tempfile.TemporaryDirectory()
        port = _free_port()
        server_options = ["--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
        server_options += ["--dir", directory.name, "--loglevel", "warning"]
        process = subprocess.Popen([executable, *server_options], stdout=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
    try:
        result = asyncio.run(_measure(url, options.sessions))
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
        if directory is not None:
            directory.cleanup()
    for name, value in result.items():
        print(f"{name:>18}: {value:.1f}" if isinstance(value, float) else f"{name:>18}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
