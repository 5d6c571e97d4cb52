"""The Redis (or Valkey) stores: session records, event logs and an event bus shared by workers.

>>> from redis.asyncio import Redis  # doctest: +SKIP
>>> client = Redis.from_url("redis://127.0.0.1:6379/0")  # decode_responses must stay False
>>> sessions = RedisSessionStore(client, idle_timeout=1800, max_lifetime=43200)
>>> events = RedisEventLog(client, backlog_limit=256, replay_size=256, ttl=43200)

Key layout (``prefix`` is ``mcp`` by default). Every key of one session carries
the hash tag ``{<session id>}``, so a session's keys share one Redis Cluster
slot and each multi-key change is one Lua script (all or nothing on the wire):

============================  ======  ==========================================================
``mcp:{sid}``                 HASH    ``d``: the record (orjson, without last_seen and version),
                                      ``s``: last_seen, ``v``: version (the writes it took)
``mcp:{sid}:ev``              HASH    ``seq``: the session's event counter (the ``n`` of event ids),
                                      ``s:<stream>``: the stream exists, ``e:<stream>``: it ended
                                      (the Redis time, ms, when its events are dropped)
``mcp:{sid}:h:<stream>``      STREAM  delivered events kept for replay (``MAXLEN ~ replay_size``);
                                      fields ``n`` (sequence), ``m`` (message), ``r`` (request id)
``mcp:{sid}:b:<stream>``      STREAM  the backlog: events waiting for the stream to attach
``mcp:{sessions}:seen``       ZSET    session id -> last_seen (``count``, idle expiry)
``mcp:{sessions}:born``       ZSET    session id -> created_at (lifetime expiry)
============================  ======  ==========================================================

``save`` announces ``"<session id> <version>"`` and ``delete`` the session id on the channel
``mcp:sessions:changed`` (``RecordWatch``), so a worker keeping copies of records knows which
went stale.

The two index sorted sets share their own tag ``{sessions}``; a script that
changes a record and the index names all three keys, which a single Redis (or
Sentinel) runs atomically. On Redis Cluster those scripts are cross-slot: see
the README (the record keys are cluster-ready, the index is not yet).

Clocks: ``SessionRecord`` times are the caller's clock. Several processes
sharing a store must share that clock: give the app ``clock=time.time``
(wall-clock seconds), not the monotonic default. Key expiry (``PEXPIRE``) is
Redis's own clock and only a safety net for sessions nobody reaps (a crashed
worker): the app's reaper, through ``expired``, ends sessions first.

Failures: every method raises ``StoreUnavailable`` when Redis cannot be
reached (connection refused or lost, timeout, a read-only replica after a
failover); the same object works again once Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import secrets
import zlib
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from typing import Any, Final, cast

import orjson
from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.exceptions import NoScriptError

from ..engine.jsonrpc import RequestId
from ..engine.memory_stores import MemoryEventBus
from ..engine.records import SessionRecord
from ..engine.stores import (
    LAST_NUMBER,
    STANDALONE_STREAM,
    EventBus,
    EventLog,
    SessionStore,
    StaleRecord,
    StoredEvent,
    StoreUnavailable,
    StreamWriter,
)
from . import redis_cluster

_pack: Callable[[tuple[Any, ...]], bytes] | None
try:
    from hiredis import pack_command as _pack  # (the redis extra installs it: C packing of commands)
except ImportError:  # pragma: no cover - without hiredis, redis-py packs in Python
    _pack = None

__all__ = [
    "DEFAULT_PREFIX",
    "RecordWatch",
    "RedisEventBus",
    "RedisEventLog",
    "RedisSessionStore",
    "WriteBehind",
    "check_client",
    "redis_unavailable",
    "valid_session_id",
]

DEFAULT_PREFIX: Final = "mcp"

logger = logging.getLogger("mcp_sse_server.stores")

_UNAVAILABLE: Final = (
    redis_errors.ConnectionError,  # includes BusyLoadingError (a restarting server loading its data)
    redis_errors.TimeoutError,
    redis_errors.ReadOnlyError,  # writing to a replica: a failover in progress
    # A cluster between a primary's loss and its replica's promotion: CLUSTERDOWN (and its
    # MASTERDOWN), TRYAGAIN, a slot no node serves in the layout the client holds.
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.SlotNotCoveredError,
    redis_errors.RedisClusterUnreachableError,  # no node of the cluster answers
    ConnectionError,
    OSError,
)

_MAX_ID_LENGTH: Final = 200


class redis_unavailable:
    """Turn redis-py's connection errors raised inside into ``StoreUnavailable``, and honour a
    cancellation that redis-py lost.

    redis-py's asyncio client (8.1) can lose a cancellation that lands while it reads a reply: a
    blocking ``XREAD`` then returns ``[]`` to a task being cancelled (about 1 in 40 cancellations
    in a loop), or the connection it dropped raises ``ConnectionError``. A reader loop around such
    a command never stopped, and a worker's graceful shutdown, awaiting it, hung forever. So a
    cancellation requested while the commands inside ran is raised here as ``CancelledError``.

    A class, not a ``contextlib.contextmanager``: every Redis call of a request passes here, and
    a generator-based manager costs several times as much to enter and leave.
    """

    __slots__ = ("requested", "task", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self.task: asyncio.Task[Any] | None = None
        self.requested = 0

    def __enter__(self) -> None:
        task = self.task = asyncio.current_task()
        self.requested = task.cancelling() if task is not None else 0

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        task = self.task
        cancelled = task is not None and task.cancelling() > self.requested
        if error is None:
            if cancelled:
                raise asyncio.CancelledError
        elif isinstance(error, _UNAVAILABLE):
            if cancelled:
                raise asyncio.CancelledError from error
            raise StoreUnavailable(f"Redis is unavailable ({self.what}): {error}") from error


def valid_session_id(session_id: str) -> bool:
    """True for an id that may name keys: visible ASCII without braces (which would break the
    hash tag), at most 200 characters. Other ids never name a session here."""
    return (
        0 < len(session_id) <= _MAX_ID_LENGTH
        and session_id.isascii()
        and session_id.isprintable()
        and " " not in session_id
        and "{" not in session_id
        and "}" not in session_id
    )


def _valid_stream_id(stream_id: str) -> bool:
    return stream_id == STANDALONE_STREAM or valid_session_id(stream_id)


def check_client(redis: Redis) -> None:
    """ValueError for a client that decodes replies: the stores read bytes."""
    pool = getattr(redis, "connection_pool", None)  # (a RedisCluster has none: one pool per node)
    kwargs = pool.connection_kwargs if pool is not None else redis.get_connection_kwargs()  # type: ignore[no-untyped-call]
    if kwargs.get("decode_responses"):
        raise ValueError("the Redis stores need a client with decode_responses=False (messages are bytes)")


def milliseconds(seconds: float) -> int:
    """A duration as Redis takes it (PX, PEXPIRE, BLOCK): whole milliseconds, rounded up, at least 1."""
    return max(1, math.ceil(seconds * 1000))


# --- session records ---------------------------------------------------------------------

_RECORD_FIELDS: Final = tuple(
    f.name for f in dataclasses.fields(SessionRecord) if f.name not in ("last_seen", "version")
)

_CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 's', ARGV[2], 'v', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 1
"""

# ARGV: the record, the version the copy was read at, the channel, the session id. Returns the new
# version, 0 (no such record) or -1 (the copy is stale: nothing written).
_SAVE: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local version = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if version ~= tonumber(ARGV[2]) then return -1 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'v', version + 1)
redis.call('PUBLISH', ARGV[3], ARGV[4] .. ' ' .. (version + 1))
return version + 1
"""

_TOUCH: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return 1
"""

_DELETE: Final = """
local gone = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return gone
"""

# On a cluster the index is elsewhere (another slot): these change the record alone, and the index
# follows in a command of its own (see ``RedisSessionStore``).
_CREATE_RECORD: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 's', ARGV[2], 'v', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""

_TOUCH_RECORD: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

_DELETE_RECORD: Final = """
local gone = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return gone
"""

# The sessions index on a cluster: this many pairs of sorted sets, each in a slot of its own, a
# session in the pair its id hashes to (so no one shard holds every session's touches).
CLUSTER_INDEX_SHARDS: Final = 16


def _encode_record(record: SessionRecord) -> bytes:
    return orjson.dumps({name: getattr(record, name) for name in _RECORD_FIELDS})


def _decode_record(data: bytes, last_seen: bytes | None, version: bytes | None) -> SessionRecord:
    fields = orjson.loads(data)
    record = SessionRecord(**{name: fields[name] for name in _RECORD_FIELDS if name in fields})
    if last_seen is not None:
        record.last_seen = float(last_seen)
    if version is not None:
        record.version = int(version)
    return record


class RedisSessionStore(SessionStore):
    """Session records in Redis, shared by every worker that uses the same Redis.

    ``get`` returns a fresh copy each time: a change to a record reaches the
    other workers through ``save`` (or ``touch`` for ``last_seen``). ``save`` writes
    only a copy as new as the record (else ``StaleRecord``); ``save`` and ``delete``
    announce the session on ``changes_channel`` (``changes()`` subscribes; ``touch``
    does not announce: a copy's ``last_seen`` may lag, and only its expiry depends on it).
    ``idle_timeout`` and ``max_lifetime`` (the app's limits) set each record's
    key expiry, ``expiry_slack`` seconds after the app would reap it. Given
    ``writes`` (a ``WriteBehind``), ``touch`` queues its write there and does not
    wait: many sessions' touches share a round trip, and a lost one only makes
    the session look idle a little early to other workers.
    """

    shared = True  # every worker on the same Redis sees these records

    __slots__ = (
        "_create",
        "_delete",
        "_save",
        "_touch",
        "born_key",
        "changes_channel",
        "cluster",
        "expiry_slack",
        "idle_timeout",
        "max_lifetime",
        "prefix",
        "redis",
        "seen_key",
        "writes",
    )

    def __init__(
        self,
        redis: Redis,
        *,
        idle_timeout: float = 1800.0,
        max_lifetime: float = 43200.0,
        expiry_slack: float = 60.0,
        prefix: str = DEFAULT_PREFIX,
        writes: WriteBehind | None = None,
    ) -> None:
        check_client(redis)
        self.redis = redis
        self.writes = writes
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self.expiry_slack = expiry_slack
        self.prefix = prefix
        self.seen_key = f"{prefix}:{{sessions}}:seen"
        self.born_key = f"{prefix}:{{sessions}}:born"
        self.changes_channel = f"{prefix}:sessions:changed"
        # On a cluster a script names one slot: the record's scripts leave the index out (it is
        # written next, by a command of its own), and the index is split over several slots.
        self.cluster = redis_cluster.is_cluster(redis)
        self._create = redis.register_script(_CREATE_RECORD if self.cluster else _CREATE)
        self._save = redis.register_script(_SAVE)
        self._touch = redis.register_script(_TOUCH_RECORD if self.cluster else _TOUCH)
        self._delete = redis.register_script(_DELETE_RECORD if self.cluster else _DELETE)

    def key(self, session_id: str) -> str:
        """The record's key."""
        return f"{self.prefix}:{{{session_id}}}"

    def index_keys(self, session_id: str) -> tuple[str, str]:
        """The ``seen`` and ``born`` sorted sets that index the session."""
        if not self.cluster:
            return self.seen_key, self.born_key
        shard = zlib.crc32(session_id.encode()) % CLUSTER_INDEX_SHARDS
        return self._shard(shard, "seen"), self._shard(shard, "born")

    def _shard(self, shard: int, which: str) -> str:
        return f"{self.prefix}:{{sessions.{shard}}}:{which}"

    def _all_index_keys(self, which: str) -> list[str]:
        if not self.cluster:
            return [self.seen_key if which == "seen" else self.born_key]
        return [self._shard(shard, which) for shard in range(CLUSTER_INDEX_SHARDS)]

    def _ttl_ms(self, record: SessionRecord, now: float) -> int:
        left = min(self.idle_timeout, record.created_at + self.max_lifetime - now)
        return milliseconds(max(left, 0.0) + self.expiry_slack)

    async def create(self, record: SessionRecord) -> None:
        if not valid_session_id(record.id):
            raise ValueError("session ids must be visible ASCII without braces, at most 200 characters")
        seen, born = self.index_keys(record.id)
        with redis_unavailable("create"):
            created = await self._create(
                keys=[self.key(record.id)] if self.cluster else [self.key(record.id), seen, born],
                args=[
                    _encode_record(record),
                    repr(record.last_seen),
                    repr(record.created_at),
                    record.id,
                    self._ttl_ms(record, record.last_seen),
                ],
            )
            if created and self.cluster:  # (a worker dying in between leaves a record the key expiry ends)
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.zadd(seen, {record.id: record.last_seen})
                    pipe.zadd(born, {record.id: record.created_at})
                    await pipe.execute()
        if not created:
            raise ValueError("duplicate session id")

    async def get(self, session_id: str) -> SessionRecord | None:
        if not valid_session_id(session_id):
            return None
        with redis_unavailable("get"):
            values: Any = await self.redis.hmget(self.key(session_id), ["d", "s", "v"])
        data, last_seen, version = values
        if data is None:
            return None
        return _decode_record(data, last_seen, version)

    async def save(self, record: SessionRecord) -> None:
        if not valid_session_id(record.id):
            return
        with redis_unavailable("save"):
            version = await self._save(
                keys=[self.key(record.id)],
                args=[_encode_record(record), record.version, self.changes_channel, record.id],
            )
        if version == -1:
            raise StaleRecord(f"session {record.id[:8]}: another worker wrote its record since this copy was read")
        if version > 0:
            record.version = int(version)

    async def touch(self, record: SessionRecord, now: float) -> None:
        record.last_seen = now
        if not valid_session_id(record.id):
            return
        seen = self.index_keys(record.id)[0]
        keys = [self.key(record.id)] if self.cluster else [self.key(record.id), seen]
        args: list[str | int] = [repr(now), record.id, self._ttl_ms(record, now)]
        if self.writes is not None:
            self.writes.script(self._touch, keys, args)
            if self.cluster:  # (of a session deleted meanwhile: a stale entry, which ``expired`` returns)
                self.writes.command("ZADD", seen, "XX", repr(now), record.id)
            return
        with redis_unavailable("touch"):
            await self._touch(keys=keys, args=args)
            if self.cluster:
                await self.redis.zadd(seen, {record.id: now}, xx=True)

    async def delete(self, session_id: str) -> bool:
        if not valid_session_id(session_id):
            return False
        seen, born = self.index_keys(session_id)
        with redis_unavailable("delete"):
            if not self.cluster:
                gone = await self._delete(
                    keys=[self.key(session_id), seen, born], args=[session_id, self.changes_channel]
                )
                return bool(gone)
            gone = await self._delete(keys=[self.key(session_id)], args=[session_id, self.changes_channel])
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zrem(seen, session_id)
                pipe.zrem(born, session_id)
                await pipe.execute()
        return bool(gone)

    async def count(self) -> int:
        """Sessions in the index: the live ones, plus any whose key Redis expired before the app
        reaped them (``expired`` returns those, and ``delete`` clears them)."""
        keys = self._all_index_keys("seen")
        with redis_unavailable("count"):
            if len(keys) == 1:
                return int(await self.redis.zcard(keys[0]))
            async with self.redis.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.zcard(key)
                return sum(int(size) for size in await pipe.execute())

    def changes(self) -> RecordWatch:
        """A subscription to the sessions any worker saves or deletes (``start`` it)."""
        return RecordWatch(self.redis, self.changes_channel)

    async def present(self, session_ids: Collection[str]) -> set[str]:
        """One pipeline of ``EXISTS`` for all of them (a sweep asks about every copy it serves)."""
        ids = [session_id for session_id in session_ids if valid_session_id(session_id)]
        if not ids:
            return set()
        with redis_unavailable("present"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for session_id in ids:
                    pipe.exists(self.key(session_id))
                found = await pipe.execute()
        return {session_id for session_id, exists in zip(ids, found, strict=True) if exists}

    async def expired(self, now: float, idle_timeout: float, max_lifetime: float) -> list[str]:
        with redis_unavailable("expired"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for key in self._all_index_keys("seen"):
                    pipe.zrangebyscore(key, "-inf", repr(now - idle_timeout))
                for key in self._all_index_keys("born"):
                    pipe.zrangebyscore(key, "-inf", repr(now - max_lifetime))
                found = await pipe.execute()
        ids = dict.fromkeys(member.decode() for members in found for member in members)
        return list(ids)


class RecordWatch:
    """The ``RecordFeed`` of a ``RedisSessionStore``: a pub/sub subscription, read by a task of its own.

    Each announcement is handed to ``on_change`` as the task reads it. A broken
    subscription (Redis gone, the connection lost) is ``on_change(None, None)`` and
    ``trusted`` False until the task has subscribed again and Redis confirmed it;
    so is a reconnection redis-py made by itself (it subscribes again without
    saying so: what was announced in between is lost).
    """

    __slots__ = (  # (redis-py holds connect callbacks weakly: hence __weakref__)
        "__weakref__",
        "_on_change",
        "_pubsubs",
        "_reader",
        "_subscribed",
        "announced",
        "channel",
        "redis",
    )

    def __init__(self, redis: Redis, channel: str) -> None:
        self.redis = redis
        self.channel = channel
        self.announced = 0
        # One subscription; on a cluster one on each primary. A cluster hands a PUBLISH to the
        # subscribers of the node that ran it before it answers, and to those of the other nodes
        # later, over its bus: only a subscription on the record's own node hears a change before
        # the writer's next request can reach this worker. (So each change is heard once per
        # primary: ``on_change`` is idempotent.)
        self._pubsubs: list[Any] = []  # (redis-py's PubSub is untyped)
        self._subscribed = False
        self._reader: asyncio.Task[None] | None = None
        self._on_change: Callable[[str | None, int | None], None] = lambda session_id, version: None

    @property
    def trusted(self) -> bool:
        if not self._subscribed or not self._pubsubs:
            return False
        for pubsub in self._pubsubs:
            connection = pubsub.connection
            if connection is None or not connection.is_connected:
                return False
        return True

    async def start(self, on_change: Callable[[str | None, int | None], None]) -> None:
        if self._reader is not None:
            return
        self._on_change = on_change
        await self._subscribe()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _subscribe(self) -> None:
        pubsubs: list[Any] = []
        with redis_unavailable("subscribe to record changes"):
            try:
                if redis_cluster.is_cluster(self.redis):
                    cluster: Any = self.redis
                    await cluster.initialize()
                    pubsubs = [cluster.pubsub(node=node) for node in cluster.get_primaries()]
                else:
                    pubsubs = [self.redis.pubsub()]
                async with asyncio.timeout(5.0):
                    for pubsub in pubsubs:
                        await pubsub.subscribe(self.channel)
                        while True:
                            message = await pubsub.get_message(timeout=1.0)
                            if message is not None and message.get("type") == "subscribe":
                                break
                        pubsub.connection.register_connect_callback(self._reconnected)
            except TimeoutError:
                await self._close_all(pubsubs)
                raise StoreUnavailable("Redis did not confirm the record-change subscription") from None
            except BaseException:
                await self._close_all(pubsubs)
                raise
        self._pubsubs, self._subscribed = pubsubs, True
        self._missed()  # copies read before the subscription was confirmed are not trusted

    async def _reconnected(self, connection: Any) -> None:
        self._missed()

    def _missed(self) -> None:
        self.announced += 1
        self._on_change(None, None)

    async def _read(self) -> None:
        backoff = 0.05
        while True:
            try:
                if not self._pubsubs:
                    await self._subscribe()
                    backoff = 0.05
                if len(self._pubsubs) == 1:
                    await self._read_from(self._pubsubs[0])
                else:
                    async with asyncio.TaskGroup() as group:  # (ends when one of them breaks)
                        for pubsub in self._pubsubs:
                            group.create_task(self._read_from(pubsub))
            except* (StoreUnavailable, redis_errors.RedisError) as errors:
                self._subscribed = False
                self._missed()
                await self._drop()
                if redis_cluster.is_cluster(self.redis):
                    # (a primary lost: subscribe on the primaries of the layout read again, not the
                    # one held, which a quiet worker's commands might never have refreshed)
                    cast(Any, self.redis)._request_refresh()
                logger.warning("the record-change subscription broke (copies are read again): %s", errors.exceptions[0])
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _read_from(self, pubsub: Any) -> None:
        while True:
            with redis_unavailable("read record changes"):
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            if message is not None and message.get("type") == "message":
                session_id, _, version = message["data"].decode().partition(" ")
                self.announced += 1
                self._on_change(session_id, int(version) if version.isdigit() else None)

    async def _drop(self) -> None:
        pubsubs, self._pubsubs = self._pubsubs, []
        await self._close_all(pubsubs)

    @staticmethod
    async def _close_all(pubsubs: list[Any]) -> None:
        for pubsub in pubsubs:
            with contextlib.suppress(redis_errors.RedisError, OSError):
                await pubsub.aclose()

    async def aclose(self) -> None:
        reader, self._reader = self._reader, None
        self._subscribed = False
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        await self._drop()


# --- writes nobody waits for ------------------------------------------------------------------


_BATCH_TIMEOUT: Final = 5.0  # seconds for the replies of one batch of writes (redis-py's socket timeout)


Command = tuple[Any, ...]
"""One Redis command as ``WriteBehind`` queues it: ``("HSET", key, field, value)``."""


class _Batch:
    __slots__ = ("commands", "waiters")

    def __init__(self) -> None:
        # A command, or a function that makes its commands when the batch leaves (``later``).
        self.commands: list[Command | Callable[[], list[Command]]] = []
        # One future per ``flushed()`` waiting for this batch: a waiter cancelled leaves the others be.
        self.waiters: list[asyncio.Future[None]] = []

    def landed(self, error: StoreUnavailable | None) -> None:
        """Wake whoever waits for this batch (with ``error`` when it was lost)."""
        for waiter in self.waiters:
            if not waiter.done():
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)

    def take(self) -> list[Command]:
        """The commands to send, the ``later`` ones made now."""
        commands: list[Command] = []
        for command in self.commands:
            if isinstance(command, tuple):
                commands.append(command)
            else:
                commands += command()
        return commands


class WriteBehind:
    """Writes to Redis in the order they were queued, sent by one task: everything queued while
    a batch is on the wire goes out as the next batch, in one pipeline (one round trip).

    A caller queues a write (``command``, ``script``) and goes on; ``flushed()`` waits until
    everything queued before it is in Redis. So the round trip of a write is paid once per
    batch, shared by the requests of the moment, instead of once per write: the event log's
    writes on a request's stream go this way (``RedisEventLog.log``). A batch that fails
    (Redis unreachable) is lost: its waiters get ``StoreUnavailable``, and it is logged.
    """

    __slots__ = ("_flusher", "_queued", "_sending", "_sources", "cluster", "redis")

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.cluster = redis_cluster.is_cluster(redis)
        self._queued: _Batch | None = None  # filling up: goes out next
        self._sending: _Batch | None = None  # on the wire
        self._flusher: asyncio.Task[None] | None = None
        self._sources: dict[str, str] = {}  # script sha -> source (to load it again after a Redis restart)

    def command(self, *args: Any) -> None:
        """Queue one command (``"HSET", key, field, value``)."""
        self._queue(args)

    def script(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> None:
        """Queue a call of a script ``Redis.register_script`` made (by its SHA)."""
        for command in self.calling(script, keys, args):
            self._queue(command)

    def later(self, make: Callable[[], list[Command]]) -> None:
        """Queue commands ``make`` returns when their batch leaves, in this place of the order.

        What a caller adds to a write while it waits here goes out as one command instead
        of several: the event log gathers a stream's events and its end this way."""
        self._queue(make)

    def calling(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> list[Command]:
        """The commands that call ``script`` by its SHA (loaded first the first time)."""
        call = ("EVALSHA", script.sha, len(keys), *keys, *args)
        if script.sha in self._sources:
            return [call]
        self._sources[script.sha] = script.script  # loaded first, in order: a NOSCRIPT retry would be out of order
        return [("SCRIPT", "LOAD", script.script), call]

    def _queue(self, command: Command | Callable[[], list[Command]]) -> None:
        batch = self._queued
        if batch is None:
            batch = self._queued = _Batch()
        batch.commands.append(command)
        if self._flusher is None:
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    @property
    def idle(self) -> bool:
        """True when nothing is queued or on the wire."""
        return self._queued is None and self._sending is None

    async def flushed(self) -> None:
        """Wait until what was queued so far is in Redis (``StoreUnavailable`` if it failed)."""
        batch = self._queued or self._sending
        if batch is None:
            return
        waiter = asyncio.get_running_loop().create_future()
        batch.waiters.append(waiter)
        await waiter

    async def _flush(self) -> None:
        try:
            while (batch := self._queued) is not None:
                self._queued, self._sending = None, batch
                try:
                    await self._send(batch.take())
                except StoreUnavailable as error:
                    logger.warning("%d writes to Redis were lost: %s", len(batch.commands), error)
                    batch.landed(error)
                else:
                    batch.landed(None)
                finally:
                    self._sending = None
        finally:
            self._flusher = None

    async def _send(self, commands: list[Command]) -> None:
        results = await self._round_trip(commands)
        unknown = [args for args, result in zip(commands, results, strict=True) if isinstance(result, NoScriptError)]
        for args, result in zip(commands, results, strict=True):
            if isinstance(result, redis_errors.ResponseError) and not isinstance(result, NoScriptError):
                logger.warning("Redis refused a write (%s): %s", args[0], result)
        if unknown:  # (Redis restarted and forgot the scripts: load them, then run those writes again, late)
            with redis_unavailable("write"):
                for sha in {args[1] for args in unknown}:
                    await self.redis.script_load(self._sources[sha])
            await self._round_trip(unknown)

    async def _round_trip(self, commands: list[Command]) -> list[Any]:
        """Send ``commands`` packed at once on one pooled connection and read their replies (an
        error reply is returned, not raised). Not redis-py's pipeline: hiredis packs a command in
        C, and the replies are read under one deadline, without a pipeline's bookkeeping nor a
        timeout per reply: that is most of the CPU a write costs, and a streamed call makes
        eleven (bench/README.md, "Sessions in Redis"). On a cluster, one such trip per node
        (``redis_cluster.round_trip``)."""
        if self.cluster:
            with redis_unavailable("write"):
                return await redis_cluster.round_trip(self.redis, commands, _pack, _BATCH_TIMEOUT)
        pool: Any = self.redis.connection_pool  # (its get_connection is untyped)
        with redis_unavailable("write"):
            connection = await pool.get_connection()
            try:
                # One deadline for the whole exchange, not redis-py's (its socket timeout) per reply.
                async with asyncio.timeout(_BATCH_TIMEOUT):
                    results = await redis_cluster.exchange(connection, commands, _pack)
            except BaseException:
                await connection.disconnect()
                raise
            finally:
                await pool.release(connection)
        return results

    async def aclose(self) -> None:
        """Write what is queued (at shutdown, before the client closes)."""
        with contextlib.suppress(StoreUnavailable):
            await self.flushed()


# --- event logs ----------------------------------------------------------------------------

# ms since the epoch, by the server's clock (every writer of a session reads the same one).
_NOW: Final = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""

# KEYS: meta, history, backlog. ARGV: stream, message, request id ('' for none), delivered ('1'/'0'),
# backlog limit, replay size, ttl ms. Returns {n, 0} or {n, 1, dropped fields} or {n, 2} (the event
# itself dropped: the backlog holds nothing). On a request's stream n also follows the newest event
# of its history, which ``log`` numbered along the stream. ARGV[8], when given, is n itself.
_APPEND: Final = (
    """
local meta, stream = KEYS[1], ARGV[1]
local n = tonumber(ARGV[8])
if not n then
  n = redis.call('HINCRBY', meta, 'seq', 1)
end
if stream ~= '' and ARGV[8] == '' then
  local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 2)
  for _, entry in ipairs(newest) do
    local fields = entry[2]
    if fields[1] == 'n' then
      local last = tonumber(fields[2])
      if n <= last then
        n = last + 1
        redis.call('HSET', meta, 'seq', n)
      end
      break
    end
  end
end
redis.call('HSET', meta, 's:' .. stream, 1)
redis.call('PEXPIRE', meta, ARGV[7])
"""
    + _NOW
    + """
local ends = redis.call('HGET', meta, 'e:' .. stream)
if ends and tonumber(ends) <= now then
  redis.call('HDEL', meta, 'e:' .. stream)  -- its grace is over: a fresh stream of the same name
  ends = false
end
local fields = {'n', n, 'm', ARGV[2]}
if ARGV[3] ~= '' then fields[5] = 'r'; fields[6] = ARGV[3] end
local result = {n, 0}
local target
if ARGV[4] == '1' then
  if tonumber(ARGV[6]) > 0 then
    target = KEYS[2]
    redis.call('XADD', target, 'MAXLEN', '~', ARGV[6], '*', unpack(fields))
  end
else
  local limit = tonumber(ARGV[5])
  if limit == 0 then
    return {n, 2}
  end
  target = KEYS[3]
  if redis.call('XLEN', target) >= limit then
    local oldest = redis.call('XRANGE', target, '-', '+', 'COUNT', 1)[1]
    redis.call('XDEL', target, oldest[1])
    result = {n, 1, oldest[2]}
  end
  redis.call('XADD', target, '*', unpack(fields))
end
if target then
  if ends then
    if redis.call('PTTL', target) < 0 then redis.call('PEXPIRE', target, math.max(1, tonumber(ends) - now)) end
  else
    redis.call('PEXPIRE', target, ARGV[7])
  end
end
return result
"""
)

# KEYS: meta. ARGV: stream, ttl ms, "<writer> <request id as JSON>". A stream ``log`` will write
# (``open_stream``): it exists, and w:<stream> names its writer until it ends.
_START: Final = """
redis.call('HSET', KEYS[1], 's:' .. ARGV[1], 1, 'w:' .. ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

# KEYS: meta, history, backlog. ARGV: replay size, ttl ms. Moves the backlog into the history.
_TAKE: Final = """
local entries = redis.call('XRANGE', KEYS[3], '-', '+')
if #entries == 0 then return {} end
if tonumber(ARGV[1]) > 0 then
  for _, entry in ipairs(entries) do
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', unpack(entry[2]))
  end
  local ttl = redis.call('PTTL', KEYS[3])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
redis.call('DEL', KEYS[3])
return entries
"""

# KEYS: meta. ARGV: stream, ttl ms.
_MARK: Final = """
local n = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 's:' .. ARGV[1], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n
"""

# The end of a stream, shared by _END and _CLOSE, which set ``meta``, ``stream``, ``keep`` (ms,
# > 0) and ``now`` (ms) first. KEYS: meta, history, backlog, ended (ZSET: ended stream -> end of
# its grace, ms). ARGV[3]: how many ended streams a session keeps, ARGV[4]: the session's key
# base, ARGV[5]: ttl ms. The streams it drops are found in ``ended``: their keys are made here
# from the base (the same hash tag as the declared keys, so the same slot).
_ENDED: Final = """
redis.call('HSET', meta, 'e:' .. stream, now + keep)
redis.call('XADD', KEYS[2], '*', 'x', 1)  -- the end mark: wakes followers, skipped by replays
redis.call('PEXPIRE', KEYS[2], keep)
redis.call('PEXPIRE', KEYS[3], keep)
-- The session's ended streams: those past their grace, and the oldest beyond the bound, go.
local ended, base = KEYS[4], ARGV[4]
local function drop(name)
  if redis.call('HEXISTS', meta, 'e:' .. name) == 0 then return end  -- started again since
  redis.call('HDEL', meta, 's:' .. name, 'e:' .. name, 'w:' .. name)
  redis.call('DEL', base .. ':h:' .. name, base .. ':b:' .. name)
end
redis.call('ZADD', ended, now + keep, stream)
local past = redis.call('ZRANGEBYSCORE', ended, '-inf', now)
if #past > 0 then
  for _, name in ipairs(past) do drop(name) end
  redis.call('ZREMRANGEBYSCORE', ended, '-inf', now)
end
local excess = redis.call('ZCARD', ended) - tonumber(ARGV[3])
if excess > 0 then
  local oldest = redis.call('ZPOPMIN', ended, excess)
  for i = 1, #oldest, 2 do drop(oldest[i]) end
end
redis.call('PEXPIRE', ended, ARGV[5])
return 1
"""

# Sets ``keep`` (ARGV[2], ms); a stream kept for 0 ms is dropped now (returns 1).
_KEEP: Final = """
local keep = tonumber(ARGV[2])
if keep <= 0 then
  redis.call('HDEL', meta, 's:' .. stream)
  redis.call('DEL', KEYS[2], KEYS[3])
  return 1
end
"""

# The end of any stream (``end_stream`` of a stream not logged here: a dead writer's, say).
# KEYS and ARGV[3..5] as in _ENDED; ARGV[1]: stream, ARGV[2]: keep ms (0: drop now).
_END: Final = (
    """
local meta, stream = KEYS[1], ARGV[1]
redis.call('HDEL', meta, 'w:' .. stream)  -- nobody writes it any more
if redis.call('HEXISTS', meta, 's:' .. stream) == 0 then return 0 end
"""
    + _NOW
    + """
local ends = redis.call('HGET', meta, 'e:' .. stream)
if ends then
  if tonumber(ends) > now then return 0 end  -- already ended: its first grace holds
  redis.call('HDEL', meta, 's:' .. stream, 'e:' .. stream)  -- dropped already
  redis.call('DEL', KEYS[2], KEYS[3])
  redis.call('ZREM', KEYS[4], stream)
  return 0
end
"""
    + _KEEP
    + _ENDED
)

# The last events and the end of a stream logged here, in one call: this worker wrote the
# stream since ``open_stream`` and ends it once, so none of _END's checks apply. KEYS and
# ARGV[1..5] as in _END; ARGV[6]: replay size, then the events as number, message pairs.
_CLOSE: Final = (
    """
local meta, stream = KEYS[1], ARGV[1]
for i = 7, #ARGV, 2 do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 'n', ARGV[i], 'm', ARGV[i + 1])
end
redis.call('HDEL', meta, 'w:' .. stream)
"""
    + _KEEP
    + _NOW
    + _ENDED
)


_FOLLOW_BLOCK: Final = 1.0  # seconds, the longest blocking read of ``follow``


def _fields(entry: Sequence[Any]) -> dict[bytes, bytes]:
    return {entry[i]: entry[i + 1] for i in range(0, len(entry) - 1, 2)}


def _event_id(n: int, stream_id: str) -> str:
    return str(n) if stream_id == STANDALONE_STREAM else f"{n}/{stream_id}"


def _event(fields: Mapping[bytes, bytes], stream_id: str) -> StoredEvent:
    request = fields.get(b"r")
    return StoredEvent(
        _event_id(int(fields[b"n"]), stream_id),
        bytes(fields[b"m"]),
        orjson.loads(request) if request is not None else None,
    )


def _parse_event_id(event_id: str) -> tuple[int, str] | None:
    number, _, stream_id = event_id.partition("/")
    if not number.isascii() or not number.isdigit() or len(number) > 19 or not _valid_stream_id(stream_id):
        return None
    return int(number), stream_id


class _Logged:
    """A stream this worker logs: its last number, and the writes waiting in the write-behind
    queue (``events`` as number, message pairs; ``keep``, ms, once it ended) until their batch
    leaves: several events and the end go out as one command."""

    __slots__ = ("events", "keep", "n", "waiting")

    def __init__(self) -> None:
        self.n = 0
        self.waiting = False
        self.events: list[int | bytes] = []
        self.keep: int | None = None


class RedisEventLog(EventLog):
    """Every stream's events in Redis Streams, readable by any worker.

    ``backlog_limit`` and ``replay_size`` are the app's limits (exact, as in
    the memory log: a replay returns at most ``replay_size`` newest events
    although Redis trims approximately). ``ttl`` (seconds, the session's
    maximum lifetime by default) bounds how long the keys of a session nobody
    ``forget``s (a crashed worker) stay; every write refreshes it. At most
    ``ended_streams_kept`` ended streams of a session wait out their grace (the
    oldest goes first, as in the memory log): a long session's log stays bounded.

    ``log`` numbers the events of a request's stream along the stream, here,
    and writes them behind (``writes``, a ``WriteBehind``: several logs may
    share one); every other method first waits for those writes to land. Its
    streams name ``writer_id`` as their writer (``writer``) until they end: the
    worker's id (``RedisBackend`` gives the mesh's), random when not given.
    """

    __slots__ = (
        "_append",
        "_close",
        "_end",
        "_mark",
        "_numbers",
        "_start",
        "_take",
        "backlog_limit",
        "ended_streams_kept",
        "prefix",
        "redis",
        "replay_size",
        "ttl",
        "writer_id",
        "writes",
    )

    def __init__(
        self,
        redis: Redis,
        backlog_limit: int = 256,
        replay_size: int = 256,
        *,
        ttl: float = 43200.0 + 60.0,
        prefix: str = DEFAULT_PREFIX,
        writes: WriteBehind | None = None,
        writer_id: str | None = None,
        ended_streams_kept: int = 64,
    ) -> None:
        check_client(redis)
        self.redis = redis
        self.writes = writes if writes is not None else WriteBehind(redis)
        self.writer_id = writer_id or secrets.token_hex(8)
        self._numbers: dict[str, dict[str, _Logged]] = {}  # session -> stream -> it, for streams logged here
        self.backlog_limit = backlog_limit
        self.replay_size = replay_size
        self.ended_streams_kept = ended_streams_kept
        self.ttl = ttl
        self.prefix = prefix
        self._append = redis.register_script(_APPEND)
        self._start = redis.register_script(_START)
        self._take = redis.register_script(_TAKE)
        self._mark = redis.register_script(_MARK)
        self._end = redis.register_script(_END)
        self._close = redis.register_script(_CLOSE)

    def keys(self, session_id: str, stream_id: str) -> list[str]:
        """The meta, history and backlog keys of a stream."""
        base = self._base(session_id)
        return [f"{base}:ev", f"{base}:h:{stream_id}", f"{base}:b:{stream_id}"]

    def _check(self, session_id: str, stream_id: str) -> None:
        if not valid_session_id(session_id) or not _valid_stream_id(stream_id):
            raise ValueError("session and stream ids must be visible ASCII without braces")

    async def append(
        self, session_id: str, stream_id: str, message: bytes, request_id: RequestId | None, *, delivered: bool
    ) -> tuple[StoredEvent, StoredEvent | None]:
        return await self._append_as(session_id, stream_id, message, request_id, delivered, b"")

    async def end_abandoned(self, session_id: str, stream_id: str, message: bytes, keep_for: float) -> StoredEvent:
        """Numbered ``LAST_NUMBER``: past whatever the dead writer numbered along the stream."""
        if stream_id == STANDALONE_STREAM:
            raise ValueError("the standalone stream has no single writer to outlive")
        event, _ = await self._append_as(session_id, stream_id, message, None, True, LAST_NUMBER)
        await self.end_stream(session_id, stream_id, keep_for)
        return event

    async def _append_as(
        self,
        session_id: str,
        stream_id: str,
        message: bytes,
        request_id: RequestId | None,
        delivered: bool,
        number: bytes | int,
    ) -> tuple[StoredEvent, StoredEvent | None]:
        self._check(session_id, stream_id)
        await self._landed()
        with redis_unavailable("append"):
            result = await self._append(
                keys=self.keys(session_id, stream_id),
                args=[
                    stream_id,
                    message,
                    orjson.dumps(request_id) if request_id is not None else b"",
                    b"1" if delivered else b"0",
                    self.backlog_limit,
                    self.replay_size,
                    milliseconds(self.ttl),
                    number,
                ],
            )
        event = StoredEvent(_event_id(int(result[0]), stream_id), message, request_id)
        kind = int(result[1])
        if kind == 0:
            return event, None
        if kind == 2:
            return event, event
        return event, _event(_fields(result[2]), stream_id)

    async def open_stream(self, session_id: str, stream_id: str, request_id: RequestId | None) -> None:
        """Name this worker as the stream's writer, in Redis once this returns."""
        self._check(session_id, stream_id)
        if stream_id == STANDALONE_STREAM:
            raise ValueError("the standalone stream has no single writer")
        streams = self._numbers.get(session_id)
        if streams is None:
            streams = self._numbers[session_id] = {}
        if stream_id not in streams:
            streams[stream_id] = _Logged()
        writer = f"{self.writer_id} {orjson.dumps(request_id).decode()}"
        self.writes.script(
            self._start, self.keys(session_id, stream_id)[:1], [stream_id, milliseconds(self.ttl), writer]
        )
        await self._landed()

    async def log(self, session_id: str, stream_id: str, message: bytes) -> StoredEvent:
        """Number the event here and write it behind (see the class docstring)."""
        self._check(session_id, stream_id)
        if stream_id == STANDALONE_STREAM:  # (written by every worker: counted in Redis)
            return await super().log(session_id, stream_id, message)
        streams = self._numbers.get(session_id)
        if streams is None or stream_id not in streams:
            await self.open_stream(session_id, stream_id, None)
            streams = self._numbers[session_id]
        logged = streams[stream_id]
        logged.n += 1
        if self.replay_size > 0:
            logged.events += (logged.n, message)
            self._wait(session_id, stream_id, logged)
        return StoredEvent(_event_id(logged.n, stream_id), message)

    def _wait(self, session_id: str, stream_id: str, logged: _Logged) -> None:
        """Have ``logged``'s waiting writes leave with the next batch (once: they gather until then)."""
        if not logged.waiting:
            logged.waiting = True
            self.writes.later(lambda: self._written(session_id, stream_id, logged))

    def _written(self, session_id: str, stream_id: str, logged: _Logged) -> list[Command]:
        """The commands of ``logged``'s waiting writes, now that their batch leaves.

        Plain XADDs while the stream goes on (this worker alone writes it, and no other stream
        had its name, so neither its count nor an ended stream of that name is to be looked
        up); its last events and its end in one _CLOSE."""
        events, keep = logged.events, logged.keep
        logged.events, logged.waiting = [], False
        keys = self.keys(session_id, stream_id)
        if keep is not None:
            return self.writes.calling(
                self._close,
                [*keys, f"{self._base(session_id)}:ended"],
                [*self._end_args(session_id, stream_id, keep), *events],
            )
        history = keys[1]
        commands: list[Command] = [
            ("XADD", history, "MAXLEN", "~", self.replay_size, "*", "n", events[i], "m", events[i + 1])
            for i in range(0, len(events), 2)
        ]
        if events[0] == 1:
            commands.append(("PEXPIRE", history, milliseconds(self.ttl)))
        return commands

    async def writer(self, session_id: str, stream_id: str) -> StreamWriter | None:
        if not valid_session_id(session_id) or not _valid_stream_id(stream_id) or stream_id == STANDALONE_STREAM:
            return None
        await self._landed()
        with redis_unavailable("writer"):
            value: Any = await self.redis.hget(self.keys(session_id, stream_id)[0], f"w:{stream_id}")
        if value is None:
            return None
        worker_id, _, request = bytes(value).decode().partition(" ")
        try:
            request_id = orjson.loads(request)
        except orjson.JSONDecodeError:
            request_id = None
        return StreamWriter(worker_id, request_id if isinstance(request_id, str | int) else None)

    async def _landed(self) -> None:
        """This log's writes behind are in Redis (what a read or a change reads, it sees)."""
        if not self.writes.idle:
            with redis_unavailable("write"):
                await self.writes.flushed()

    async def take_undelivered(self, session_id: str, stream_id: str) -> list[StoredEvent]:
        self._check(session_id, stream_id)
        await self._landed()
        with redis_unavailable("take_undelivered"):
            entries = await self._take(
                keys=self.keys(session_id, stream_id), args=[self.replay_size, milliseconds(self.ttl)]
            )
        return [_event(_fields(entry[1]), stream_id) for entry in entries]

    async def replay_after(self, session_id: str, event_id: str) -> list[StoredEvent]:
        parsed = _parse_event_id(event_id)
        if parsed is None or not valid_session_id(session_id) or self.replay_size <= 0:
            return []
        after, stream_id = parsed
        await self._landed()
        with redis_unavailable("replay_after"):
            entries = await self._newest(session_id, stream_id)
        return self._after(entries, after, stream_id)

    async def _newest(self, session_id: str, stream_id: str) -> Any:
        # One more than the replay size: the end mark may be among them.
        return await self.redis.xrevrange(self.keys(session_id, stream_id)[1], count=self.replay_size + 1)

    def _after(self, entries: Any, after: int, stream_id: str) -> list[StoredEvent]:
        events = [_event(fields, stream_id) for _, fields in reversed(entries) if b"n" in fields]
        return [event for event in events[-self.replay_size :] if int(event.event_id.partition("/")[0]) > after]

    async def follow(self, session_id: str, event_id: str, timeout: float) -> tuple[list[StoredEvent], bool]:
        parsed = _parse_event_id(event_id)
        if parsed is None or not valid_session_id(session_id):
            return [], True
        after, stream_id = parsed
        key = self.keys(session_id, stream_id)[1]
        await self._landed()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            with redis_unavailable("follow"):
                entries = await self._newest(session_id, stream_id) if self.replay_size > 0 else []
            events = self._after(entries, after, stream_id)
            ended = any(b"n" not in fields for _, fields in entries)
            remaining = deadline - loop.time()
            if events or ended or remaining <= 0:
                return events, ended
            newest = entries[0][0] if entries else b"0-0"
            # At most a second per blocking read: redis-py (8) gives up reading after its socket
            # timeout (5 s by default), which a longer BLOCK would outlast on a quiet stream.
            block = milliseconds(min(remaining, _FOLLOW_BLOCK))
            with redis_unavailable("follow"):
                woken = await self.redis.xread({key: newest}, count=1, block=block)
            if not woken and loop.time() >= deadline:
                return [], False

    async def mark(self, session_id: str, stream_id: str) -> str:
        self._check(session_id, stream_id)
        await self._landed()
        with redis_unavailable("mark"):
            n = await self._mark(keys=self.keys(session_id, stream_id)[:1], args=[stream_id, milliseconds(self.ttl)])
        return _event_id(int(n), stream_id)

    async def end_stream(self, session_id: str, stream_id: str, keep_for: float) -> None:
        if not valid_session_id(session_id) or not _valid_stream_id(stream_id):
            return
        keep = 0 if keep_for <= 0 else milliseconds(keep_for)
        streams = self._numbers.get(session_id)
        logged = streams.pop(stream_id, None) if streams is not None else None
        if logged is not None:
            if not streams:
                del self._numbers[session_id]
            logged.keep = keep  # logged here: its end goes behind its events, in order (with the last of them)
            self._wait(session_id, stream_id, logged)
            return
        await self._landed()
        with redis_unavailable("end_stream"):
            await self._end(
                keys=[*self.keys(session_id, stream_id), f"{self._base(session_id)}:ended"],
                args=self._end_args(session_id, stream_id, keep),
            )

    def _base(self, session_id: str) -> str:
        return f"{self.prefix}:{{{session_id}}}"

    def _end_args(self, session_id: str, stream_id: str, keep: int) -> list[Any]:
        """ARGV[1..6] of _END and _CLOSE."""
        base = self._base(session_id)
        return [stream_id, keep, self.ended_streams_kept, base, milliseconds(self.ttl), self.replay_size]

    async def forget(self, session_id: str) -> list[StoredEvent]:
        if not valid_session_id(session_id):
            return []
        meta = self.keys(session_id, STANDALONE_STREAM)[0]
        self._numbers.pop(session_id, None)
        await self._landed()
        with redis_unavailable("forget"):
            async with self.redis.pipeline(transaction=True) as pipe:
                for _ in range(16):  # bounded: each retry means another writer changed the session meanwhile
                    try:
                        await pipe.watch(meta)
                        names: Any = await pipe.hkeys(meta)
                        streams = [name[2:].decode() for name in names if name.startswith(b"s:")]
                        pipe.multi()  # type: ignore[no-untyped-call, unused-ignore]  # annotated in some redis-py releases only
                        for stream_id in streams:
                            pipe.xrange(self.keys(session_id, stream_id)[2])
                        doomed = [key for stream_id in streams for key in self.keys(session_id, stream_id)[1:]]
                        pipe.delete(meta, f"{self._base(session_id)}:ended", *doomed)
                        results = await pipe.execute()
                        break
                    except redis_errors.WatchError:
                        continue
                else:
                    raise StoreUnavailable("Redis: the session's events kept changing while being forgotten")
        return [
            _event(fields, stream_id)
            for stream_id, entries in zip(streams, results, strict=False)
            for _, fields in entries
        ]

    async def backlog_size(self, session_id: str, stream_id: str = STANDALONE_STREAM) -> int:
        """How many events wait for a stream (for tests and monitoring)."""
        if not valid_session_id(session_id) or not _valid_stream_id(stream_id):
            return 0
        await self._landed()
        with redis_unavailable("backlog_size"):
            return int(await self.redis.xlen(self.keys(session_id, stream_id)[2]))


# --- event bus -------------------------------------------------------------------------------


class RedisEventBus(EventBus):
    """Server events over Redis pub/sub: ``publish`` reaches the subscribers of every worker.

    One pub/sub connection per bus (per worker) feeds this worker's subscribers
    (a ``MemoryEventBus``). ``await start()`` at startup opens it, so that
    ``subscribe()`` (synchronous, as the interface has it) misses nothing
    published after it; a ``subscribe()`` before ``start()`` starts it in the
    background and may miss what is published meanwhile. Pub/sub is at most
    once: while the connection is down (it reconnects by itself, backing off up
    to ``max_backoff`` seconds) events are lost, which ``subscriptions/listen``
    tolerates (its streams are not resumable; clients re-fetch).
    """

    __slots__ = ("_local", "_reader", "_ready", "channel", "max_backoff", "redis")

    def __init__(
        self,
        redis: Redis,
        *,
        channel: str = f"{DEFAULT_PREFIX}:events",
        queue_size: int = 1000,
        max_backoff: float = 5.0,
    ) -> None:
        check_client(redis)
        self.redis = redis
        self.channel = channel
        self.max_backoff = max_backoff
        self._local = MemoryEventBus(queue_size)
        self._reader: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None

    async def publish(self, event: dict[str, Any]) -> None:
        data = orjson.dumps(event)
        with redis_unavailable("publish"):
            await self.redis.publish(self.channel, data)

    def subscribe(self) -> AsyncIterator[dict[str, Any]]:
        if self._reader is None:
            self._begin()
        return self._local.subscribe()

    @property
    def subscribers(self) -> int:
        """How many subscriptions are open in this worker."""
        return self._local.subscribers

    def _begin(self) -> asyncio.Event:
        if self._reader is None or self._ready is None:
            self._ready = asyncio.Event()
            self._reader = asyncio.get_running_loop().create_task(self._read(self._ready))
        return self._ready

    async def start(self, timeout: float = 5.0) -> None:
        """Open the pub/sub connection and wait until Redis confirmed the subscription;
        ``StoreUnavailable`` when it cannot within ``timeout`` (the bus keeps trying)."""
        ready = self._begin()
        try:
            await asyncio.wait_for(ready.wait(), timeout)
        except TimeoutError:
            raise StoreUnavailable(f"Redis did not confirm the event bus subscription within {timeout} s") from None

    async def _read(self, ready: asyncio.Event) -> None:
        backoff = 0.05
        while True:
            pubsub = self.redis.pubsub()
            try:
                with redis_unavailable("event bus subscribe"):
                    await pubsub.subscribe(self.channel)
                while True:
                    with redis_unavailable("event bus"):
                        message = await pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    kind = message.get("type")
                    if kind == "subscribe":
                        ready.set()
                        backoff = 0.05
                    elif kind == "message":
                        await self._deliver(message["data"])
            except StoreUnavailable as error:
                if ready.is_set():
                    logger.warning(
                        "the Redis event bus lost its connection (%s); events are lost until it is back", error
                    )
                ready.clear()
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # annotated from redis-py 8.2
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    async def _deliver(self, data: bytes) -> None:
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if isinstance(event, dict):
            await self._local.publish(event)

    async def close(self) -> None:
        """Stop receiving (subscriptions stay open but hear nothing more)."""
        reader, self._reader, self._ready = self._reader, None, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
