"""The stdio transport: run an MCP server as a child process and talk to it over its
stdin and stdout, one JSON-RPC message per line (``StdioClientTransport``; ``StdioClient``
is an McpClient over it).

The child's stderr is passed through line by line (to our stderr, or to
``on_stderr``). A child that exits while calls are pending fails them with an
error naming the command and its exit status; ``close()`` closes its stdin,
waits briefly, then terminates and finally kills it.

The probe (``mode="auto"``): some session servers (the official Python SDK 1.2.1, for one)
fail on ``server/discover``, a method they do not know: 1.2.1 writes nothing, and its session
dies while its stdin reader stays blocked in a read, so the process exits (code 1) only once
another line arrives. A probe unanswered after ``PROBE_NUDGE`` seconds is therefore followed by
an empty line, which such a server wakes up to, and which readers of newline-delimited JSON
skip (this package's servers, the official SDKs'). When the probe makes the server exit,
or it answers with anything but a JSON-RPC result or error (a line that is not JSON-RPC, with no
answer within ``STRAY_GRACE`` seconds after it; or nothing but notifications until
``probe_timeout``), the client ends that process (reaping it and its stderr reader), starts the
same command once more (same arguments, environment and working directory) and speaks
``initialize`` to it (``probe_recovery``). With ``mode="2026-07-28"`` it raises an
``McpConnectionError`` saying what the server did instead. The era memo
(``client/era_memo.py``) then remembers the command as a session server for this process.

The session fallback (``client/fallback.py``): the child serves this client alone
(``owns_server``), so a server that speaks 2026-07-28 but can only ask the client over a session
gets the client itself moved onto a session: ``initialize`` on the same process, else the process
is started again and spoken to with ``initialize``; the era memo remembers the command as a
session server.

>>> async def demo() -> None:  # doctest: +SKIP
...     async with StdioClient("python", ["-m", "my_server"]) as client:
...         print([tool.name for tool in await client.list_tools()])
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from ..engine.jsonrpc import JsonRpcMessage, McpError, RequestId, encode_message, parse_message
from ..engine.transport import Transport
from ._common import ClientConnection, McpConnectionError
from .base import McpClient
from .core import MODE_AUTO
from .era_memo import stdio_identity
from .transport import ClientTransport, ProbeAnswer

__all__ = ["PROBE_NUDGE", "STRAY_GRACE", "StdioClient", "StdioClientTransport", "StdioConnection", "probe_recovery"]

logger = logging.getLogger("mcp_sse_server.client")

DEFAULT_MAX_LINE_BYTES: Final = 32 * 1024 * 1024
# Seconds after which an unanswered probe is followed by an empty line (see the module).
PROBE_NUDGE: Final = 0.5
# Seconds the probe still waits for its answer after a line on stdout that is not JSON-RPC: a
# server that prints a banner first and then answers must not be taken for a broken one.
STRAY_GRACE: Final = 1.0


class _StrayProbeOutput(McpConnectionError):
    """The server answered the probe with a line that is not JSON-RPC, and nothing after it."""


def probe_recovery(mode: str, failure: Exception) -> Literal["restart", "refuse"] | None:
    """What a stdio client does when its ``server/discover`` probe failed with ``failure``:
    ``"restart"`` the server and speak ``initialize`` (``mode="auto"``), ``"refuse"`` with an error
    naming what the server did (a forced stateless revision), or None when the failure is not the
    server's doing (the stdio probe fails only by timeout or connection error; anything else is
    handled by ``McpClient``).

    >>> probe_recovery("auto", TimeoutError()), probe_recovery("2026-07-28", TimeoutError())
    ('restart', 'refuse')
    >>> probe_recovery("auto", ValueError()) is None
    True
    """
    if not isinstance(failure, TimeoutError | ConnectionError):
        return None
    return "restart" if mode == MODE_AUTO else "refuse"


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "closed its stdout"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


class StdioConnection(ClientConnection):
    """One child process speaking newline-delimited JSON-RPC (what ``StdioClientTransport`` opens)."""

    def __init__(self, spec: StdioClientTransport) -> None:
        super().__init__()
        self.spec = spec  # what to run, and how
        self.display = spec.display
        self.process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._failure: McpConnectionError | None = None
        self._stray: asyncio.Future[bytes] | None = None  # watch_stray(): the next stray line
        self._held: list[str] | None = None  # hold_stderr(): stderr lines kept back

    async def start(self) -> None:
        """Spawn the process; McpConnectionError when it cannot be started."""
        env = {**os.environ, **self.spec.env} if self.spec.inherit_env else dict(self.spec.env)
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.spec.command,
                *self.spec.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # The child is given 0, 1 and 2 alone (pipes of its own; stderr never read as protocol).
                close_fds=True,
                env=env,
                cwd=self.spec.cwd,
                limit=self.spec.max_line_bytes,
            )
        except FileNotFoundError as error:
            if self.spec.cwd is not None and not os.path.isdir(self.spec.cwd):  # noqa: ASYNC240 - only on failure
                reason = f"working directory {os.fspath(self.spec.cwd)!r} does not exist"
            else:
                reason = f"command {self.spec.command!r} not found"
            raise McpConnectionError(f"Cannot start MCP server {self.display}: {reason}") from error
        except OSError as error:
            raise McpConnectionError(f"Cannot start MCP server {self.display}: {error.strerror or error}") from error
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read_stdout()), loop.create_task(self._read_stderr())]

    def watch_stray(self) -> asyncio.Future[bytes]:
        """A future for the next line on stdout that is not JSON-RPC (``unwatch_stray`` ends it)."""
        self._stray = asyncio.get_running_loop().create_future()
        return self._stray

    def unwatch_stray(self) -> None:
        """Stop watching for stray lines (``watch_stray``)."""
        stray, self._stray = self._stray, None
        if stray is not None and not stray.done():
            stray.cancel()

    async def nudge(self) -> None:
        """Write an empty line (readers of newline-delimited JSON skip it): a server whose stdin
        reader is blocked in a read is woken by it. Never fails."""
        process = self.process
        if process is None or process.stdin is None or self._closed or self._failure is not None:
            return
        with contextlib.suppress(ConnectionError, OSError):
            process.stdin.write(b"\n")
            await process.stdin.drain()

    def _gone(self) -> McpConnectionError:
        if self._failure is not None:
            return self._failure
        if self._closed:
            return McpConnectionError(f"The connection to MCP server {self.display} is closed")
        return McpConnectionError(f"MCP server {self.display} is not running")

    async def send(self, message: JsonRpcMessage, related_request_id: RequestId | None = None) -> None:
        process = self.process
        if process is None or process.stdin is None or self._closed or self._failure is not None:
            raise self._gone()
        self._track(message)
        try:
            process.stdin.write(encode_message(message) + b"\n")
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self._untrack(message)
            code = process.returncode
            raise McpConnectionError(f"MCP server {self.display} {_describe_exit(code)}") from None

    async def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        problem: str | None = None
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # the line outgrew max_line_bytes
                problem = f"sent a message longer than {self.spec.max_line_bytes} bytes"
                break
            except (ConnectionError, OSError) as error:
                problem = f"stdout failed: {error}"
                break
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            try:
                message = parse_message(line)
            except McpError:
                # Servers that print banners to stdout are common; skip, do not die.
                logger.warning("ignoring a line that is not JSON-RPC from %s: %.200r", self.display, line)
                if self._stray is not None and not self._stray.done():
                    self._stray.set_result(line)
                continue
            self._deliver(message)
        if self._closed:
            return
        if problem is not None:
            self._failure = McpConnectionError(f"MCP server {self.display} {problem}")
            self._kill()
        code = await self._exit_code()
        if self._failure is None:
            self._failure = McpConnectionError(f"MCP server {self.display} {_describe_exit(code)}")
        logger.warning("%s", self._failure.message)
        self._fail_all(self._failure)
        self._finish()

    async def _exit_code(self) -> int | None:
        assert self.process is not None
        try:
            return await asyncio.wait_for(self.process.wait(), self.spec.shutdown_timeout)
        except TimeoutError:
            return None

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stderr = self.process.stderr
        while True:
            try:
                line = await stderr.readline()
            except ValueError:  # an endless line: pass through what fits
                line = await stderr.read(self.spec.max_line_bytes)
            except (ConnectionError, OSError):
                return
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            if self._held is not None:
                self._held.append(text)
            else:
                self._pass_stderr(text)

    def _pass_stderr(self, text: str) -> None:
        if self.spec.on_stderr is not None:
            try:
                self.spec.on_stderr(text)
            except Exception:
                logger.exception("on_stderr callback failed")
        else:
            print(text, file=sys.stderr, flush=True)

    def hold_stderr(self) -> None:
        """Keep the server's stderr lines back until ``release_stderr`` (or ``discard_stderr``)."""
        if self._held is None:
            self._held = []

    def release_stderr(self) -> None:
        """Pass the lines held back on (``hold_stderr``), and every later one as it comes."""
        held, self._held = self._held or [], None
        for text in held:
            self._pass_stderr(text)

    def discard_stderr(self) -> list[str]:
        """Stop holding lines back (``hold_stderr``); the lines held, which are not passed on."""
        held, self._held = self._held or [], None
        return held

    def _kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def _release(self) -> None:
        """Close stdin, give the server ``shutdown_timeout`` to exit, then terminate, then kill."""
        process = self.process
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
                with contextlib.suppress(ConnectionError, OSError):
                    await process.stdin.wait_closed()
            for stop in (None, process.terminate, process.kill):
                if stop is not None:
                    with contextlib.suppress(ProcessLookupError):
                        stop()
                try:
                    await asyncio.wait_for(process.wait(), self.spec.shutdown_timeout)
                    break
                except TimeoutError:
                    continue
            # A grandchild may still hold the pipes open; do not wait on it.
            _, pending = await asyncio.wait(self._tasks, timeout=0.5) if self._tasks else (set(), set())
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


class StdioClientTransport(ClientTransport):
    """A client's way to a server it runs as a child process: ``command`` with ``args``.

    ``env`` is added to this process's environment (or replaces it with ``inherit_env=False``);
    ``cwd`` is the child's working directory. ``on_stderr(line)`` receives the server's stderr
    lines; without it they go to our stderr. ``close()`` closes the child's stdin, waits
    ``shutdown_timeout`` seconds, then terminates and finally kills it. ``starts`` counts the
    processes started (a server that the probe broke is started twice; see the module),
    ``connection`` is the one opened last and ``process`` its child.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        inherit_env: bool = True,
        on_stderr: Callable[[str], Any] | None = None,
        shutdown_timeout: float = 2.0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        if not command:
            raise ValueError("command must be a non-empty string")
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.on_stderr = on_stderr
        self.shutdown_timeout = shutdown_timeout
        self.max_line_bytes = max_line_bytes
        self.identity = stdio_identity(command, self.args, cwd, self.env)
        shown = shlex.join([command, *self.args])
        self.display = shown if len(shown) <= 120 else shown[:117] + "..."
        self.connection: StdioConnection | None = None
        self.starts = 0

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The child process of the connection opened last (None before the first)."""
        return self.connection.process if self.connection is not None else None

    @property
    def owns_server(self) -> bool:
        return True  # the child serves this client alone: the session fallback restarts it (client/fallback.py)

    async def connect(self) -> Transport:
        connection = StdioConnection(self)
        await connection.start()
        self.starts += 1
        self.connection = connection
        return connection

    async def probe(self, ask: ProbeAnswer, *, mode: str, timeout: float) -> dict[str, Any] | None:
        """The probe, which also fails when the server prints a line that is not JSON-RPC and
        sends no answer within ``STRAY_GRACE`` seconds after it; a server it broke is ended (None)
        or reported, as ``probe_recovery`` says."""
        connection = self.connection
        if connection is None:
            return await ask()
        stray = connection.watch_stray()
        connection.hold_stderr()  # what a server the probe breaks says about it is not shown
        probe = asyncio.ensure_future(ask())
        try:
            either: list[asyncio.Future[Any]] = [probe, stray]
            done, _ = await asyncio.wait(either, timeout=PROBE_NUDGE, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                await connection.nudge()
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if not probe.done():
                await asyncio.wait({probe}, timeout=STRAY_GRACE)
            if probe.done():
                failure = probe.exception()
                if not isinstance(failure, TimeoutError | ConnectionError):
                    connection.release_stderr()  # an answer: the server is well
                    return probe.result()
            else:
                line = stray.result().decode("utf-8", "replace")
                failure = _StrayProbeOutput(
                    f"MCP server {connection.display} answered server/discover with a line that is not JSON-RPC: "
                    f"{line:.120}"
                )
        except asyncio.CancelledError:
            connection.release_stderr()
            raise
        finally:
            connection.unwatch_stray()
            if not probe.done():
                probe.cancel()
            await asyncio.gather(probe, return_exceptions=True)
        assert isinstance(failure, Exception)
        return await self._broken_by_probe(connection, failure, mode, timeout)

    async def _broken_by_probe(
        self, connection: StdioConnection, failure: Exception, mode: str, timeout: float
    ) -> dict[str, Any] | None:
        """The probe failed by timeout or connection error: end the server and say so (None), or
        raise what a forced ``mode`` reports."""
        action = probe_recovery(mode, failure)
        if action != "restart":
            connection.release_stderr()
        if isinstance(failure, McpError):
            what = f"{failure.message} when asked server/discover"
        else:
            what = f"MCP server {connection.display} sent no answer to server/discover within {timeout:g} s"
        if action == "refuse":
            raise McpConnectionError(
                f"{what}: it does not speak {mode} (mode 'auto' would start it again and use initialize)"
            ) from failure
        logger.info("%s; starting it again to speak initialize", what)
        await connection.close()  # ends the process (reaping it) and its readers
        said = connection.discard_stderr()
        if said:
            logger.debug("what it wrote on stderr (not shown): %s", "\n".join(said))
        return None


class StdioClient(McpClient):
    """``McpClient(StdioClientTransport(command, args, env, cwd, ...), **options)``: an MCP
    client for a server that runs as a child process over stdio. The transport's options are
    ``inherit_env``, ``on_stderr``, ``shutdown_timeout`` and ``max_line_bytes``; other keyword
    options are McpClient's."""

    transport: StdioClientTransport

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        inherit_env: bool = True,
        on_stderr: Callable[[str], Any] | None = None,
        shutdown_timeout: float = 2.0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        **options: Any,
    ) -> None:
        transport = StdioClientTransport(
            command,
            args,
            env,
            cwd,
            inherit_env=inherit_env,
            on_stderr=on_stderr,
            shutdown_timeout=shutdown_timeout,
            max_line_bytes=max_line_bytes,
        )
        super().__init__(transport, **options)
