"""Keeping a stdio session's stream to itself: ``protocol_stdio()``.

Rules:

- Every way of serving this process's stdin and stdout enters ``protocol_stdio()`` and speaks the
  protocol over the two binary streams it yields: ``serve_stdio``, ``server.run()``, a
  ``StdioServerTransport`` made without streams, ``mcp-sse-server serve --stdio``. A stream given to
  ``StdioServerTransport`` is the caller's and used as it is; given both, nothing here is touched.
- Where ``sys.stdin`` and ``sys.stdout`` are this process's descriptors 0 and 1 (the usual case),
  the protocol reads and writes private duplicates of them, which child processes do not inherit
  (``os.dup``: close-on-exec); descriptor 1 is pointed at stderr (``sys.stderr``'s descriptor;
  the null device when there is none) and descriptor 0 at the null device. So ``print``,
  a logging handler on ``sys.stdout``, C code writing to descriptor 1, and every child process
  (started with copies of 0, 1 and 2) write to stderr and read end of file: none can write into the
  protocol, glue its output onto a reply, or read the client's messages. ``sys.stdout`` and
  ``sys.stdin`` follow by themselves (they are descriptors 1 and 0); what ``sys.stdout`` held in its
  buffer when serving began goes to stderr too, and it is made line-buffered so prints show promptly.
- That holds for the rest of the process: the descriptors are never put back, and a later entry gets
  the same streams. Once the session is over the client may still be reading our stdout until we
  exit, and our stdin has ended: nothing belongs there any more. (A child started while serving
  keeps its copies for its whole life anyway, put back or not.)
- Where they are not (replaced by an embedding program, or by a test runner capturing output), no
  descriptor is touched: the protocol uses their ``buffer`` as found, and while ``protocol_stdio()``
  lasts ``sys.stdout`` is ``sys.stderr``, so ``print`` still misses the protocol. Entered again
  while it lasts, it yields the same streams.
- ``point_fd`` is the one place a descriptor is pointed elsewhere while a private duplicate is kept
  (the CLI's ``stdout_to_stderr`` uses it too). It uses ``os.dup``/``os.dup2`` alone, which Windows
  has as well; the package is tested on POSIX.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import IO, BinaryIO, Final, TypeAlias, cast

__all__ = ["StdioStreams", "point_fd", "protocol_stdio"]

StdioStreams: TypeAlias = tuple[BinaryIO, BinaryIO]

_STDIN: Final = 0
_STDOUT: Final = 1

# Descriptor 0 or 1 -> the protocol's private stream on its duplicate, once claimed (for good).
_claimed: dict[int, BinaryIO] = {}
# The streams of the protocol_stdio() being run, for an entry within it.
_current: list[StdioStreams] = []


def point_fd(fd: int, target: int) -> int:
    """Point descriptor ``fd`` at what ``target`` leads to; return a new descriptor for what ``fd``
    led to before, which child processes do not inherit."""
    private = os.dup(fd)
    try:
        os.dup2(target, fd)
    except OSError:
        os.close(private)
        raise
    return private


def _fd_of(stream: IO[str] | None) -> int | None:
    try:
        return stream.fileno() if stream is not None else None
    except (AttributeError, OSError, ValueError):  # no descriptor: io.StringIO, a capture, a closed file
        return None


def _point_at_null(fd: int, flags: int) -> int:
    """``point_fd(fd, ...)`` with the null device, opened with ``flags``."""
    null = os.open(os.devnull, flags)
    try:
        return point_fd(fd, null)
    finally:
        os.close(null)


def _claim_stdin() -> BinaryIO:
    if _STDIN not in _claimed:
        _claimed[_STDIN] = cast(BinaryIO, os.fdopen(_point_at_null(_STDIN, os.O_RDONLY), "rb"))
    return _claimed[_STDIN]


def _claim_stdout() -> BinaryIO:
    if _STDOUT not in _claimed:
        # Where sys.stderr writes; with none (started with 2 closed), what goes to stdout is dropped.
        stderr = _fd_of(sys.stderr)
        private = point_fd(_STDOUT, stderr) if stderr is not None else _point_at_null(_STDOUT, os.O_WRONLY)
        _claimed[_STDOUT] = cast(BinaryIO, os.fdopen(private, "wb"))
        # Written now, what was printed before serving began goes to stderr, not into the protocol.
        sys.stdout.flush()
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)
    return _claimed[_STDOUT]


def _buffer_of(stream: IO[str] | None, name: str) -> BinaryIO:
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        raise RuntimeError(f"cannot serve over stdio: sys.{name} is {stream!r}, which has no binary buffer")
    return cast(BinaryIO, buffer)


@contextlib.contextmanager
def protocol_stdio() -> Iterator[StdioStreams]:
    """The streams a stdio session reads and writes (stdin, stdout), with this process's stdout
    and stdin kept away from them (see the module)."""
    if _current:
        yield _current[-1]
        return
    stdin = _claim_stdin() if _STDIN in _claimed or _fd_of(sys.stdin) == _STDIN else _buffer_of(sys.stdin, "stdin")
    own_stdout = _STDOUT in _claimed or _fd_of(sys.stdout) == _STDOUT
    stdout = _claim_stdout() if own_stdout else _buffer_of(sys.stdout, "stdout")
    _current.append((stdin, stdout))
    try:
        with contextlib.nullcontext() if own_stdout else contextlib.redirect_stdout(sys.stderr):
            yield stdin, stdout
    finally:
        _current.pop()
