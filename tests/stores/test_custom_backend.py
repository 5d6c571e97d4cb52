"""A backend of the test's own, registered under a scheme of its own, serving real sessions over
HTTP: what adding a backend takes (``Backend`` and ``register_backend``, nothing under src/).

``counting:NAME`` names a space of stores in this process: the in-process ones, each counting
the calls it serves, shared by every backend built from the same URL (as a Redis is by every
worker given its URL), so the backend is ``shared`` and the app hands its event bus and task
store to the server it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest

from fixtures.http_app import Gate, build_server
from fixtures.messages import ACCEPT_BOTH, initialize_message, notification, parse_sse, request
from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.jsonrpc import RequestId
from mcp_sse_server.engine.memory_stores import MemoryEventBus, MemoryTaskStore
from mcp_sse_server.engine.records import SessionRecord, TaskRecord
from mcp_sse_server.engine.stores import NOT_HELD, Backend, DuplicateRequest, StoredEvent, StoreSizes
from mcp_sse_server.stores import (
    LocalCoordinator,
    MemoryEventLog,
    MemorySessionStore,
    backend_from_url,
    register_backend,
)
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer

REVISION = "2025-11-25"  # resumable streams and core tasks
WAIT = 5.0  # bounded: what has not happened by then never will


class CountingSessions(MemorySessionStore):
    def __init__(self, calls: Counter[str]) -> None:
        super().__init__()
        self.calls = calls

    async def create(self, record: SessionRecord) -> None:
        self.calls["sessions.create"] += 1
        await super().create(record)

    async def delete(self, session_id: str) -> bool:
        self.calls["sessions.delete"] += 1
        return await super().delete(session_id)


class CountingEvents(MemoryEventLog):
    def __init__(self, calls: Counter[str], limits: StoreSizes) -> None:
        super().__init__(limits.backlog_limit, limits.replay_buffer_size, ended_streams_kept=limits.ended_streams_kept)
        self.calls = calls

    async def append(
        self, session_id: str, stream_id: str, message: bytes, request_id: RequestId | None, *, delivered: bool
    ) -> tuple[StoredEvent, StoredEvent | None]:
        self.calls["events.append"] += 1
        return await super().append(session_id, stream_id, message, request_id, delivered=delivered)

    async def replay_after(self, session_id: str, event_id: str) -> list[StoredEvent]:
        self.calls["events.replay_after"] += 1
        return await super().replay_after(session_id, event_id)


class CountingTasks(MemoryTaskStore):
    def __init__(self, calls: Counter[str]) -> None:
        super().__init__()
        self.calls = calls

    async def create(self, record: TaskRecord) -> None:
        self.calls["tasks.create"] += 1
        await super().create(record)


class Space:
    """The stores one ``counting:NAME`` URL names, and the calls they served."""

    def __init__(self, limits: StoreSizes) -> None:
        self.calls: Counter[str] = Counter()
        self.limits = limits
        self.sessions = CountingSessions(self.calls)
        self.events = CountingEvents(self.calls, limits)
        self.tasks = CountingTasks(self.calls)
        self.bus = MemoryEventBus()


SPACES: dict[str, Space] = {}


class CountingBackend(Backend):
    """One worker's view of a space: its stores, and a note of ``start`` and ``close``."""

    __slots__ = ("closed", "space", "started")

    def __init__(self, space: Space) -> None:
        super().__init__(
            sessions=space.sessions,
            events=space.events,
            coordinator=LocalCoordinator(),
            tasks=space.tasks,
            bus=space.bus,
            clock=time.monotonic,
            shared=True,
        )
        self.space = space
        self.started = self.closed = False

    @classmethod
    def from_url(cls, url: str, /, *, limits: StoreSizes, **options: Any) -> CountingBackend:
        if options:
            raise TypeError(f"counting: takes no options ({', '.join(options)})")
        name = url.partition(":")[2]
        if not name:
            raise ValueError("counting:NAME names its space")
        space = SPACES.get(name)
        if space is None:
            space = SPACES[name] = Space(limits)
        return cls(space)

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.closed = True


register_backend("counting", CountingBackend.from_url)


def counting_server(gate: Gate, finish: asyncio.Event) -> McpServer:
    """The HTTP tests' server (``add``; ``hang_up`` closes its own stream), and ``later``, a tool
    that may run as a task and finishes when ``finish`` is set."""
    server = build_server(gate)

    async def later(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await finish.wait()
        return CallToolResult.text("done later")

    server.add_tool(Tool("later", {"type": "object"}, later, task_support="optional"))
    return server


class Session:
    """A 2025-11-25 session of a real endpoint, driven with raw requests."""

    def __init__(self, client: httpx.AsyncClient, endpoint: str) -> None:
        self.client, self.endpoint = client, endpoint
        self.headers = {"accept": ACCEPT_BOTH}

    async def open(self) -> None:
        reply = await self.client.post(self.endpoint, json=initialize_message(protocol_version=REVISION))
        assert reply.status_code == 200, reply.text
        self.headers = {
            **self.headers,
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": REVISION,
        }
        initialized = notification("notifications/initialized")
        assert (await self.client.post(self.endpoint, json=initialized, headers=self.headers)).status_code == 202

    async def events(self, request_id: int, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The events of the request's stream, until the server ends it."""
        message = request(request_id, method, params)
        reply = await self.client.post(self.endpoint, json=message, headers=self.headers)
        assert reply.status_code == 200, reply.text
        return parse_sse(reply.content)

    async def result(self, request_id: int, method: str, params: dict[str, Any]) -> Any:
        return (await self.events(request_id, method, params))[-1]["data"]["result"]

    async def resume(self, last_event_id: str) -> list[dict[str, Any]]:
        headers = {**self.headers, "accept": "text/event-stream", "last-event-id": last_event_id}
        reply = await self.client.get(self.endpoint, headers=headers)
        assert reply.status_code == 200, reply.text
        return parse_sse(reply.content)


@pytest.fixture
async def served() -> AsyncIterator[tuple[McpHttpServer, CountingBackend, Gate, asyncio.Event]]:
    gate, finish = Gate(), asyncio.Event()
    settings = HttpSettings(limits=HttpLimits(replay_buffer_size=32))
    backend = backend_from_url(f"counting:{id(gate)}", limits=settings.limits)
    assert isinstance(backend, CountingBackend)
    http = await McpHttpServer.bind(counting_server(gate, finish), settings=settings, backend=backend)
    try:
        yield http, backend, gate, finish
    finally:
        gate.release.set()
        finish.set()
        await http.close(deadline=1.0)


async def test_a_registered_backend_serves_sessions_streams_and_tasks_over_http(
    served: tuple[McpHttpServer, CountingBackend, Gate, asyncio.Event],
) -> None:
    http, backend, gate, finish = served
    assert backend.started and backend.space.limits.replay_buffer_size == 32  # started, and sized by the settings
    assert http.app.backend is backend and http.app.sessions is backend.space.sessions
    calls = backend.space.calls
    async with httpx.AsyncClient(timeout=WAIT) as client:
        session = Session(client, http.endpoint)
        await session.open()
        assert calls["sessions.create"] == 1

        added = await session.result(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert added["content"][0]["text"] == "5"

        cut = await session.events(3, "tools/call", {"name": "hang_up", "arguments": {}})
        assert calls["events.append"] > 0  # the request's stream is logged in the backend's event log
        assert [event["data"]["params"]["data"] for event in cut if "data" in event] == ["before the close"]
        last = [event["id"] for event in cut if event["id"] is not None][-1]
        gate.release.set()
        await asyncio.sleep(0.05)  # the rest of the stream goes to the log only
        resumed = await session.resume(last)
        assert calls["events.replay_after"] > 0
        messages = [event["data"] for event in resumed if "data" in event]
        assert [message.get("params", {}).get("data") for message in messages[:-1]] == ["after the close"]
        assert messages[-1]["result"]["content"][0]["text"] == "closed=True"

        created = await session.result(4, "tools/call", {"name": "later", "arguments": {}, "task": {}})
        task_id = created["task"]["taskId"]
        assert calls["tasks.create"] == 1
        assert await backend.space.tasks.get(task_id, time.time()) is not None  # kept by the backend's store
        finish.set()
        result = await session.result(5, "tasks/result", {"taskId": task_id})
        assert result["content"][0]["text"] == "done later"
        stored = await backend.space.tasks.get(task_id, time.time())
        assert stored is not None and stored.status == "completed"

        assert (await client.delete(http.endpoint, headers=session.headers)).status_code == 204
        assert calls["sessions.delete"] == 1
    await http.close()
    assert backend.closed  # the endpoint owned it


async def test_two_backends_of_one_url_share_its_stores() -> None:
    first = backend_from_url("counting:shared-space")
    second = backend_from_url("counting:shared-space")
    assert first is not second and first.sessions is second.sessions and first.tasks is second.tasks


def test_a_scheme_nobody_registered_is_a_value_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no backend for nowhere: \(known: .*counting:, memory:.*, redis:"):
        backend_from_url("nowhere://x")
    with pytest.raises(ValueError, match="starts with its scheme"):
        backend_from_url("no scheme here")


def test_a_scheme_cannot_be_taken_twice_or_misspelt() -> None:
    register_backend("counting", CountingBackend.from_url)  # the same factory again: nothing changes
    with pytest.raises(ValueError, match="has a backend already"):
        register_backend("redis", CountingBackend.from_url)
    with pytest.raises(ValueError, match="a scheme is"):
        register_backend("Not A Scheme", CountingBackend.from_url)


def test_options_the_factory_does_not_take_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="takes no options"):
        backend_from_url("counting:x", worker_ttl=1.0)
    with pytest.raises(TypeError):
        backend_from_url("memory:", worker_ttl=1.0)


class HoldingCoordinator(LocalCoordinator):
    """A coordinator whose ``serving`` holds something around each request (what a coordinator that
    looks for duplicates on other workers does): it notes entry and exit, and refuses id 13 as in
    flight elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[str] = []

    def serving(self, session: Any, request_id: RequestId) -> AbstractAsyncContextManager[None]:
        return self._hold(request_id)

    @contextlib.asynccontextmanager
    async def _hold(self, request_id: RequestId) -> AsyncIterator[None]:
        if request_id == 13:
            raise DuplicateRequest(request_id)
        self.held.append(f"enter {request_id}")
        try:
            yield
        finally:
            self.held.append(f"exit {request_id}")


async def test_a_coordinator_that_holds_something_around_a_request_gets_its_async_with() -> None:
    # The usual coordinator's serving is NOT_HELD and the app skips the async with; any other is entered.
    space = Space(HttpLimits())
    coordinator = HoldingCoordinator()
    backend = Backend(
        sessions=space.sessions, events=space.events, coordinator=coordinator, tasks=space.tasks, bus=space.bus
    )
    assert LocalCoordinator().serving(None, 1) is NOT_HELD  # type: ignore[arg-type]
    http = await McpHttpServer.bind(build_server(Gate()), backend=backend)
    try:
        async with httpx.AsyncClient(timeout=WAIT) as client:
            session = Session(client, http.endpoint)
            await session.open()
            added = await session.result(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            assert added["content"][0]["text"] == "5"
            assert coordinator.held == ["enter 2", "exit 2"]
            refused = await client.post(http.endpoint, json=request(13, "ping"), headers=session.headers)
            assert refused.status_code == 409 and refused.json()["id"] == 13
            assert coordinator.held == ["enter 2", "exit 2"]
    finally:
        await http.close(deadline=1.0)
