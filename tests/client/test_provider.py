"""McpServerProvider: where mcp_server.json lives, how it is read, changed and saved, and starting servers."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.client import provider as provider_module
from mcp_sse_server.client.config import ConfigError, ServerConfig
from mcp_sse_server.client.connect import ServerStartError
from mcp_sse_server.client.provider import ConfigFileError, McpServerProvider, default_config_path

DEFAULT_NAMES = ["Math", "Artifact Instructions"]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "config" / "mcp_server.json"


def read(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".tmp"))


# --- where the file is --------------------------------------------------------------


def test_default_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    explicit = {"MCP_SSE_SERVER_CONFIG": str(tmp_path / "mine.json"), "XDG_CONFIG_HOME": "/xdg"}
    assert default_config_path(explicit) == tmp_path / "mine.json"
    if sys.platform != "win32":
        assert default_config_path({"XDG_CONFIG_HOME": "/xdg"}) == Path("/xdg/mcp-sse-server/mcp_server.json")
        home = tmp_path / "home" / ".config" / "mcp-sse-server" / "mcp_server.json"
        assert default_config_path({}) == home
        assert default_config_path({"XDG_CONFIG_HOME": "relative/dir"}) == home  # the XDG spec says ignore it


def test_no_path_means_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SSE_SERVER_CONFIG", str(tmp_path / "from-env.json"))
    provider = McpServerProvider()
    assert provider.path == tmp_path / "from-env.json"
    assert provider.names() == DEFAULT_NAMES
    assert (tmp_path / "from-env.json").exists()


# --- a missing file ----------------------------------------------------------------------


def test_constructing_touches_nothing(path: Path) -> None:
    McpServerProvider(path)
    assert not path.parent.exists()


def test_a_missing_file_is_created_with_the_defaults(path: Path) -> None:
    provider = McpServerProvider(path)
    assert provider.names() == DEFAULT_NAMES
    assert read(path) == {
        "mcpServers": {
            "Math": {"type": "inmemory", "command": "math"},
            "Artifact Instructions": {"type": "inmemory", "command": "artifact_instructions"},
        }
    }
    assert provider.get("Math").transport == "inmemory"
    if sys.platform != "win32":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # entries may hold tokens
    assert leftovers(path) == []


# --- invalid files are reported, never replaced ------------------------------------------


def test_invalid_json_names_the_file_line_and_column(path: Path) -> None:
    path.parent.mkdir(parents=True)
    text = '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n'
    path.write_text(text)
    provider = McpServerProvider(path)
    with pytest.raises(ConfigFileError) as caught:
        provider.list()
    error = caught.value
    assert str(error).startswith(f"{path}:3:")
    assert "invalid JSON" in str(error)
    assert (error.path, error.line) == (path, 3)
    with pytest.raises(ConfigFileError):
        provider.add_mcp_server("b", {"command": "y"})
    with pytest.raises(ConfigFileError):
        provider.remove_mcp_server("a")
    assert path.read_text() == text
    assert leftovers(path) == []


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("[]\n", ":1:1: ", "expected a JSON object"),
        ('{\n  "mcpServers": []\n}\n', ":2:17: mcpServers: ", "expected an object mapping server names"),
        (
            '{"mcpServers": {\n  "a": {\n    "command": "x",\n    "args": "--flag"\n  }\n}}\n',
            ":4:13: mcpServers.a.args: ",
            "expected a list of strings, got string",
        ),
        (
            '{"mcpServers": {\n  "a": {"command": "x",\n    "args": ["ok", 2]}\n}}\n',
            ":3:20: mcpServers.a.args[1]: ",
            "expected a string, got number",
        ),
        # a missing field is reported where its entry starts
        ('{"mcpServers": {\n  "remote": {"type": "sse"}\n}}\n', ":2:13: mcpServers.remote.url: ", "required"),
        ('{"mcpServers": {\n  "n": 5\n}}\n', ":2:8: mcpServers.n: ", "expected an object, got number"),
        ('{"mcpServers": {}, "removedDefaults": "Math"}', ":1:39: removedDefaults: ", "expected a list"),
    ],
)
def test_a_bad_shape_names_the_file_line_and_field(path: Path, text: str, where: str, message: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ConfigFileError) as caught:
        McpServerProvider(path).list()
    assert str(caught.value).startswith(f"{path}{where}{message}"), str(caught.value)
    assert isinstance(caught.value, ConfigError)
    assert path.read_text() == text


def test_bytes_that_are_not_utf8_are_reported(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"mcpServers": {}}\n\xff\n')
    with pytest.raises(ConfigFileError, match=r":2: not UTF-8"):
        McpServerProvider(path).list()


def test_a_utf8_bom_is_accepted(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\xef\xbb\xbf{"mcpServers": {"a": {"command": "x"}}}')
    assert McpServerProvider(path).get("a").command == "x"


# --- editing -------------------------------------------------------------------------------


def test_add_get_list_remove(path: Path) -> None:
    provider = McpServerProvider(path)
    saved = provider.add_mcp_server("files", {"command": "npx", "args": ["-y", "files-server"], "env": {"A": "1"}})
    assert saved == ServerConfig("files", command="npx", args=["-y", "files-server"], env={"A": "1"})
    assert provider.get("files") == saved
    assert provider.names() == [*DEFAULT_NAMES, "files"]
    assert read(path)["mcpServers"]["files"] == {"command": "npx", "args": ["-y", "files-server"], "env": {"A": "1"}}
    # replacing keeps the position; a ServerConfig is saved under the given name
    provider.add_mcp_server("files", ServerConfig("other", url="http://127.0.0.1:9/mcp"))
    assert provider.get("files").transport == "streamable"
    assert read(path)["mcpServers"]["files"] == {"url": "http://127.0.0.1:9/mcp"}
    # a "name" inside a mapping is the key, not an extra field
    provider.add_mcp_server("calc", {"name": "calc", "type": "inmemory", "command": "math"})
    assert read(path)["mcpServers"]["calc"] == {"type": "inmemory", "command": "math"}
    assert provider.remove_mcp_server("files") is True
    assert provider.remove_mcp_server("files") is False
    assert "files" not in provider
    with pytest.raises(KeyError, match=r"no MCP server named 'files' in .*configured: 'Math'"):
        provider.get("files")


def test_a_bad_config_is_not_saved(path: Path) -> None:
    provider = McpServerProvider(path)
    provider.load()
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=r"^mcpServers\.bad\.args: expected a list of strings"):
        provider.add_mcp_server("bad", {"command": "x", "args": "y"})
    with pytest.raises(ConfigError, match="non-empty"):
        provider.add_mcp_server("  ", {"command": "x"})
    assert path.read_bytes() == before


def test_unknown_fields_and_order_are_preserved(path: Path) -> None:
    path.parent.mkdir(parents=True)
    document = {
        "theme": "dark",
        "mcpServers": {
            "zeta": {"command": "z", "disabled": True, "autoApprove": ["read"], "description": "mine"},
            "Math": {"type": "inmemory", "command": "math", "env": {}, "args": []},
            "alpha": {"url": "https://example.com/mcp", "timeout": 30},
            "Artifact Instructions": {"type": "inmemory", "command": "artifact_instructions"},
        },
        "x-extension": {"nested": [1, 2, {"k": None}]},
    }
    path.write_text(json.dumps(document))
    provider = McpServerProvider(path)
    assert provider.get("zeta").extra == {"disabled": True, "autoApprove": ["read"], "description": "mine"}
    provider.add_mcp_server("new", {"command": "n"})
    provider.remove_mcp_server("alpha")
    expected = json.loads(json.dumps(document))
    del expected["mcpServers"]["alpha"]
    expected["mcpServers"]["new"] = {"command": "n"}
    saved = read(path)
    assert saved == expected
    assert list(saved) == ["theme", "mcpServers", "x-extension"]
    assert list(saved["mcpServers"]) == ["zeta", "Math", "Artifact Instructions", "new"]


def test_absent_defaults_are_listed_and_saved_with_the_next_change(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"mine": {"command": "x"}}}')
    provider = McpServerProvider(path)
    assert provider.names() == ["mine", *DEFAULT_NAMES]
    assert list(read(path)["mcpServers"]) == ["mine"]  # reading does not write
    provider.add_mcp_server("other", {"command": "y"})
    assert list(read(path)["mcpServers"]) == ["mine", *DEFAULT_NAMES, "other"]


def test_a_default_under_another_name_is_not_added_again(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"Calculator": {"type": "in-memory", "command": "math"}}}')
    assert McpServerProvider(path).names() == ["Calculator", "Artifact Instructions"]


def test_a_removed_default_stays_removed_until_added_again(path: Path) -> None:
    provider = McpServerProvider(path)
    assert provider.remove_mcp_server("Math") is True
    assert provider.names() == ["Artifact Instructions"]
    assert read(path)["removedDefaults"] == ["Math"]
    assert McpServerProvider(path).names() == ["Artifact Instructions"]
    provider.add_mcp_server("Math", {"type": "inmemory", "command": "math"})
    assert "removedDefaults" not in read(path)
    assert McpServerProvider(path).names() == ["Artifact Instructions", "Math"]


def test_changes_made_by_another_provider_are_seen(path: Path) -> None:
    first, second = McpServerProvider(path), McpServerProvider(path)
    assert first.names() == DEFAULT_NAMES
    second.add_mcp_server("later", {"command": "x"})
    assert "later" in first
    first.remove_mcp_server("later")
    assert "later" not in second


def test_an_existing_file_keeps_its_mode(path: Path) -> None:
    if sys.platform == "win32":
        pytest.skip("POSIX modes")
    McpServerProvider(path).load()
    path.chmod(0o640)
    McpServerProvider(path).add_mcp_server("a", {"command": "x"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symlinked_file_is_written_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp_server.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}')
    link = tmp_path / "mcp_server.json"
    link.symlink_to(real)
    McpServerProvider(link).add_mcp_server("a", {"command": "x"})
    assert link.is_symlink()
    assert "a" in read(real)["mcpServers"]


# --- concurrency and crashes ---------------------------------------------------------------


def test_concurrent_saves_from_threads_keep_every_entry(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # widen the window between reading the file and replacing it, so that without the
    # lock the threads would overwrite each other's additions
    real_read = provider_module._read

    def slow_read(target: Path) -> Any:
        threading.Event().wait(0.001)
        return real_read(target)

    monkeypatch.setattr(provider_module, "_read", slow_read)
    shared = McpServerProvider(path)
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            own = McpServerProvider(path)
            for item in range(5):
                own.add_mcp_server(f"own-{thread}-{item}", {"command": "x"})
                shared.add_mcp_server(f"shared-{thread}-{item}", {"command": "y"})
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    names = set(read(path)["mcpServers"])
    expected = {f"{kind}-{t}-{i}" for kind in ("own", "shared") for t in range(6) for i in range(5)}
    assert expected <= names
    assert names == expected | set(DEFAULT_NAMES)
    assert leftovers(path) == []


WORKER = textwrap.dedent(
    """
    import sys
    from mcp_sse_server.client.provider import McpServerProvider
    provider = McpServerProvider(sys.argv[1])
    for item in range(int(sys.argv[3])):
        provider.add_mcp_server(f"{sys.argv[2]}-{item}", {"command": "x", "args": [str(item)]})
    """
)


def test_concurrent_saves_from_processes_keep_every_entry(path: Path) -> None:
    count = 8
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), f"p{n}", str(count)]) for n in range(3)]
    here = McpServerProvider(path)
    for item in range(count):
        here.add_mcp_server(f"main-{item}", {"command": "x"})
    assert [worker.wait(timeout=60) for worker in workers] == [0, 0, 0]
    names = set(read(path)["mcpServers"])
    expected = {f"{who}-{i}" for who in ("p0", "p1", "p2", "main") for i in range(count)}
    assert names == expected | set(DEFAULT_NAMES)
    assert leftovers(path) == []


CRASHER = textwrap.dedent(
    """
    import os, sys
    from mcp_sse_server.client.provider import McpServerProvider
    provider = McpServerProvider(sys.argv[1])
    provider.load()
    os.replace = lambda *args, **kwargs: os._exit(3)  # the process dies after writing, before renaming
    provider.add_mcp_server("lost", {"command": "x"})
    """
)


def test_a_crash_between_write_and_rename_leaves_the_old_file(path: Path) -> None:
    provider = McpServerProvider(path)
    provider.add_mcp_server("kept", {"command": "x"})
    before = path.read_bytes()
    crashed = subprocess.run([sys.executable, "-c", CRASHER, str(path)], timeout=60, check=False)
    assert crashed.returncode == 3
    assert path.read_bytes() == before
    (temporary,) = leftovers(path)  # the complete new file the crash never renamed
    assert "lost" in json.loads((path.parent / temporary).read_text())["mcpServers"]
    fresh = McpServerProvider(path)
    assert "kept" in fresh and "lost" not in fresh
    fresh.add_mcp_server("after", {"command": "y"})  # the lock was released by the dying process
    assert "after" in read(path)["mcpServers"]


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    provider = McpServerProvider(path)
    provider.add_mcp_server("kept", {"command": "x"})
    before = path.read_bytes()

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        provider.add_mcp_server("lost", {"command": "y"})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert leftovers(path) == []
    assert "lost" not in provider and "kept" in provider


# --- starting servers ---------------------------------------------------------------------


async def test_start_math_returns_a_client_with_19_tools_cached(path: Path) -> None:
    async with McpServerProvider(path) as provider:
        client = await provider.start("Math")
        assert isinstance(client, InMemoryClient)
        tools = provider.tools("Math")
        assert len(tools) == 19
        assert {"add", "sqrt", "factorial"} <= {tool.name for tool in tools}
        assert await provider.start("Math") is client  # already running
        assert provider.client("Math") is client
        result = await client.call_tool("multiply", {"a": 6, "b": 7})
        assert result.structured_content is not None and result.structured_content["result"] == 42
        artifacts = await provider.start("Artifact Instructions")
        assert [tool.name for tool in provider.tools("Artifact Instructions")] == ["get_artifact_instructions"]
    assert client.connection is not None and client.connection.closed
    assert artifacts.connection is not None and artifacts.connection.closed


async def test_stop_and_restart(path: Path) -> None:
    provider = McpServerProvider(path, client_options={"client_name": "provider-test", "mode": "session"})
    client = await provider.start("Math")
    assert isinstance(client, InMemoryClient)
    info = client.transport.server.client_info
    assert info is not None and info["name"] == "provider-test"
    assert await provider.stop("Math") is True
    assert await provider.stop("Math") is False
    with pytest.raises(KeyError, match="not started"):
        provider.tools("Math")
    again = await provider.start("Math")
    assert again is not client
    await again.close()  # dies behind the provider's back: the next start replaces it
    third = await provider.start("Math")
    assert third is not again and len(provider.tools("Math")) == 19
    await provider.close()
    assert provider.client("Math") is None


async def test_start_errors(path: Path) -> None:
    provider = McpServerProvider(path)
    provider.add_mcp_server("ghost", {"type": "inmemory", "command": "no-such-server"})
    with pytest.raises(KeyError, match="no MCP server named 'nope'"):
        await provider.start("nope")
    with pytest.raises(ConfigError, match=r"^mcpServers\.ghost\.command: unknown in-memory server"):
        await provider.start("ghost")
    assert provider.client("ghost") is None


SDK_PEER = Path(__file__).with_name("sdk_peer.py")  # a stdio server written with the official SDK


async def test_start_a_stdio_server_configured_in_the_file(path: Path) -> None:
    pytest.importorskip("mcp_sse_server.client.stdio")
    if not SDK_PEER.exists():
        pytest.skip("tests/client/sdk_peer.py is not there")
    entry = {"command": sys.executable, "args": [str(SDK_PEER), "stdio"], "env": {"PEER_TEST": "1"}}
    McpServerProvider(path).add_mcp_server("peer", entry)
    async with McpServerProvider(path) as provider:
        client = await provider.start("peer")
        assert type(client).__name__ == "StdioClient"
        assert {"add", "divide"} <= {tool.name for tool in provider.tools("peer")}
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content == {"result": 5}
    assert client.connection is not None and client.connection.closed


async def test_start_all_starts_every_server_and_reports_failures_per_server(path: Path) -> None:
    provider = McpServerProvider(path)
    provider.add_mcp_server("ghost", {"type": "inmemory", "command": "no-such-server"})
    provider.add_mcp_server("broken", {"command": str(path.parent / "no-such-program")})
    async with provider:
        started = await provider.start_all()
        assert list(started.clients) == DEFAULT_NAMES
        assert set(started.errors) == {"ghost", "broken"}
        assert not started.ok
        assert isinstance(started.errors["ghost"], ConfigError)
        assert isinstance(started.errors["broken"], ServerStartError)
        assert "broken" in str(started.errors["broken"])
        math = started.clients["Math"]
        assert provider.client("Math") is math and len(provider.tools("Math")) == 19
        result = await math.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content is not None and result.structured_content["result"] == 5
        again = await provider.start_all(["Math", "nope"])
        assert again.clients == {"Math": math}  # already running: the same client
        assert isinstance(again.errors["nope"], KeyError)
        assert sorted(await provider.stop_all()) == sorted(DEFAULT_NAMES)
        assert await provider.stop_all() == []
        assert provider.client("Math") is None
    assert all(client.connection is not None and client.connection.closed for client in started.clients.values())


async def test_start_all_with_every_server_working_is_ok(path: Path) -> None:
    async with McpServerProvider(path) as provider:
        started = await provider.start_all()
        assert started.ok and list(started.clients) == DEFAULT_NAMES
        artifacts = started.clients["Artifact Instructions"]
    assert artifacts.connection is not None and artifacts.connection.closed
