"""Subscription: the notifications one ``McpClient.listen()`` receives, as an async iterator.

>>> async def watch(client) -> None:  # doctest: +SKIP
...     async with client.listen(tools_list_changed=True, resource_subscriptions=["file:///a"]) as subscription:
...         print(await subscription.ready())  # the filter the server honours
...         async for notification in subscription:
...             print(notification.method, notification.params)
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from ..engine.jsonrpc import JsonRpcNotification

__all__ = ["ACKNOWLEDGED", "Subscription"]

ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
_KINDS: Final = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
_QUEUE_LIMIT: Final = 1000  # a consumer that never reads must not grow memory without bound


class Subscription:
    """The notifications of one listen, in arrival order (the acknowledgement is not one of them).

    ``wanted`` is the filter asked for, ``acknowledged`` the one the server honours
    (None until it acknowledged), ``request_id`` the subscription id (the listen
    request's id; it changes when the client listens again after a dropped stream).
    Iteration ends when the server ends the subscription or the ``listen`` block
    exits; a failure that ends it is raised from the iteration.
    """

    def __init__(self, wanted: dict[str, Any]) -> None:
        self.wanted = wanted
        self.acknowledged: dict[str, Any] | None = None
        self.request_id: Any = None
        self.dropped = 0
        self._queue: asyncio.Queue[JsonRpcNotification | None] = asyncio.Queue()
        self._ready = asyncio.Event()
        self._ended = False
        self._error: BaseException | None = None

    @property
    def was_acknowledged(self) -> bool:
        return self.acknowledged is not None

    def listening(self, request_id: Any) -> None:
        self.request_id = request_id

    def acknowledge(self, honoured: dict[str, Any]) -> None:
        self.acknowledged = honoured
        self._ready.set()

    async def ready(self) -> dict[str, Any]:
        """Wait for the server's acknowledgement; the filter it honours. Raises what ended the
        subscription when it ended before that."""
        await self._ready.wait()
        if self.acknowledged is None:
            raise self._error or ConnectionError("the subscription ended before the server acknowledged it")
        return self.acknowledged

    def deliver(self, notification: JsonRpcNotification) -> None:
        """A notification that carries this subscription's id."""
        if notification.method == ACKNOWLEDGED:
            params = dict(notification.params or {})
            params.pop("_meta", None)
            honoured = params.get("notifications")
            self.acknowledge(honoured if isinstance(honoured, dict) else params)
            return
        self._put(notification)

    def offer(self, notification: JsonRpcNotification) -> None:
        """A session notification (session revisions): kept when it is of a kind asked for."""
        kind = _KINDS.get(notification.method)
        if kind is not None and self.wanted.get(kind):
            self._put(notification)
        elif notification.method == "notifications/resources/updated":
            uri = (notification.params or {}).get("uri")
            if uri in self.wanted.get("resourceSubscriptions", ()):
                self._put(notification)

    def _put(self, notification: JsonRpcNotification) -> None:
        if self._ended:
            return
        if self._queue.qsize() >= _QUEUE_LIMIT:
            self.dropped += 1
            return
        self._queue.put_nowait(notification)

    def finish(self, error: BaseException | None) -> None:
        """The subscription ended (``error`` says why when it failed)."""
        if self._ended:
            return
        self._ended = True
        self._error = error
        self._ready.set()
        self._queue.put_nowait(None)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> JsonRpcNotification:
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)  # later iterations end too
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        return item
