"""Where the client keeps its tokens and its client registrations: in memory, or in a 0600 file.

Rules (the digest's CL-13, CL-25 to CL-27):

1. Tokens are stored per (issuer, resource): the authorization server that issued them
   and the protected resource they were issued for. A lookup with any other pair finds
   nothing, so a token is never sent to a resource or taken from an issuer it was not
   meant for.
2. A client registration (``client_id``, secret, auth method) is stored per issuer: one
   issuer's ``client_id`` is never offered to another.
3. ``clear_tokens`` and ``clear_client`` forget one entry and leave the rest.
4. ``MemoryTokenStorage`` (the default) forgets everything with the process.
   ``FileTokenStorage`` keeps one JSON file for every entry:

   - it is created with mode 0600 (its directory 0700 when missing) and never read when
     others may read it (any of the mode bits 0o077): the user is told to ``chmod 600`` it;
   - every save writes a temporary file in the same directory, syncs it and replaces the
     old file in one step, so a crash leaves the old file or the new one, never half of one;
   - a file that is not what this module writes is an ``OAuthError`` naming the path and
     nothing of its contents;
   - the file is read and written in a worker thread, and the saves of one instance take
     turns, so concurrent saves do not lose each other's entries. Separate processes (or
     instances) sharing one file are not coordinated: the last save wins.
5. Neither keeps anything in an exception message or a log line but paths and key names.

>>> import asyncio
>>> storage = MemoryTokenStorage()
>>> asyncio.run(storage.save_tokens(Tokens("at-1", issuer="https://as.example", resource="https://mcp.example/mcp")))
>>> asyncio.run(storage.load_tokens("https://as.example", "https://mcp.example/mcp")).access_token
'at-1'
>>> asyncio.run(storage.load_tokens("https://other.example", "https://mcp.example/mcp")) is None
True
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from .errors import OAuthError

__all__ = [
    "ClientRegistration",
    "FileTokenStorage",
    "MemoryTokenStorage",
    "TokenStorage",
    "Tokens",
    "default_token_path",
]

_FORMAT_VERSION: Final = 1
_APP_DIR: Final = "mcp-sse-server"
_FILE_NAME: Final = "oauth.json"


@dataclass(frozen=True, slots=True)
class Tokens:
    """One token set, as the token endpoint issued it.

    ``token_type`` is what the server said (``Bearer`` or ``DPoP``, to be compared
    case-insensitively); ``expires_at`` is in epoch seconds (None: unknown); ``scope`` is
    the granted scope, or the requested one when the response named none; ``issuer`` and
    ``resource`` are the authorization server and the resource they belong to (rule 1).
    """

    # repr=False: a repr ends up in logs and tracebacks, and the tokens must not (rule 5).
    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    issuer: str = ""
    resource: str = ""

    def expired(self, now: float, skew: float = 60.0) -> bool:
        """Whether the access token expires within ``skew`` seconds of ``now`` (never when
        its expiry is unknown: the server's 401 then says so)."""
        return self.expires_at is not None and self.expires_at - skew <= now


@dataclass(frozen=True, slots=True)
class ClientRegistration:
    """The client's credentials at one authorization server (``issuer``, rule 2).

    ``expires_at`` is RFC 7591's ``client_secret_expires_at``: None or 0 mean never.
    """

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    redirect_uris: tuple[str, ...] = ()
    expires_at: float | None = None

    def expired(self, now: float) -> bool:
        """Whether the client secret has expired (never when ``expires_at`` is None or 0)."""
        return self.expires_at is not None and self.expires_at != 0 and self.expires_at <= now


class TokenStorage(Protocol):
    """What the OAuth flow needs to keep tokens and registrations (rules 1 to 3)."""

    async def load_tokens(self, issuer: str, resource: str) -> Tokens | None:
        """The tokens ``issuer`` issued for ``resource``, or None."""
        ...

    async def save_tokens(self, tokens: Tokens) -> None:
        """Store ``tokens`` under their ``issuer`` and ``resource``, replacing any there."""
        ...

    async def clear_tokens(self, issuer: str, resource: str) -> None:
        """Forget the tokens ``issuer`` issued for ``resource``, if any."""
        ...

    async def load_client(self, issuer: str) -> ClientRegistration | None:
        """The client's registration at ``issuer``, or None."""
        ...

    async def save_client(self, client: ClientRegistration) -> None:
        """Store ``client`` under its ``issuer``, replacing any there."""
        ...

    async def clear_client(self, issuer: str) -> None:
        """Forget the client's registration at ``issuer``, if any."""
        ...


class MemoryTokenStorage:
    """A ``TokenStorage`` in this instance's memory: the default, lost with the process."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], Tokens] = {}
        self._clients: dict[str, ClientRegistration] = {}

    async def load_tokens(self, issuer: str, resource: str) -> Tokens | None:
        return self._tokens.get((issuer, resource))

    async def save_tokens(self, tokens: Tokens) -> None:
        self._tokens[(tokens.issuer, tokens.resource)] = tokens

    async def clear_tokens(self, issuer: str, resource: str) -> None:
        self._tokens.pop((issuer, resource), None)

    async def load_client(self, issuer: str) -> ClientRegistration | None:
        return self._clients.get(issuer)

    async def save_client(self, client: ClientRegistration) -> None:
        self._clients[client.issuer] = client

    async def clear_client(self, issuer: str) -> None:
        self._clients.pop(issuer, None)


def default_token_path() -> Path:
    """``$XDG_STATE_HOME/mcp-sse-server/oauth.json``, else ``~/.local/state/mcp-sse-server/oauth.json``."""
    state_home = os.environ.get("XDG_STATE_HOME", "")
    # The XDG spec says a relative value is invalid and is to be ignored.
    base = Path(state_home) if state_home and os.path.isabs(state_home) else Path.home() / ".local" / "state"
    return base / _APP_DIR / _FILE_NAME


class _Contents:
    """The parsed file: token sets by issuer then resource, registrations by issuer."""

    __slots__ = ("clients", "tokens")

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Tokens]] = {}
        self.clients: dict[str, ClientRegistration] = {}


class FileTokenStorage:
    """A ``TokenStorage`` in one JSON file at ``path`` (rule 4); see ``default_token_path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"

    async def load_tokens(self, issuer: str, resource: str) -> Tokens | None:
        # No lock: the file is only ever replaced whole, so a read sees one save or the next.
        contents = await asyncio.to_thread(self._read)
        return contents.tokens.get(issuer, {}).get(resource)

    async def save_tokens(self, tokens: Tokens) -> None:
        def change(contents: _Contents) -> bool:
            contents.tokens.setdefault(tokens.issuer, {})[tokens.resource] = tokens
            return True

        await self._update(change)

    async def clear_tokens(self, issuer: str, resource: str) -> None:
        def change(contents: _Contents) -> bool:
            by_resource = contents.tokens.get(issuer)
            if by_resource is None or by_resource.pop(resource, None) is None:
                return False
            if not by_resource:
                del contents.tokens[issuer]
            return True

        await self._update(change)

    async def load_client(self, issuer: str) -> ClientRegistration | None:
        contents = await asyncio.to_thread(self._read)
        return contents.clients.get(issuer)

    async def save_client(self, client: ClientRegistration) -> None:
        def change(contents: _Contents) -> bool:
            contents.clients[client.issuer] = client
            return True

        await self._update(change)

    async def clear_client(self, issuer: str) -> None:
        def change(contents: _Contents) -> bool:
            return contents.clients.pop(issuer, None) is not None

        await self._update(change)

    async def _update(self, change: Callable[[_Contents], bool]) -> None:
        # Read, change and write under one lock: two saves that each read the file before
        # either wrote it would otherwise drop one another's entry.
        async with self._lock:
            await asyncio.to_thread(self._read_change_write, change)

    def _read_change_write(self, change: Callable[[_Contents], bool]) -> None:
        contents = self._read()
        if change(contents):
            self._write(contents)

    # -- file I/O (worker threads) -------------------------------------------------------

    def _read(self) -> _Contents:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return _Contents()
        except OSError as exc:
            raise OAuthError(f"cannot read the token file {self.path}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as file:
            # fstat on the open file: the mode checked is that of the file read.
            mode = os.fstat(file.fileno()).st_mode
            if os.name == "posix" and mode & 0o077:
                raise OAuthError(
                    f"the token file {self.path} can be read by other users (mode "
                    f"{stat.S_IMODE(mode):04o}): it holds secrets; run 'chmod 600 {self.path}'"
                )
            raw = file.read()
        return _parse(raw, self.path)

    def _write(self, contents: _Contents) -> None:
        directory = self.path.parent
        if not directory.exists():
            # Only the directory created here is 0700; existing parents keep their modes.
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = json.dumps(_dump(contents), indent=2, sort_keys=True).encode() + b"\n"
        temp = directory / f".{self.path.name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(temp, flags, 0o600)
        except OSError as exc:
            raise OAuthError(f"cannot write the token file {self.path}: {exc.strerror}") from None
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise OAuthError(f"cannot write the token file {self.path}: {exc.strerror}") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _sync_directory(directory)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX; elsewhere a directory cannot be opened)."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- the file format -----------------------------------------------------------------------
#
# {"version": 1,
#  "tokens": {issuer: {resource: {"access_token": ..., "token_type": ..., "expires_at": ...,
#                                 "refresh_token": ..., "scope": ...}}},
#  "clients": {issuer: {"client_id": ..., "client_secret": ..., "token_endpoint_auth_method": ...,
#                       "redirect_uris": [...], "expires_at": ...}}}
# The issuer and resource are the keys, so they cannot disagree with a record.


def _dump(contents: _Contents) -> dict[str, Any]:
    return {
        "version": _FORMAT_VERSION,
        "tokens": {
            issuer: {
                resource: {
                    "access_token": tokens.access_token,
                    "token_type": tokens.token_type,
                    "expires_at": tokens.expires_at,
                    "refresh_token": tokens.refresh_token,
                    "scope": tokens.scope,
                }
                for resource, tokens in by_resource.items()
            }
            for issuer, by_resource in contents.tokens.items()
        },
        "clients": {
            issuer: {
                "client_id": client.client_id,
                "client_secret": client.client_secret,
                "token_endpoint_auth_method": client.token_endpoint_auth_method,
                "redirect_uris": list(client.redirect_uris),
                "expires_at": client.expires_at,
            }
            for issuer, client in contents.clients.items()
        },
    }


class _Corrupt(Exception):
    """The file's structure is not ours (the message names a key, never a value)."""


def _parse(raw: bytes, path: Path) -> _Contents:
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        # from None: a JSONDecodeError keeps the whole document (the secrets) in ``.doc``.
        raise OAuthError(f"the token file {path} is not valid JSON: fix or delete it") from None
    try:
        return _contents(document)
    except _Corrupt as exc:
        raise OAuthError(f"the token file {path} is not a token file ({exc}): fix or delete it") from None


def _contents(document: Any) -> _Contents:
    if not isinstance(document, dict):
        raise _Corrupt("not an object")
    if document.get("version") != _FORMAT_VERSION:
        raise _Corrupt("unknown version")
    contents = _Contents()
    for issuer, by_resource in _object(document.get("tokens", {}), "tokens").items():
        entries = contents.tokens[issuer] = {}
        for resource, record in _object(by_resource, "tokens").items():
            entry = _object(record, "tokens")
            entries[resource] = Tokens(
                access_token=_string(entry, "access_token"),
                token_type=_string(entry, "token_type"),
                expires_at=_number(entry, "expires_at"),
                refresh_token=_optional_string(entry, "refresh_token"),
                scope=_optional_string(entry, "scope"),
                issuer=issuer,
                resource=resource,
            )
    for issuer, record in _object(document.get("clients", {}), "clients").items():
        entry = _object(record, "clients")
        uris = entry.get("redirect_uris", [])
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            raise _Corrupt("redirect_uris")
        contents.clients[issuer] = ClientRegistration(
            issuer=issuer,
            client_id=_string(entry, "client_id"),
            client_secret=_optional_string(entry, "client_secret"),
            token_endpoint_auth_method=_optional_string(entry, "token_endpoint_auth_method"),
            redirect_uris=tuple(uris),
            expires_at=_number(entry, "expires_at"),
        )
    return contents


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Corrupt(name)
    return value


def _string(entry: dict[str, Any], name: str) -> str:
    value = entry.get(name)
    if not isinstance(value, str):
        raise _Corrupt(name)
    return value


def _optional_string(entry: dict[str, Any], name: str) -> str | None:
    value = entry.get(name)
    if value is not None and not isinstance(value, str):
        raise _Corrupt(name)
    return value


def _number(entry: dict[str, Any], name: str) -> float | None:
    value = entry.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Corrupt(name)
    return float(value)
