"""Standard-library MCP Streamable HTTP client bits for the harness: open a
session, open many, read a process's resident memory.

Standard library only, so run.py works with any python3, whatever the peers'
environments hold.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

PROTOCOL_VERSION = "2025-06-18"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class SessionError(RuntimeError):
    """An initialize that was refused or answered with an error."""


def _initialize_body(client: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": client, "version": "1.0.0"}}})


def connect(url: str, timeout: float = 10.0) -> tuple[http.client.HTTPConnection, str]:
    """A keep-alive connection to the URL's host and the URL's path."""
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout), parts.path or "/"


def initialize(conn: http.client.HTTPConnection, path: str, client: str = "bench") -> str:
    """Send initialize; return the session id ('' for a stateless server)."""
    conn.request("POST", path, _initialize_body(client), HEADERS)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200 or b'"result"' not in body:
        raise SessionError(f"initialize answered {resp.status}: {body[:200]!r}")
    return resp.getheader("Mcp-Session-Id") or ""


def open_session(conn: http.client.HTTPConnection, path: str, client: str = "bench") -> str:
    """initialize + notifications/initialized, nothing else; the session id."""
    sid = initialize(conn, path, client)
    headers = dict(HEADERS, **{"MCP-Protocol-Version": PROTOCOL_VERSION})
    if sid:
        headers["Mcp-Session-Id"] = sid
    conn.request("POST", path, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status not in (200, 202, 204):
        raise SessionError(f"notifications/initialized answered {resp.status}: {body[:200]!r}")
    return sid


@dataclass
class Opened:
    """What open_sessions managed: the ids, and why it stopped early if it did."""

    ids: list[str] = field(default_factory=list)
    error: str | None = None


def open_sessions(url: str, count: int, *, workers: int = 4, deadline: float = 120.0) -> Opened:
    """Open `count` idle sessions over `workers` keep-alive connections.

    Stops at the first failure or when `deadline` seconds have passed, so a
    server that slows down or caps sessions cannot hold the run.
    """
    out = Opened()
    lock = threading.Lock()
    stop_at = time.monotonic() + deadline
    quotas = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]

    def work(quota: int, worker: int) -> None:
        conn, path = connect(url)
        try:
            for i in range(quota):
                if out.error is not None:
                    return
                if time.monotonic() > stop_at:
                    with lock:
                        out.error = out.error or f"deadline of {deadline:.0f} s passed"
                    return
                sid = open_session(conn, path, f"bench-{worker}-{i}")
                with lock:
                    out.ids.append(sid)
        except (OSError, http.client.HTTPException, SessionError) as exc:
            with lock:
                out.error = out.error or f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()

    threads = [threading.Thread(target=work, args=(q, w), daemon=True) for w, q in enumerate(quotas) if q]
    for t in threads:
        t.start()
    for t in threads:
        t.join(deadline + 30)
    return out


def rss_kb(pid: int) -> int:
    """Resident set size of a process, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")
