"""Task records in Redis (``RedisTaskStore``): a task started on one worker is read, answered and
cancelled on any other.

Keys (prefix ``mcp``), all in the task's hash tag, all expiring at the task's end of ttl:

``mcp:task:{<id>}``      HASH   the record's scalar fields (``s`` status, ``m`` status message,
                                ``v`` version, ``x`` expiry in ms, ``c`` cancel requested, ``n``
                                questions asked, ``o`` outcome JSON, ``r`` the rest as JSON)
``mcp:task:{<id>}:in``   HASH   question key -> the question (JSON): the inputRequests outstanding
``mcp:task:{<id>}:ans``  HASH   question key -> the answer (JSON), until the handler takes it
``mcp:tasks:owner:{<wid>}`` SET the unfinished tasks worker ``<wid>`` runs (``fail_owned_by``)
``mcp:tasks:session:{<sid>}`` ZSET the tasks a 2025-11-25 session made, scored by their expiry
                                (ms), expiring with the last of them (``of_session``)
``mcp:tasks:unfinished:{all}`` ZSET the unfinished tasks of the fleet (``max_tasks``), scored by
                                their deadline (ms): an entry past it no longer counts
``mcp:tasks:unfinished:{c:<h>}`` ZSET the same for one client (``max_tasks_per_client``; ``<h>`` a
                                hash of the client's key), both expiring with their last deadline

The limits (``admit``, engine/tasks.py rule 8): one script drops the entries past their deadline,
counts, and adds the task to each set when every count is under its limit; on a single Redis the
two sets go to one script (one atomic step), on a Redis Cluster (two hash slots) the fleet's first,
then the client's, whose refusal takes the task out of the fleet's again (a ``ZREM``). The fleet's
set is one slot every admission of the fleet touches (a task's start, renewal and end: three
commands on it per task, besides its record's).

Every change is one Lua script that also bumps ``v`` and announces ``"<id> <version>"`` on
``mcp:tasks:changed``; ``wait`` listens there (one subscription per store, ``RecordWatch``).
Scripts move JSON strings between hashes and never decode them.

Durable task records (``durable_replicas`` N > 0, off by default): a task's creation and its end
(``create``, ``finish``) are followed, on the same connection, by ``WAIT N durable_ms``, so they
return once N replicas of the task's primary have the write, or once ``durable_ms`` passed (then
the write stands on the primary alone, as without the option: it is logged and counted in
``unreplicated``, never refused, since the task exists and runs either way). A failover after a
write returned lost it only when no replica had it by then.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import math
from collections.abc import Mapping
from typing import Any, Final

import orjson
from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from ..engine.records import TERMINAL_STATUSES, TaskRecord
from ..engine.stores import StoreUnavailable, TaskStore
from .redis import DEFAULT_PREFIX, RecordWatch, check_client, redis_unavailable, valid_session_id
from .redis_cluster import is_cluster, one_connection

__all__ = ["RedisTaskStore"]

logger = logging.getLogger("mcp_sse_server")

# The fields a script changes, kept out of ``r`` (the rest of the record, written once).
_SCALARS: Final = frozenset(
    {
        "status",
        "status_message",
        "version",
        "updated_at",
        "cancel_requested",
        "asked",
        "outcome",
        "input_requests",
        "answers",
    }
)
_REST: Final = tuple(field.name for field in dataclasses.fields(TaskRecord) if field.name not in _SCALARS)

# Shared by every script that changes a record (KEYS[1]): its status, read first, and how a change
# is stamped and announced.
_CHANGED: Final = """
local function changed(now)
  local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
  redis.call('HSET', KEYS[1], 'u', now)
  redis.call('PUBLISH', ARGV[1], ARGV[2] .. ' ' .. v)
  return v
end
local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
local status = redis.call('HGET', KEYS[1], 's')  -- (false: the task is gone)
"""

# KEYS: record. ARGV: expiry (ms since the epoch), then field, value, ... 0 for an id taken.
_CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
return 1
"""

# KEYS: record, questions. ARGV: channel, id, now, question (JSON). Returns the key, or false.
_ASK: Final = (
    _CHANGED
    + """
if not status or terminal(status) then return false end
local key = 'i' .. redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[2], key, ARGV[4])
redis.call('PEXPIREAT', KEYS[2], redis.call('HGET', KEYS[1], 'x'))
redis.call('HSET', KEYS[1], 's', 'input_required')
changed(ARGV[3])
return key
"""
)

# KEYS: record, questions, answers. ARGV: channel, id, now, key, answer, key, answer, ...
# Returns 1 when any answer was taken, 0 when none was outstanding, -1 when the task is gone.
_ANSWER: Final = (
    _CHANGED
    + """
if not status then return -1 end
if terminal(status) then return 0 end
local taken = 0
for i = 4, #ARGV, 2 do
  if redis.call('HDEL', KEYS[2], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
    taken = taken + 1
  end
end
if taken == 0 then return 0 end
redis.call('PEXPIREAT', KEYS[3], redis.call('HGET', KEYS[1], 'x'))
if redis.call('HLEN', KEYS[2]) == 0 and status == 'input_required' then
  redis.call('HSET', KEYS[1], 's', 'working')
end
changed(ARGV[3])
return 1
"""
)

# KEYS: answers. ARGV: key. The answer, removed (false: none).
_TAKE: Final = """
local answer = redis.call('HGET', KEYS[1], ARGV[1])
if answer then redis.call('HDEL', KEYS[1], ARGV[1]) end
return answer
"""

# KEYS: record. ARGV: channel, id, now. 1 when noted now, 0 when gone, terminal or noted before.
_CANCEL: Final = (
    _CHANGED
    + """
if not status or terminal(status) or redis.call('HGET', KEYS[1], 'c') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'c', '1')
changed(ARGV[3])
return 1
"""
)

# KEYS: record, questions, answers. The three hashes (flat field, value lists): a record in one
# call, read at one moment (not a MULTI/EXEC: a pipeline costs redis-py several times the CPU).
_READ: Final = """
return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
"""

# KEYS: record, questions. ARGV: channel, id, now, status, outcome JSON ('' none), message, '1' when
# there is a message. Returns the owner ('' for none) when made terminal now, false when gone or
# terminal already.
_FINISH: Final = (
    _CHANGED
    + """
if not status or terminal(status) then return false end
redis.call('HSET', KEYS[1], 's', ARGV[4], 'o', ARGV[5])
if ARGV[7] == '1' then redis.call('HSET', KEYS[1], 'm', ARGV[6]) else redis.call('HDEL', KEYS[1], 'm') end
redis.call('DEL', KEYS[2])
changed(ARGV[3])
return redis.call('HGET', KEYS[1], 'w') or ''
"""
)


# KEYS: the sets of unfinished tasks to count in (one slot each, or all in one Redis). ARGV: now
# (ms), the deadline (ms), the task's id, then each set's limit. False when added to every set,
# else {the index of the set whose limit is reached, how many count in it}.
_ADMIT: Final = """
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', ARGV[1])
  local n = redis.call('ZCARD', KEYS[i])
  if n >= tonumber(ARGV[3 + i]) then return {i, n} end
end
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[3])
  redis.call('PEXPIREAT', KEYS[i], ARGV[2], 'NX')
  redis.call('PEXPIREAT', KEYS[i], ARGV[2], 'GT')
end
return false
"""


def _pairs(flat: list[bytes]) -> dict[bytes, bytes]:
    """HGETALL's reply inside a script (field, value, field, value, ...) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisTaskStore(TaskStore):
    """Task records in Redis, shared by every worker on the same Redis (keys and scripts above).

    A task's keys expire at its end of ttl (``created_at + ttl_ms``), so ``sweep`` has nothing
    to do; a task without a ttl expires ``max_ttl`` seconds after its creation.
    """

    shared = True
    counts_fleet = True

    __slots__ = (
        "_admit",
        "_answer",
        "_ask",
        "_cancel",
        "_create",
        "_finish",
        "_read",
        "_take",
        "_waiters",
        "_watch",
        "channel",
        "durable_ms",
        "durable_replicas",
        "max_ttl",
        "prefix",
        "redis",
        "unreplicated",
    )

    def __init__(
        self,
        redis: Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_ttl: float = 7 * 86400.0,
        durable_replicas: int = 0,
        durable_ms: int = 100,
    ) -> None:
        """``durable_replicas``: replicas a task's creation and end wait for (``WAIT``), at most
        ``durable_ms`` milliseconds (the module's rules); 0, the default: no waiting."""
        check_client(redis)
        if durable_replicas < 0 or durable_ms < 1:
            raise ValueError("durable_replicas must be 0 or more and durable_ms positive")
        self.redis = redis
        self.prefix = prefix
        self.max_ttl = max_ttl
        self.durable_replicas = durable_replicas
        self.durable_ms = durable_ms
        self.unreplicated = 0  # durable writes no replica took within durable_ms
        self.channel = f"{prefix}:tasks:changed"
        self._create = redis.register_script(_CREATE)
        self._ask = redis.register_script(_ASK)
        self._answer = redis.register_script(_ANSWER)
        self._take = redis.register_script(_TAKE)
        self._cancel = redis.register_script(_CANCEL)
        self._finish = redis.register_script(_FINISH)
        self._read = redis.register_script(_READ)
        self._admit = redis.register_script(_ADMIT)
        self._watch: RecordWatch | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}  # tasks someone waits on, one event per wait

    def keys(self, task_id: str) -> list[str]:
        """The record's, the questions' and the answers' keys."""
        base = f"{self.prefix}:task:{{{task_id}}}"
        return [base, f"{base}:in", f"{base}:ans"]

    def owner_key(self, worker_id: str) -> str:
        """The set of the unfinished tasks a worker runs."""
        return f"{self.prefix}:tasks:owner:{{{worker_id}}}"

    def session_key(self, session_id: str) -> str:
        """The sorted set of the tasks a 2025-11-25 session made."""
        return f"{self.prefix}:tasks:session:{{{session_id}}}"

    def unfinished_key(self, client: str | None) -> str:
        """The sorted set of the fleet's unfinished tasks (``client`` None), or of one client's."""
        if client is None:
            return f"{self.prefix}:tasks:unfinished:{{all}}"
        digest = hashlib.blake2b(client.encode(), digest_size=16).hexdigest()
        return f"{self.prefix}:tasks:unfinished:{{c:{digest}}}"

    async def admit(
        self, task_id: str, client: str | None, max_tasks: int, max_per_client: int, now: float, until: float
    ) -> tuple[str, int] | None:
        limits = [(self.unfinished_key(None), max_tasks, "tasks")]
        if client is not None:
            limits.append((self.unfinished_key(client), max_per_client, "client"))
        args: list[str | int] = [math.floor(now * 1000), math.ceil(until * 1000), task_id]
        with redis_unavailable("admit task"):
            if not is_cluster(self.redis):  # one Redis: both sets in one script
                refused = await self._admit(
                    keys=[key for key, _, _ in limits], args=[*args, *(n for _, n, _ in limits)]
                )
                if refused:
                    return limits[int(refused[0]) - 1][2], int(refused[1])
                return None
            for done, (key, limit, name) in enumerate(limits):  # a cluster: one slot per script
                refused = await self._admit(keys=[key], args=[*args, limit])
                if refused:
                    for undo, _, _ in limits[:done]:
                        await self.redis.zrem(undo, task_id)
                    return name, int(refused[1])
        return None

    async def renew(self, held: Mapping[str, str | None], until: float) -> None:
        deadline = math.ceil(until * 1000)
        with redis_unavailable("renew tasks"):
            async with self.redis.pipeline(transaction=False) as pipe:
                fleet = self.unfinished_key(None)
                keys = {fleet}
                for task_id, client in held.items():
                    counted = [fleet] if client is None else [fleet, self.unfinished_key(client)]
                    for key in counted:
                        pipe.zadd(key, {task_id: deadline}, xx=True)  # (one released meanwhile stays out)
                    keys.update(counted)
                for key in keys:
                    pipe.pexpireat(key, deadline, gt=True)
                await pipe.execute()

    async def release(self, task_id: str, client: str | None) -> None:
        with redis_unavailable("release task"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zrem(self.unfinished_key(None), task_id)
                if client is not None:
                    pipe.zrem(self.unfinished_key(client), task_id)
                await pipe.execute()

    def _expiry_ms(self, record: TaskRecord) -> int:
        ttl = record.ttl_ms / 1000 if record.ttl_ms is not None else self.max_ttl
        return math.ceil((record.created_at + ttl) * 1000)

    async def create(self, record: TaskRecord) -> None:
        if not valid_session_id(record.id):
            raise ValueError("task ids must be visible ASCII without braces, at most 200 characters")
        rest = {name: getattr(record, name) for name in _REST}
        expiry = self._expiry_ms(record)
        fields: list[str | int | bytes] = [
            *("s", record.status, "v", record.version, "u", repr(record.updated_at), "x", expiry),
            *("c", "1" if record.cancel_requested else "0", "n", record.asked, "r", orjson.dumps(rest)),
        ]
        if record.status_message is not None:
            fields += ["m", record.status_message]
        if record.worker_id is not None:
            fields += ["w", record.worker_id]
        with redis_unavailable("create task"):
            created = await self._durably(self._create, self.keys(record.id)[:1], [expiry, *fields])
            if created and (record.worker_id is not None or record.session_id is not None):
                async with self.redis.pipeline(transaction=False) as pipe:
                    if record.worker_id is not None:
                        pipe.sadd(self.owner_key(record.worker_id), record.id)
                    if record.session_id is not None:
                        index = self.session_key(record.session_id)
                        pipe.zadd(index, {record.id: expiry})
                        pipe.pexpireat(index, expiry, nx=True)  # (a fresh index: no expiry yet)
                        pipe.pexpireat(index, expiry, gt=True)
                    await pipe.execute()
        if not created:
            raise ValueError("duplicate task id")

    async def _durably(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        """Run ``script``; with ``durable_replicas``, followed by ``WAIT`` on its connection."""
        if not self.durable_replicas:
            return await script(keys=keys, args=args)
        call = ("EVALSHA", script.sha, len(keys), *keys, *args)
        wait = ("WAIT", self.durable_replicas, self.durable_ms)
        reply, acked = await one_connection(self.redis, keys[0], [call, wait])
        if isinstance(reply, NoScriptError):  # (a node that has not seen it: load it first)
            _, reply, acked = await one_connection(self.redis, keys[0], [("SCRIPT", "LOAD", script.script), call, wait])
        if isinstance(reply, Exception):
            raise reply
        if isinstance(acked, Exception) or int(acked) < self.durable_replicas:
            self.unreplicated += 1
            logger.warning(
                "task %s: written, but %s of %d replicas had it within %d ms",
                keys[0],
                acked,
                self.durable_replicas,
                self.durable_ms,
            )
        return reply

    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        if not valid_session_id(task_id):
            return None
        with redis_unavailable("get task"):
            fields, asked, answered = await self._read(keys=self.keys(task_id))
        if not fields:
            return None
        record = self._decode(_pairs(fields), _pairs(asked), _pairs(answered))
        return None if record.expired(now) else record

    @staticmethod
    def _decode(fields: dict[bytes, bytes], asked: dict[bytes, bytes], answered: dict[bytes, bytes]) -> TaskRecord:
        rest = orjson.loads(fields[b"r"])
        record = TaskRecord(**rest, updated_at=float(fields[b"u"]))
        record.status = _text(fields[b"s"])
        message = fields.get(b"m")
        record.status_message = None if message is None else _text(message)
        record.version = int(fields[b"v"])
        record.cancel_requested = fields.get(b"c") == b"1"
        record.asked = int(fields.get(b"n", 0))
        outcome = fields.get(b"o")
        record.outcome = orjson.loads(outcome) if outcome else None
        record.input_requests = {_text(key): orjson.loads(value) for key, value in asked.items()}
        record.answers = {_text(key): orjson.loads(value) for key, value in answered.items()}
        return record

    async def ask(self, task_id: str, request: dict[str, Any], now: float) -> tuple[str, TaskRecord] | None:
        if not valid_session_id(task_id):
            return None
        with redis_unavailable("ask"):
            key = await self._ask(
                keys=self.keys(task_id)[:2], args=[self.channel, task_id, repr(now), orjson.dumps(request)]
            )
        if not key:
            return None
        record = await self.get(task_id, now)
        return None if record is None else (_text(key), record)

    async def answer(self, task_id: str, responses: dict[str, Any], now: float) -> TaskRecord | None:
        if not valid_session_id(task_id):
            return None
        args: list[Any] = [self.channel, task_id, repr(now)]
        for key, value in responses.items():
            args += [key, orjson.dumps(value)]
        with redis_unavailable("answer"):
            taken = await self._answer(keys=self.keys(task_id), args=args)
        if taken == -1:
            return None
        return await self.get(task_id, now)

    async def take_answer(self, task_id: str, key: str) -> dict[str, Any] | None:
        if not valid_session_id(task_id):
            return None
        with redis_unavailable("take answer"):
            answer = await self._take(keys=self.keys(task_id)[2:], args=[key])
        value: dict[str, Any] | None = None if answer is None else orjson.loads(answer)
        return value

    async def request_cancel(self, task_id: str, now: float) -> TaskRecord | None:
        if not valid_session_id(task_id):
            return None
        with redis_unavailable("cancel"):
            await self._cancel(keys=self.keys(task_id)[:1], args=[self.channel, task_id, repr(now)])
        return await self.get(task_id, now)

    async def finish(
        self, task_id: str, status: str, outcome: dict[str, Any] | None, message: str | None, now: float
    ) -> TaskRecord | None:
        if status not in TERMINAL_STATUSES:
            raise ValueError(f"not a terminal status: {status!r}")
        if not valid_session_id(task_id):
            return None
        encoded = orjson.dumps(outcome) if outcome is not None else b""
        args: list[str | bytes] = [
            self.channel,
            task_id,
            repr(now),
            status,
            encoded,
            message or "",
            "0" if message is None else "1",
        ]
        with redis_unavailable("finish task"):
            owner = await self._durably(self._finish, self.keys(task_id)[:2], args)
            if owner is None:
                return None
            if owner:
                await self.redis.srem(self.owner_key(_text(owner)), task_id)
        return await self.get(task_id, now)

    async def of_session(self, session_id: str, now: float) -> list[TaskRecord]:
        if not valid_session_id(session_id):
            return []
        index = self.session_key(session_id)
        with redis_unavailable("tasks of a session"):
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.zremrangebyscore(index, "-inf", math.floor(now * 1000))
                pipe.zrange(index, 0, -1)
                _, members = await pipe.execute()
        records = [await self.get(_text(member), now) for member in members]
        live = [record for record in records if record is not None]
        live.sort(key=lambda record: (record.created_at, record.id))
        return live

    async def owned_by(self, worker_id: str) -> list[str]:
        with redis_unavailable("tasks of a worker"):
            owned: Any = await self.redis.smembers(self.owner_key(worker_id))
        return sorted(_text(member) for member in owned)

    async def fail_owned_by(self, worker_id: str, now: float) -> int:
        failed = await super().fail_owned_by(worker_id, now)
        with redis_unavailable("tasks of a worker"):
            await self.redis.delete(self.owner_key(worker_id))  # (what lingers of tasks that ended)
        return failed

    async def wait(self, task_id: str, version: int, timeout: float) -> None:
        watch = await self._watching()
        waiter = asyncio.Event()  # registered before the version is read: no change is missed
        self._waiters.setdefault(task_id, set()).add(waiter)
        try:
            with redis_unavailable("wait"):
                current = await self.redis.hget(self.keys(task_id)[0], "v")
            if current is None or int(current) != version or not watch.trusted:
                return
            async with asyncio.timeout(timeout):
                await waiter.wait()
        except TimeoutError:
            pass
        finally:
            waiters = self._waiters.get(task_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[task_id]

    async def _watching(self) -> RecordWatch:
        watch = self._watch
        if watch is None:
            watch = RecordWatch(self.redis, self.channel)
            try:
                await watch.start(self._changed)
            except StoreUnavailable:
                await watch.aclose()
                raise
            if self._watch is not None:  # (another waiter subscribed meanwhile)
                await watch.aclose()
                return self._watch
            self._watch = watch
        return watch

    def _changed(self, task_id: str | None, version: int | None) -> None:
        if task_id is None:  # the subscription broke or was remade: everyone reads again
            everyone = [waiter for waiters in self._waiters.values() for waiter in waiters]
        else:
            everyone = list(self._waiters.get(task_id, ()))
        for waiter in everyone:
            waiter.set()

    async def sweep(self, now: float) -> int:
        """Nothing to do: a task's keys expire at its end of ttl."""
        return 0

    async def aclose(self) -> None:
        """Stop listening for changes (the client is the caller's to close)."""
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch.aclose()
