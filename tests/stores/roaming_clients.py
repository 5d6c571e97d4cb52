"""Clients that roam between hosts, run as a program on a machine of their own (test_network_hosts.py
runs it with ``ip netns exec NS python -m stores.roaming_clients CONFIG``, ``tests`` on the path).

CONFIG (JSON) names the hosts' endpoints, each client's home host, the ``Origin`` the clients send,
how long to run and where to write. Each client opens a session on its home host, then calls
``add`` with numbers that name it (``a`` its marker, ``b`` the request's number: an answer of
another session is a wrong sum), one call every ``pace`` seconds, each on a new connection, on its
current host. A call that gets no answer (no connection within ``connect_timeout``, no reply
within ``read_timeout``, a reset) or a 503 moves the client to the next host with the same
``Mcp-Session-Id``: the session roams through Redis. With ``sessions`` (their ids) the clients
open none but call in those; with ``stay`` they do not move (they retry their host).

Once every session is open and answered it writes ``ready`` (the monotonic time, which every
namespace shares); at the end, ``out``: per client its session and every call as ``[start, end,
host, kind]``, kind one of ``ok``, ``refused`` (503 with Retry-After), ``unreachable`` (no
answer), ``lost`` (404), ``wrong`` (another sum, or another session's id) and ``failed`` (any
other status), with the details of what was not ok.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, request

from .serving import answer_of

REVISION = "2025-11-25"
HEADERS = {"accept": ACCEPT_BOTH, "connection": "close", "mcp-protocol-version": REVISION}


def marker(number: int) -> int:
    """The number a client's calls add to (its sums are its own)."""
    return (number + 1) * 1_000_000


class Roaming:
    """One client: its session, its current host, and what it saw."""

    def __init__(self, number: int, home: int, urls: list[str], config: dict[str, Any]) -> None:
        self.number = number
        self.home = home
        self.at = home
        self.urls = urls
        self.pace = float(config["pace"])
        self.stay = bool(config.get("stay"))
        timeout = httpx.Timeout(float(config["read_timeout"]), connect=float(config["connect_timeout"]))
        self.http = httpx.Client(headers={**HEADERS, "origin": config["origin"]}, timeout=timeout)
        self.session_id: str | None = None
        self.calls: list[tuple[float, float, int, str]] = []
        self.details: list[str] = []

    def open(self) -> bool:
        """A session on the home host; whether it opened."""
        url = self.urls[self.home]
        try:
            reply = self.http.post(url, json=initialize_message(0, protocol_version=REVISION))
            if reply.status_code != 200:
                self.details.append(f"initialize: HTTP {reply.status_code} {reply.text[:200]}")
                return False
            self.session_id = reply.headers["mcp-session-id"]
            done = self.http.post(
                url, json=notification("notifications/initialized"), headers={"mcp-session-id": self.session_id}
            )
            if done.status_code != 202:
                self.details.append(f"initialized: HTTP {done.status_code} {done.text[:200]}")
                return False
        except httpx.HTTPError as error:
            self.details.append(f"initialize: {error!r}")
            return False
        return self.call(0) == "ok"

    def call(self, n: int) -> str:
        assert self.session_id is not None
        a = marker(self.number)
        body = request(n, "tools/call", {"name": "add", "arguments": {"a": a, "b": n}})
        host = self.at
        started = time.monotonic()
        try:
            kind = self._call(body, a + n, n)
        except httpx.TransportError as error:
            kind = "unreachable"
            self.details.append(f"request {n} on host {host}: {error!r}")
        self.calls.append((started, time.monotonic(), host, kind))
        if kind in ("unreachable", "refused") and not self.stay:
            self.at = (self.at + 1) % len(self.urls)  # (retried on the next host, same session)
        return kind

    def _call(self, body: dict[str, Any], expected: int, n: int) -> str:
        headers = {"mcp-session-id": self.session_id or ""}
        with self.http.stream("POST", self.urls[self.at], json=body, headers=headers) as reply:
            if reply.status_code == 503 and reply.headers.get("retry-after", "").isdigit():
                return "refused"
            if reply.status_code != 200:
                self.details.append(f"request {n}: HTTP {reply.status_code} {reply.read()[:200]!r}")
                return "lost" if reply.status_code == 404 else "failed"
            echoed = reply.headers.get("mcp-session-id")
            answer = answer_of(reply, n)
        text = answer.get("result", {}).get("content", [{}])[0].get("text")
        if text != str(expected) or echoed not in (None, self.session_id):
            self.details.append(f"request {n}: wrong answer {answer} (session header {echoed})")
            return "wrong"
        return "ok"

    def run(self, until: float) -> None:
        n = 0
        while time.monotonic() < until:
            n += 1
            if self.call(n) in ("lost", "failed"):
                return  # (the test fails on it: nothing more to learn from this client)
            time.sleep(self.pace)

    def report(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "home": self.home,
            "session_id": self.session_id,
            "calls": self.calls,
            "details": self.details,
        }


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    urls: list[str] = config["urls"]
    clients = [Roaming(number, home, urls, config) for number, home in enumerate(config["homes"])]
    out = Path(config["out"])
    sessions: list[str] | None = config.get("sessions")
    if sessions is not None:
        for client, session_id in zip(clients, sessions, strict=True):
            client.session_id = session_id
    opened = [sessions is not None or client.open() for client in clients]
    if not all(opened):
        out.write_text(json.dumps({"opened": False, "clients": [client.report() for client in clients]}))
        return 1
    begun = time.monotonic()
    Path(config["ready"]).write_text(str(begun))
    until = begun + float(config["run_for"])
    threads = [threading.Thread(target=client.run, args=(until,), daemon=True) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.write_text(json.dumps({"opened": True, "begun": begun, "clients": [client.report() for client in clients]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
