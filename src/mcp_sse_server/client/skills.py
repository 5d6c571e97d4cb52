"""A server's skills (the skills extension, SEP-2640), read the way a host must: ``McpClient.skills``.

Rules:

1. Nothing is read ahead of need: connecting and listing read no skill file;
   ``read()`` reads one, ``load()`` a whole skill, when asked.
2. ``list()`` walks ``skills/list`` pages (at most ``MAX_SKILL_PAGES``; a cursor
   seen before, or a skill URI on two pages, is an error) and checks every entry
   (``skill_format.check_entry``); ``get(uri)`` asks ``skills/get`` for one.
   A malformed listing raises ``SkillFormatError``.
3. A read is verified against the entry, in this order: the file must be listed
   in it, its byte length must equal the listed ``size`` (before any hashing),
   its SHA-256 must equal the listed ``digest``, and a ``SKILL.md``'s parsed
   frontmatter must equal the entry's, key by key. A ``"dynamic"`` entry lists
   no files: the file must lie inside the skill's directory, and only the
   frontmatter is compared. Text is hashed as its UTF-8 bytes, a blob as its
   base64-decoded bytes. Any failure raises ``SkillVerificationError`` and the
   content is not returned; refetch the entry (``get``) before trying again.
4. ``read_directory()`` is sent only to a server that declares
   ``directoryRead: true``; otherwise it fails without sending anything.

>>> async def demo(client: McpClient) -> None:  # doctest: +SKIP
...     skills = client.skills
...     for entry in await skills.list():
...         print(entry.name, entry.description)
...     files = await skills.load(entry)  # SKILL.md first, every file verified
"""

from __future__ import annotations

import base64
import binascii
import builtins
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ..engine.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError
from ..engine.skill_format import (
    SKILL_FILE,
    SKILLS_EXTENSION,
    SkillFormatError,
    check_entry,
    digest_of,
    parse_frontmatter,
)

__all__ = [
    "MAX_SKILL_PAGES",
    "SkillEntry",
    "SkillFile",
    "SkillResource",
    "SkillVerificationError",
    "Skills",
]

# A catalog longer than this many skills/list pages is treated as a server that never stops paging.
MAX_SKILL_PAGES: Final = 50


class SkillVerificationError(SkillFormatError):
    """A skill file does not match its entry (rule 3): ``uri`` is the file, ``reason`` what differs.
    Its content was not used."""

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"{uri}: {reason}")
        self.uri = uri
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SkillResource:
    """One file an entry lists: its URI, ``sha256:`` digest and size in bytes."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """A skill as ``skills/list`` or ``skills/get`` gives it. ``resources`` is None for a
    ``"dynamic"`` skill (generated content: no digests); ``raw`` is the entry as sent."""

    uri: str
    frontmatter: dict[str, Any]
    resources: tuple[SkillResource, ...] | None
    raw: dict[str, Any]

    @classmethod
    def from_dict(cls, entry: object) -> SkillEntry:
        """The entry, checked (``skill_format.check_entry``): SkillFormatError when malformed."""
        problem = check_entry(entry)
        if problem is not None:
            raise SkillFormatError(problem)
        assert isinstance(entry, dict)
        listed = entry["resources"]
        resources = (
            None
            if listed == "dynamic"
            else tuple(SkillResource(item["uri"], item["digest"], item["size"]) for item in listed)
        )
        return cls(entry["uri"], dict(entry["frontmatter"]), resources, entry)

    @property
    def name(self) -> str:
        """The frontmatter's ``name`` (the skill directory's name)."""
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        """The frontmatter's ``description``: what a host shows to choose the skill."""
        return str(self.frontmatter["description"])

    @property
    def root(self) -> str:
        """The skill's directory: its URI without ``/SKILL.md``."""
        return self.uri.rpartition("/")[0]

    @property
    def dynamic(self) -> bool:
        """True when the entry lists no files (``"dynamic"``): reads cannot be checked for integrity."""
        return self.resources is None

    def resource(self, uri: str) -> SkillResource | None:
        """The listed file at ``uri`` (None when not listed)."""
        return next((item for item in self.resources or () if item.uri == uri), None)

    def path_of(self, uri: str) -> str:
        """A file's path inside the skill's directory (``references/FORMS.md``)."""
        return uri.removeprefix(self.root + "/")


@dataclass(frozen=True, slots=True)
class SkillFile:
    """A verified skill file: its URI, bytes, ``text`` when the server sent text, and media type."""

    uri: str
    data: bytes
    text: str | None
    mime_type: str | None


class SkillsClient(Protocol):
    """What ``Skills`` asks of its client (``McpClient``)."""

    @property
    def server_capabilities(self) -> dict[str, Any] | None:
        """The capabilities from initialize or server/discover."""

    def request(self, method: str, params: dict[str, Any] | None = None) -> Awaitable[dict[str, Any]]:
        """Any request; its result."""


class Skills:
    """A server's skills through ``client`` (rules in the module docstring; ``builtins.list`` below
    because ``list`` is a method here)."""

    __slots__ = ("_client",)

    def __init__(self, client: SkillsClient) -> None:
        self._client = client

    @property
    def settings(self) -> dict[str, Any] | None:
        """What the server declares under ``extensions["io.modelcontextprotocol/skills"]`` (None
        when it does not declare the extension, or the client is not connected)."""
        extensions = (self._client.server_capabilities or {}).get("extensions")
        settings = extensions.get(SKILLS_EXTENSION) if isinstance(extensions, dict) else None
        return settings if isinstance(settings, dict) else None

    @property
    def declared(self) -> bool:
        """True when the server declares the skills extension."""
        return self.settings is not None

    @property
    def directory_read(self) -> bool:
        """True when the server declares ``directoryRead: true`` (``read_directory`` may be sent)."""
        return (self.settings or {}).get("directoryRead") is True

    async def list(self) -> list[SkillEntry]:
        """Every skill of every ``skills/list`` page, checked (rule 2). An empty list does not
        mean the server has no skills: it may not list them all."""
        entries: list[SkillEntry] = []
        seen_uris: set[str] = set()
        seen_cursors: set[str] = set()
        cursor: str | None = None
        for page in range(1, MAX_SKILL_PAGES + 1):
            result = await self._client.request("skills/list", {"cursor": cursor} if cursor is not None else None)
            listed = result.get("skills")
            if not isinstance(listed, list):
                raise SkillFormatError(f"page {page} of skills/list has no skills array")
            for item in listed:
                entry = SkillEntry.from_dict(item)
                if entry.uri in seen_uris:
                    raise SkillFormatError(f"skills/list lists {entry.uri} twice (page {page})")
                seen_uris.add(entry.uri)
                entries.append(entry)
            next_cursor = result.get("nextCursor")
            if next_cursor is None or next_cursor == "":
                return entries
            if not isinstance(next_cursor, str):
                raise SkillFormatError(f"page {page} of skills/list has a nextCursor that is not a string")
            if next_cursor in seen_cursors:
                raise SkillFormatError(f"skills/list repeats the cursor {next_cursor!r} (page {page})")
            seen_cursors.add(next_cursor)
            cursor = next_cursor
        raise SkillFormatError(f"skills/list has more than {MAX_SKILL_PAGES} pages")

    async def get(self, uri: str) -> SkillEntry:
        """The entry of the skill whose ``SKILL.md`` is ``uri`` (``skills/get``), listed or not;
        McpError -32602 when the server serves no such skill."""
        result = await self._client.request("skills/get", {"uri": uri})
        entry = SkillEntry.from_dict(result.get("skill"))
        if entry.uri != uri:
            raise SkillFormatError(f"skills/get for {uri} answered the skill {entry.uri}")
        return entry

    async def read(self, entry: SkillEntry, file: str = SKILL_FILE) -> SkillFile:
        """One file of ``entry``, verified (rule 3): ``file`` is its URI or its path inside the
        skill's directory (``SKILL.md``, ``references/FORMS.md``). SkillVerificationError when it
        does not match the entry."""
        uri = file if "://" in file else f"{entry.root}/{file}"
        listed = entry.resource(uri)
        if entry.resources is not None and listed is None:
            raise SkillVerificationError(uri, f"the entry of skill {entry.uri} does not list this file")
        inside = uri.startswith(entry.root + "/") and not {".", ".."} & set(entry.path_of(uri).split("/"))
        if entry.resources is None and not inside:
            raise SkillVerificationError(uri, f"not inside the directory of skill {entry.uri}")
        read = await self._contents(uri)
        if listed is not None:
            if len(read.data) != listed.size:
                raise SkillVerificationError(uri, f"{len(read.data)} bytes where the entry lists {listed.size}")
            digest = digest_of(read.data)
            if digest != listed.digest:
                raise SkillVerificationError(uri, f"its digest {digest} is not the listed {listed.digest}")
        if uri == entry.uri:
            _compare_frontmatter(uri, read, entry.frontmatter)
        return read

    async def load(self, skill: SkillEntry | str) -> builtins.list[SkillFile]:
        """A whole skill (an entry, or the URI of its ``SKILL.md``: then ``skills/get`` first),
        every file verified: ``SKILL.md`` first, then the other listed files; nothing more is read
        after the first failure. A ``"dynamic"`` skill gives its ``SKILL.md`` only."""
        entry = await self.get(skill) if isinstance(skill, str) else skill
        files = [await self.read(entry)]
        for resource in entry.resources or ():
            if resource.uri != entry.uri:
                files.append(await self.read(entry, resource.uri))
        return files

    async def read_directory(self, uri: str) -> builtins.list[dict[str, Any]]:
        """The direct children of the directory ``uri`` across all pages (``resources/directory/read``:
        files with their metadata, subdirectories with mimeType ``inode/directory``), as sent. Only
        for a server that declares ``directoryRead: true``; McpError -32601 without sending otherwise."""
        if not self.directory_read:
            raise McpError(METHOD_NOT_FOUND, "The server does not declare directoryRead for skills: no directory reads")
        children: builtins.list[dict[str, Any]] = []
        seen_cursors: set[str] = set()
        params: dict[str, Any] = {"uri": uri}
        for _ in range(MAX_SKILL_PAGES):
            result = await self._client.request("resources/directory/read", params)
            page = result.get("resources")
            if not isinstance(page, list) or not all(isinstance(item, dict) for item in page):
                raise McpError(INTERNAL_ERROR, f"malformed resources/directory/read result for {uri}")
            children.extend(page)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return children
            if cursor in seen_cursors:
                raise McpError(INTERNAL_ERROR, f"resources/directory/read of {uri} repeats the cursor {cursor!r}")
            seen_cursors.add(cursor)
            params = {"uri": uri, "cursor": cursor}
        raise McpError(INTERNAL_ERROR, f"resources/directory/read of {uri} has more than {MAX_SKILL_PAGES} pages")

    async def _contents(self, uri: str) -> SkillFile:
        """``resources/read`` of ``uri``: its contents item for ``uri`` as bytes (the only item when
        the server names it otherwise)."""
        result = await self._client.request("resources/read", {"uri": uri})
        contents = result.get("contents")
        items = [item for item in contents if isinstance(item, dict)] if isinstance(contents, list) else []
        item = next((item for item in items if item.get("uri") == uri), items[0] if len(items) == 1 else None)
        if item is None:
            raise SkillVerificationError(uri, "resources/read gave no contents for this file")
        mime_type = item.get("mimeType") if isinstance(item.get("mimeType"), str) else None
        if isinstance(item.get("text"), str):
            return SkillFile(uri, item["text"].encode("utf-8"), item["text"], mime_type)
        if isinstance(item.get("blob"), str):
            try:
                data = base64.b64decode(item["blob"], validate=True)
            except (binascii.Error, ValueError):
                raise SkillVerificationError(uri, "its blob is not valid base64") from None
            return SkillFile(uri, data, None, mime_type)
        raise SkillVerificationError(uri, "resources/read gave neither text nor a blob")


def _compare_frontmatter(uri: str, read: SkillFile, expected: dict[str, Any]) -> None:
    """SkillVerificationError unless the frontmatter of the ``SKILL.md`` read equals ``expected``, key by key."""
    try:
        text = read.text if read.text is not None else read.data.decode("utf-8")
        found = parse_frontmatter(text)
    except (UnicodeDecodeError, SkillFormatError) as error:
        raise SkillVerificationError(uri, f"its frontmatter cannot be read: {error}") from None
    for key in sorted(set(found) | set(expected)):
        if key not in found:
            raise SkillVerificationError(uri, f"its frontmatter has no {key!r}, which the entry lists")
        if key not in expected:
            raise SkillVerificationError(uri, f"its frontmatter has {key!r}, which the entry does not list")
        if not _same(found[key], expected[key]):
            raise SkillVerificationError(uri, f"its frontmatter's {key!r} differs from the entry's")


def _same(one: Any, other: Any) -> bool:
    """JSON equality: ``True`` is not ``1``, ``1`` is ``1.0`` (JSON has one number type)."""
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_same(one[key], other[key]) for key in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(_same(a, b) for a, b in zip(one, other, strict=True))
    if isinstance(one, int | float) and isinstance(other, int | float):
        return one == other
    return type(one) is type(other) and bool(one == other)
