"""Redis Cluster (or Valkey cluster) for the Redis stores: the URL that names one, its client, and
the raw round trip ``WriteBehind`` makes, split by node.

>>> cluster_seeds("redis+cluster://10.0.0.1:7000,10.0.0.2:7000")
[('10.0.0.1', 7000), ('10.0.0.2', 7000)]

Rules, kept here:

1. A cluster is named, never guessed: ``redis+cluster://host:port[,host:port...]`` (TLS:
   ``rediss+cluster://``). Any node answers for the whole cluster; several seeds let a worker
   start while one of them is down. A plain ``redis://`` URL that reaches a cluster node is
   refused at start with the URL to use (``refuse_cluster_node``), instead of a 500 on the
   first cross-slot command.
2. The client is redis-py's asyncio ``RedisCluster`` (hiredis parses its replies). The stores
   are typed against ``Redis``: they call only the commands both clients have, each naming the
   keys of one hash slot, so ``cluster_client`` hands the cluster client over as one.
3. Every command or script a store sends names keys of one slot: a session's keys share the
   tag ``{<session id>}``, a task's ``{<task id>}``, a worker's ``{<worker id>}``. What spans
   slots (the sessions index, a worker's renewals of several leases) goes as several commands,
   never as one script. ``round_trip`` sends a batch of such commands, grouped by the node
   serving each one's slot, the groups at once; within a slot the order queued is kept.
4. Pub/sub channels (record changes, server events) are plain ``PUBLISH``: a cluster delivers
   it to the subscribers of every node, so one subscription anywhere hears every shard.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from typing import Any, Final, cast
from urllib.parse import parse_qs, urlsplit

from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from .redis_sentinel import SENTINEL_SCHEMES, sentinel_client
from .redis_urls import seed_addresses

__all__ = [
    "CLUSTER_SCHEMES",
    "client_for_url",
    "cluster_client",
    "cluster_node_message",
    "cluster_probe",
    "cluster_seeds",
    "exchange",
    "is_cluster",
    "one_connection",
    "refuse_cluster_node",
    "round_trip",
]

CLUSTER_SCHEMES: Final = ("redis+cluster", "rediss+cluster")

_DEFAULT_PORT: Final = 6379

# Attempts after the first of a command that met a connection error or CLUSTERDOWN (redis-py's
# default is 10, up to about 4 s on a lost primary's slots).
FAILOVER_RETRIES: Final = 3


def cluster_seeds(url: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` seeds a ``redis+cluster://`` URL names (ValueError for a bad one)."""
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        raise ValueError(f"a Redis Cluster URL starts with redis+cluster:// or rediss+cluster://, not {url!r}")
    seeds = seed_addresses(url, _DEFAULT_PORT, "seed")
    if parts.path not in ("", "/", "/0"):
        raise ValueError(f"{url!r}: a cluster has only database 0")
    return seeds


def cluster_client(url: str) -> Redis:
    """A ``RedisCluster`` on the seeds of ``url`` (credentials and ``?`` options as redis-py reads
    them from a URL), typed as the ``Redis`` the stores take (rule 2). Connects nothing yet."""
    from redis.asyncio.cluster import ClusterNode

    parts = urlsplit(url)
    options: dict[str, Any] = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    if parts.username:
        options["username"] = parts.username
    if parts.password:
        options["password"] = parts.password
    if parts.scheme == "rediss+cluster":
        options["ssl"] = True
    nodes = [ClusterNode(host, port) for host, port in cluster_seeds(url)]
    # (require_full_coverage: a slot without a primary is refused at once, a 503, not waited on.
    # Few retries, soon: a command on a lost primary's slots fails within about a second, a 503
    # the client retries, instead of waiting out the whole failover inside redis-py.)
    if "retry" not in options:
        options["retry"] = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.25), retries=FAILOVER_RETRIES)
    client = RedisCluster(startup_nodes=nodes, require_full_coverage=True, **options)
    return cast(Redis, client)


def client_for_url(url: str) -> Redis:
    """A client for any Redis URL the package takes: a cluster's (``cluster_client``) for
    ``redis+cluster://`` and ``rediss+cluster://``, the primary found by Sentinel
    (``sentinel_client``) for ``redis+sentinel://`` and ``rediss+sentinel://``, else
    ``Redis.from_url``. Connects nothing yet."""
    scheme = url.partition("://")[0].lower()
    if scheme in CLUSTER_SCHEMES:
        return cluster_client(url)
    if scheme in SENTINEL_SCHEMES:
        return sentinel_client(url)
    return Redis.from_url(url)


def cluster_probe(url: str, timeout: float) -> Any:
    """A blocking ``redis.RedisCluster`` on the seeds of ``url``, for a check before anything
    starts (``serve`` pings it, then closes it)."""
    import redis

    nodes = [redis.cluster.ClusterNode(host, port) for host, port in cluster_seeds(url)]  # type: ignore[no-untyped-call]
    parts = urlsplit(url)
    return redis.RedisCluster(
        startup_nodes=nodes,
        username=parts.username,
        password=parts.password,
        ssl=parts.scheme == "rediss+cluster",
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )


def cluster_node_message(url: str) -> str:
    """What to say for a single-node URL that reaches a cluster node."""
    scheme, _, rest = url.partition("://")
    where = rest.partition("/")[0]
    return (
        f"{scheme}://{where} is a Redis Cluster node: name the cluster as {scheme}+cluster://{where} "
        "(several host:port seeds may follow, comma-separated)"
    )


def is_cluster(redis: Any) -> bool:
    """True for a ``RedisCluster`` client."""
    return isinstance(redis, RedisCluster)


async def refuse_cluster_node(redis: Redis, url: str) -> None:
    """ValueError when the single-node client ``redis`` reaches a node of a cluster (rule 1)."""
    try:
        info: Any = await redis.info("cluster")
    except redis_errors.ResponseError:  # (a server without the section: not a cluster)
        return
    if str(info.get("cluster_enabled", 0)) == "1":
        raise ValueError(cluster_node_message(url))


Command = tuple[Any, ...]


def _key_of(command: Command) -> Any:
    """The first key a command names (``EVALSHA sha n key...``, else the argument after the name)."""
    name = str(command[0]).upper()
    if name in ("EVALSHA", "EVAL"):
        return command[3] if int(command[2]) > 0 else None
    if name == "SCRIPT":
        return None
    return command[1] if len(command) > 1 else None


async def round_trip(
    redis: Redis,
    commands: list[Command],
    pack: Callable[[Command], bytes] | None,
    timeout: float,
) -> list[Any]:
    """Send ``commands`` (each naming keys of one slot; ``SCRIPT LOAD`` goes to every node that
    gets a command) grouped by node, the groups at once; their replies, in the order of
    ``commands`` (an error reply returned, not raised). A node that answers ``MOVED`` (the slots
    moved, a failover) or a node out of reach makes the client read the cluster's layout again.
    A script a node has not seen is its ``NoScriptError``: the caller loads it everywhere."""
    cluster = cast(RedisCluster, redis)
    await cluster.initialize()  # (at once unless a refresh is due: the first batch, or after _relearn)
    groups: dict[str, tuple[ClusterNode, list[int]]] = {}
    loads: list[int] = []
    for index, command in enumerate(commands):
        key = _key_of(command)
        if key is None:
            loads.append(index)
            continue
        node = cluster.get_node_from_key(key)
        if node is None:  # pragma: no cover - get_node_from_key raises for an uncovered slot
            raise redis_errors.ConnectionError("no node serves a slot")
        groups.setdefault(node.name, (node, []))[1].append(index)
    results: list[Any] = [None] * len(commands)
    for index in loads:  # (their replies: each node's own, all alike; the first stands for all)
        results[index] = b"OK"
    extra = [commands[index] for index in loads]

    async def send(node: ClusterNode, indexes: list[int]) -> None:
        batch = [*extra, *(commands[index] for index in indexes)]
        connection: Any = node.acquire_connection()
        try:
            replies = await exchange(connection, batch, pack)
        except BaseException:
            await connection.disconnect()
            raise
        finally:
            node.release(connection)
        for index, reply in zip(indexes, replies[len(extra) :], strict=True):
            results[index] = reply

    try:
        async with asyncio.timeout(timeout):
            async with asyncio.TaskGroup() as group:
                for node, indexes in groups.values():
                    group.create_task(send(node, indexes))
    except BaseExceptionGroup as errors:
        # (the first error stands for the batch: ConnectionError, OSError)
        await _relearn(cluster)
        raise errors.exceptions[0] from None
    except TimeoutError:
        await _relearn(cluster)
        raise
    if any(isinstance(result, (redis_errors.MovedError, redis_errors.AskError)) for result in results):
        await _relearn(cluster)
    return results


async def one_connection(redis: Redis, key: str, commands: list[Command]) -> list[Any]:
    """``commands`` in order on one connection to the node serving ``key`` (the one Redis, or the
    cluster node of its slot): what ``WAIT`` needs, which waits for the writes of its own
    connection. Their replies in order (an error reply returned, not raised)."""
    node: ClusterNode | None = None
    if is_cluster(redis):
        cluster = cast(RedisCluster, redis)
        await cluster.initialize()
        node = cluster.get_node_from_key(key)
        if node is None:  # pragma: no cover - get_node_from_key raises for an uncovered slot
            raise redis_errors.ConnectionError("no node serves a slot")
        connection: Any = node.acquire_connection()
    else:
        pool: Any = redis.connection_pool
        connection = await pool.get_connection()
    try:
        replies = await exchange(connection, commands)
    except BaseException:
        await connection.disconnect()
        if node is not None:
            await _relearn(cast(RedisCluster, redis))
        raise
    finally:
        if node is not None:
            node.release(connection)
        else:
            await pool.release(connection)
    return replies


async def exchange(
    connection: Any, commands: list[Command], pack: Callable[[Command], bytes] | None = None
) -> list[Any]:
    """``commands`` written at once on ``connection`` (packed by ``pack`` where given, else by the
    connection), then their replies read in order (an error reply returned, not raised)."""
    await connection.connect()
    if pack is not None:
        packed = b"".join([pack(args) for args in commands])
    else:
        packed = b"".join([b"".join(connection.pack_command(*args)) for args in commands])
    await connection.send_packed_command(packed, check_health=False)
    replies: list[Any] = []
    for _ in commands:
        try:
            replies.append(await connection.read_response(timeout=math.inf))
        except redis_errors.ResponseError as error:
            replies.append(error)
    return replies


async def _relearn(cluster: RedisCluster) -> None:
    """Read the cluster's layout again (after a failover or a slot move); a cluster out of reach
    is read on a later batch."""
    cluster._request_refresh()  # (redis-py's own path after a MOVED: merged, paced by its retry policy)
    with contextlib.suppress(redis_errors.RedisError, OSError):
        await cluster.initialize()
