"""``TokenStorage``: the in-memory and the file storage keep tokens per (issuer, resource) and
registrations per issuer; the file is private (0600), replaced atomically, refused when others
can read it, and concurrent saves of one instance all land."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from mcp_sse_server.client.oauth.errors import OAuthError
from mcp_sse_server.client.oauth.storage import (
    ClientRegistration,
    FileTokenStorage,
    MemoryTokenStorage,
    Tokens,
    TokenStorage,
    default_token_path,
)

AS_A = "https://as-a.example"
AS_B = "https://as-b.example/tenant1"
MCP_1 = "https://mcp.example/mcp"
MCP_2 = "https://mcp.example/other"

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


@pytest.fixture(params=["memory", "file"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> TokenStorage:
    if request.param == "memory":
        return MemoryTokenStorage()
    return FileTokenStorage(tmp_path / "state" / "oauth.json")


def full_tokens(issuer: str = AS_A, resource: str = MCP_1, access_token: str = "at-1") -> Tokens:
    return Tokens(
        access_token=access_token,
        token_type="DPoP",
        expires_at=1_800_000_000.5,
        refresh_token="rt-1",
        scope="mcp:tools offline_access",
        issuer=issuer,
        resource=resource,
    )


def full_client(issuer: str = AS_A, client_id: str = "c-1") -> ClientRegistration:
    return ClientRegistration(
        issuer=issuer,
        client_id=client_id,
        client_secret="s3cr3t",
        token_endpoint_auth_method="client_secret_basic",
        redirect_uris=("http://127.0.0.1:33418/callback", "http://localhost:3000/callback"),
        expires_at=1_900_000_000.0,
    )


# -- both storages -------------------------------------------------------------------------


async def test_tokens_round_trip(storage: TokenStorage) -> None:
    tokens = full_tokens()
    await storage.save_tokens(tokens)
    assert await storage.load_tokens(AS_A, MCP_1) == tokens
    minimal = Tokens("at-2", issuer=AS_B, resource=MCP_1)
    await storage.save_tokens(minimal)
    assert await storage.load_tokens(AS_B, MCP_1) == minimal


async def test_client_round_trip(storage: TokenStorage) -> None:
    client = full_client()
    await storage.save_client(client)
    assert await storage.load_client(AS_A) == client
    minimal = ClientRegistration(AS_B, "c-2")
    await storage.save_client(minimal)
    assert await storage.load_client(AS_B) == minimal


async def test_nothing_stored(storage: TokenStorage) -> None:
    assert await storage.load_tokens(AS_A, MCP_1) is None
    assert await storage.load_client(AS_A) is None
    await storage.clear_tokens(AS_A, MCP_1)  # clearing what is not there is fine
    await storage.clear_client(AS_A)


async def test_tokens_are_keyed_by_issuer_and_resource(storage: TokenStorage) -> None:
    entries = {
        (issuer, resource): full_tokens(issuer, resource, f"at-{issuer}-{resource}")
        for issuer in (AS_A, AS_B)
        for resource in (MCP_1, MCP_2)
    }
    for tokens in entries.values():
        await storage.save_tokens(tokens)
    for (issuer, resource), tokens in entries.items():
        assert await storage.load_tokens(issuer, resource) == tokens
    # Exact strings: no normalization finds a near match (CL-9).
    assert await storage.load_tokens(AS_A + "/", MCP_1) is None
    assert await storage.load_tokens(AS_A, MCP_1 + "/") is None


async def test_saving_replaces_the_entry(storage: TokenStorage) -> None:
    await storage.save_tokens(full_tokens(access_token="old"))
    await storage.save_tokens(full_tokens(access_token="new"))
    loaded = await storage.load_tokens(AS_A, MCP_1)
    assert loaded is not None and loaded.access_token == "new"
    await storage.save_client(full_client(client_id="old"))
    await storage.save_client(full_client(client_id="new"))
    client = await storage.load_client(AS_A)
    assert client is not None and client.client_id == "new"


async def test_clients_are_keyed_by_issuer(storage: TokenStorage) -> None:
    await storage.save_client(full_client(AS_A, "c-a"))
    await storage.save_client(full_client(AS_B, "c-b"))
    a, b = await storage.load_client(AS_A), await storage.load_client(AS_B)
    assert a is not None and a.client_id == "c-a"
    assert b is not None and b.client_id == "c-b"
    assert await storage.load_client("https://as-c.example") is None


async def test_clear_forgets_one_entry(storage: TokenStorage) -> None:
    await storage.save_tokens(full_tokens(AS_A, MCP_1))
    await storage.save_tokens(full_tokens(AS_A, MCP_2))
    await storage.save_client(full_client(AS_A))
    await storage.save_client(full_client(AS_B))
    await storage.clear_tokens(AS_A, MCP_1)
    assert await storage.load_tokens(AS_A, MCP_1) is None
    assert await storage.load_tokens(AS_A, MCP_2) is not None
    await storage.clear_tokens(AS_A, MCP_2)
    assert await storage.load_tokens(AS_A, MCP_2) is None
    await storage.clear_client(AS_A)
    assert await storage.load_client(AS_A) is None
    assert await storage.load_client(AS_B) is not None


async def test_concurrent_saves_all_land(storage: TokenStorage) -> None:
    resources = [f"https://mcp.example/r{index}" for index in range(25)]
    await asyncio.gather(
        *(storage.save_tokens(full_tokens(AS_A, resource, f"at-{index}")) for index, resource in enumerate(resources)),
        *(storage.save_client(full_client(f"https://as{index}.example")) for index in range(25)),
    )
    for index, resource in enumerate(resources):
        loaded = await storage.load_tokens(AS_A, resource)
        assert loaded is not None and loaded.access_token == f"at-{index}"
    for index in range(25):
        assert await storage.load_client(f"https://as{index}.example") is not None


# -- Tokens and ClientRegistration ---------------------------------------------------------


def test_expired() -> None:
    tokens = Tokens("at", expires_at=1000.0)
    assert not tokens.expired(900.0)  # 1000 - 60 > 900
    assert tokens.expired(940.0)  # exactly at the skew
    assert tokens.expired(999.0)
    assert tokens.expired(2000.0)
    assert not tokens.expired(990.0, skew=0)
    assert tokens.expired(1000.0, skew=0)
    assert not Tokens("at").expired(1e12)  # unknown expiry: the server's 401 will say


def test_client_expired() -> None:
    assert not ClientRegistration(AS_A, "c").expired(1e12)
    assert not ClientRegistration(AS_A, "c", expires_at=0).expired(1e12)  # RFC 7591: 0 is never
    assert not ClientRegistration(AS_A, "c", expires_at=1000.0).expired(999.0)
    assert ClientRegistration(AS_A, "c", expires_at=1000.0).expired(1000.0)


def test_reprs_hide_secrets() -> None:
    text = repr(full_tokens(access_token="AT-SECRET")) + repr(full_client())
    assert "AT-SECRET" not in text and "rt-1" not in text and "s3cr3t" not in text
    assert AS_A in text and "c-1" in text


# -- the file ------------------------------------------------------------------------------


@posix_only
async def test_file_and_directory_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "oauth.json"
    storage = FileTokenStorage(path)
    await storage.save_tokens(full_tokens())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    await storage.save_client(full_client())  # a replaced file is 0600 too
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@posix_only
async def test_private_even_under_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "d" / "oauth.json"
        await FileTokenStorage(path).save_tokens(full_tokens())
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@posix_only
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
async def test_a_file_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "oauth.json"
    storage = FileTokenStorage(path)
    await storage.save_tokens(full_tokens(access_token="AT-SECRET"))
    path.chmod(mode)
    for attempt in (
        storage.load_tokens(AS_A, MCP_1),
        storage.load_client(AS_A),
        storage.save_tokens(full_tokens(AS_B)),
        storage.clear_tokens(AS_A, MCP_1),
    ):
        with pytest.raises(OAuthError, match="chmod 600") as caught:
            await attempt
        assert str(path) in str(caught.value)
        assert "AT-SECRET" not in str(caught.value)
    assert stat.S_IMODE(path.stat().st_mode) == mode  # refused, not silently rewritten
    path.chmod(0o600)
    assert await storage.load_tokens(AS_A, MCP_1) is not None


async def test_replacing_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    storage = FileTokenStorage(path)
    for index in range(5):
        await storage.save_tokens(full_tokens(resource=f"https://mcp.example/{index}"))
        await storage.save_client(full_client(f"https://as{index}.example"))
    await storage.clear_tokens(AS_A, "https://mcp.example/0")
    assert os.listdir(tmp_path) == ["oauth.json"]


async def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "oauth.json"
    storage = FileTokenStorage(path)
    await storage.save_tokens(full_tokens(access_token="kept"))
    before = path.read_bytes()

    def failing_replace(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OAuthError, match="cannot write the token file"):
        await storage.save_tokens(full_tokens(access_token="lost"))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["oauth.json"]


async def test_the_file_is_shared_by_instances(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    await FileTokenStorage(path).save_tokens(full_tokens())
    await FileTokenStorage(path).save_client(full_client())
    reader = FileTokenStorage(path)
    assert await reader.load_tokens(AS_A, MCP_1) == full_tokens()
    assert await reader.load_client(AS_A) == full_client()


async def test_the_file_is_json_keyed_by_issuer_and_resource(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    storage = FileTokenStorage(path)
    await storage.save_tokens(full_tokens())
    await storage.save_client(full_client())
    document = json.loads(path.read_text())
    assert document["version"] == 1
    assert document["tokens"][AS_A][MCP_1]["access_token"] == "at-1"
    assert document["clients"][AS_A]["client_id"] == "c-1"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json SECRET-IN-FILE",
        b"\xff\xfe SECRET-IN-FILE",
        b'["SECRET-IN-FILE"]',
        b'{"version": 2, "tokens": {}, "clients": {}}',
        b'{"version": 1, "tokens": {"https://as.example": {"r": {"access_token": 5}}}, "note": "SECRET-IN-FILE"}',
        b'{"version": 1, "tokens": {"https://as.example": ["SECRET-IN-FILE"]}}',
        b'{"version": 1, "clients": {"https://as.example": {"client_id": "c", "redirect_uris": [1]}}}',
        b'{"version": 1, "clients": {"https://as.example": {"client_id": "c", "expires_at": "SECRET-IN-FILE"}}}',
    ],
)
async def test_a_corrupt_file_is_an_error_naming_the_path(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "oauth.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(content)
    storage = FileTokenStorage(path)
    for attempt in (storage.load_tokens("https://as.example", "r"), storage.load_client("https://as.example")):
        with pytest.raises(OAuthError) as caught:
            await attempt
        assert str(path) in str(caught.value)
        assert "SECRET-IN-FILE" not in str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(OAuthError):
        await storage.save_tokens(full_tokens())  # never overwrites what it cannot read
    assert path.read_bytes() == content


def test_default_token_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_token_path() == tmp_path / "mcp-sse-server" / "oauth.json"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = Path.home() / ".local" / "state" / "mcp-sse-server" / "oauth.json"
    assert default_token_path() == expected
    monkeypatch.setenv("XDG_STATE_HOME", "relative/dir")  # the XDG spec says to ignore it
    assert default_token_path() == expected
