"""``Servers``: the servers an HTTP app serves, and what of its backend they take.

An app is given one ``McpServer`` for every session, or a factory: any callable that is
not an ``McpServer``, returning one (or an awaitable of one), called for each session and
once for the stateless requests (``stateless_endpoint.py`` says why). The rules:

1. A shared backend (``Backend.shared``: its event bus and task store reach the other
   workers) gives every server its bus and one task runtime over its task store
   (``McpServer.use_shared``), in place of the server's own: the one server when the app
   is made, each server a factory builds as it is built. An event or a task kept in one
   process would not reach the others. The shared runtime takes the settings (ttls, limits)
   of the runtime the first server it replaces had of its own (``McpServer(tasks=...)``): the
   one server's, or that of the factory's first server.
2. Otherwise a server keeps its own bus and tasks (in this process either way), and the
   servers a factory builds share one task runtime over the backend's task store, unless
   one has a runtime of its own: a task started through one is read, answered and
   cancelled through another.
3. At the app's shutdown the runtime its servers use is closed: the tasks running here end
   failed, not working forever (``engine/tasks.py`` rule 7).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from ...engine.server import McpServer
from ...engine.stores import Backend
from ...engine.tasks import TaskRuntime

__all__ = ["Servers", "SessionFactory"]

SessionFactory: TypeAlias = Callable[[], McpServer | Awaitable[McpServer]]
"""Returns a fresh McpServer (or an awaitable of one) for each initialize."""


class Servers:
    """The one server of every session (``one``), or the ``factory`` of each; awaiting the
    object itself gives a new session's server (the rules are the module's)."""

    __slots__ = ("_tasks", "backend", "factory", "one")

    def __init__(self, server: McpServer | SessionFactory, backend: Backend) -> None:
        self.one: McpServer | None = None
        self.factory: SessionFactory | None = None
        if isinstance(server, McpServer):
            self.one = server
        elif callable(server):
            self.factory = server
        else:
            raise TypeError(f"an MCP endpoint takes an McpServer or a function that builds one, not {server!r}")
        self.backend = backend
        self._tasks: TaskRuntime | None = None  # the one the servers given one share
        if self.one is not None and backend.shared:
            self._share(self.one)

    def _runtime(self, lender: McpServer | None = None) -> TaskRuntime:
        if self._tasks is None:
            settings = lender.tasks.settings() if lender is not None and lender.has_task_runtime else {}
            self._tasks = TaskRuntime(self.backend.tasks, worker_id=self.backend.worker_id, **settings)
        return self._tasks

    def _share(self, server: McpServer) -> None:
        server.use_shared(event_bus=self.backend.bus, tasks=self._runtime(server))

    async def __call__(self) -> McpServer:
        """The server of a new session: the one, or a new one of the factory's (rules 1 and 2)."""
        if self.one is not None:
            return self.one
        assert self.factory is not None
        server = self.factory()
        if inspect.isawaitable(server):
            server = await server
        if not isinstance(server, McpServer):
            raise TypeError(f"the session factory returned {type(server).__name__}, not an McpServer")
        if self.backend.shared:
            self._share(server)
        elif not server.has_task_runtime:
            server.use_shared(tasks=self._runtime())
        return server

    async def aclose(self) -> None:
        """Close the task runtime the servers use (rule 3)."""
        one = self.one
        tasks = self._tasks if one is None else (one.tasks if one.has_task_runtime else None)
        if tasks is not None:
            await tasks.aclose()
