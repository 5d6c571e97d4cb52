"""Listening: change notifications, as ``async with client.listen(...) as subscription``.

Rules:

1. Stateless revision: one ``subscriptions/listen`` request whose stream stays open; its request
   id is the subscription id, which the server's notifications carry in ``_meta``.
   ``subscription.acknowledged`` is the filter the server honours (known once ``await
   subscription.ready()`` returns). A stream that ends without the server's closing result is
   listened to again, at most ``max_relistens`` times in a row; leaving the block cancels the
   request (over HTTP: closes its stream).
2. Session revisions: the named resources are subscribed with ``resources/subscribe`` (and
   unsubscribed at the end), and the session's notifications of the asked kinds are delivered.
   ``subscribe_resource`` and ``unsubscribe_resource`` exist only there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..engine.jsonrpc import (
    METHOD_NOT_FOUND,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    RequestId,
)
from ..engine.protocol import Connection
from .core import ClientCore
from .subscription import Subscription

__all__ = ["Listening"]

logger = logging.getLogger("mcp_sse_server.client")


class Listening(ClientCore):
    """``listen()`` and the session revisions' resource subscriptions (see the module)."""

    async def subscribe_resource(self, uri: str) -> None:
        """resources/subscribe (session revisions; the stateless one has ``listen()`` instead)."""
        self._session_only("resources/subscribe", "listen(resource_subscriptions=[...])")
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        self._session_only("resources/unsubscribe", "the end of a listen() block")
        await self.request("resources/unsubscribe", {"uri": uri})

    def _session_only(self, method: str, instead: str) -> None:
        if self.stateless:
            raise McpError(
                METHOD_NOT_FOUND, f"{method} does not exist in protocol revision {self.protocol_version}: use {instead}"
            )

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        max_relistens: int = 3,
    ) -> AsyncIterator[Subscription]:
        """Receive change notifications: ``async with client.listen(tools_list_changed=True) as
        subscription: async for notification in subscription: ...``.

        Stateless revision: one ``subscriptions/listen`` request whose stream stays open;
        ``subscription.acknowledged`` is the filter the server honours (known once
        ``await subscription.ready()`` returns). A stream that ends without the server's
        closing result is listened to again, at most ``max_relistens`` times in a row.
        Session revisions: the named resources are subscribed with resources/subscribe
        (and unsubscribed at the end) and the session's notifications of the asked kinds
        are delivered.
        """
        wanted: dict[str, Any] = {}
        if tools_list_changed:
            wanted["toolsListChanged"] = True
        if prompts_list_changed:
            wanted["promptsListChanged"] = True
        if resources_list_changed:
            wanted["resourcesListChanged"] = True
        if resource_subscriptions:
            wanted["resourceSubscriptions"] = list(resource_subscriptions)
        subscription = Subscription(wanted)
        if not self.stateless:
            async with self._session_listen(subscription):
                yield subscription
            return
        runner = asyncio.get_running_loop().create_task(self._run_listen(subscription, max_relistens))
        try:
            yield subscription
        finally:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
            subscription.finish(None)

    async def _run_listen(self, subscription: Subscription, max_relistens: int) -> None:
        failures = 0
        try:
            while True:
                connection = self._live()
                request_id = connection.next_request_id()
                self._subscriptions[request_id] = subscription
                subscription.listening(request_id)
                try:
                    await self._request_with_id(
                        connection,
                        request_id,
                        "subscriptions/listen",
                        self._stamp({"notifications": subscription.wanted}),
                    )
                    subscription.finish(None)  # the server ended it gracefully
                    return
                except McpError as error:
                    if not subscription.was_acknowledged or failures >= max_relistens or connection.closed:
                        subscription.finish(error)
                        return
                    failures += 1
                    logger.info("the subscription stream closed unexpectedly (%s); listening again", error.message)
                finally:
                    self._subscriptions.pop(request_id, None)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            subscription.finish(error)

    async def _request_with_id(
        self, connection: Connection, request_id: RequestId, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A request whose id the caller chose (``next_request_id``): the subscription id of a
        listen is its request id. Cancelling it cancels the request (HTTP: closes its stream)."""
        future = connection.await_reply(request_id)
        try:
            await connection.transport.send(JsonRpcRequest(request_id, method, params))
            reply = await future
        except asyncio.CancelledError:
            if not connection.closed:
                with contextlib.suppress(Exception):
                    await connection.transport.send(
                        JsonRpcNotification("notifications/cancelled", {"requestId": request_id, "reason": "closed"})
                    )
            raise
        finally:
            connection.forget_reply(request_id)
        if type(reply) is JsonRpcResponse:
            return reply.result
        raise reply.to_exception()  # type: ignore[union-attr]

    @asynccontextmanager
    async def _session_listen(self, subscription: Subscription) -> AsyncIterator[None]:
        uris = list(subscription.wanted.get("resourceSubscriptions", ()))
        subscribed: list[str] = []
        key = object()
        self._subscriptions[key] = subscription
        try:
            for uri in uris:
                await self.subscribe_resource(uri)
                subscribed.append(uri)
            subscription.acknowledge(dict(subscription.wanted))
            yield
        finally:
            self._subscriptions.pop(key, None)
            subscription.finish(None)
            for uri in subscribed:
                with contextlib.suppress(Exception):
                    await self.unsubscribe_resource(uri)
