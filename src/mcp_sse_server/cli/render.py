"""Showing people what a server sent: tool results (with images, audio and blobs saved to files),
progress as a bar or lines, and log messages, with the server's control characters defused; and
keeping stdout for the command's own output while a server runs in this process."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Final

from .errors import EXIT_FAILURE, PROG

if TYPE_CHECKING:
    from ..engine.types import CallToolResult

# Carriage return, then erase the line: where the progress bar is redrawn.
_CLEAR_LINE: Final = "\r\x1b[2K"


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON that keeps non-ASCII text readable."""
    import json

    return json.dumps(value, indent=2, ensure_ascii=False)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """For the duration, what is written to stdout goes to stderr: by this process (``print``) and by
    the programs it starts, since file descriptor 1 itself is pointed at stderr (put back afterwards;
    serving over stdio, which keeps it so, is ``transport/stdio_fds.py``). Where stdout is no real
    descriptor (embedded, captured) only ``sys.stdout`` is redirected."""
    from ..transport.stdio_fds import point_fd

    try:
        stdout_fd, stderr_fd = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    sys.stdout.flush()
    real = point_fd(stdout_fd, stderr_fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(real, stdout_fd)
        os.close(real)


def safe_stem(text: str) -> str:
    """``text`` with everything but letters, digits, ``_``, ``.`` and ``-`` replaced: a safe file or module name."""
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "result"


class OutputDir:
    """Where images, audio and blobs from results are saved; a temporary directory is made on first use."""

    def __init__(self, path: str | None) -> None:
        self._path = path

    @property
    def path(self) -> str:
        if self._path is None:
            import tempfile

            self._path = tempfile.mkdtemp(prefix=f"{PROG}-")
        os.makedirs(self._path, exist_ok=True)
        return self._path

    def save(self, stem: str, data: bytes, mime_type: str | None) -> str:
        """Write ``data`` to a new file named after ``stem`` (never overwriting one); return its path."""
        import mimetypes

        extension = (mimetypes.guess_extension(mime_type or "") or ".bin") if mime_type else ".bin"
        directory = self.path
        candidate = os.path.join(directory, f"{stem}{extension}")
        counter = 1
        while True:
            try:
                with open(candidate, "xb") as handle:
                    handle.write(data)
                return candidate
            except FileExistsError:
                counter += 1
                candidate = os.path.join(directory, f"{stem}-{counter}{extension}")


def _decode(data: str) -> bytes | None:
    import base64
    import binascii

    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def size_text(count: int) -> str:
    """A byte count for people: ``79 bytes``, ``12 KiB``."""
    return f"{count} bytes" if count < 10240 else f"{count / 1024:.0f} KiB"


def description_lines(text: str | None, whole: bool, *, indent: int) -> list[str]:
    """A listed item's description, indented under it: its first line, or all of it when ``whole``."""
    stripped = (text or "").strip()
    lines = stripped.splitlines() if whole else stripped.splitlines()[:1]
    return [" " * indent + line if line else "" for line in lines]


def _is_json_of(text: str, value: Any) -> bool:
    import json

    stripped = text.strip()
    if not stripped.startswith("{"):
        return False
    try:
        return bool(json.loads(stripped) == value)
    except ValueError:
        return False


def render_result(
    result: CallToolResult,
    *,
    out: IO[str],
    err: IO[str],
    output_dir: OutputDir,
    stem: str = "result",
    show_structured: bool = False,
) -> int:
    """Print a tool result for people; return the exit status (1 for an isError result).

    Text blocks print as text. Structured content prints as indented JSON when
    no text block says something else (a text block that is just the JSON of
    the structured content is replaced by it) or when ``show_structured``.
    Images, audio and binary resources are saved under ``output_dir`` and their
    paths printed; resource links and embedded resources get a summary line.
    An isError result goes to ``err``.
    """
    from ..engine.types import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    stream = err if result.is_error else out
    structured = result.structured_content
    printed_structured = False

    def emit(text: str) -> None:
        stream.write(text if text.endswith("\n") else text + "\n")

    def emit_structured() -> None:
        nonlocal printed_structured
        if structured is not None and not printed_structured:
            printed_structured = True
            emit(pretty_json(structured))

    def mirrors_structured(block: TextContent) -> bool:
        return structured is not None and _is_json_of(block.text, structured)

    def save(label: str, data_b64: str, mime_type: str | None, index: int) -> None:
        data = _decode(data_b64)
        if data is None:
            emit(f"[{label}: invalid base64 data, not saved]")
        else:
            path = output_dir.save(f"{stem}-{index}", data, mime_type)
            emit(f"[{label}, {size_text(len(data))}, saved to {path}]")

    readable_text = any(isinstance(block, TextContent) and not mirrors_structured(block) for block in result.content)
    if result.is_error and not result.content and structured is None:
        emit("the tool reported an error without a message")
    for index, block in enumerate(result.content, start=1):
        if isinstance(block, TextContent):
            if mirrors_structured(block):
                if not readable_text:
                    emit_structured()
                continue
            emit(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            save(f"{kind} {block.mime_type}", block.data, block.mime_type, index)
        elif isinstance(block, ResourceLink):
            details = ", ".join(
                part
                for part in (block.mime_type, size_text(block.size) if isinstance(block.size, int) else None)
                if part
            )
            line = f"[resource link {block.uri}" + (f" ({block.name})" if block.name else "")
            line += (f", {details}" if details else "") + "]"
            if block.description:
                line += f" {block.description}"
            emit(line)
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            mime = f", {resource.mime_type}" if resource.mime_type else ""
            if isinstance(resource, TextResourceContents):
                emit(f"[resource {resource.uri}{mime}, {len(resource.text)} characters]")
                emit(resource.text)
            else:
                save(f"resource {resource.uri}{mime}", resource.blob, resource.mime_type, index)
    if structured is not None and (show_structured or not readable_text):
        emit_structured()
    stream.flush()
    return EXIT_FAILURE if result.is_error else 0


def _printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters shown as escapes: a server must not be able to drive the
    user's terminal (move the cursor, retitle the window) through a progress or log message."""
    import re

    pattern = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]" if keep_newlines else r"[\x00-\x08\x0a-\x1f\x7f-\x9f]"
    return re.sub(pattern, lambda match: repr(match.group())[1:-1], text)


class ProgressReporter:
    """Shows progress notifications on ``stream`` (a bar on a terminal, plain lines otherwise) and
    log notifications as lines, keeping the two from overwriting each other."""

    def __init__(self, stream: IO[str], *, tty: bool | None = None, width: int | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self._width = width
        self._bar: str | None = None

    def _columns(self) -> int:
        if self._width is not None:
            return self._width
        import shutil

        return max(40, shutil.get_terminal_size((80, 24)).columns)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Show one progress notification: redraw the bar on a terminal, else print a line."""
        amount = f"{progress:g}" + (f"/{total:g}" if total else "")
        message = _printable(message) if message else None
        if not self.tty:
            percent = f" ({100 * progress / total:.0f}%)" if total else ""
            self.stream.write(f"progress: {amount}{percent}" + (f" {message}" if message else "") + "\n")
            self.stream.flush()
            return
        columns = self._columns()
        if total:
            fraction = min(max(progress / total, 0.0), 1.0)
            cells = 24
            filled = round(fraction * cells)
            bar = f"[{'#' * filled}{'.' * (cells - filled)}] {fraction * 100:3.0f}% {amount}"
        else:
            bar = f"[{'.' * 24}] {amount}"
        if message:
            bar += f" {message}"
        self._bar = bar[: columns - 1]
        self.stream.write(_CLEAR_LINE + self._bar)
        self.stream.flush()

    def log(self, params: Mapping[str, Any]) -> None:
        """Show one ``notifications/message`` as a line above the bar."""
        import json

        level = params.get("level", "info")
        logger = params.get("logger")
        data = params.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        line = _printable(f"[{level}]" + (f" {logger}:" if logger else "") + f" {text}", keep_newlines=True)
        if self.tty and self._bar is not None:
            self.stream.write(_CLEAR_LINE + line + "\n" + self._bar)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """Clear the bar so the result starts on a clean line."""
        if self.tty and self._bar is not None:
            self.stream.write(_CLEAR_LINE)
            self.stream.flush()
            self._bar = None
