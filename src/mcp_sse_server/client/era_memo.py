"""The era memo: which era each server spoke, remembered for this process, so that later
connections in ``mode="auto"`` skip the ``server/discover`` probe a session server may not survive.

Rules (the 2026-07-28 digest, client probing: "cache the era per origin (HTTP) / per process
(stdio); MAY persist; re-probe if the assumption later fails"):

- A server's identity is, over stdio, its command, arguments, working directory and the
  environment overrides given (``stdio_identity``); over HTTP, the URL's origin and path, without
  query or fragment (``http_identity``). Two clients of one identity share an entry.
- An entry holds ``"session"`` (``MEMO_SESSION``: the probe found no stateless revision, so the
  client performed ``initialize``) or the stateless revision the server spoke (``"2026-07-28"``).
  Only ``mode="auto"`` clients read or write it; ``remember_era=False`` on a client opts out.
- ``"session"`` skips the probe: the client goes straight to ``initialize``. A stateless revision
  is still asked ``server/discover`` (a server of that revision must answer it, and its answer
  carries serverInfo and capabilities), at the remembered revision first.
- Re-probe when the assumption fails: a remembered ``"session"`` server that refuses
  ``initialize`` naming a stateless revision loses its entry and is probed; a remembered
  stateless server whose probe now finds a session server gets ``"session"`` instead.
- In memory only: nothing is written to disk, so a new process probes once again.
  ``clear_era_memo()`` forgets everything, ``forget_era(identity)`` one server.

>>> clear_era_memo()
>>> server = stdio_identity("python", ["old_server.py"], None, {})
>>> recall_era(server) is None
True
>>> remember_era(server, MEMO_SESSION)
>>> recall_era(server), skips_probe(recall_era(server))
('session', True)
>>> http_identity("http://Example.com:80/mcp?x=1") == http_identity("http://example.com/mcp")
True
>>> clear_era_memo()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias
from urllib.parse import urlsplit

__all__ = [
    "MEMO_SESSION",
    "Identity",
    "clear_era_memo",
    "forget_era",
    "http_identity",
    "recall_era",
    "remember_era",
    "skips_probe",
    "stdio_identity",
]

MEMO_SESSION: Final = "session"

Identity: TypeAlias = tuple[str, ...]
"""A server's key in the memo (``stdio_identity``, ``http_identity``)."""

_memo: dict[Identity, str] = {}
_lock = threading.Lock()  # clients on several event loops (threads) share the memo


def stdio_identity(
    command: str, args: Sequence[str], cwd: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> Identity:
    """The memo key of a stdio server: command, arguments, working directory, env overrides."""
    where = os.fspath(cwd) if cwd is not None else ""
    overrides = tuple(f"{name}={value}" for name, value in sorted(env.items()))
    return ("stdio", command, *args, "\0cwd", where, "\0env", *overrides)


def http_identity(url: str) -> Identity:
    """The memo key of an HTTP server: its URL's origin (scheme, host, port) and path."""
    parsed = urlsplit(url)
    scheme = parsed.scheme.lower()
    port = parsed.port if parsed.port is not None else {"http": 80, "https": 443}.get(scheme, 0)
    return ("http", scheme, (parsed.hostname or "").lower(), str(port), parsed.path or "/")


def recall_era(identity: Identity) -> str | None:
    """The era remembered for ``identity``: ``"session"``, a stateless revision, or None."""
    with _lock:
        return _memo.get(identity)


def remember_era(identity: Identity, era: str) -> None:
    """Remember that ``identity`` spoke ``era`` (``"session"`` or a stateless revision)."""
    with _lock:
        _memo[identity] = era


def forget_era(identity: Identity) -> None:
    """Forget what ``identity`` spoke (its next ``mode="auto"`` connection probes again)."""
    with _lock:
        _memo.pop(identity, None)


def clear_era_memo() -> None:
    """Forget every remembered era."""
    with _lock:
        _memo.clear()


def skips_probe(remembered: str | None) -> bool:
    """True when a remembered era lets an ``auto`` client go straight to ``initialize``."""
    return remembered == MEMO_SESSION
