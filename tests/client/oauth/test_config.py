"""The ``"auth"`` of a registry entry: what is accepted, what each key becomes, and the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_sse_server.client.config import ConfigError, ServerConfig
from mcp_sse_server.client.connect import create_client
from mcp_sse_server.client.oauth import FileTokenStorage, MemoryTokenStorage, OAuth
from mcp_sse_server.client.oauth.config import auth_problem, oauth_from_config


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("oauth", None),
        ({}, None),
        ({"client_id": "app", "scope": "mcp", "redirect_port": 8765, "token_file": "memory"}, None),
        ({"grant": "client_credentials", "client_id": "svc", "client_secret_env": "SECRET"}, None),
        ("bearer", ((), 'expected "oauth" or an object, got string')),
        ({"grant": "client_credentials"}, (("client_id",), "required with grant client_credentials")),
        ({"client_secret": "x"}, (("client_secret",), "unknown key")),
        ({"client_id": 3}, (("client_id",), "expected a string, got number")),
        ({"type": "basic"}, (("type",), "expected oauth, got 'basic'")),
        ({"redirect_port": 70000}, (("redirect_port",), "expected a port number, got 70000")),
    ],
)
def test_auth_values(value: Any, problem: tuple[tuple[str, ...], str] | None) -> None:
    found = auth_problem(value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found[0] == problem[0] and found[1].startswith(problem[1])


def test_an_entry_keeps_its_auth_and_refuses_it_where_there_is_no_url() -> None:
    entry = ServerConfig.from_dict({"url": "https://mcp.example/mcp", "auth": {"client_id": "app"}}, "remote")
    assert entry.auth == {"client_id": "app"} and entry.to_dict()["auth"] == {"client_id": "app"}
    with pytest.raises(ConfigError, match=r"mcpServers\.local\.auth: only a URL server"):
        ServerConfig.from_dict({"command": "server", "auth": "oauth"}, "local")
    with pytest.raises(ConfigError, match=r"mcpServers\.remote\.auth\.grant"):
        ServerConfig.from_dict({"url": "https://mcp.example/mcp", "auth": {"grant": "x"}}, "remote")


def test_the_settings_each_key_becomes(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_bytes(b"-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n")
    oauth = oauth_from_config(
        {
            "grant": "client_credentials",
            "client_id": "svc",
            "client_secret_env": "SVC_SECRET",
            "private_key_file": str(key),
            "scope": "mcp:tools",
            "token_file": str(tmp_path / "tokens.json"),
        },
        environ={"SVC_SECRET": "s3cret"},
    )
    settings = oauth.settings
    assert (settings.grant, settings.client_id, settings.client_secret, settings.scope) == (
        "client_credentials",
        "svc",
        "s3cret",
        "mcp:tools",
    )
    assert settings.private_key == key.read_bytes()
    assert isinstance(oauth.storage, FileTokenStorage) and oauth.storage.path == tmp_path / "tokens.json"
    assert isinstance(oauth_from_config({"token_file": "memory"}).storage, MemoryTokenStorage)
    with pytest.raises(ValueError) as unset:
        oauth_from_config({"client_secret_env": "NOT_SET"}, environ={})
    assert unset.value.args == (("client_secret_env",), "the environment variable NOT_SET is not set")
    with pytest.raises(ValueError, match="cannot read"):
        oauth_from_config({"private_key_file": str(tmp_path / "missing.pem")})


def test_a_client_made_from_an_entry_with_auth_runs_oauth() -> None:
    client = create_client({"url": "https://mcp.example/mcp", "auth": "oauth"})
    assert isinstance(client.transport.options.auth, OAuth)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"auth\.client_secret_env: the environment variable"):
        create_client({"name": "x", "url": "https://mcp.example/mcp", "auth": {"client_secret_env": "MCP_TEST_NONE"}})
