"""``serve --redis-url``: serve through Redis-shared sessions, in one process or in ``--workers N``.

With N workers the parent binds the listening socket and forks N children that
inherit it (the kernel spreads connections among them). Each child builds its
own Redis client, stores, event bus and router (``RedisStores.from_url``), with
the wall clock. The parent serves nothing: it prints the endpoint, replaces a
child that dies, and on SIGINT/SIGTERM sends SIGTERM to every child (their
graceful shutdown), SIGKILL to those still running after the shutdown deadline
(or at a second signal).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

import click

from .errors import EXIT_INTERRUPTED, Failure, describe_error

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from ..server import McpServer

logger = logging.getLogger("mcp_sse_server.cli")

# A child failing (exit status above 0) this soon after it started is not replaced: it would fail
# again (a bad Redis, say). A child killed by a signal is always replaced.
_STARTUP_GRACE = 5.0


def request_state_secrets(environ: dict[str, str] | None = None) -> list[str] | None:
    """The requestState key ring from ``MCP_REQUEST_STATE_KEYS`` (comma-separated secrets,
    newest first), or None when unset. ValueError for a ring ``RequestStateSealer`` refuses."""
    raw = (os.environ if environ is None else environ).get("MCP_REQUEST_STATE_KEYS")
    if raw is None:
        return None
    secrets = [part.strip() for part in raw.split(",") if part.strip()]
    from ..request_state import RequestStateSealer

    RequestStateSealer(secrets)  # validate now: a usage error before anything listens
    return secrets


def share(
    served: McpServer | Callable[[], McpServer], *, secrets: Sequence[str] | None, event_bus: Any = None
) -> McpServer | Callable[[], McpServer]:
    """``served`` (a server, or a factory of one per session) using the shared key ring and bus."""
    from ..request_state import RequestStateSealer
    from ..server import McpServer

    if secrets is None and event_bus is None:
        return served
    sealer = RequestStateSealer(secrets) if secrets is not None else None
    if isinstance(served, McpServer):
        served.use_shared(request_state=sealer, event_bus=event_bus)
        return served
    factory = served

    def shared() -> McpServer:
        server = factory()
        server.use_shared(request_state=sealer, event_bus=event_bus)
        return server

    return shared


def check_redis(url: str) -> None:
    """Fail in one line when Redis cannot be reached (before anything listens or forks)."""
    try:
        import redis
    except ImportError as error:
        raise Failure(f"--redis-url needs redis-py: pip install 'mcp-sse-server[redis]' ({error})") from error
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--redis-url") from error
    try:
        client.ping()
    except (redis.exceptions.RedisError, OSError) as error:
        raise Failure(f"cannot reach Redis at {url}: {describe_error(error)}") from error
    finally:
        client.close()


def serve_worker(
    label: str,
    served: McpServer | Callable[[], McpServer],
    options: dict[str, Any],
    *,
    redis_url: str,
    secrets: Sequence[str] | None,
    worker_ttl: float,
    sock: socket.socket | None = None,
    parent: int | None = None,
) -> None:
    """One worker: its own Redis stores, serving until SIGTERM (and SIGINT unless it has a ``parent``)."""
    import asyncio

    from ..server import McpServer
    from ..stores.base import StoreUnavailable
    from ..stores.redis_setup import RedisStores
    from ..transport.http.server import McpHttpServer, _run

    async def main() -> None:
        stores = RedisStores.from_url(redis_url, limits=options["limits"], worker_ttl=worker_ttl)
        try:
            try:
                await stores.start()
            except StoreUnavailable as error:
                raise Failure(f"cannot reach Redis at {redis_url}: {error}") from error
            shared = share(served, secrets=secrets, event_bus=stores.bus)
            bind: dict[str, Any] = {**options, **stores.bind_options(), "sock": sock}
            if isinstance(shared, McpServer):
                http = await McpHttpServer.bind(shared, **bind)
            else:
                http = await McpHttpServer.bind(on_session=shared, **bind)
            if parent is None:
                click.echo(f"Serving {label} at {http.endpoint}")
                sys.stdout.flush()
                click.echo("Press Ctrl-C to stop.", err=True)
                await http.serve_forever(on_stopping=lambda: click.echo("Shutting down...", err=True))
            else:
                watch = asyncio.get_running_loop().create_task(_watch_parent(parent))
                try:
                    await http.serve_forever(signals=(signal.SIGTERM,))
                finally:
                    watch.cancel()
        finally:
            await stores.close()

    try:
        _run(main())
    except OSError as error:
        raise Failure(f"cannot listen on {options['host']}:{options['port']}: {describe_error(error)}") from error
    except asyncio.CancelledError:
        raise SystemExit(EXIT_INTERRUPTED) from None


async def _watch_parent(parent: int) -> None:
    """A child whose parent died (SIGKILL) stops serving the socket it inherited."""
    import asyncio

    while os.getppid() == parent:  # noqa: ASYNC110 - no event tells a process its parent died
        await asyncio.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def _child(target: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C and tells us with SIGTERM
    try:
        target(*args, **kwargs)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except SystemExit:
        raise
    except BaseException:
        logger.exception("worker %d failed", os.getpid())
        sys.exit(1)


def serve_workers(
    label: str,
    served: McpServer | Callable[[], McpServer],
    options: dict[str, Any],
    *,
    workers: int,
    redis_url: str,
    secrets: Sequence[str] | None,
    worker_ttl: float,
) -> None:
    """Bind, fork ``workers`` children serving the socket, and supervise them until a signal."""
    from ..transport.http.server import endpoint_url, listening_socket

    host, port = options["host"], options["port"]
    try:
        sock = listening_socket(host, port)
    except OSError as error:
        raise Failure(f"cannot listen on {host}:{port}: {describe_error(error)}") from error
    endpoint = endpoint_url(host, sock.getsockname()[1], options["path"], tls=options.get("ssl_context") is not None)
    context = multiprocessing.get_context("fork")
    parent = os.getpid()
    kwargs = {"redis_url": redis_url, "secrets": secrets, "worker_ttl": worker_ttl, "sock": sock, "parent": parent}

    def start() -> tuple[BaseProcess, float]:
        process = context.Process(
            target=_child, args=(serve_worker, (label, served, options), kwargs), name="mcp-sse-server worker"
        )
        process.start()
        return process, time.monotonic()

    signals: list[int] = []
    previous = {number: signal.signal(number, lambda number, _: signals.append(number)) for number in _STOP}
    children = [start() for _ in range(workers)]
    click.echo(f"Serving {label} at {endpoint}")
    sys.stdout.flush()
    click.echo(f"{workers} worker processes, sharing sessions through Redis. Press Ctrl-C to stop.", err=True)
    status = 0
    try:
        while not signals:
            wait([process.sentinel for process, _ in children], timeout=0.5)
            for index, (process, started) in enumerate(children):
                if process.is_alive() or signals or started == float("inf"):
                    continue
                if (process.exitcode or 0) > 0 and time.monotonic() - started < _STARTUP_GRACE:
                    click.echo(f"A worker exited at startup ({process.exitcode}); not replaced.", err=True)
                    children[index] = (process, float("inf"))
                    continue
                click.echo(f"A worker died ({process.exitcode}); starting another.", err=True)
                children[index] = start()
            if all(started == float("inf") for _, started in children):
                raise Failure("every worker exited at startup")
        click.echo("Shutting down...", err=True)
        status = _stop([process for process, _ in children], options["limits"].shutdown_deadline + 5.0, signals)
    finally:
        sock.close()
        for number, handler in previous.items():
            signal.signal(number, handler)
    if status:
        raise SystemExit(status)


_STOP = (signal.SIGINT, signal.SIGTERM)


def _stop(processes: list[BaseProcess], deadline: float, signals: list[int]) -> int:
    """SIGTERM to every child; SIGKILL to those left after ``deadline`` s or a second signal."""
    for process in processes:
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGTERM)
    first = len(signals)
    until = time.monotonic() + deadline
    while any(process.is_alive() for process in processes):
        if len(signals) > first or time.monotonic() >= until:
            for process in processes:
                if process.is_alive():
                    process.kill()
            for process in processes:
                process.join(5.0)
            return EXIT_INTERRUPTED
        wait([process.sentinel for process in processes if process.is_alive()], timeout=0.2)
    return 0
