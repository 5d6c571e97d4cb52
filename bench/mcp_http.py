"""Standard-library MCP Streamable HTTP client bits for the harness: open a
session (at a given protocol revision), open many, make one `add` call (in a
session, or stateless at a modern revision) and describe how its reply
travelled, read a process's resident memory.

Standard library only, so run.py works with any python3, whatever the peers'
environments hold.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

PROTOCOL_VERSION = "2025-06-18"  # what sessions offer unless a point asks for another revision
# Revisions without initialize or session: every request carries the _meta envelope and the
# Mcp-Method / Mcp-Name headers, and every result "resultType" (tools_call.lua sends the same).
MODERN_REVISIONS = ("2026-07-28",)
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
_ANSWERED = re.compile(rb'"protocolVersion"\s*:\s*"([^"]*)"')
_ERROR_MESSAGE = re.compile(rb'"message"\s*:\s*"([^"]{0,160})')
_COMPLETE = re.compile(rb'"resultType"\s*:\s*"complete"')


class SessionError(RuntimeError):
    """An initialize that was refused or answered with an error."""


class NotServed(SessionError):
    """initialize was answered with another protocol revision than the one offered, or a
    modern request with a client error or a result without resultType."""


def is_modern(revision: str) -> bool:
    """A revision without initialize or session (2026-07-28)."""
    return revision in MODERN_REVISIONS


def _initialize_body(client: str, revision: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {},
        "clientInfo": {"name": client, "version": "1.0.0"}}})


class _WithHeaders(http.client.HTTPConnection):
    """A connection that adds `extra` headers to every request it sends (connect's `headers`)."""

    def __init__(self, host: str | None, port: int | None, timeout: float, extra: dict[str, str]) -> None:
        super().__init__(host or "", port, timeout=timeout)
        self.extra = extra

    def request(self, method: str, url: str, body: Any = None, headers: Mapping[str, str] | None = None,
                **kw: Any) -> None:
        super().request(method, url, body, {**(headers or {}), **self.extra}, **kw)


def connect(url: str, timeout: float = 10.0,
            headers: dict[str, str] | None = None) -> tuple[http.client.HTTPConnection, str]:
    """A keep-alive connection to the URL's host and the URL's path. `headers` (an
    `Authorization: Bearer` one, say) go with every request sent on it, initialize included."""
    parts = urlsplit(url)
    if headers:
        return _WithHeaders(parts.hostname, parts.port, timeout, dict(headers)), parts.path or "/"
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout), parts.path or "/"


def initialize(conn: http.client.HTTPConnection, path: str, client: str = "bench",
               revision: str = PROTOCOL_VERSION) -> str:
    """Send initialize offering `revision`; return the session id ('' for a stateless server).
    NotServed when the answer names another revision (an answer naming none, the bare
    ASGI app's, is taken as it is)."""
    conn.request("POST", path, _initialize_body(client, revision), HEADERS)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200 or b'"result"' not in body:
        raise SessionError(f"initialize answered {resp.status}: {body[:200]!r}")
    answered = _ANSWERED.search(body)
    if answered and answered[1].decode() != revision:
        raise NotServed(f"offered {revision}, answered {answered[1].decode()}")
    return resp.getheader("Mcp-Session-Id") or ""


def _session_headers(sid: str, revision: str) -> dict[str, str]:
    headers = dict(HEADERS, **{"MCP-Protocol-Version": revision})
    if sid:
        headers["Mcp-Session-Id"] = sid
    return headers


def open_session(conn: http.client.HTTPConnection, path: str, client: str = "bench",
                 revision: str = PROTOCOL_VERSION) -> str:
    """initialize (at `revision`) + notifications/initialized, nothing else; the session id."""
    sid = initialize(conn, path, client, revision)
    headers = _session_headers(sid, revision)
    conn.request("POST", path, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status not in (200, 202, 204):
        raise SessionError(f"notifications/initialized answered {resp.status}: {body[:200]!r}")
    return sid


def _call(revision: str, streamed: bool, sid: str) -> tuple[str, dict[str, str]]:
    """Body and headers of one `tools/call add`, as tools_call.lua sends it: with a
    progress token when `streamed`; at a modern revision with the _meta envelope and
    the Mcp-Method / Mcp-Name headers (and no session)."""
    meta: dict[str, object] = {"progressToken": 7} if streamed else {}
    headers = _session_headers(sid, revision)
    if is_modern(revision):
        meta.update({"io.modelcontextprotocol/protocolVersion": revision,
                     "io.modelcontextprotocol/clientCapabilities": {},
                     "io.modelcontextprotocol/clientInfo": {"name": "bench-wrk", "version": "1.0.0"}})
        headers.update({"Mcp-Method": "tools/call", "Mcp-Name": "add"})
    params: dict[str, object] = {"name": "add", "arguments": {"a": 2, "b": 3}}
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    return json.dumps(body, separators=(",", ":")), headers


def reply_shape(conn: http.client.HTTPConnection, path: str, sid: str, revision: str, streamed: bool) -> str:
    """One `tools/call add` as tools_call.lua sends it (see _call), and how its reply
    travelled: written whole (Content-Length) or chunked, its SSE events in order, and
    whether they carry ids, e.g. "chunked: priming, progress, reply; all with ids".
    At a modern revision, NotServed when the server refuses the request (4xx, as a
    server without that revision does: no session) or answers without resultType."""
    conn.request("POST", path, *_call(revision, streamed, sid))
    resp = conn.getresponse()
    body = resp.read()
    if is_modern(revision) and 400 <= resp.status < 500:
        error = _ERROR_MESSAGE.search(body)
        raise NotServed(f"answered {resp.status}" + (f": {error[1].decode(errors='replace')}" if error else ""))
    if is_modern(revision) and resp.status == 200 and b'"result"' in body and not _COMPLETE.search(body):
        raise NotServed("answered with a result without resultType")
    if resp.status != 200 or b'"result"' not in body:
        raise SessionError(f"tools/call answered {resp.status}: {body[:200]!r}")
    framing = "whole" if resp.getheader("Content-Length") else "chunked"
    if not (resp.getheader("Content-Type") or "").startswith("text/event-stream"):
        return f"{framing}: JSON body"
    events = [e for e in body.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
    names, with_id = [], 0
    for event in events:
        fields = [line.partition(b":") for line in event.split(b"\n")]
        data = b"".join(v.strip() for k, _, v in fields if k == b"data")
        with_id += any(k == b"id" for k, _, _ in fields)
        names.append("priming" if not data else "progress" if b"notifications/progress" in data
                     else "reply" if b'"result"' in data else "other")
    ids = "no ids" if not with_id else "all with ids" if with_id == len(events) else f"{with_id} with ids"
    return f"{framing}: {', '.join(names)}; {ids}"


@dataclass
class Opened:
    """What open_sessions managed: the ids, and why it stopped early if it did."""

    ids: list[str] = field(default_factory=list)
    error: str | None = None


def open_sessions(url: str, count: int, *, workers: int = 4, deadline: float = 120.0,
                  headers: dict[str, str] | None = None) -> Opened:
    """Open `count` idle sessions over `workers` keep-alive connections (each request with
    `headers`, as connect sends them).

    Stops at the first failure or when `deadline` seconds have passed, so a
    server that slows down or caps sessions cannot hold the run.
    """
    out = Opened()
    lock = threading.Lock()
    stop_at = time.monotonic() + deadline
    quotas = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]

    def work(quota: int, worker: int) -> None:
        conn, path = connect(url, headers=headers)
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
