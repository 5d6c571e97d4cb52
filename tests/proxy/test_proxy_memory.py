"""proxy() in front of an in-process backend: what each front era is forwarded (proxy/server.py
rules), with our client as the front client, at a session revision and at 2026-07-28."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_sse_server import McpError, McpServer
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification
from mcp_sse_server.proxy import ProxyServer, proxy
from proxy.backends import backend

BOUND = 30.0  # catches hangs only


def answers(asked: list[str] | None = None) -> dict[str, Any]:
    """Front client handlers that answer every question the backend's ``ask`` tool puts (each
    question's method noted in ``asked``)."""
    noted = asked if asked is not None else []

    async def sample(request: Any) -> dict[str, Any]:
        noted.append("sampling")
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "front-model"}

    async def elicit(request: Any) -> dict[str, Any]:
        noted.append("elicitation")
        return {"action": "accept", "content": {"colour": "blue"}}

    return {
        "sampling_handler": sample,
        "elicitation_handler": elicit,
        "roots": [{"uri": "file:///front/root", "name": "front"}],
    }


@pytest.fixture(params=["session", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_lists_are_fetched_whole_and_paged_with_front_cursors(mode: str) -> None:
    back, _ = backend(page_size=2)  # the backend pages by 2, the front by 3
    front = proxy(back, page_size=3)
    async with InMemoryClient(front, mode=mode) as client:
        names = [tool.name for tool in await client.list_tools()]
        assert names[:5] == ["t0", "t1", "t2", "t3", "t4"] and "ask" in names
        first = await client.request("tools/list", {})
        assert len(first["tools"]) == 3 and "nextCursor" in first
        second = await client.request("tools/list", {"cursor": first["nextCursor"]})
        assert second["tools"][0]["name"] == "t3"
        with pytest.raises(McpError) as refused:  # a cursor the front did not make
            await client.request("tools/list", {"cursor": "bm9uZQ=="})
        assert refused.value.code == -32602
        assert {r.uri for r in await client.list_resources()} == {"note://a", "note://b"}
        assert [t.uri_template for t in await client.list_resource_templates()] == ["colour://{name}"]
        assert [p.name for p in await client.list_prompts()] == ["greet"]


async def test_calls_reads_prompts_and_completion_are_forwarded(mode: str) -> None:
    back, _ = backend()
    async with InMemoryClient(proxy(back), mode=mode) as client:
        assert client.instructions == "the backend's"
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"sum": 5}
        assert (await client.read_resource("colour://red")).contents[0].text == "the colour red"  # type: ignore[union-attr]
        prompt = await client.get_prompt("greet", {"who": "Ann"})
        assert prompt.messages[0].content.text == "hello Ann"  # type: ignore[union-attr]
        completed = await client.complete({"type": "ref/resource", "uri": "colour://{name}"}, "name", "gr")
        assert completed.values == ["green"]


async def test_backend_errors_pass_with_code_message_and_data(mode: str) -> None:
    back, _ = backend()
    async with InMemoryClient(proxy(back), mode=mode) as client:
        with pytest.raises(McpError) as error:
            await client.call_tool("fail")
        assert (error.value.code, error.value.message, error.value.data) == (
            -32099,
            "the backend refuses",
            {"why": "testing"},
        )


async def test_progress_goes_to_the_front_token_and_increases(mode: str) -> None:
    back, seen = backend()
    reports: list[tuple[float, float | None]] = []
    async with InMemoryClient(proxy(back), mode=mode) as client:
        result = await client.call_tool("progress", on_progress=lambda p, t, m: reports.append((p, t)))
        assert result.content[0].text == "done"  # type: ignore[union-attr]
        await asyncio.sleep(0)  # (progress is relayed in its own task)
        assert reports == [(1, 3), (2, 3), (3, 3)]
        # The backend saw the proxy's token, not the front's.
        await client.call_tool("add", {"a": 1, "b": 1}, on_progress=lambda p, t, m: None)
        assert seen.metas[-1] is not None


async def test_cancelling_the_front_call_cancels_the_backend_call() -> None:
    back, seen = backend()
    async with InMemoryClient(proxy(back), mode="session") as client:
        call = asyncio.create_task(client.call_tool("slow", on_progress=lambda p, t, m: None))
        await asyncio.wait_for(seen.started.wait(), BOUND)
        call.cancel()
        await asyncio.wait_for(seen.cancelled.wait(), BOUND)
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"sum": 3}


async def test_questions_reach_the_session_front_client() -> None:
    back, _ = backend()
    async with InMemoryClient(proxy(back), mode="session", **answers()) as client:
        result = await asyncio.wait_for(client.call_tool("ask"), BOUND)
        assert result.content[0].text == "Paris|blue|file:///front/root"  # type: ignore[union-attr]


@pytest.mark.parametrize("backend_mode", ["2026-07-28", "session"])
async def test_questions_become_input_required_rounds_behind_a_stateless_front(backend_mode: str) -> None:
    # 2026-07-28: the backend is asked at that revision too (its questions come back in the call's
    # task); session: a session-era backend asks on its connection, from another task.
    back, _ = backend()
    rounds: list[str] = []
    front = proxy(back, mode=backend_mode, roots=[{"uri": "file:///configured"}])
    async with InMemoryClient(front, mode="2026-07-28", **answers(rounds)) as client:
        result = await asyncio.wait_for(client.call_tool("ask"), BOUND)
        assert client.stateless
        # (Roots come from the proxy's roots=: rule 5.)
        assert result.content[0].text == "Paris|blue|file:///configured"  # type: ignore[union-attr]
        # Each question asked of the front client once: replayed rounds answer from the retry's answers.
        assert rounds == ["sampling", "elicitation"]
        # Every round but the last ended the backend call (cancelled, or refused on its way).
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"sum": 2}


async def test_a_url_elicitation_reaches_only_a_front_that_declared_url_mode() -> None:
    back, _ = backend()
    seen: list[dict[str, Any]] = []

    async def elicit(request: Any) -> dict[str, Any]:
        seen.append(dict(request))
        return {"action": "accept"}

    async with InMemoryClient(proxy(back), mode="session", elicitation_handler=elicit, elicitation_url=True) as client:
        result = await asyncio.wait_for(client.call_tool("visit"), BOUND)
        assert result.content[0].text == "accept"  # type: ignore[union-attr]
        assert seen[0]["url"] == "https://example.test/login" and seen[0]["mode"] == "url"
    async with InMemoryClient(proxy(back), mode="session", elicitation_handler=elicit) as client:  # form only
        with pytest.raises(McpError):  # the backend's client refuses a mode its front did not declare
            await asyncio.wait_for(client.call_tool("visit"), BOUND)
    stateless = InMemoryClient(proxy(back), mode="2026-07-28", elicitation_handler=elicit, elicitation_url=True)
    async with stateless as client:  # an input_required round of the backend's, passed through
        result = await asyncio.wait_for(client.call_tool("visit"), BOUND)
        assert result.content[0].text == "accept"  # type: ignore[union-attr]
        assert seen[1]["url"] == "https://example.test/login" and seen[1]["mode"] == "url"
    async with InMemoryClient(proxy(back), mode="2026-07-28", elicitation_handler=elicit) as client:  # form only
        with pytest.raises(McpError) as refused:  # (this backend asks anyway; the front client refuses)
            await asyncio.wait_for(client.call_tool("visit"), BOUND)
        assert "'url'" in refused.value.message
    session_backend = InMemoryClient(
        proxy(back, mode="session"), mode="2026-07-28", elicitation_handler=elicit, elicitation_url=True
    )
    async with session_backend as client:  # a backend session behind a stateless front: refused
        with pytest.raises(McpError):
            await asyncio.wait_for(client.call_tool("visit"), BOUND)
    assert len(seen) == 2


async def test_a_question_the_front_cannot_answer_fails_the_call_cleanly(mode: str) -> None:
    back, _ = backend()
    async with InMemoryClient(proxy(back), mode=mode) as client:  # no handlers: nothing declared
        with pytest.raises(McpError) as error:  # the backend's own refusal, as it gave it
            await asyncio.wait_for(client.call_tool("ask"), BOUND)
        assert "sampling" in error.value.message


async def test_logs_are_filtered_by_the_front_level() -> None:
    back, _ = backend()
    lines: list[str] = []
    async with InMemoryClient(proxy(back), mode="session", on_log=lambda m: lines.append(m.data)) as client:
        await client.set_log_level("warning")
        await client.call_tool("chatty")
        for _ in range(100):  # (relayed in tasks: let them run; bounded)
            if lines:
                break
            await asyncio.sleep(0.01)
        assert lines == ["a warning line"]


@pytest.mark.parametrize("connections", ["session", "pooled"])
async def test_list_changes_and_resource_updates_reach_the_session(connections: Any) -> None:
    back, _ = backend()
    seen: list[JsonRpcNotification] = []
    front = proxy(back, connections=connections)
    async with InMemoryClient(front, mode="session", on_notification=seen.append) as client:
        await client.list_tools()
        await client.request("resources/subscribe", {"uri": "note://a"})
        await client.call_tool("grow")
        await client.call_tool("touch")
        for _ in range(200):
            methods = {n.method for n in seen}
            if {"notifications/tools/list_changed", "notifications/resources/updated"} <= methods:
                break
            await asyncio.sleep(0.01)
        updated = [n.params for n in seen if n.method == "notifications/resources/updated"]
        assert updated == [{"uri": "note://a"}]
        assert "notifications/tools/list_changed" in {n.method for n in seen}
        assert "grown" in [tool.name for tool in await client.list_tools()]


async def test_a_backend_that_dies_fails_the_call_and_is_restarted() -> None:
    back, _ = backend()
    front = proxy(back, name="flaky")
    assert isinstance(front, ProxyServer)
    front.first_delay = 0.0
    async with InMemoryClient(front, mode="session") as client:
        await client.call_tool("add", {"a": 1, "b": 1})
        backend_client = next(iter(front._fronts.values()))[0].started
        assert backend_client is not None
        await backend_client.close()  # the backend's connection goes away
        failed = await client.call_tool("add", {"a": 1, "b": 1})
        assert failed.is_error and "Backend flaky is unavailable" in failed.content[0].text  # type: ignore[union-attr]
        again = await client.call_tool("add", {"a": 2, "b": 2})
        assert again.structured_content == {"sum": 4}


async def test_principal_connections_keep_each_principal_on_its_own() -> None:
    from mcp_sse_server.engine.tokens import AccessToken, current_access_token

    back, _ = backend()
    # (Backend sessions, so that a call can say which connection served it: a stateless front's
    # calls to an in-process backend otherwise go at 2026-07-28, a session per request.)
    front = proxy(back, connections="principal", pool=1, mode="session")

    async def served_by(client: InMemoryClient, subject: str | None) -> str:
        token = None if subject is None else AccessToken("https://issuer.test", subject=subject)
        reset = current_access_token.set(token)  # (an in-memory request is served in this task)
        try:
            return str((await client.call_tool("connection")).content[0].text)  # type: ignore[union-attr]
        finally:
            current_access_token.reset(reset)

    async with InMemoryClient(front, mode="session") as one, InMemoryClient(front, mode="2026-07-28") as two:
        ann, bob = await served_by(one, "ann"), await served_by(one, "bob")
        assert ann != bob
        assert await served_by(two, "ann") == ann  # another front session, the same principal
        assert await served_by(two, None) not in (ann, bob)
    await front.close()


def test_a_target_of_no_known_form_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="proxy target"):
        proxy([])
    with pytest.raises(ValueError, match="connections"):
        proxy(McpServer("x"), connections="shared")  # type: ignore[arg-type]


def test_the_package_exports_resolve_lazily() -> None:
    import mcp_sse_server.proxy as package

    assert sorted(package.__all__) == ["BackendUnavailable", "GatewayServer", "ProxyServer", "from_config", "proxy"]
    assert package.proxy is proxy
