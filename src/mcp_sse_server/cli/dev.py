"""``dev``: serve TARGET over HTTP as ``serve`` does, restarting it whenever its source changes.

The parent serves nothing. It runs ``python -m mcp_sse_server serve`` with the words it was
given, relays the child's stdout (and, once the child prints its endpoint, the command that opens
the MCP Inspector on it), and every half second compares the modification times of the target's
file and of the ``.py`` files beside it. On a change it stops the child (SIGTERM, SIGKILL after
the shutdown deadline) and starts another, on the same port when ``--port 0`` picked one.

The child runs in a process group of its own, so Ctrl-C reaches the parent alone, which then
stops the child once; on Linux the child also gets SIGTERM should the parent die
(``prctl(PR_SET_PDEATHSIG)``). A first child that exits before it listens (a usage error, say)
ends ``dev`` with its status; a later one is reported, and the next change starts another.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any, Final

import click

from .serve import http_options, target_source

POLL_SECONDS: Final = 0.5
INSPECTOR: Final = "npx @modelcontextprotocol/inspector --transport http --server-url {endpoint}"
_ARGS: Final = "mcp_sse_server.dev.args"  # ctx.meta key: the words the command was given
_ENDPOINT: Final = re.compile(r"^Serving \S+ at (?P<url>https?://\S+)$")
_STOP: Final = (signal.SIGINT, signal.SIGTERM)


class _KeepsArguments(click.Command):
    """A command that remembers the words it was given, to hand them on to ``serve`` unchanged."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGS] = list(args)
        return super().parse_args(ctx, args)


class _Watcher:
    """The modification times (and sizes) of a source file and of the ``.py`` files beside it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.directory = os.path.dirname(source)
        self._seen = self._scan()

    def _scan(self) -> dict[str, tuple[int, int]]:
        paths = {self.source}
        try:
            paths.update(
                os.path.join(self.directory, name) for name in os.listdir(self.directory) if name.endswith(".py")
            )
        except OSError:
            pass  # the directory is gone for a moment (a checkout switching branches): look again next time
        found: dict[str, tuple[int, int]] = {}
        for path in paths:
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found[path] = (stat.st_mtime_ns, stat.st_size)
        return found

    def describe(self) -> str:
        """What is watched, for people: ``app.py and the .py files beside it``."""
        return f"{_shown(self.source)} and the .py files beside it"

    def changed(self) -> str | None:
        """A file changed, added or removed since the last look, if any (as people would name it)."""
        now = self._scan()
        if now == self._seen:
            return None
        changed = sorted(path for path in now.keys() | self._seen.keys() if now.get(path) != self._seen.get(path))
        self._seen = now
        return _shown(changed[0])


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it is below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


class _Child:
    """One ``serve`` process, its stdout relayed line by line; its stderr is ours."""

    def __init__(self, args: Sequence[str]) -> None:
        from .errors import debugging
        from .workers import signal_when_parent_dies

        env = dict(os.environ)
        if debugging():
            env["MCP_SSE_SERVER_DEBUG"] = "1"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_sse_server", "serve", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            process_group=0,
            preexec_fn=signal_when_parent_dies,  # nothing else runs in this process when it forks
        )
        assert self.process.stdout is not None
        self._stdout = self.process.stdout.fileno()
        self._pending = b""
        self._open = True
        self.endpoint: str | None = None
        self.reported = False  # its exit was told

    def relay(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for output; print each whole line, noting the endpoint."""
        import select

        if not self._open:
            time.sleep(timeout)
            return
        ready, _, _ = select.select([self._stdout], [], [], timeout)
        if not ready:
            return
        chunk = os.read(self._stdout, 65536)
        if not chunk:
            self._open = False
            chunk = b"\n" if self._pending else b""
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            click.echo(line)
            match = _ENDPOINT.match(line)
            if match is not None:
                self.endpoint = match["url"]
        sys.stdout.flush()

    def drain(self) -> None:
        """Relay what an exited child still had to say."""
        while self._open:
            self.relay(POLL_SECONDS)

    def stop(self, deadline: float, signals: list[int]) -> None:
        """SIGTERM, then SIGKILL after ``deadline`` s or at a further signal in ``signals``."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            seen = len(signals)
            until = time.monotonic() + deadline
            while self.process.poll() is None:
                if len(signals) > seen or time.monotonic() >= until:
                    self.process.kill()
                    self.process.wait()
                    break
                try:
                    self.process.wait(0.1)
                except subprocess.TimeoutExpired:
                    pass
        self.drain()
        assert self.process.stdout is not None
        self.process.stdout.close()


def _on_port(args: list[str], port: int) -> list[str]:
    """``args`` asking for ``port``: a later --port wins, so it goes last (before a ``--``)."""
    at = args.index("--") if "--" in args else len(args)
    return [*args[:at], "--port", str(port), *args[at:]]


@click.command(cls=_KeepsArguments)
@http_options
@click.pass_context
def dev(ctx: click.Context, /, target: str | None, port: int, shutdown_deadline: float | None, **_: Any) -> None:
    """Serve TARGET over HTTP as `serve` does, and restart it whenever its source changes.

    Watched: the TARGET's file (path/to/file.py:attr) or its module's file (module:attr), and
    the .py files in that directory, every half second. Once it listens, the command that opens
    the MCP Inspector on it is printed. TARGET and the options are those of `serve`. Ctrl-C or
    SIGTERM stops it.

    \b
    Example:
      mcp-sse-server dev my_server.py:build --port 9000
    """
    from urllib.parse import urlsplit

    from ..transport.http.limits import DEFAULT_LIMITS
    from .workers import STOP_MARGIN

    watcher = _Watcher(target_source(target))
    args: list[str] = ctx.meta[_ARGS]
    deadline = (shutdown_deadline if shutdown_deadline is not None else DEFAULT_LIMITS.shutdown_deadline) + STOP_MARGIN
    signals: list[int] = []
    previous = {number: signal.signal(number, lambda number, _: signals.append(number)) for number in _STOP}
    child = _Child(args)
    announced: str | None = None
    try:
        while not signals:
            child.relay(POLL_SECONDS)
            if child.endpoint is not None and child.endpoint != announced:
                announced = child.endpoint
                click.echo(f"Inspect it: {INSPECTOR.format(endpoint=announced)}")
                sys.stdout.flush()
                click.echo(f"Watching {watcher.describe()} for changes.", err=True)
            status = child.process.poll()
            if status is not None and not child.reported:
                child.drain()
                child.reported = True
                if announced is None:  # never listened: the same error would come at every restart
                    ctx.exit(status if status > 0 else 1)
                click.echo(f"serve exited with status {status}; waiting for a change to start it again", err=True)
            changed = watcher.changed()
            if changed is not None:
                click.echo(f"Reloading: {changed} changed", err=True)
                child.stop(deadline, signals)
                kept = urlsplit(announced).port if port == 0 and announced is not None else None
                child = _Child(_on_port(args, kept) if kept else args)
    finally:
        child.stop(deadline, signals)
        for number, handler in previous.items():
            signal.signal(number, handler)
