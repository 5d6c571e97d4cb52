"""Client event hooks (client/hooks.py): every request sent and its answer, every notification and
every answer to what the server asked, on each transport (in memory, Streamable HTTP to a real
socket, stdio to a child process) and in both eras (2026-07-28 with an ``input_required`` round,
and a session); what a hook raises goes to the caller where there is one, else to the log."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_sse_server.client import InMemoryClient, McpClient, StdioClient, StreamableHttpClient
from mcp_sse_server.client.hooks import NotificationEvent, RequestEvent, ResponseEvent, ServerRequestEvent
from mcp_sse_server.engine.jsonrpc import METHOD_NOT_FOUND, McpError
from mcp_sse_server.transport.http import McpHttpServer

from .hooked_server import build

HERE = Path(__file__).parent
SRC = str(HERE.parents[1] / "src")


class Recorder:
    """Hooks that keep every event: ``sync`` as a plain function, ``later`` as a coroutine function."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def sync(self, event: Any) -> None:
        self.events.append(event)

    async def later(self, event: Any) -> None:
        self.events.append(event)

    def hooks(self) -> dict[str, list[Callable[[Any], Any]]]:
        return {
            "request": [self.sync],
            "response": [self.later],
            "notification": [self.sync],
            "server_request": [self.later],
        }

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"colour": "teal"}}


@contextlib.asynccontextmanager
async def client_over(transport: str, **options: Any) -> AsyncIterator[McpClient]:
    """A client of the hooked server over ``transport``, its server stopped afterwards."""
    options.setdefault("request_timeout", 30.0)
    if transport == "inmemory":
        async with InMemoryClient(build(), **options) as client:
            yield client
    elif transport == "stdio":
        async with StdioClient(
            sys.executable, [str(HERE / "hooked_server.py")], {"PYTHONPATH": SRC}, **options
        ) as client:
            yield client
    else:
        http = await McpHttpServer.bind(build, port=0)
        try:
            async with StreamableHttpClient(http.endpoint, **options) as client:
                yield client
        finally:
            await http.close()


@pytest.mark.parametrize("mode", ["auto", "session"])
@pytest.mark.parametrize("transport", ["inmemory", "streamable", "stdio"])
async def test_every_request_answer_notification_and_server_request_is_reported(transport: str, mode: str) -> None:
    seen = Recorder()
    options: dict[str, Any] = {"mode": mode, "elicitation_handler": elicit, "log_level": "info"}
    async with client_over(transport, event_hooks=seen.hooks(), **options) as client:
        stateless = client.stateless
        assert stateless == (mode == "auto")
        answered = await client.call_tool("whoami")
        asked = await client.call_tool("ask")
    sent = seen.of(RequestEvent)
    answers = seen.of(ResponseEvent)
    assert sent[0].method == ("server/discover" if stateless else "initialize")
    # The id each event names is the one the request went out with: the tool saw the same.
    whoami = [event for event in sent if event.method == "tools/call" and event.params["name"] == "whoami"]
    assert len(whoami) == 1 and answered.content[0].text == repr(whoami[0].id)  # type: ignore[union-attr]
    # Each request has its answer, in order, with the same id, a result and a duration.
    assert [(event.method, event.id) for event in sent] == [(event.method, event.id) for event in answers]
    assert all(event.error is None and event.result is not None and event.duration >= 0 for event in answers)
    assert len({event.id for event in sent}) == len(sent)
    assert {event.transport for event in seen.events} == {transport}
    # What the server asked, and the client's answer.
    assert asked.content[0].text == "you said teal"  # type: ignore[union-attr]
    [question] = seen.of(ServerRequestEvent)
    assert question.method == "elicitation/create" and question.params["message"] == "Favourite colour?"
    assert question.result is not None and question.result["action"] == "accept" and question.error is None
    asks = [event for event in sent if event.method == "tools/call" and event.params["name"] == "ask"]
    if stateless:
        # An input_required round is a request of its own; the question's id is its inputRequests key.
        assert len(asks) == 2 and "inputResponses" in asks[1].params
        assert question.id in asks[1].params["inputResponses"]
    else:
        assert len(asks) == 1 and question.id is not None
        logs = [event for event in seen.of(NotificationEvent) if event.method == "notifications/message"]
        assert [event.params["data"] for event in logs] == ["asking"]


async def test_a_request_hook_may_refuse_a_call_and_a_response_hook_may_fail_it() -> None:
    server = build()

    def refuse(event: RequestEvent) -> None:
        if event.method == "tools/call" and event.params and event.params["name"] == "add":
            raise PermissionError("add is not allowed here")

    async def fail_on_tools(event: ResponseEvent) -> None:
        if event.method == "tools/call":
            raise LookupError("unwanted answer")

    async with InMemoryClient(server, event_hooks={"request": [refuse], "response": [fail_on_tools]}) as client:
        with pytest.raises(PermissionError, match="add is not allowed"):
            await client.call_tool("add", {"a": 2, "b": 3})
        assert server.calls == 0  # type: ignore[attr-defined]  # refused before it was sent
        with pytest.raises(LookupError):
            await client.call_tool("whoami")
        assert server.calls == 1  # type: ignore[attr-defined]  # it ran; its answer was refused


async def test_an_error_answer_is_reported_and_raised_as_it_was() -> None:
    seen = Recorder()
    async with InMemoryClient(build(), mode="session", event_hooks={"response": [seen.sync]}) as client:
        with pytest.raises(McpError) as raised:
            await client.request("no/such/method")
    failed = seen.events[-1]
    assert failed.method == "no/such/method" and failed.result is None and failed.error is raised.value
    assert raised.value.code == METHOD_NOT_FOUND


async def test_hooks_on_what_the_server_sent_are_logged_when_they_fail(caplog: pytest.LogCaptureFixture) -> None:
    seen = Recorder()

    def broken(event: Any) -> None:
        raise RuntimeError("hook bug")

    async def broken_later(event: Any) -> None:
        raise RuntimeError("async hook bug")

    hooks = {"notification": [broken, broken_later, seen.later], "server_request": [broken, seen.sync]}
    caplog.set_level(logging.ERROR, logger="mcp_sse_server.client")
    async with InMemoryClient(
        build(), mode="session", elicitation_handler=elicit, log_level="info", event_hooks=hooks
    ) as client:
        asked = await client.call_tool("ask")
        assert asked.content[0].text == "you said teal"  # type: ignore[union-attr]  # the answer stood
        await client.ping()  # lets the async notification hooks' tasks finish
    assert [type(event) for event in seen.events] == [NotificationEvent, ServerRequestEvent]
    failures = [record.getMessage() for record in caplog.records]
    assert sum("hook" in message and "failed" in message for message in failures) == 3


async def test_no_hooks_means_no_hook_machinery_and_hooks_can_be_added_later() -> None:
    server = build()
    async with InMemoryClient(server) as client:
        await client.call_tool("add", {"a": 1, "b": 1})
        assert client._hooks is None  # the request path tested one attribute and went on
        seen = Recorder()
        client.event_hooks["request"].append(seen.sync)  # httpx-style: the lists are live
        await client.call_tool("add", {"a": 2, "b": 2})
        client.event_hooks = {"response": [seen.sync]}
        await client.call_tool("add", {"a": 3, "b": 3})
    assert [type(event) for event in seen.events] == [RequestEvent, ResponseEvent]
    assert seen.events[1].result["structuredContent"] == {"result": 6}


@pytest.mark.parametrize(
    ("hooks", "error"),
    [
        ({"requests": []}, ValueError),
        ({"request": [42]}, TypeError),
        ({"request": print}, TypeError),
        ({"request": "print"}, TypeError),
        ([("request", [])], TypeError),
    ],
)
def test_bad_event_hooks_are_refused_when_the_client_is_made(hooks: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="event_hooks"):
        InMemoryClient(build(), event_hooks=hooks)
