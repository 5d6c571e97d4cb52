"""ServerConfig: validation that names the bad field, type routing, round trips."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sse_server.client.config import ConfigError, ServerConfig, format_location


def route(data: dict[str, Any]) -> str:
    return ServerConfig.from_dict(data, "foo").transport


@pytest.mark.parametrize(
    ("data", "transport"),
    [
        ({"type": "inmemory", "command": "math"}, "inmemory"),
        ({"type": "in-memory", "command": "math"}, "inmemory"),
        ({"type": "streamable", "url": "http://127.0.0.1:1/mcp"}, "streamable"),
        ({"type": "http", "url": "http://127.0.0.1:1/mcp"}, "streamable"),
        ({"type": "streamable-http", "url": "https://example.com/mcp"}, "streamable"),
        ({"type": "streamableHttp", "url": "https://example.com/mcp"}, "streamable"),
        ({"type": "SSE", "url": "http://127.0.0.1:1/sse"}, "sse"),
        ({"type": "stdio", "command": "npx", "args": ["-y", "server"]}, "stdio"),
        # no type: a URL means Streamable HTTP, wherever it is
        ({"url": "http://127.0.0.1:1/mcp"}, "streamable"),
        ({"command": "https://example.com/mcp"}, "streamable"),  # ChatMCP's form
        ({"command": "HTTP://EXAMPLE.COM/mcp"}, "streamable"),
        ({"command": "npx", "args": ["-y", "server"]}, "stdio"),
        ({"command": "./http-server"}, "stdio"),  # a program whose name starts with http is not a URL
        ({"type": "sse", "command": "http://127.0.0.1:1/sse"}, "sse"),
    ],
)
def test_routing(data: dict[str, Any], transport: str) -> None:
    assert route(data) == transport


def test_endpoint_comes_from_url_or_a_url_in_command() -> None:
    assert ServerConfig.from_dict({"url": "http://a/mcp"}, "x").endpoint == "http://a/mcp"
    assert ServerConfig.from_dict({"command": "http://b/mcp"}, "x").endpoint == "http://b/mcp"
    assert ServerConfig.from_dict({"command": "npx"}, "x").endpoint is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"command": "x", "args": "-y"}, "mcpServers.foo.args: expected a list of strings, got string"),
        ({"command": "x", "args": ["-y", 3]}, "mcpServers.foo.args[1]: expected a string, got number"),
        ({"command": "x", "env": ["A=1"]}, "mcpServers.foo.env: expected an object of strings, got array"),
        ({"command": "x", "env": {"PORT": 8080}}, "mcpServers.foo.env.PORT: expected a string, got number"),
        ({"url": "http://a/", "headers": {"X-A": None}}, "mcpServers.foo.headers.X-A: expected a string, got null"),
        ({"command": 3}, "mcpServers.foo.command: expected a string, got number"),
        ({"url": "ftp://a/b"}, "mcpServers.foo.url: expected an http:// or https:// URL"),
        ({"url": 1}, "mcpServers.foo.url: expected a string, got number"),
        ({"url": "http://"}, "mcpServers.foo.url: expected an http:// or https:// URL, got 'http://'"),
        ({"url": "http://[::1/mcp"}, "mcpServers.foo.url: expected an http:// or https:// URL"),
        ({"command": "https:///mcp"}, "mcpServers.foo.command: expected an http:// or https:// URL"),
        ({"type": "sse", "command": "npx"}, "mcpServers.foo.url: required when type is 'sse'"),
        ({"type": "websocket", "url": "http://a/"}, "mcpServers.foo.type: unknown type 'websocket'"),
        ({"type": 1, "command": "x"}, "mcpServers.foo.type: expected a string, got number"),
        ({"type": "sse"}, "mcpServers.foo.url: required when type is 'sse'"),
        ({"type": "http", "command": "npx"}, "mcpServers.foo.url: required when type is 'http'"),
        ({"type": "stdio"}, "mcpServers.foo.command: required when type is 'stdio'"),
        ({"type": "inmemory"}, "mcpServers.foo.command: required when type is 'inmemory'"),
        ({"type": "stdio", "command": "https://a/mcp"}, "mcpServers.foo.command: is a URL, but type is stdio"),
        ({"command": "x", "auto_approve": "yes"}, "mcpServers.foo.auto_approve: expected true or false, got string"),
        ({"args": []}, 'mcpServers.foo: needs a "command"'),
        ([], "mcpServers.foo: expected an object, got array"),
    ],
)
def test_bad_configs_name_the_field(data: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ServerConfig.from_dict(data, "foo")
    assert str(caught.value).startswith(message), str(caught.value)


def test_error_exposes_the_location() -> None:
    with pytest.raises(ConfigError) as caught:
        ServerConfig.from_dict({"command": "x", "args": ["a", 1]}, "foo")
    assert caught.value.location == ("mcpServers", "foo", "args", 1)
    assert caught.value.field == "mcpServers.foo.args[1]"


def test_names_that_are_not_identifiers_are_quoted() -> None:
    location = ("mcpServers", "Artifact Instructions", "args")
    assert format_location(location) == 'mcpServers["Artifact Instructions"].args'
    with pytest.raises(ConfigError, match=r'^mcpServers\["my server"\]\.args'):
        ServerConfig.from_dict({"command": "x", "args": {}}, "my server")


def test_name_from_the_dict_when_not_given() -> None:
    config = ServerConfig.from_dict({"name": "Math", "type": "inmemory", "command": "math", "env": {}, "args": []})
    assert config.name == "Math"
    assert "name" not in config.extra
    with pytest.raises(ConfigError, match=r"^mcpServers\.Math\.args"):
        ServerConfig.from_dict({"name": "Math", "command": "math", "args": 1})
    with pytest.raises(ConfigError, match=r"^config: needs"):
        ServerConfig.from_dict({})
    with pytest.raises(ConfigError, match=r"^name: expected a string"):
        ServerConfig.from_dict({"name": 5, "command": "x"})


def test_the_constructor_validates_too() -> None:
    with pytest.raises(ConfigError, match=r"^mcpServers\.foo\.args\[0\]"):
        ServerConfig("foo", command="x", args=[1])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match=r"^mcpServers\.foo\.type"):
        ServerConfig("foo", type="carrier-pigeon", command="x")


def test_round_trip_keeps_unknown_fields_and_the_type_as_written() -> None:
    data = {
        "type": "http",
        "url": "https://example.com/mcp",
        "headers": {"Authorization": "Bearer t"},
        "auto_approve": True,
        "disabled": False,
        "timeout": 30,
    }
    config = ServerConfig.from_dict(data, "remote")
    assert config.extra == {"disabled": False, "timeout": 30}
    assert config.to_dict() == data
    assert ServerConfig.from_dict(config.to_dict(), "remote") == config


def test_to_dict_leaves_empty_fields_out() -> None:
    config = ServerConfig("Math", type="inmemory", command="math")
    assert config.to_dict() == {"type": "inmemory", "command": "math"}
    assert config.to_dict(with_name=True) == {"name": "Math", "type": "inmemory", "command": "math"}
    assert config.auto_approve is False


def test_describe_leaves_secrets_out() -> None:
    config = ServerConfig("x", url="https://a/mcp", headers={"Authorization": "Bearer secret"})
    assert config.describe() == "streamable https://a/mcp"
    stdio = ServerConfig("y", command="npx", args=["-y", "pkg"], env={"TOKEN": "secret"})
    assert stdio.describe() == "stdio npx -y pkg"
    assert "secret" not in config.describe() + stdio.describe()
