"""from_config: one server for a whole mcpServers file (proxy/gateway.py rules), with real
backends: the built-in math server in process, server-everything and the SDK 1.2.1 server over
stdio, one entry that cannot start and one disabled."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sse_server import McpError
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.client.config import ConfigError
from mcp_sse_server.proxy.gateway import GatewayServer, from_config
from proxy.test_proxy_peers import BOUND, elicit, npm_server, old_sdk_python, sample

ROOT = Path(__file__).resolve().parents[2]


def servers() -> dict[str, Any]:
    everything = npm_server("server-everything")
    return {
        "mcpServers": {
            "Math": {"type": "inmemory", "command": "math"},
            "everything": {"command": everything[0], "args": [*everything[1:], "stdio"], "namespace": "ev"},
            "old": {"command": old_sdk_python(), "args": [str(ROOT / "tests/client/old_sdk_peer.py"), "stdio"]},
            "dead": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
            "off": {"command": "never-started", "enabled": False},
        }
    }


@pytest.fixture
async def gateway() -> AsyncIterator[GatewayServer]:
    server = from_config(servers())
    try:
        yield server
    finally:
        await server.close()


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_every_entry_is_served_under_its_namespace_and_a_dead_one_degrades_the_list(
    gateway: GatewayServer, mode: str
) -> None:
    progress: list[float] = []
    async with InMemoryClient(gateway, mode=mode, sampling_handler=sample, elicitation_handler=elicit) as client:
        listed = await asyncio.wait_for(client.request("tools/list", {}), BOUND)
        names = [tool["name"] for tool in listed["tools"]]
        assert {"math_add", "ev_get-sum", "old_add", "old_echo"} <= set(names)
        assert all(name.split("_", 1)[0] in ("math", "ev", "old") for name in names)  # nothing from off
        assert listed["_meta"]["degraded"] is True and listed["_meta"]["failedBackends"] == ["dead"]
        added = await client.call_tool("old_add", {"a": 2, "b": 3})
        assert added.content[0].text == "5"  # type: ignore[union-attr]
        summed = await client.call_tool("ev_get-sum", {"a": 1, "b": 2})
        assert "3" in summed.content[0].text  # type: ignore[union-attr]
        sampled = await asyncio.wait_for(client.call_tool("ev_trigger-sampling-request", {"prompt": "x"}), BOUND)
        assert "sampled-by-front" in sampled.content[0].text  # type: ignore[union-attr]
        elicited = await asyncio.wait_for(client.call_tool("ev_trigger-elicitation-request", {}), BOUND)
        assert "provided the requested information" in elicited.content[0].text  # type: ignore[union-attr]
        done = await client.call_tool(
            "ev_trigger-long-running-operation",
            {"duration": 1, "steps": 3},
            on_progress=lambda p, t, m: progress.append(p),
        )
        assert "completed" in done.content[0].text  # type: ignore[union-attr]
        assert progress == sorted(set(progress)) and len(progress) == 3  # on the front token, increasing
        dead = await client.call_tool("dead_anything", {})
        assert dead.is_error and "Backend dead" in dead.content[0].text  # type: ignore[union-attr]
        with pytest.raises(McpError) as unknown:
            await client.call_tool("nowhere_add", {})
        assert unknown.value.code == -32602
        resources = await client.list_resources()
        uri = next(resource.uri for resource in resources if resource.uri.startswith("ev+demo://"))
        read = await client.read_resource(uri)
        assert read.contents[0].uri == uri  # the front form, back
        templates = await client.list_resource_templates()
        assert any(template.uri_template.startswith("ev+demo://") for template in templates)
        completed = await client.complete({"type": "ref/prompt", "name": "ev_completable-prompt"}, "department", "E")
        assert completed.values == ["Engineering"]


async def test_resource_updates_reach_the_session_under_the_front_uri(gateway: GatewayServer) -> None:
    updates: list[str] = []

    def seen(notification: Any) -> None:
        if notification.method == "notifications/resources/updated":
            updates.append(notification.params["uri"])

    async with InMemoryClient(gateway, mode="session", on_notification=seen) as client:
        uri = "ev+demo://resource/dynamic/text/1"
        await client.request("resources/subscribe", {"uri": uri})
        await client.call_tool("ev_toggle-subscriber-updates", {})
        for _ in range(int(BOUND * 20)):  # bounded
            if updates:
                break
            await asyncio.sleep(0.05)
        assert set(updates) == {uri}


async def test_closing_the_gateway_ends_every_backend_process(gateway: GatewayServer) -> None:
    async with InMemoryClient(gateway, mode="session") as client:
        await client.list_tools()
        processes = [
            backend.started.connection.transport.process  # type: ignore[union-attr]
            for entry in (gateway.entries["ev"], gateway.entries["old"])
            for backend in [*(found[0] for found in entry._fronts.values()), entry._control]
            if backend.started is not None
        ]
        assert processes
    await gateway.close()
    assert all(process.returncode is not None for process in processes)


def test_a_file_is_read_and_bad_entries_are_named(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"Calc": {"type": "inmemory", "command": "math"}}}))
    assert list(from_config(path).entries) == ["calc"]
    with pytest.raises(ConfigError, match="namespace"):
        from_config({"mcpServers": {"My Server": {"command": "x"}}})
    with pytest.raises(ConfigError, match="another entry"):
        from_config({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y", "namespace": "a"}}})
    with pytest.raises(ConfigError, match="mcpServers"):
        from_config({"servers": {}})
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        from_config(path)


async def test_mirrored_argument_headers_are_the_entrys_under_the_front_name() -> None:
    from mcp_sse_server import McpServer, Tool
    from mcp_sse_server.proxy import proxy

    backend = McpServer("routed")
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    backend.add_tool(Tool("route", schema, lambda args, ctx: args["region"]))
    gateway = GatewayServer({"wx": proxy(backend)})
    try:
        assert gateway.mirrored_headers("wx_route") == ()  # (nothing listed yet)
        async with InMemoryClient(gateway, mode="2026-07-28") as client:
            assert [tool.name for tool in await client.list_tools()] == ["wx_route"]
        [header] = gateway.mirrored_headers("wx_route")
        assert (header.name, header.path) == ("Region", ("region",))
        assert gateway.mirrored_headers("route") == gateway.mirrored_headers("other_route") == ()
    finally:
        await gateway.close()


async def test_a_changed_file_adds_and_removes_entries_and_announces_it(tmp_path: Path) -> None:
    from mcp_sse_server.engine.jsonrpc import JsonRpcNotification

    config = tmp_path / "servers.json"
    math = {"type": "inmemory", "command": "math"}
    config.write_text(json.dumps({"mcpServers": {"Math": math}}))
    gateway = from_config(config, watch_interval=0.02)
    seen: list[JsonRpcNotification] = []

    async def changed() -> set[str]:
        for _ in range(500):
            if seen:
                await asyncio.sleep(0.05)  # (the three lists' notifications arrive together)
                break
            await asyncio.sleep(0.01)
        methods = {notification.method for notification in seen}
        seen.clear()
        return methods

    try:
        async with InMemoryClient(gateway, mode="session", on_notification=seen.append) as client:
            before = {tool.name for tool in await client.list_tools()}
            assert before and all(name.startswith("math_") for name in before)
            kept = gateway.entries["math"]
            # An entry added beside one left as it was:
            config.write_text(json.dumps({"mcpServers": {"Math": math, "Twin": math}}))
            every = {f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")}
            assert await changed() == every
            names = {tool.name for tool in await client.list_tools()}
            assert names == before | {"twin_" + name.removeprefix("math_") for name in before}
            assert gateway.entries["math"] is kept  # (its backend connection kept too)
            # A file that no longer reads changes nothing:
            config.write_text("{not json")
            assert await gateway.reload() is False
            assert list(gateway.entries) == ["math", "twin"]
            # An entry removed (by disabling it):
            config.write_text(json.dumps({"mcpServers": {"Math": {**math, "enabled": False}, "Twin": math}}))
            assert "notifications/tools/list_changed" in await changed()
            names = {tool.name for tool in await client.list_tools()}
            assert names and all(name.startswith("twin_") for name in names)
            with pytest.raises(McpError) as unknown:
                await client.call_tool("math_add", {"a": 1, "b": 2})
            assert unknown.value.code == -32602
            assert await gateway.reload() is False  # (nothing changed since)
    finally:
        await gateway.close()


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_server_filesystem_and_both_python_http_servers_through_one_gateway(tmp_path: Path, mode: str) -> None:
    from client.test_peer_matrix import running
    from proxy.test_proxy_peers import npm_server

    (tmp_path / "a.txt").write_text("in the root")
    files = npm_server("server-filesystem")
    with running("sdk", "stateful") as sdk_url, running("fastmcp", "stateful") as fastmcp_url:
        entries = {
            "files": {"command": files[0], "args": [*files[1:], str(tmp_path)]},
            "sdk": {"url": sdk_url},
            "fast": {"url": fastmcp_url},
        }
        gateway = from_config({"mcpServers": entries})
        try:
            async with InMemoryClient(gateway, mode=mode, sampling_handler=sample) as client:
                names = {tool.name for tool in await client.list_tools()}
                assert {"files_read_text_file", "sdk_echo", "sdk_sample", "fast_echo", "fast_sample"} <= names
                read = await client.call_tool("files_read_text_file", {"path": str(tmp_path / "a.txt")})
                assert "in the root" in read.content[0].text  # type: ignore[union-attr]
                for namespace in ("sdk", "fast"):
                    echoed = await client.call_tool(f"{namespace}_echo", {"text": "hello"})
                    assert echoed.content[0].text == "hello"  # type: ignore[union-attr]
                    sampled = await asyncio.wait_for(client.call_tool(f"{namespace}_sample", {"prompt": "?"}), BOUND)
                    assert "sampled-by-front" in str(sampled.content)
                    note = await client.read_resource(f"{namespace}+memo://note")
                    assert note.contents[0].text == "a note"  # type: ignore[union-attr]
                    assert note.contents[0].uri == f"{namespace}+memo://note"
                    prompt = await client.get_prompt(f"{namespace}_greet", {"name": "Alice"})
                    assert "Alice" in str(prompt.messages[0].content)
        finally:
            await gateway.close()


ENV_SERVER = """
import json, os
from mcp_sse_server import McpServer

server = McpServer("envs")


@server.tool()
def environment() -> str:
    return json.dumps(dict(os.environ))


server.run("stdio")
"""


async def test_a_stdio_entry_gets_its_env_and_path_home_lang_unless_it_inherits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "envs.py"
    script.write_text(ENV_SERVER)
    monkeypatch.setenv("GATEWAY_SECRET", "not for backends")
    monkeypatch.setenv("LANG", "C.UTF-8")
    entry = {"command": sys.executable, "args": [str(script)], "env": {"MINE": "1"}}
    gateway = from_config({"mcpServers": {"plain": entry, "whole": {**entry, "inherit_env": True}}})
    try:
        async with InMemoryClient(gateway) as client:
            plain = json.loads((await client.call_tool("plain_environment", {})).content[0].text)  # type: ignore[union-attr]
            whole = json.loads((await client.call_tool("whole_environment", {})).content[0].text)  # type: ignore[union-attr]
    finally:
        await gateway.close()
    assert plain["MINE"] == "1" and plain["PATH"] == os.environ["PATH"] and plain["LANG"] == "C.UTF-8"
    assert "GATEWAY_SECRET" not in plain
    assert set(plain) - {"MINE", "PATH", "HOME", "LANG"} <= {"LC_CTYPE"}  # (what Python itself may set)
    assert whole["MINE"] == "1" and whole["GATEWAY_SECRET"] == "not for backends"
    with pytest.raises(ConfigError, match="inherit_env"):
        from_config({"mcpServers": {"bad": {**entry, "inherit_env": "yes"}}})


async def test_an_entrys_scopes_gate_its_names_for_tokens(tmp_path: Path) -> None:
    from fixtures.keys import ISSUER, RESOURCE, SigningKey
    from mcp_sse_server.auth import JwtVerifier
    from mcp_sse_server.auth.resource import ResourceServer
    from mcp_sse_server.client import StreamableHttpClient
    from mcp_sse_server.transport.http import HttpSettings, McpHttpServer

    math = {"type": "inmemory", "command": "math"}
    gateway = from_config({"mcpServers": {"open": math, "ops": {**math, "scopes": ["ops:use"]}}})
    assert gateway.scopes_needed("tools/call", {"name": "ops_add"}) == {"ops:use"}
    assert gateway.scopes_needed("tools/call", {"name": "open_add"}) == frozenset()
    key = SigningKey("gateway-scopes")
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    auth = ResourceServer(RESOURCE, [ISSUER], verifier=verifier)
    http = await McpHttpServer.bind(gateway, settings=HttpSettings(path="/mcp", auth=auth))
    try:
        for mode in ("session", "2026-07-28"):
            narrow = {"authorization": f"Bearer {key.sign(scope='mcp:tools')}"}
            async with StreamableHttpClient(http.endpoint, headers=narrow, mode=mode) as client:
                names = {tool.name for tool in await client.list_tools()}
                assert "open_add" in names and not any(name.startswith("ops_") for name in names)
                with pytest.raises(McpError) as refused:  # (403 insufficient_scope)
                    await client.call_tool("ops_add", {"a": 1, "b": 2})
                assert "needs the scope ops:use" in str(refused.value)
            wide = {"authorization": f"Bearer {key.sign(scope='mcp:tools ops:use')}"}
            async with StreamableHttpClient(http.endpoint, headers=wide, mode=mode) as client:
                assert "ops_add" in {tool.name for tool in await client.list_tools()}
                added = await client.call_tool("ops_add", {"a": 1, "b": 2})
                assert added.structured_content == {"result": 3}
    finally:
        await http.close(deadline=1)
        await gateway.close()
        await verifier.aclose()


async def test_an_entrys_tools_key_renames_describes_hides_and_fixes_on_the_wire() -> None:
    rules = {
        "subtract": {
            "name": "minus",
            "description": "a minus b",
            "arguments": {"a": {"name": "from"}, "b": {"default": 1}},
        },
        "power": {"name": "square", "arguments": {"exponent": {"hide": True, "value": 2}}},
        "divide": {"enabled": False},
    }
    gateway = from_config({"mcpServers": {"calc": {"type": "inmemory", "command": "math", "tools": rules}}})
    try:
        for mode in ("session", "2026-07-28"):
            async with InMemoryClient(gateway, mode=mode) as client:
                tools = {tool.name: tool for tool in await client.list_tools()}
                assert "calc_add" in tools and not {"calc_subtract", "calc_power", "calc_divide"} & set(tools)
                minus = tools["calc_minus"]
                assert minus.description == "a minus b"
                assert sorted(minus.input_schema["properties"]) == ["b", "from"]
                assert minus.input_schema["properties"]["b"]["default"] == 1
                assert minus.input_schema["required"] == ["from"]
                assert sorted(tools["calc_square"].input_schema["properties"]) == ["base"]
                assert (await client.call_tool("calc_minus", {"from": 10})).structured_content == {"result": 9}
                renamed_away = await client.call_tool("calc_minus", {"from": 10, "a": 99})  # ("a" is "from" now)
                assert renamed_away.structured_content == {"result": 9}
                assert (await client.call_tool("calc_minus", {"from": 10, "b": 4})).structured_content == {"result": 6}
                squared = await client.call_tool("calc_square", {"base": 3, "exponent": 5})  # (a hidden value wins)
                assert squared.structured_content == {"result": 9}
                assert (await client.call_tool("calc_add", {"a": 1, "b": 2})).structured_content == {"result": 3}
                for unknown in ("calc_subtract", "calc_divide"):
                    with pytest.raises(McpError) as refused:
                        await client.call_tool(unknown, {"a": 1, "b": 2})
                    assert refused.value.code == -32602
    finally:
        await gateway.close()


@pytest.mark.parametrize(
    ("rules", "problem"),
    [
        ({"power": {"arguments": {"exponent": {"hide": True}}}}, "needs a value"),
        ({"power": {"arguments": {"exponent": {"value": 2}}}}, "needs a value"),
        ({"power": {"arguments": {"base": {"name": "x"}, "exponent": {"name": "x"}}}}, "not a free argument name"),
        ({"add": {"name": "sum"}, "subtract": {"name": "sum"}}, "already another tool's front name"),
        ({"subtract": {"title": "minus"}, "add": {"name": "subtract"}}, "already another tool's front name"),
        ({"add": {"colour": "red"}}, "expected an object with some of"),
        ([], "expected an object of tool rules"),
    ],
)
def test_a_tools_key_that_cannot_work_is_a_config_error(rules: Any, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        from_config({"mcpServers": {"calc": {"type": "inmemory", "command": "math", "tools": rules}}})


async def test_include_and_exclude_tags_choose_an_entrys_tools_by_the_tags_its_rules_give() -> None:
    math = {"type": "inmemory", "command": "math"}
    tagged = {
        "add": {"tags": ["basic"]},
        "subtract": {"tags": ["basic", "slow"]},
        "power": {"name": "pow", "tags": ["advanced"]},
    }
    entries = {
        "basic": {**math, "tools": tagged, "include_tags": ["basic"], "exclude_tags": ["slow"]},
        "most": {**math, "tools": tagged, "exclude_tags": ["advanced"]},
    }
    gateway = from_config({"mcpServers": entries})
    try:
        async with InMemoryClient(gateway) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {name for name in names if name.startswith("basic_")} == {"basic_add"}
            most = {name for name in names if name.startswith("most_")}
            assert {"most_add", "most_subtract", "most_multiply"} <= most and not {"most_pow", "most_power"} & most
            assert (await client.call_tool("basic_add", {"a": 1, "b": 2})).structured_content == {"result": 3}
            for hidden in ("basic_subtract", "basic_multiply", "most_pow", "most_power"):
                with pytest.raises(McpError) as refused:
                    await client.call_tool(hidden, {"a": 1, "b": 2})
                assert refused.value.code == -32602, hidden
    finally:
        await gateway.close()
    with pytest.raises(ConfigError, match="include_tags: expected a list of strings"):
        from_config({"mcpServers": {"m": {**math, "include_tags": "basic"}}})


async def test_a_transformed_tools_mirrored_headers_follow_its_front_schema() -> None:
    from mcp_sse_server import McpServer, Tool
    from mcp_sse_server.proxy import proxy
    from mcp_sse_server.proxy.entry_tools import EntryTools

    backend = McpServer("routed")
    header = {"type": "string", "x-mcp-header": "Region"}
    schema = {"type": "object", "properties": {"region": header, "shard": {**header, "x-mcp-header": "Shard"}}}
    backend.add_tool(Tool("route", schema, lambda args, ctx: f"{args['region']}/{args['shard']}"))
    rules = EntryTools(
        {"route": {"name": "place", "arguments": {"region": {"name": "zone"}, "shard": {"hide": True, "value": "7"}}}},
        ("mcpServers", "wx", "tools"),
    )
    gateway = GatewayServer({"wx": proxy(backend)}, tools={"wx": rules})
    try:
        async with InMemoryClient(gateway, mode="2026-07-28") as client:
            assert [tool.name for tool in await client.list_tools()] == ["wx_place"]
            placed = await client.call_tool("wx_place", {"zone": "eu"})
            assert placed.content[0].text == "eu/7"  # type: ignore[union-attr]
        [found] = gateway.mirrored_headers("wx_place")  # (the hidden argument's header left with it)
        assert (found.name, found.path) == ("Region", ("zone",))
        assert gateway.mirrored_headers("wx_route") == ()
    finally:
        await gateway.close()
