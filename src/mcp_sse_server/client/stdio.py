"""StdioClient: run an MCP server as a child process and talk to it over its
stdin and stdout, one JSON-RPC message per line.

The child's stderr is passed through line by line (to our stderr, or to
``on_stderr``). A child that exits while calls are pending fails them with an
error naming the command and its exit status; ``close()`` closes its stdin,
waits briefly, then terminates and finally kills it.

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
from typing import Any, Final

from ..jsonrpc import JsonRpcMessage, McpError, RequestId, encode_message, parse_message
from ..transport.base import Transport
from ._common import ClientTransport, McpConnectionError, RemoteClient

__all__ = ["StdioClient", "StdioClientTransport"]

logger = logging.getLogger("mcp_sse_server.client")

DEFAULT_MAX_LINE_BYTES: Final = 32 * 1024 * 1024


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "closed its stdout"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


class StdioClientTransport(ClientTransport):
    """One child process speaking newline-delimited JSON-RPC (used by StdioClient)."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        on_stderr: Callable[[str], Any] | None = None,
        shutdown_timeout: float = 2.0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        super().__init__()
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.on_stderr = on_stderr
        self.shutdown_timeout = shutdown_timeout
        self.max_line_bytes = max_line_bytes
        self.process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._failure: McpConnectionError | None = None
        shown = shlex.join([command, *self.args])
        self.display = shown if len(shown) <= 120 else shown[:117] + "..."

    async def start(self) -> None:
        """Spawn the process; McpConnectionError when it cannot be started."""
        env = {**os.environ, **self.env} if self.inherit_env else dict(self.env)
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=self.cwd,
                limit=self.max_line_bytes,
            )
        except FileNotFoundError as error:
            if self.cwd is not None and not os.path.isdir(self.cwd):  # noqa: ASYNC240 - only on failure
                reason = f"working directory {os.fspath(self.cwd)!r} does not exist"
            else:
                reason = f"command {self.command!r} not found"
            raise McpConnectionError(f"Cannot start MCP server {self.display}: {reason}") from error
        except OSError as error:
            raise McpConnectionError(f"Cannot start MCP server {self.display}: {error.strerror or error}") from error
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read_stdout()), loop.create_task(self._read_stderr())]

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
                problem = f"sent a message longer than {self.max_line_bytes} bytes"
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
            return await asyncio.wait_for(self.process.wait(), self.shutdown_timeout)
        except TimeoutError:
            return None

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stderr = self.process.stderr
        while True:
            try:
                line = await stderr.readline()
            except ValueError:  # an endless line: pass through what fits
                line = await stderr.read(self.max_line_bytes)
            except (ConnectionError, OSError):
                return
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            if self.on_stderr is not None:
                try:
                    self.on_stderr(text)
                except Exception:
                    logger.exception("on_stderr callback failed")
            else:
                print(text, file=sys.stderr, flush=True)

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
                    await asyncio.wait_for(process.wait(), self.shutdown_timeout)
                    break
                except TimeoutError:
                    continue
            # A grandchild may still hold the pipes open; do not wait on it.
            _, pending = await asyncio.wait(self._tasks, timeout=0.5) if self._tasks else (set(), set())
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


class StdioClient(RemoteClient):
    """An MCP client for a server that runs as a child process over stdio.

    ``env`` is added to this process's environment (or replaces it with
    ``inherit_env=False``). ``on_stderr(line)`` receives the server's stderr
    lines; without it they go to our stderr. Other keyword options are
    McpClient's.
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
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if not command:
            raise ValueError("command must be a non-empty string")
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self._transport_options: dict[str, Any] = {
            "inherit_env": inherit_env,
            "on_stderr": on_stderr,
            "shutdown_timeout": shutdown_timeout,
            "max_line_bytes": max_line_bytes,
        }
        self.transport: StdioClientTransport | None = None

    async def _open(self) -> Transport:
        transport = StdioClientTransport(self.command, self.args, env=self.env, cwd=self.cwd, **self._transport_options)
        await transport.start()
        self.transport = transport
        return transport

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self.transport.process if self.transport is not None else None
