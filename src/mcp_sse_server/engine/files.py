"""Serving files from a directory without serving the rest of the disk.

A resource template such as ``file:///{+path}`` hands its reader whatever path
the client wrote, percent-decoded: ``file:///../../etc/passwd`` and
``file:///%2e%2e/%2e%2e/etc/passwd`` both arrive as ``../../etc/passwd``.
``resolve_under(root, path)`` turns such a path into a file under ``root`` or
refuses it with an ``McpError`` the client sees (-32602, one line saying why);
``file_template(root)`` is a ready resource template built on it.

>>> server.add_resource_template(file_template("docs", "file:///{+path}", "project-file"))  # doctest: +SKIP
>>> resolve_under("docs", "guide/intro.md")  # doctest: +SKIP
PosixPath('/home/me/project/docs/guide/intro.md')
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from urllib.parse import unquote

from .context import RequestContext
from .jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from .types import BlobResourceContents, ResourceTemplate, TextResourceContents

__all__ = ["file_template", "resolve_under"]


def _refuse(relative: str, why: str) -> McpError:
    return McpError(INVALID_PARAMS, f"Refused path {relative!r}: {why}", {"path": relative})


def _check_lexically(relative: str, original: str) -> None:
    if "\x00" in relative:
        raise _refuse(original, "it contains a NUL byte")
    if PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).anchor:
        raise _refuse(original, "absolute paths are not served, only paths relative to the root")
    if ".." in relative.replace("\\", "/").split("/"):
        raise _refuse(original, "'..' segments are not allowed")


def resolve_under(root: str | os.PathLike[str], relative: str) -> Path:
    """The real path of ``relative`` inside ``root``; McpError(-32602) if it could lead outside.

    Refused: NUL bytes, absolute paths (``/etc``, ``C:\\``, ``\\\\server``), any ``..``
    segment (also when still percent-encoded, ``%2e%2e``, and with ``\\`` as separator),
    an empty path, and a path whose symbolic links lead outside ``root``. The
    file need not exist. Symlinks are resolved now: a link replaced between this
    check and the open can still escape, so do not serve a directory that
    untrusted users can write to.
    """
    if not isinstance(relative, str) or not relative.strip("/"):
        raise _refuse(str(relative), "a file path under the root is required")
    _check_lexically(relative, relative)
    decoded = unquote(relative)
    if decoded != relative:  # a second layer of encoding, such as %252e%252e from the URI
        _check_lexically(decoded, relative)
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base / relative.lstrip("/")))
    if target != base and base not in target.parents:
        raise _refuse(relative, "it leads outside the root through a symbolic link")
    return target


def file_template(
    root: str | os.PathLike[str],
    uri_template: str = "file:///{+path}",
    name: str = "files",
    *,
    variable: str = "path",
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    max_bytes: int = 10 * 1024 * 1024,
) -> ResourceTemplate:
    """A resource template serving the files under ``root`` (never outside it).

    ``variable`` names the template variable holding the path (use ``{+path}``
    so it may span ``/``). UTF-8 files are text contents, others blobs; the
    MIME type is ``mime_type`` or guessed from the name. A refused path is
    -32602 (see ``resolve_under``); a missing or unreadable file, a directory,
    or a file larger than ``max_bytes`` is -32002 with ``data.uri``.
    """

    def read(
        uri: str, variables: dict[str, str], context: RequestContext
    ) -> list[TextResourceContents | BlobResourceContents]:
        path = resolve_under(root, variables.get(variable, ""))
        try:
            if path.stat().st_size > max_bytes:
                raise McpError(RESOURCE_NOT_FOUND, f"Resource too large to serve: {uri}", {"uri": uri})
            data = path.read_bytes()
        except OSError:
            raise McpError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri}) from None
        kind = mime_type or mimetypes.guess_type(path.name)[0]
        try:
            return [TextResourceContents(uri, data.decode("utf-8"), kind or "text/plain")]
        except UnicodeDecodeError:
            return [BlobResourceContents.from_bytes(uri, data, kind or "application/octet-stream")]

    return ResourceTemplate(uri_template, name, read, title=title, description=description, mime_type=mime_type)
