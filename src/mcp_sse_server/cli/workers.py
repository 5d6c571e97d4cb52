"""``serve``'s processes: one worker serving the ``--backend`` URL names, or ``--workers N``.

Every worker builds its own backend from the URL (``stores.backend_from_url``, the one place a
scheme is chosen: ``memory:`` by default, ``redis://`` shared), after a fork, never before; the
endpoint it binds owns the backend, starting it and closing it. N workers need a shared backend.

With N workers on Linux the parent holds the port (bound, not listening) and
forks N children that each listen on it with ``SO_REUSEPORT``: the kernel
spreads new connections evenly among them (a shared accept queue lets the
worker that wakes first take a burst of keep-alive connections, and serve
them alone). Elsewhere the children inherit the parent's listening socket. With
Redis, a worker's backend is its own Redis client, stores, event bus and worker
mesh, on the wall clock. The parent serves nothing: it prints the endpoint, replaces a
child that dies, and on SIGINT/SIGTERM sends SIGTERM to every child (their
graceful shutdown), SIGKILL to those still running after the shutdown deadline
(or at a second signal).

A worker never outlives its parent: on Linux the kernel sends it SIGTERM when
the parent dies (``prctl(PR_SET_PDEATHSIG)``, set right after the fork); the
worker also polls ``os.getppid()`` (every ``MCP_SSE_SERVER_PARENT_POLL``
seconds, 1 by default, 0 for never), the portable fallback. A worker whose
graceful stop has not finished ``shutdown_deadline`` + ``STOP_MARGIN``
seconds after it began exits anyway.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any, Final

import click

from .announce import announce
from .errors import EXIT_INTERRUPTED, Failure, describe_error

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from ..engine.server import McpServer
    from ..engine.stores import Backend

logger = logging.getLogger("mcp_sse_server.cli")

# A child failing (exit status above 0) this soon after it started is not replaced: it would fail
# again (a bad Redis, say). A child killed by a signal is always replaced.
_STARTUP_GRACE = 5.0

STOP_MARGIN = 5.0
"""Seconds past ``shutdown_deadline`` a worker's graceful stop may take before the worker exits
anyway; the parent waits twice as long past the deadline before it sends SIGKILL."""

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_REDIS_SETUP: Final = __name__.rpartition(".cli.")[0] + ".stores.redis_setup"


def request_state_keys_set() -> bool:
    """Whether ``MCP_REQUEST_STATE_KEYS`` sets the deployment's requestState key ring (every
    server reads it: ``request_state.deployment_sealer``); ValueError for a ring that would be
    refused, so that it is a usage error before anything listens."""
    from ..engine.request_state import ring_from

    return ring_from(os.environ) is not None


def check_backend(url: str, *, workers: int, limits: Any, options: dict[str, Any]) -> bool:
    """Fail in one line, before anything listens or forks, for a ``--backend`` that names no
    backend, takes none of ``options``, cannot be reached (Redis: pinged) or that ``workers`` above
    1 would not share; whether it is shared. A probe is built with ``limits`` and closed unused."""
    import asyncio

    from ..stores.backends import backend_from_url

    try:
        probe = backend_from_url(url, limits=limits, **options)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--backend") from error
    except TypeError as error:
        given = " ".join(f"--{name.replace('_', '-')}" for name in options)
        raise click.UsageError(f"{given} does not go with --backend {url}") from error
    except ImportError as error:
        raise Failure(f"--backend {url}: {error}") from error
    asyncio.run(probe.close())
    if workers > 1 and not probe.shared:
        raise click.UsageError(
            "--workers above 1 needs --redis-url or another shared --backend: each worker would know only the "
            "sessions it opened, so a client's next request, reaching another worker, would be refused (404)"
        )
    if _is_redis(probe):
        check_redis(url)
    return probe.shared


def _is_redis(backend: Backend) -> bool:
    # A RedisBackend exists only once its module is loaded: asking by importing it would load
    # redis-py (70 ms) into every serve of a memory: backend.
    module = sys.modules.get(_REDIS_SETUP)
    return module is not None and isinstance(backend, module.RedisBackend)


def check_redis(url: str) -> None:
    """Fail in one line when Redis cannot be reached (before anything listens or forks)."""
    import redis

    from ..stores.redis_cluster import CLUSTER_SCHEMES, cluster_node_message, cluster_probe
    from ..stores.redis_sentinel import SENTINEL_SCHEMES, sentinel_probe

    scheme = url.partition("://")[0]
    cluster = scheme in CLUSTER_SCHEMES
    try:
        if cluster:
            client = cluster_probe(url, 5)
        elif scheme in SENTINEL_SCHEMES:
            client = sentinel_probe(url, 5)
        else:
            client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--backend") from error
    try:
        client.ping()
        # A cluster node named as one Redis would fail the first request that spans slots: say so now.
        if not cluster and str(client.info("cluster").get("cluster_enabled", 0)) == "1":
            raise click.BadParameter(cluster_node_message(url), param_hint="--backend")
    except (redis.exceptions.RedisError, OSError) as error:
        raise Failure(f"cannot reach Redis at {url}: {describe_error(error)}") from error
    finally:
        client.close()


def serve_worker(
    label: str,
    served: McpServer | Callable[[], McpServer],
    options: dict[str, Any],
    *,
    backend: str,
    backend_options: dict[str, Any],
    sock: socket.socket | None = None,
    listen_on: tuple[str, int] | None = None,
    listening: Callable[[], None] | None = None,
    parent: int | None = None,
) -> None:
    """One worker: its own backend (from the URL ``backend``), serving until SIGTERM (and SIGINT
    unless it has a ``parent``). ``options`` are ``McpHttpServer.bind``'s."""
    import asyncio

    from ..engine.stores import StoreUnavailable
    from ..stores.backends import backend_from_url
    from ..transport.http.app import McpHttpApp
    from ..transport.http.server import McpHttpServer, listening_socket
    from ..transport.loop import run_loop

    settings = options["settings"]

    async def listen() -> McpHttpServer:
        own = sock
        if listen_on is not None:  # (a socket of this worker's own on the parent's port: SO_REUSEPORT)
            own = listening_socket(*listen_on, reuse_port=True)
        if listening is not None:
            listening()  # connections queue up for this worker from now on
        store = backend_from_url(backend, limits=settings.limits, **backend_options)
        if own is None:
            return await McpHttpServer.bind(served, **options, backend=store)
        try:
            app = McpHttpApp(served, settings=settings, backend=store, bind_host=options["host"])
        except BaseException:
            own.close()
            await store.close()
            raise
        return await McpHttpServer.on_socket(app, own, ssl=options.get("ssl"))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        watch: asyncio.Task[None] | None = None
        if parent is not None:
            # From the start: a SIGTERM during startup (the parent's, or the death signal) stops
            # the worker gracefully once it is up, instead of killing it half registered.
            loop.add_signal_handler(signal.SIGTERM, stopping.set)
            watch = loop.create_task(_watch_parent(parent, _parent_poll()))
        try:
            try:
                http = await listen()
            except StoreUnavailable as error:
                raise Failure(f"cannot reach {backend}: {error}") from error
            except ValueError as error:  # (listening beyond loopback with nothing guarding the endpoint)
                raise click.UsageError(str(error)) from error
            if parent is None:
                announce(label, http.endpoint, options)
                click.echo("Press Ctrl-C to stop.", err=True)
                await http.serve_forever(on_stopping=lambda: click.echo("Shutting down...", err=True))
                return
            limit = settings.limits.shutdown_deadline + STOP_MARGIN
            if stopping.is_set():  # told to stop while starting
                exit_after(limit)
                await http.close()
            else:  # serve_forever takes SIGTERM over before it first waits: no signal falls between
                await http.serve_forever(signals=(signal.SIGTERM,), on_stopping=lambda: exit_after(limit))
        finally:
            if watch is not None:
                watch.cancel()

    try:
        run_loop(main())
    except OSError as error:
        raise Failure(f"cannot listen on {options['host']}:{options['port']}: {describe_error(error)}") from error
    except asyncio.CancelledError:
        raise SystemExit(EXIT_INTERRUPTED) from None


def _parent_poll(environ: dict[str, str] | None = None) -> float:
    """Seconds between a worker's checks that its parent lives: ``MCP_SSE_SERVER_PARENT_POLL``
    (1 when unset or not a number; 0 or less: never, leaving the death signal alone)."""
    raw = (os.environ if environ is None else environ).get("MCP_SSE_SERVER_PARENT_POLL", "")
    try:
        return float(raw)
    except ValueError:
        return 1.0


async def _watch_parent(parent: int, interval: float) -> None:
    """A child whose parent died (SIGKILL) stops serving the socket it inherited (the portable
    fallback of ``signal_when_parent_dies``)."""
    import asyncio

    if interval <= 0:
        return
    while os.getppid() == parent:  # noqa: ASYNC110 - no event tells a process its parent died
        await asyncio.sleep(interval)
    os.kill(os.getpid(), signal.SIGTERM)


def signal_when_parent_dies(number: int = signal.SIGTERM) -> bool:
    """Ask Linux to send this process ``number`` when the thread that forked it exits
    (``prctl(PR_SET_PDEATHSIG)``); False where that cannot be set (not Linux, no libc).

    A parent that died before this call sends nothing: check ``os.getppid()`` after it.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # (only in a worker process: a single-process serve never loads it)

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(number), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def exit_after(seconds: float, status: int = EXIT_INTERRUPTED) -> threading.Timer:
    """End this process with ``status`` in ``seconds`` unless it ended first: a graceful stop that
    hangs (on a peer that never answers, say) cannot keep a worker alive. A daemon thread, so a
    blocked event loop cannot hold it back."""
    timer = threading.Timer(seconds, os._exit, args=(status,))
    timer.daemon = True
    timer.start()
    return timer


def _child(target: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    # Right after the fork this process still has the parent's SIGTERM handler (it only notes the
    # signal in the parent's list): until the worker's loop takes SIGTERM, the default (exit) is right.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C and tells us with SIGTERM
    parent = kwargs.get("parent")
    if parent is not None:
        signal_when_parent_dies(signal.SIGTERM)
        if os.getppid() != parent:
            return  # the parent died before the death signal was set: nobody to serve for
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
    backend: str,
    backend_options: dict[str, Any],
) -> None:
    """Bind, fork ``workers`` children serving the socket, and supervise them until a signal."""
    from ..transport.http.server import endpoint_url, listening_socket, reserved_socket

    host, port = options["host"], options["port"]
    each_listens = _SPREAD_BY_KERNEL
    try:
        sock = reserved_socket(host, port) if each_listens else listening_socket(host, port)
    except OSError as error:
        raise Failure(f"cannot listen on {host}:{port}: {describe_error(error)}") from error
    port = sock.getsockname()[1]
    settings = options["settings"]
    endpoint = endpoint_url(host, port, settings.path, tls=options.get("ssl") is not None)
    context = multiprocessing.get_context("fork")
    parent = os.getpid()
    kwargs: dict[str, Any] = {"backend": backend, "backend_options": backend_options, "parent": parent}
    if each_listens:
        kwargs["listen_on"] = (host, port)
    else:
        kwargs["sock"] = sock

    readiness: list[Any] = []

    def start() -> tuple[BaseProcess, float]:
        ready = context.Event()
        readiness.append(ready)
        process = context.Process(
            target=_child,
            args=(serve_worker, (label, served, options), {**kwargs, "listening": ready.set}),
            name="mcp-sse-server worker",
        )
        process.start()
        return process, time.monotonic()

    signals: list[int] = []
    previous = {number: signal.signal(number, lambda number, _: signals.append(number)) for number in _STOP}
    children = [start() for _ in range(workers)]
    if each_listens:  # announced once the workers listen: a client told the address is not refused
        until = time.monotonic() + _STARTUP_GRACE
        for ready in readiness:
            ready.wait(max(0.0, until - time.monotonic()))
    announce(label, endpoint, options)
    click.echo(f"{workers} worker processes, sharing sessions through the backend. Press Ctrl-C to stop.", err=True)
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
        deadline = settings.limits.shutdown_deadline + 2 * STOP_MARGIN
        status = _stop([process for process, _ in children], deadline, signals)
    finally:
        sock.close()
        for number, handler in previous.items():
            signal.signal(number, handler)
    if status:
        raise SystemExit(status)


_STOP = (signal.SIGINT, signal.SIGTERM)

# Linux balances connections among the sockets listening on one port with SO_REUSEPORT.
_SPREAD_BY_KERNEL = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")


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
