"""The methods about the server itself rather than its registries: ``initialize``, ``ping`` and
``logging/setLevel`` for sessions, ``server/discover`` and ``subscriptions/listen`` for the
stateless revision. ``Lifecycle`` serves them for a ``LifecycleHost`` (``McpServer`` is one).

Rules:

1. ``initialize`` needs a string ``protocolVersion`` and a ``clientInfo`` with a ``name``
   (-32602 otherwise; a missing ``version`` is read as ``"0.0.0"``); it answers the
   negotiated revision (``versions.negotiate``), the capabilities and ``serverInfo`` as that
   revision has them (``downlevel``), the core ``tasks`` capability at 2025-11-25 when some
   tool may run as a task, and the instructions.
2. ``server/discover`` answers the served stateless revisions and the capabilities, with the
   Tasks extension when some tool may run as a task.
3. ``subscriptions/listen`` acknowledges the filters it honours (a list-changed flag only for
   what the server offers, resource subscriptions only with resources, task ids through the
   task runtime) before anything else, then sends what was asked for, each notification
   carrying the subscription id, until the client goes away (the request is cancelled). A
   list change made for one principal (``visibility.py`` rule 7) reaches only the streams
   of a request with that principal's token.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, Protocol

from . import downlevel, versions
from .context import LOG_LEVELS, RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import INVALID_PARAMS, McpError
from .registry import params_str
from .stateless_meta import SUBSCRIPTION_ID
from .stores import EventBus
from .tasks import TASKS_EXTENSION, TaskRuntime
from .types import Icon

__all__ = ["Lifecycle", "LifecycleHost"]

# subscriptions/listen: the kind of a list-changed event -> the filter flag that asks for it.
_LISTEN_FLAGS: Final = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


class LifecycleHost(Protocol):
    """What the lifecycle's methods ask of the server they serve."""

    name: str
    version: str
    title: str | None
    instructions: str | None
    icons: list[Icon] | None
    description: str | None
    website_url: str | None

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the server advertises (a new dict each time)."""

    @property
    def tasks_declared(self) -> bool:
        """True when some tool may run as a task."""

    @property
    def tasks(self) -> TaskRuntime:
        """The server's task runtime."""

    @property
    def event_bus(self) -> EventBus:
        """Where list changes and resource updates reach listeners."""

    def running_here(self) -> None:
        """Note that the server serves on the running event loop."""


class Lifecycle:
    """Serves ``initialize``, ``ping``, ``logging/setLevel``, ``server/discover`` and
    ``subscriptions/listen`` for ``host`` (the module's rules)."""

    __slots__ = ("host",)

    def __init__(self, host: LifecycleHost) -> None:
        self.host = host

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve the lifecycle's methods."""
        handlers.register("initialize", self.initialize)
        handlers.register("ping", self.ping)
        handlers.register("logging/setLevel", self.set_level)
        handlers.register("server/discover", self.discover)
        handlers.register("subscriptions/listen", self.listen)

    async def initialize(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``initialize`` (rule 1)."""
        host = self.host
        requested = params_str(params, "protocolVersion")
        client_info = params.get("clientInfo")
        if not isinstance(client_info, dict) or not isinstance(client_info.get("name"), str):
            raise McpError(INVALID_PARAMS, 'Missing or invalid "clientInfo": expected an object with a "name"')
        capabilities = params.get("capabilities", {})
        if not isinstance(capabilities, dict):
            raise McpError(INVALID_PARAMS, 'Invalid "capabilities": expected an object')
        client_info = dict(client_info)
        if not isinstance(client_info.get("version"), str):
            client_info["version"] = "0.0.0"  # several clients omit it; see README "Known deviations"
        revision = versions.negotiate(requested)
        context.session.start(revision, client_info, capabilities)
        server_info: dict[str, Any] = {"name": host.name, "version": host.version}
        if host.title is not None:
            server_info["title"] = host.title
        if revision.icons:
            if host.description is not None:
                server_info["description"] = host.description
            if host.icons:
                server_info["icons"] = [icon.to_dict() for icon in host.icons]
            if host.website_url is not None:
                server_info["websiteUrl"] = host.website_url
        capabilities = host.capabilities
        if revision.core_tasks and host.tasks_declared:
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        result: dict[str, Any] = {
            "protocolVersion": revision.name,
            "capabilities": downlevel.capabilities(capabilities, revision),
            "serverInfo": downlevel.server_info(server_info, revision),
        }
        if host.instructions is not None:
            result["instructions"] = host.instructions
        return result

    async def ping(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``ping``: an empty result."""
        return {}

    async def set_level(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``logging/setLevel``: the session's log level (-32602 for an unknown one)."""
        level = params.get("level")
        if not isinstance(level, str):
            raise McpError(INVALID_PARAMS, f'Missing or invalid "level"; expected one of: {", ".join(LOG_LEVELS)}')
        context.session.set_log_level(level)
        return {}

    async def discover(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``server/discover`` (rule 2)."""
        host = self.host
        capabilities = host.capabilities
        if host.tasks_declared:  # (never in a session's initialize)
            capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
        result: dict[str, Any] = {
            "supportedVersions": [revision.name for revision in versions.STATELESS],
            "capabilities": capabilities,
        }
        if host.instructions is not None:
            result["instructions"] = host.instructions
        return result

    async def listen(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``subscriptions/listen`` (rule 3): the acknowledgement, then the requested notifications
        until the client goes away; each carries the subscription id."""
        host = self.host
        wanted = params.get("notifications", {})
        if type(wanted) is not dict:
            raise McpError(INVALID_PARAMS, 'Invalid "notifications": expected an object of filters')
        capabilities = host.capabilities
        honoured: dict[str, Any] = {}
        for capability, flag in _LISTEN_FLAGS.items():
            value = wanted.get(flag)
            if value is not None and type(value) is not bool:
                raise McpError(INVALID_PARAMS, f'Invalid "notifications.{flag}": expected a boolean')
            if value and capability in capabilities:
                honoured[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if uris is not None:
            if type(uris) is not list or not all(isinstance(uri, str) for uri in uris):
                raise McpError(INVALID_PARAMS, 'Invalid "notifications.resourceSubscriptions": expected URIs')
            if "resources" in capabilities:
                honoured["resourceSubscriptions"] = list(uris)
        if "taskIds" in wanted:
            honoured["taskIds"] = await host.tasks.listened(wanted["taskIds"], context)
        subscription = {SUBSCRIPTION_ID: context.request_id}
        host.running_here()
        events = host.event_bus.subscribe()  # before the acknowledgement: nothing after it is missed
        followers: list[asyncio.Task[None]] = []
        try:
            await context.session.notify(
                "notifications/subscriptions/acknowledged", {"_meta": subscription, "notifications": honoured}
            )

            async def task_changed(task: dict[str, Any]) -> None:
                await context.session.notify("notifications/tasks", {**task, "_meta": subscription})

            for task_id in honoured.get("taskIds", ()):
                followers.append(asyncio.get_running_loop().create_task(host.tasks.follow(task_id, task_changed)))
            kinds = {kind for kind, flag in _LISTEN_FLAGS.items() if honoured.get(flag)}
            watched = set(honoured.get("resourceSubscriptions", ()))
            from .visibility import principal_digest

            principal = principal_digest(context.auth)
            async for event in events:
                kind = event.get("kind")
                if "principal" in event and event["principal"] != principal:
                    continue  # another principal's visibility changed, not this one's
                if kind == "resource":
                    if event.get("uri") in watched:
                        await context.session.notify(
                            "notifications/resources/updated", {"_meta": subscription, "uri": event["uri"]}
                        )
                elif kind in kinds:
                    await context.session.notify(f"notifications/{kind}/list_changed", {"_meta": subscription})
        finally:
            for follower in followers:
                follower.cancel()
            await events.aclose()  # type: ignore[attr-defined]
        return {"_meta": subscription}
