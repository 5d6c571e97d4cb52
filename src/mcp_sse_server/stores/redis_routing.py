"""What several workers need to route a session's traffic among themselves, over Redis.

- ``WorkerRegistry``: each worker's liveness lease (``SET PX``, renewed by a
  heartbeat that also renews every other lease the worker keeps), and an index
  of workers, so a reaper can find a dead worker and forget it.
- ``WorkerInbox``: a Redis Stream per worker; any worker ``send``s a message to
  another (a client's answer to a server-to-client request, a cancellation,
  "your GET stream was superseded"), the owner ``receive``s them in order. A
  Stream, not pub/sub: a reader that reconnects goes on from its last id.
- ``Lease``: one owner at a time for a name (``SET NX PX``), renewed and
  released only by its owner (a Lua compare); ``take`` supersedes the holder
  and says who it was (the standalone GET stream: a new GET wins).
- Which worker writes a resumable stream is in the event log (``EventLog.writer``:
  a resumption on another worker tails the stream, and a reaper ends it if
  that worker dies). Nothing else is indexed: a quick request costs Redis
  nothing, a client's answer to a server-to-client request finds its worker by
  the request's id (``worker_of``), and a cancellation of a request a worker
  does not run goes to every worker (``WorkerMesh.broadcast``).
- ``WorkerMesh``: the registry and the inbox of one worker, with the loop that hands
  its inbox to a callback and the request ids (``"<worker>.<n>"``) that make a
  server-to-client request's id name its worker. (``WorkerRouter`` is its old
  name, kept for one release: "router" now means the HTTP request router only.)
- ``RedisCoordinator``: the app's ``Coordinator`` (``engine/stores.py``)
  over a ``WorkerMesh``: forwarded answers and cancellations, the standalone
  stream's holder, the POSTs of a 2024-11-05 stream held by another worker (to
  that worker: the holder of the stream's standalone lease), the dead-worker reaper
  and the end of streams a dead worker left. It owns the formats of what it writes (``StandaloneHolder``, the routed
  messages).
- ``reap_dead_workers``: one reaper at a time (a lease) hands each dead worker
  to a callback, then forgets it.

Keys (prefix ``mcp``): ``mcp:worker:{<wid>}`` (liveness), ``mcp:worker:{<wid>}:inbox``
(STREAM), ``mcp:{workers}`` (ZSET: worker ->
registration time), ``mcp:{reaper}`` (the reaper's lease), and for a session's
standalone stream ``mcp:{<sid>}:get`` (a ``Lease``: same slot as the session).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import orjson
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from ..engine.jsonrpc import (
    INTERNAL_ERROR,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcResponse,
    RequestId,
    encode_message,
    parse_message,
)
from ..engine.observe import HttpOrigin, Observer, current_http
from ..engine.stores import (
    NOT_HELD,
    CoordinatedSession,
    EventLog,
    SessionPeers,
    SessionStore,
    StoreUnavailable,
    TaskStore,
)
from .redis import DEFAULT_PREFIX, WriteBehind, logger, milliseconds, redis_unavailable

__all__ = [
    "Lease",
    "RedisCoordinator",
    "ReleaseHolder",
    "RoutedAnswer",
    "RoutedCancel",
    "RoutedMessage",
    "RoutedPost",
    "StandaloneHolder",
    "WakeHolder",
    "WorkerInbox",
    "WorkerMesh",
    "WorkerRegistry",
    "WorkerRouter",
    "decode_routed",
    "encode_routed",
    "new_worker_id",
    "reap_dead_workers",
    "standalone_lease",
    "worker_of",
]

_RENEW: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

_RELEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def new_worker_id() -> str:
    """A worker id unique across hosts and restarts: ``<host>-<pid>-<random>``."""
    host = "".join(c for c in socket.gethostname() if c.isalnum() or c in "-.")[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(4)}"


def worker_of(request_id: RequestId) -> str | None:
    """The worker a server-to-client request id names (``WorkerMesh.request_ids``), or None.

    >>> worker_of("host-12-ab.7"), worker_of("host.example-12-ab.7"), worker_of(7), worker_of("x.y")
    ('host-12-ab', 'host.example-12-ab', None, None)
    """
    if not isinstance(request_id, str):
        return None
    worker_id, _, number = request_id.rpartition(".")
    if not worker_id or not number.isascii() or not number.isdigit():
        return None
    return worker_id


def _inbox_key(prefix: str, worker_id: str) -> str:
    return f"{prefix}:worker:{{{worker_id}}}:inbox"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class Lease:
    """A lease on ``key``: at most one owner (a string) at a time, for ``ttl`` seconds unless renewed."""

    __slots__ = ("_release", "_renew", "key", "redis", "ttl")

    def __init__(self, redis: Redis, key: str, ttl: float) -> None:
        self.redis = redis
        self.key = key
        self.ttl = ttl
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)

    async def acquire(self, owner: str) -> bool:
        """Become the owner unless someone holds the lease."""
        with redis_unavailable("lease acquire"):
            return bool(await self.redis.set(self.key, owner, nx=True, px=milliseconds(self.ttl)))

    async def take(self, owner: str) -> str | None:
        """Become the owner whoever held it; returns the previous owner (None: it was free)."""
        with redis_unavailable("lease take"):
            return _text(await self.redis.set(self.key, owner, px=milliseconds(self.ttl), get=True))

    async def renew(self, owner: str) -> bool:
        """Extend the lease by ``ttl``; False when ``owner`` no longer holds it."""
        with redis_unavailable("lease renew"):
            return bool(await self._renew(keys=[self.key], args=[owner, milliseconds(self.ttl)]))

    async def queue_renewal(self, pipe: Any, owner: str) -> None:
        """Queue a ``renew`` on the pipeline ``pipe`` (its reply: 1 renewed, 0 not held)."""
        if isinstance(pipe, Pipeline):  # (it loads its scripts before it runs)
            await self._renew(keys=[self.key], args=[owner, milliseconds(self.ttl)], client=pipe)
        else:  # a cluster pipeline loads none: a node that never saw the script would refuse its SHA
            pipe.eval(_RENEW, 1, self.key, owner, milliseconds(self.ttl))

    async def release(self, owner: str) -> bool:
        """Give the lease up; False (and nothing changes) when ``owner`` does not hold it."""
        with redis_unavailable("lease release"):
            return bool(await self._release(keys=[self.key], args=[owner]))

    async def holder(self) -> str | None:
        with redis_unavailable("lease holder"):
            return _text(await self.redis.get(self.key))


def standalone_lease(redis: Redis, session_id: str, ttl: float, *, prefix: str = DEFAULT_PREFIX) -> Lease:
    """The lease of a session's standalone GET stream (its key shares the session's hash tag).

    Owner values: ``"<worker id>:<connection>"``. A new GET ``take``s it and tells the previous
    holder's worker (its inbox) to end that stream; the holder ``renew``s while the stream is open.
    """
    return Lease(redis, standalone_key(prefix, session_id), ttl)


def standalone_key(prefix: str, session_id: str) -> str:
    """The key of a session's standalone lease (``standalone_lease``)."""
    return f"{prefix}:{{{session_id}}}:get"


class WorkerRegistry:
    """This worker's liveness lease and heartbeat, and what other workers can learn about it.

    ``start()`` registers and beats every ``ttl / 3`` seconds in a task; a worker
    whose lease lapsed (missed beats for ``ttl``) is dead (``dead()``). A clean
    ``stop()`` deregisters at once. The other leases this worker holds for as
    long as something lasts (``keep``) are renewed in the same pipeline as the
    beat: one round trip per worker per beat, however many it holds.
    """

    __slots__ = ("_kept", "_task", "index_key", "prefix", "redis", "ttl", "worker_id")

    def __init__(
        self, redis: Redis, worker_id: str | None = None, *, ttl: float = 10.0, prefix: str = DEFAULT_PREFIX
    ) -> None:
        self.redis = redis
        self.worker_id = worker_id or new_worker_id()
        self.ttl = ttl
        self.prefix = prefix
        self.index_key = f"{prefix}:{{workers}}"
        self._task: asyncio.Task[None] | None = None
        self._kept: dict[str, tuple[Lease, str]] = {}  # lease key -> (lease, owner): renewed with each beat

    def key(self, worker_id: str) -> str:
        return f"{self.prefix}:worker:{{{worker_id}}}"

    def inbox_key(self, worker_id: str) -> str:
        return _inbox_key(self.prefix, worker_id)

    def keep(self, lease: Lease, owner: str) -> None:
        """Renew ``lease`` (held by ``owner``, with a ttl of at least this worker's) with every beat,
        until ``drop`` or until a renewal finds it held by someone else."""
        self._kept[lease.key] = (lease, owner)

    def drop(self, lease: Lease, owner: str) -> None:
        """Stop renewing ``lease`` for ``owner``."""
        if self._kept.get(lease.key) == (lease, owner):
            del self._kept[lease.key]

    async def beat(self) -> None:
        """One heartbeat: (re)write the liveness lease, make sure the index lists this worker and
        renew the leases it keeps, in one pipeline."""
        kept = list(self._kept.values())
        with redis_unavailable("heartbeat"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.set(self.key(self.worker_id), b"1", px=milliseconds(self.ttl))
                pipe.zadd(self.index_key, {self.worker_id: time.time()}, nx=True)
                for lease, owner in kept:
                    await lease.queue_renewal(pipe, owner)
                results = await pipe.execute()
        for (lease, owner), renewed in zip(kept, results[2:], strict=True):
            if not renewed:
                self.drop(lease, owner)  # taken over (a newer GET elsewhere) or lapsed: not ours

    async def start(self) -> None:
        """Register (one beat now, so a failure shows) and keep beating in the background."""
        await self.beat()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._beat_forever())

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                await self.beat()
            except StoreUnavailable as error:
                logger.warning("worker %s missed a heartbeat: %s", self.worker_id, error)

    async def stop(self) -> None:
        """Stop beating and deregister (a clean exit: nothing left for a reaper)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        await self.forget(self.worker_id)

    async def registered(self, worker_id: str) -> bool:
        """True while the worker is in the index: alive, or dead and not reaped yet."""
        with redis_unavailable("worker registered"):
            return await self.redis.zscore(self.index_key, worker_id) is not None

    async def alive(self, worker_id: str) -> bool:
        with redis_unavailable("worker alive"):
            return bool(await self.redis.exists(self.key(worker_id)))

    async def workers(self) -> list[str]:
        """Every registered worker, alive or not yet reaped."""
        with redis_unavailable("workers"):
            members: Any = await self.redis.zrange(self.index_key, 0, -1)
        return [member.decode() for member in members]

    async def dead(self) -> list[str]:
        """Registered workers whose liveness lease lapsed."""
        workers = await self.workers()
        if not workers:
            return []
        with redis_unavailable("dead workers"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for worker_id in workers:
                    pipe.exists(self.key(worker_id))
                found = await pipe.execute()
        return [worker_id for worker_id, exists in zip(workers, found, strict=True) if not exists]

    async def forget(self, worker_id: str) -> None:
        """Remove a worker: its lease, inbox and index entry."""
        with redis_unavailable("forget worker"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.delete(self.key(worker_id), self.inbox_key(worker_id))
                pipe.zrem(self.index_key, worker_id)
                await pipe.execute()


async def reap_dead_workers(
    registry: WorkerRegistry,
    on_dead: Callable[[str], Awaitable[None]],
    *,
    lease_ttl: float = 30.0,
) -> list[str]:
    """If no other reaper runs: for each dead worker, ``on_dead(worker_id)``, then forget it.
    Returns the workers reaped (empty when another reaper holds the lease).

    If ``on_dead`` raises, the worker is left for the next sweep.
    """
    lease = Lease(registry.redis, f"{registry.prefix}:{{reaper}}", lease_ttl)
    if not await lease.acquire(registry.worker_id):
        return []
    reaped: list[str] = []
    try:
        for worker_id in await registry.dead():
            if worker_id == registry.worker_id:
                continue  # our own beat lapsed (Redis was away): not dead, beat again
            await on_dead(worker_id)
            await registry.forget(worker_id)
            reaped.append(worker_id)
    finally:
        try:
            await lease.release(registry.worker_id)
        except StoreUnavailable:
            pass  # it lapses by itself
    return reaped


class WorkerInbox:
    """Messages to workers: a Redis Stream each (``MAXLEN ~ maxlen``), read by its owner only.

    ``send(worker_id, message)`` appends a plain-data mapping; the owner's
    ``receive()`` returns what arrived since its last call (waiting up to
    ``block`` seconds for something), oldest first; what it read is deleted
    in batches (a busy inbox: every ``count`` entries; an idle one: when a
    read finds nothing). Handlers tolerate repeats (request ids) all the same.
    """

    __slots__ = ("_last", "_read", "maxlen", "prefix", "redis", "worker_id")

    def __init__(self, redis: Redis, worker_id: str, *, maxlen: int = 10000, prefix: str = DEFAULT_PREFIX) -> None:
        self.redis = redis
        self.worker_id = worker_id
        self.maxlen = maxlen
        self.prefix = prefix
        self._last = "0"  # everything sent to this worker id, even before it started reading
        # Entries read and not yet deleted: deleted once ``count`` of them are, or when a read finds
        # nothing, so a busy inbox pays one XDEL per batch of reads, not one per read.
        self._read: list[Any] = []

    def key(self, worker_id: str) -> str:
        return _inbox_key(self.prefix, worker_id)

    async def send(self, worker_id: str, message: Mapping[str, Any]) -> str:
        """Queue ``message`` for ``worker_id``; returns its entry id."""
        with redis_unavailable("inbox send"):
            entry = await self.redis.xadd(
                self.key(worker_id), {"d": orjson.dumps(message)}, maxlen=self.maxlen, approximate=True
            )
        return _text(entry) or ""

    async def receive(self, block: float = 5.0, count: int = 100) -> list[dict[str, Any]]:
        """The next messages (at most ``count``), waiting up to ``block`` seconds for one; [] on timeout."""
        key = self.key(self.worker_id)
        with redis_unavailable("inbox receive"):
            result: Any = await self.redis.xread({key: self._last}, count=count, block=milliseconds(block))
        if not result:
            await self._delete_read(key)  # (idle: a good moment)
            return []
        entries = result[0][1]
        messages: list[dict[str, Any]] = []
        for _, fields in entries:
            try:
                message = orjson.loads(fields[b"d"])
            except (KeyError, orjson.JSONDecodeError):
                continue
            if isinstance(message, dict):
                messages.append(message)
        read = self._read
        read.extend(entry_id for entry_id, _ in entries)
        self._last = _text(read[-1]) or self._last
        if len(read) >= count:
            await self._delete_read(key)
        return messages

    async def _delete_read(self, key: str) -> None:
        read, self._read = self._read, []
        if not read:
            return
        try:
            with redis_unavailable("inbox ack"):
                await self.redis.xdel(key, *read)
        except StoreUnavailable:
            pass  # never read again (_last moved on); MAXLEN trims them, or the inbox goes with its worker


class WorkerMesh:
    """One worker among others: its registry entry (heartbeats) and its inbox, read by a task that
    hands each message to ``deliver``; and the queue of writes behind (``writes``) it shares with
    the worker's event log.

    ``start(deliver)`` registers and starts reading; ``stop()`` deregisters. Messages are
    plain mappings; ``RedisCoordinator`` writes and reads them (``encode_routed``).
    """

    __slots__ = ("_deliver", "_reader", "_request_ids", "inbox", "registry", "worker_id", "writes")

    def __init__(
        self,
        redis: Redis,
        worker_id: str | None = None,
        *,
        heartbeat_ttl: float = 10.0,
        prefix: str = DEFAULT_PREFIX,
        writes: WriteBehind | None = None,
    ) -> None:
        self.registry = WorkerRegistry(redis, worker_id, ttl=heartbeat_ttl, prefix=prefix)
        self.writes = writes if writes is not None else WriteBehind(redis)
        self.worker_id = self.registry.worker_id
        self.inbox = WorkerInbox(redis, self.worker_id, prefix=prefix)
        self._reader: asyncio.Task[None] | None = None
        self._deliver: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        self._request_ids = (f"{self.worker_id}.{n}" for n in itertools.count(1))

    def coordinator(
        self,
        events: EventLog,
        sessions: SessionStore,
        *,
        stream_log_grace: float = 30.0,
        tasks: TaskStore | None = None,
    ) -> RedisCoordinator:
        """The app's ``Coordinator`` over this mesh (a ``Backend``'s ``coordinator``); with ``tasks``,
        a dead worker's unfinished tasks end failed when it is reaped."""
        return RedisCoordinator(self, events, sessions, stream_log_grace=stream_log_grace, tasks=tasks)

    def request_ids(self) -> Iterator[str]:
        """Ids for server-to-client requests: unique across workers, and naming this one
        (``worker_of`` reads it back, so a client's answer finds its way here). One iterator for
        all the worker's sessions: a generator each would cost an idle session 480 bytes."""
        return self._request_ids

    @property
    def started(self) -> bool:
        return self._reader is not None

    async def start(self, deliver: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if self._reader is not None:
            return
        await self.registry.start()
        self._deliver = deliver
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def send(self, worker_id: str, message: Mapping[str, Any]) -> None:
        await self.inbox.send(worker_id, message)

    async def broadcast(self, message: Mapping[str, Any]) -> None:
        """Send ``message`` to every other registered worker (two round trips, whatever their number)."""
        inbox = self.inbox
        others = [worker_id for worker_id in await self.registry.workers() if worker_id != self.worker_id]
        if not others:
            return
        data = {"d": orjson.dumps(message)}
        with redis_unavailable("broadcast"):
            async with inbox.redis.pipeline(transaction=False) as pipe:
                for worker_id in others:
                    pipe.xadd(inbox.key(worker_id), data, maxlen=inbox.maxlen, approximate=True)  # type: ignore[arg-type, unused-ignore]
                await pipe.execute()

    async def _read(self) -> None:
        backoff = 0.05
        while True:
            try:
                messages = await self.inbox.receive(block=1.0)
                backoff = 0.05
            except StoreUnavailable as error:
                logger.warning("worker %s cannot read its inbox: %s", self.worker_id, error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            for message in messages:
                try:
                    assert self._deliver is not None
                    await self._deliver(message)
                except Exception:
                    logger.exception("worker %s could not handle a routed %r", self.worker_id, message.get("type"))

    async def stop(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            # An empty message ends the reader's blocking XREAD now: redis-py may lose a
            # cancellation that arrives during it, which then waits for the block to run out.
            with contextlib.suppress(StoreUnavailable):
                await self.inbox.send(self.worker_id, {})
            reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass
        try:
            await self.registry.stop()
        except StoreUnavailable:
            pass  # its liveness lease lapses by itself


WorkerRouter = WorkerMesh
"""The old name of ``WorkerMesh``, kept for one release."""


# --- what the coordinator writes: its formats, each encoded and decoded in one place ------


@dataclass(frozen=True, slots=True)
class StandaloneHolder:
    """Who holds a session's standalone GET stream (the value of its lease): ``"<worker id>:<n>"``.

    >>> StandaloneHolder.decode(StandaloneHolder("host-1-ab", 3).encode())
    StandaloneHolder(worker_id='host-1-ab', number=3)
    """

    worker_id: str
    number: int  # the worker's count of GET streams it held, so two of its GETs differ

    def encode(self) -> str:
        return f"{self.worker_id}:{self.number}"

    @classmethod
    def decode(cls, value: str) -> StandaloneHolder:
        """The holder a lease value names (worker ``""`` for a value this format cannot read)."""
        worker_id, _, number = value.rpartition(":")
        return cls(worker_id, int(number) if number.isascii() and number.isdigit() else 0)


@dataclass(frozen=True, slots=True)
class RoutedAnswer:
    """A client's answer (JSON text) to a server-to-client request the receiving worker sent;
    ``trace``: the W3C trace context it was forwarded in (telemetry on), else None."""

    session_id: str
    message: str
    trace: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class RoutedCancel:
    """The params of a ``notifications/cancelled`` for a request the receiving worker runs (and the
    trace context it was forwarded in, as for an answer)."""

    session_id: str
    params: dict[str, Any]
    trace: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class WakeHolder:
    """The standalone stream the receiving worker holds has a backlog to take."""

    session_id: str


@dataclass(frozen=True, slots=True)
class ReleaseHolder:
    """A newer GET took the standalone stream ``holder`` (on the receiving worker) held."""

    session_id: str
    holder: str


@dataclass(frozen=True, slots=True)
class RoutedPost:
    """A client's message (JSON text) POSTed for a 2024-11-05 stream the receiving worker holds,
    checked and answered 202 where it was posted; ``origin``: with telemetry on, the POST's
    peer, HTTP version and W3C trace headers (``engine.observe.HttpOrigin``), what the
    receiving worker's spans of the message take as if it had been posted there, else None."""

    session_id: str
    message: str
    origin: HttpOrigin | None = None


RoutedMessage: TypeAlias = RoutedAnswer | RoutedCancel | WakeHolder | ReleaseHolder | RoutedPost


def encode_routed(message: RoutedMessage) -> dict[str, Any]:
    """A routed message as the inbox carries it: a mapping with a ``type`` and a ``session``.

    >>> encode_routed(WakeHolder("s1"))
    {'type': 'wake', 'session': 's1'}
    >>> decode_routed(encode_routed(RoutedCancel("s1", {"requestId": 3})))
    RoutedCancel(session_id='s1', params={'requestId': 3}, trace=None)

    An answer or a cancel forwarded with telemetry on carries ``trace`` (W3C keys); a worker of an
    older version ignores the key, and one without it decodes as None.
    """
    if isinstance(message, RoutedAnswer):
        encoded: dict[str, Any] = {"type": "answer", "session": message.session_id, "message": message.message}
        return encoded if message.trace is None else {**encoded, "trace": message.trace}
    if isinstance(message, RoutedCancel):
        cancel: dict[str, Any] = {"type": "cancel", "session": message.session_id, "params": message.params}
        return cancel if message.trace is None else {**cancel, "trace": message.trace}
    if isinstance(message, WakeHolder):
        return {"type": "wake", "session": message.session_id}
    if isinstance(message, RoutedPost):
        post: dict[str, Any] = {"type": "post", "session": message.session_id, "message": message.message}
        return post if message.origin is None else {**post, "origin": message.origin._asdict()}
    return {"type": "release", "session": message.session_id, "holder": message.holder}


def decode_routed(data: Mapping[str, Any]) -> RoutedMessage | None:
    """The message an inbox entry carries; None for one this worker cannot read."""
    kind, session_id = data.get("type"), data.get("session")
    if not isinstance(session_id, str):
        return None
    if kind == "answer" and isinstance(data.get("message"), str):
        return RoutedAnswer(session_id, data["message"], _trace_of(data))
    if kind == "cancel" and isinstance(data.get("params"), dict):
        return RoutedCancel(session_id, data["params"], _trace_of(data))
    if kind == "wake":
        return WakeHolder(session_id)
    if kind == "post" and isinstance(data.get("message"), str):
        return RoutedPost(session_id, data["message"], _origin_of(data))
    if kind == "release" and isinstance(data.get("holder"), str):
        return ReleaseHolder(session_id, data["holder"])
    return None


def _trace_of(data: Mapping[str, Any]) -> dict[str, str] | None:
    """A routed message's trace context: string entries only; None when it has none."""
    trace = data.get("trace")
    if type(trace) is not dict:
        return None
    return {key: value for key, value in trace.items() if type(key) is str and type(value) is str} or None


def _origin_of(data: Mapping[str, Any]) -> HttpOrigin | None:
    """A routed POST's HTTP origin; None when it has none or it is not one this format wrote."""
    origin = data.get("origin")
    if type(origin) is not dict:
        return None
    address, port, version, headers = (
        origin.get("client_address"),
        origin.get("client_port"),
        origin.get("http_version"),
        origin.get("headers"),
    )
    if (
        (address is not None and type(address) is not str)
        or (port is not None and type(port) is not int)
        or type(version) is not str
        or type(headers) is not dict
    ):
        return None
    kept = {key: value for key, value in headers.items() if type(key) is str and type(value) is str}
    return HttpOrigin(address, port, version, kept)


def _observer(session: CoordinatedSession | None) -> Observer | None:
    """The telemetry of the server serving ``session`` here (an HTTP ``LiveSession`` names its
    server), None when off: routing then carries no trace context."""
    return getattr(getattr(session, "server", None), "observer", None)


def _tell_routed(observer: Observer, session: CoordinatedSession, message: RoutedAnswer | RoutedCancel) -> None:
    """Telemetry of a routed answer or cancel: counted, and an event (with a link to the
    forwarding worker's context) on the span of the request it cancels, when it runs here, or of
    the request this worker sent that it answers."""
    in_flight: Any = None
    connection = getattr(getattr(session, "session", None), "connection", None)
    if isinstance(message, RoutedCancel):
        find = getattr(connection, "observation", None)
        target = message.params.get("requestId")
    else:  # an answer: to a request this worker sent (an ObservedConnection notes their ids)
        find = getattr(connection, "outbound_observation", None)
        try:
            target = orjson.loads(message.message).get("id") if find is not None else None
        except (orjson.JSONDecodeError, AttributeError):
            target = None
    if find is not None and isinstance(target, str | int):
        in_flight = find(target)
    kind = "answer" if isinstance(message, RoutedAnswer) else "cancel"
    observer.routed(kind, message.trace, in_flight)


_INTERRUPTED: Final = "Request interrupted: the server instance running it stopped"


_RELEASE_GRACE: Final = 1.0
"""How long ``stop`` waits for the streams the shutdown ended to release their leases."""


class RedisCoordinator:
    """The ``Coordinator`` of workers and hosts that share sessions through Redis.

    ``mesh`` is this worker's ``WorkerMesh``; ``events`` and ``sessions`` are the
    shared event log and session store (the reaper writes terminal errors into
    the streams of dead workers, for sessions that still exist);
    ``stream_log_grace`` is how long such a stream stays resumable. Build it with
    ``RedisBackend.from_url(url)`` (the app takes it from the backend), or
    ``mesh.coordinator(events, sessions)``.
    """

    __slots__ = (
        "_holders",
        "_holding",
        "_posts",
        "_reaper",
        "_releasing",
        "_sessions",
        "_stopped",
        "events",
        "mesh",
        "sessions",
        "stream_log_grace",
        "tasks",
    )

    def __init__(
        self,
        mesh: WorkerMesh,
        events: EventLog,
        sessions: SessionStore,
        *,
        stream_log_grace: float = 30.0,
        tasks: TaskStore | None = None,
    ) -> None:
        self.mesh = mesh
        self.events = events
        self.sessions = sessions
        self.tasks = tasks
        self.stream_log_grace = stream_log_grace
        self._sessions: Callable[[str], CoordinatedSession | None] = lambda session_id: None
        self._reaper: asyncio.Task[None] | None = None
        self._stopped = False
        self._holders = 0  # standalone GET streams held here (numbers their holders)
        self._holding: dict[str, str] = {}  # session id -> this worker's holder of its standalone stream
        self._posts: dict[str, Callable[[bytes], Awaitable[None]]] = {}  # session id -> its 2024-11-05 stream here
        self._releasing = 0  # leases of streams that ended, being released now

    @property
    def started(self) -> bool:
        return self.mesh.started

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self, sessions: Callable[[str], CoordinatedSession | None]) -> None:
        """Register this worker, read its inbox, and look for dead workers (idempotent)."""
        if self._stopped:
            return
        self._sessions = sessions
        await self.mesh.start(self._deliver)
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def stop(self) -> None:
        self._stopped = True
        # The app's shutdown ended the streams held here; each releases its lease in its own task.
        # Let them, for a moment, before the mesh and then the backend close under them: a release
        # cut short left its task to be cancelled at the loop's end, a traceback in every worker's
        # log, and the lease to lapse only at its expiry (polled: shutdown only, as the app does).
        loop = asyncio.get_running_loop()
        until = loop.time() + _RELEASE_GRACE
        while (self._holding or self._releasing) and loop.time() < until:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
        await self.mesh.stop()

    # --- per session --------------------------------------------------------------------

    def peers(self, session_id: str) -> SessionPeers:
        return _RedisPeers(self, session_id)

    def request_ids(self) -> Iterator[RequestId] | None:
        return self.mesh.request_ids()

    def serving(self, session: CoordinatedSession, request_id: RequestId) -> AbstractAsyncContextManager[None]:
        """Nothing in Redis while a request runs: its resumable stream, once it starts, names its
        writer in the event log (``EventLog.open_stream``), which is all a resumption on another
        worker, or the end of the stream should this worker die, needs.

        A duplicate id in flight on another worker is not looked for: that would cost a round trip
        per request, and JSON-RPC makes unique ids the client's duty (a worker refuses its own).
        """
        return NOT_HELD

    async def route_inbound(self, session_id: str, message: JsonRpcMessage, body: bytes) -> bool:
        """A client's answer to a server-to-client request another worker sent (its id names that
        worker), or a cancellation of a request this worker does not run (to every other worker:
        who runs it is not kept anywhere)."""
        mesh = self.mesh
        kind = type(message)
        if kind is JsonRpcNotification:
            params = message.params or {}  # type: ignore[union-attr]
            target = params.get("requestId")
            if message.method != "notifications/cancelled" or not isinstance(target, str | int):  # type: ignore[union-attr]
                return False
            session = self._sessions(session_id)
            if session is not None and session.runs(target):
                return False  # running here: the local engine cancels it
            observer = _observer(session)
            trace = None if observer is None else observer.forwarding("cancel", params)
            await mesh.broadcast(encode_routed(RoutedCancel(session_id, params, trace)))
            return True
        if (kind is not JsonRpcResponse and kind is not JsonRpcError) or message.id is None:  # type: ignore[union-attr]
            return False
        worker_id = worker_of(message.id)  # type: ignore[union-attr]
        if worker_id is None or worker_id == mesh.worker_id:
            return False  # ours (or no worker's: the local engine drops it)
        if not await mesh.registry.alive(worker_id):
            logger.info("dropping an answer for worker %s, which is gone", worker_id)
            return True
        observer = _observer(self._sessions(session_id))
        trace = None if observer is None else observer.forwarding("answer", None)
        await mesh.send(worker_id, encode_routed(RoutedAnswer(session_id, body.decode(), trace)))
        return True

    @contextlib.asynccontextmanager
    async def holding_standalone(self, session: CoordinatedSession) -> AsyncIterator[None]:
        """This GET takes the session's standalone lease (a holder on another worker is told to
        end its stream: a new GET supersedes the old); the worker's heartbeat renews it while the
        stream is open."""
        mesh = self.mesh
        session_id = session.session_id
        lease = self._lease(session_id)
        self._holders += 1
        holder = StandaloneHolder(mesh.worker_id, self._holders).encode()
        previous = await lease.take(holder)
        self._holding[session_id] = holder
        if previous is not None:
            worker_id = StandaloneHolder.decode(previous).worker_id
            if worker_id and worker_id != mesh.worker_id:
                await mesh.send(worker_id, encode_routed(ReleaseHolder(session_id, previous)))

        mesh.registry.keep(lease, holder)  # renewed with the worker's heartbeat while the stream is open
        try:
            yield
        finally:
            mesh.registry.drop(lease, holder)
            if self._holding.get(session_id) == holder:
                del self._holding[session_id]
            self._releasing += 1
            try:
                with contextlib.suppress(StoreUnavailable):
                    await lease.release(holder)
            finally:
                self._releasing -= 1

    @contextlib.asynccontextmanager
    async def holding_legacy(
        self, session: CoordinatedSession, on_post: Callable[[bytes], Awaitable[None]]
    ) -> AsyncIterator[None]:
        """A 2024-11-05 stream held here: its session's standalone lease (``holding_standalone``),
        whose holder is where other workers send the session's POSTs (``route_legacy_post``);
        they reach ``on_post`` while the stream is open."""
        session_id = session.session_id
        async with self.holding_standalone(session):
            self._posts[session_id] = on_post
            try:
                yield
            finally:
                if self._posts.get(session_id) is on_post:
                    del self._posts[session_id]

    async def route_legacy_post(self, session_id: str, body: bytes) -> bool:
        """A 2024-11-05 POST whose session's stream is not held here: to the worker holding the
        session's standalone lease (renewed with its heartbeat, so a dead worker's lapses with its
        liveness). False when nobody else holds it."""
        holder = await self._holder(session_id)
        if holder is None:
            return False
        worker_id = StandaloneHolder.decode(holder).worker_id
        if not worker_id or worker_id == self.mesh.worker_id:
            return False  # (here: the app found no stream of it, so it ended)
        # (current_http is set only while telemetry observes the POST: the worker serving its
        # message then spans it as if it had been posted there, trace headers and peer alike.)
        await self.mesh.send(worker_id, encode_routed(RoutedPost(session_id, body.decode(), current_http.get())))
        return True

    def _lease(self, session_id: str) -> Lease:
        registry = self.mesh.registry
        return standalone_lease(registry.redis, session_id, registry.ttl, prefix=registry.prefix)

    async def _holder(self, session_id: str) -> str | None:
        """Who holds the session's standalone lease: one GET (a ``Lease`` would register its
        scripts for each routed POST)."""
        registry = self.mesh.registry
        with redis_unavailable("lease holder"):
            return _text(await registry.redis.get(standalone_key(registry.prefix, session_id)))

    async def session_ended(self, session_id: str) -> None:
        """Nothing to drop: what other workers know of the session's requests lives in its event log
        and in the owners' notes, which their requests' ends remove."""
        return None

    async def wake_holder(self, session_id: str) -> None:
        """A standalone message went to the backlog: the worker holding the GET stream takes it."""
        holder = await self._holder(session_id)
        if holder is None:
            return
        worker_id = StandaloneHolder.decode(holder).worker_id
        if not worker_id:
            return  # a value no worker of this version wrote: nobody to wake
        if worker_id != self.mesh.worker_id:
            await self.mesh.send(worker_id, encode_routed(WakeHolder(session_id)))
            return
        session = self._sessions(session_id)
        if session is not None:
            await session.deliver_backlog()

    # --- messages other workers routed here ----------------------------------------------

    async def _deliver(self, data: dict[str, Any]) -> None:
        message = decode_routed(data)
        if message is None:
            return
        session = self._sessions(message.session_id)
        if session is None:
            return
        if isinstance(message, RoutedAnswer | RoutedCancel):
            observer = _observer(session)
            if observer is not None:
                _tell_routed(observer, session, message)
        if isinstance(message, RoutedAnswer):
            session.on_message(parse_message(message.message.encode()))
        elif isinstance(message, RoutedCancel):
            session.on_message(JsonRpcNotification("notifications/cancelled", message.params))
            await session.end_cancelled(message.params)
        elif isinstance(message, WakeHolder):
            await session.deliver_backlog()
        elif isinstance(message, RoutedPost):
            on_post = self._posts.get(message.session_id)
            if on_post is None:
                logger.info("dropping a 2024-11-05 POST for session %s: its stream ended", message.session_id[:8])
            else:
                # The POST's origin is current while its message is taken (and in the task that
                # serves a request in it); none otherwise, never the context this loop started in.
                token = current_http.set(message.origin)
                try:
                    await on_post(message.message.encode())
                finally:
                    current_http.reset(token)
        elif self._holding.get(message.session_id) == message.holder:
            del self._holding[message.session_id]
            await session.end_standalone()

    # --- dead workers -------------------------------------------------------------------

    async def _reap_forever(self) -> None:
        registry = self.mesh.registry
        ttl = registry.ttl
        interval = max(0.05, ttl / 3)
        loop = asyncio.get_running_loop()
        # Only once Redis has answered for a whole lease: after an outage every lease has lapsed,
        # and the live workers need one beat each before a lapsed lease means a dead worker.
        reachable_since = loop.time()
        while True:
            await asyncio.sleep(interval)
            try:
                if loop.time() - reachable_since >= ttl:
                    await self.reap_dead_workers()
                else:
                    await registry.alive(self.mesh.worker_id)  # is Redis reachable?
            except StoreUnavailable as error:
                reachable_since = loop.time() + interval
                logger.warning("could not look for dead workers: %s", error)
            except Exception:
                logger.exception("looking for dead workers failed")

    async def reap_dead_workers(self) -> list[str]:
        """Forget the workers whose liveness lease lapsed (one reaper at a time across workers);
        from then on, a stream one of them was writing ends with the terminal JSON-RPC error when
        a client resumes it anywhere (``end_if_abandoned``). Returns the workers reaped."""
        return await reap_dead_workers(self.mesh.registry, self._forget_worker)

    async def _forget_worker(self, worker_id: str) -> None:
        # A stream the dead worker wrote is ended by the worker a client resumes it on
        # (``end_if_abandoned``), once the dead worker is no longer registered; its tasks end here.
        logger.warning("worker %s stopped; the streams it was writing end when resumed elsewhere", worker_id)
        if self.tasks is not None:
            failed = await self.tasks.fail_owned_by(worker_id, time.time())
            if failed:
                logger.warning("worker %s stopped; %d of its tasks ended failed", worker_id, failed)

    async def end_if_abandoned(self, session_id: str, stream_id: str) -> bool:
        """End a stream whose writer is a worker no longer registered (it died and was reaped):
        with the terminal JSON-RPC error ``-32603 "Request interrupted: the server instance running
        it stopped"`` for its request, numbered past anything that worker sent. True when it did."""
        writer = await self.events.writer(session_id, stream_id)
        if writer is None or writer.worker_id == self.mesh.worker_id:
            return False
        if await self.mesh.registry.registered(writer.worker_id):
            return False  # alive, or dead and not reaped yet (the reaper's rules decide which)
        logger.warning(
            "worker %s stopped while running request %r of session %s",
            writer.worker_id,
            writer.request_id,
            session_id[:8],
        )
        error = encode_message(JsonRpcError(writer.request_id, INTERNAL_ERROR, _INTERRUPTED))
        await self.events.end_abandoned(session_id, stream_id, error, self.stream_log_grace)
        return True


class _RedisPeers:
    """What the transport of one session asks of the other workers, over Redis."""

    __slots__ = ("coordinator", "session_id")

    def __init__(self, coordinator: RedisCoordinator, session_id: str) -> None:
        self.coordinator = coordinator
        self.session_id = session_id

    async def runs_elsewhere(self, stream_id: str) -> bool:
        writer = await self.coordinator.events.writer(self.session_id, stream_id)
        return writer is not None and writer.worker_id != self.coordinator.mesh.worker_id

    async def end_if_abandoned(self, stream_id: str) -> None:
        await self.coordinator.end_if_abandoned(self.session_id, stream_id)

    async def on_backlog(self) -> None:
        await self.coordinator.wake_holder(self.session_id)
