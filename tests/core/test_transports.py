"""The one table of transports (engine/transports.py): the server, the config reader, the client
connector and the command line all read it, so a transport registered there works in all four."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcp_sse_server import McpServer
from mcp_sse_server.cli.app import cli
from mcp_sse_server.client import InMemoryClient, create_client
from mcp_sse_server.client.config import ConfigError, ServerConfig, normalize_type
from mcp_sse_server.engine import transports
from mcp_sse_server.engine.transports import TransportEntry

SOURCE = Path(__file__).resolve().parents[2] / "src" / "mcp_sse_server"


@pytest.fixture
def carrier() -> Iterator[list[tuple[str, Any]]]:
    """A test-only transport, "carrier-pigeon", whose server side and client side note their calls."""
    calls: list[tuple[str, Any]] = []

    def serve(server: McpServer, **options: Any) -> None:
        calls.append(("serve", (server.name, options)))

    def connect(config: ServerConfig, **options: Any) -> InMemoryClient:
        calls.append(("connect", (config.command, sorted(options))))
        return InMemoryClient(McpServer("pigeon"))

    transports.register_transport(
        TransportEntry("carrier-pigeon", "command", aliases=("pigeon",), serve=serve, connect=connect)
    )
    try:
        yield calls
    finally:
        transports.unregister_transport("carrier-pigeon")
    assert transports.entry("pigeon") is None


def test_the_packages_own_transports_by_every_name() -> None:
    assert [t.name for t in transports.transports()][:4] == ["inmemory", "streamable", "sse", "stdio"]
    for name, expected in [
        ("Streamable-HTTP", "streamable"),
        ("streamable_http", "streamable"),
        ("http", "streamable"),
    ]:
        assert normalize_type(name) == expected
    assert normalize_type("memory") == "inmemory" and normalize_type("websocket") is None


def test_a_registered_transport_reaches_server_config_client_and_command_line(
    carrier: list[tuple[str, Any]], tmp_path: Path
) -> None:
    McpServer("flown").run("pigeon", altitude=3)
    config = ServerConfig.from_dict({"type": "Carrier_Pigeon", "command": "coop-7"}, name="bird")
    assert config.transport == "carrier-pigeon"
    client = create_client(config, request_timeout=5)
    assert isinstance(client, InMemoryClient)
    assert carrier == [("serve", ("flown", {"altitude": 3})), ("connect", ("coop-7", ["request_timeout"]))]
    registry = str(tmp_path / "mcp_server.json")
    runner = CliRunner()
    added = runner.invoke(
        cli, ["--config", registry, "servers", "add", "bird", "--command", "coop-7", "--type", "pigeon"]
    )
    assert added.exit_code == 0, added.output
    assert '"type": "pigeon"' in Path(registry).read_text()
    url = ["--url", "http://127.0.0.1:9/mcp", "--type", "pigeon"]
    refused = runner.invoke(cli, ["--config", registry, "servers", "add", "other", *url])
    assert refused.exit_code != 0 and "--url does not fit --type pigeon" in refused.output


def test_a_config_for_an_unknown_type_lists_every_registered_one(carrier: list[tuple[str, Any]]) -> None:
    with pytest.raises(ConfigError) as refused:
        ServerConfig.from_dict({"type": "owl", "command": "x"}, name="bird")
    assert "carrier-pigeon (or pigeon)" in str(refused.value) and "streamable (or http, streamable-http)" in str(
        refused.value
    )


def test_a_name_already_taken_is_refused_unless_replaced() -> None:
    with pytest.raises(ValueError, match="already registered names: 'http' \\(streamable\\)"):
        transports.register_transport(TransportEntry("web", "url", aliases=("http",)))
    assert transports.entry("web") is None


def test_no_other_table_of_transport_names_in_the_package() -> None:
    """The names appear as table entries in engine/transports.py only (the defaults of the config
    reader and the command line name a transport, they list none)."""
    listing = '"streamable", "sse", "stdio"'
    holders = [path.name for path in SOURCE.rglob("*.py") if listing in path.read_text()]
    assert holders == []
