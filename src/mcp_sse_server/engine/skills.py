"""Skills read from directories, as the skills extension (SEP-2640) serves them: a ``SkillCatalog``.

``McpServer.add_skills(path)`` loads one; the server answers ``skills/list``,
``skills/get`` and ``resources/directory/read`` from it and serves its files
with ``resources/read`` (the formats are ``skill_format.py``'s).

Rules, kept here and nowhere else:

1. A directory holding a ``SKILL.md`` is one skill; any other directory given
   holds skills: every directory below it with a ``SKILL.md`` is one (skills
   inside a skill too). A skill's path is its directory's path below the one
   given, after the optional prefix; its last segment must be the
   frontmatter's ``name``. Skill ``a/b/pdf`` is served as
   ``skill://a/b/pdf/SKILL.md``, its root directory as ``skill://a/b/pdf``.
2. Every regular file of a skill's directory is published, once, files of
   skills inside it included. Names starting with ``.`` are skipped. A symlink
   is followed to a regular file inside the skill's directory; a symlink that
   leads out, a symlinked directory and a special file are registration errors.
3. A catalog is a snapshot: the bytes are read once and served from memory,
   so a listing's digests and what a read returns always agree; files changed
   on disk change nothing until the skills are loaded again.
4. Skills, files and directory children are ordered by URI. A skill breaking a
   limit of rule 4 of ``skill_format.py`` is refused, not published.
5. The extension's methods (``SkillRegistry``) are -32601 on a server without
   skills; ``skills/get`` and ``resources/directory/read`` name a skill's
   ``SKILL.md`` and one of its directories (-32602 for any other URI).
"""

from __future__ import annotations

import copy
import functools
import mimetypes
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import quote, unquote

from .context import RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from .registry import Pager, params_str
from .skill_format import (
    DIRECTORY_MIME_TYPE,
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    RESERVED_PREFIX,
    SKILL_FILE,
    SKILL_MIME_TYPE,
    SkillFormatError,
    check_skill_name,
    digest_of,
    parse_frontmatter,
)
from .types import BlobResourceContents, ResourceContents, TextResourceContents

__all__ = ["NO_SKILLS", "Skill", "SkillCatalog", "SkillFile", "SkillRegistry", "load_skills"]

SCHEME: Final = "skill://"
# A path segment above a skill's own (an organisational prefix): URI-safe as it is, and
# lowercase, because the first one is the URI's authority, which URL parsers lowercase.
_SEGMENT: Final = re.compile(r"[a-z0-9][a-z0-9._~-]*")
_TEXT_TYPES: Final = {".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain"}


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One published file: its URI, bytes and media type (``path`` is where it was read, for messages)."""

    uri: str
    name: str
    data: bytes
    mime_type: str
    path: Path
    text: str | None  # the bytes as UTF-8 when they are, served as text; else served as a blob
    digest: str  # skill_format.digest_of(data)

    def contents(self) -> ResourceContents:
        """The file as ``resources/read`` returns it."""
        if self.text is not None:
            return TextResourceContents(self.uri, self.text, self.mime_type)
        return BlobResourceContents.from_bytes(self.uri, self.data, self.mime_type)

    def row(self) -> dict[str, Any]:
        """The file as a directory read lists it."""
        return {"uri": self.uri, "name": self.name, "mimeType": self.mime_type, "size": len(self.data)}


@dataclass(frozen=True)
class Skill:
    """One skill: its ``SKILL.md`` URI, root directory URI, frontmatter and every file it publishes."""

    uri: str
    root: str
    frontmatter: Mapping[str, Any]
    files: tuple[SkillFile, ...]

    @property
    def name(self) -> str:
        """The frontmatter's ``name``."""
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        """The frontmatter's ``description``."""
        return str(self.frontmatter["description"])

    @functools.cached_property
    def entry(self) -> dict[str, Any]:
        """The skill as ``skills/list`` and ``skills/get`` give it (built once: treat it as read-only)."""
        return {
            "uri": self.uri,
            "frontmatter": copy.deepcopy(dict(self.frontmatter)),
            "resources": [{"uri": file.uri, "digest": file.digest, "size": len(file.data)} for file in self.files],
        }


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """An immutable set of skills (rule 3): entries, files and directories by URI."""

    skills: tuple[Skill, ...] = ()
    files: Mapping[str, SkillFile] = field(default_factory=lambda: MappingProxyType({}))
    # directory URI -> its direct children as directory reads list them (rule 4's order)
    directories: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=lambda: MappingProxyType({}))

    # SKILL.md URI -> its skill (made from ``skills``: skills/get looks one up by URI)
    by_uri: Mapping[str, Skill] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_uri", MappingProxyType({skill.uri: skill for skill in self.skills}))

    def __bool__(self) -> bool:
        return bool(self.skills)

    def skill(self, uri: str) -> Skill | None:
        """The skill whose ``SKILL.md`` is ``uri``, or None."""
        return self.by_uri.get(uri)

    def entries(self) -> list[dict[str, Any]]:
        """Every skill's entry, in URI order."""
        return [skill.entry for skill in self.skills]

    def merged(self, other: SkillCatalog) -> SkillCatalog:
        """Both catalogs as one; SkillFormatError when they publish a skill or file at the same URI."""
        if not self.skills:
            return other  # (the usual case, and a server built per session pays nothing for it)
        for uri in other.files:
            if uri in self.files:
                raise SkillFormatError(
                    f"{uri} is published twice: by {self.files[uri].path} and by {other.files[uri].path}"
                )
        files = {**self.files, **other.files}
        skills = tuple(sorted(self.skills + other.skills, key=lambda skill: skill.uri))
        return SkillCatalog(skills, MappingProxyType(files), MappingProxyType(_directories(skills, files)))


# The catalog of a server without skills: one for every server (a server built per session stays small).
NO_SKILLS: Final = SkillCatalog()


class SkillRegistry:
    """The skills a server serves (``McpServer.add_skills``), and the skills extension's methods:
    ``skills/list``, ``skills/get`` and ``resources/directory/read`` (rule 5)."""

    __slots__ = ("catalog", "pager")

    def __init__(self, pager: Pager | None = None) -> None:
        self.catalog = NO_SKILLS
        self.pager = pager if pager is not None else Pager()

    def add(self, catalog: SkillCatalog) -> SkillCatalog:
        """Serve ``catalog``'s skills too; the merged catalog (SkillFormatError on a URI served twice)."""
        self.catalog = self.catalog.merged(catalog)
        return self.catalog

    def __bool__(self) -> bool:
        return bool(self.catalog)

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve the extension's methods from this registry."""
        handlers.register("skills/list", self.handle_list)
        handlers.register("skills/get", self.handle_get)
        handlers.register("resources/directory/read", self.handle_read_directory)

    def _require(self) -> SkillCatalog:
        if not self.catalog:
            raise McpError(METHOD_NOT_FOUND, "This server does not offer skills")
        return self.catalog

    async def handle_list(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``skills/list``: every skill's entry, paged."""
        return self.pager.page("skills", "skills", self._require().entries(), params)

    async def handle_get(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``skills/get``: the entry of the skill whose ``SKILL.md`` is ``uri`` (-32602 otherwise)."""
        catalog = self._require()
        uri = params_str(params, "uri")
        skill = catalog.skill(uri)
        if skill is None:
            raise McpError(INVALID_PARAMS, f"Not the SKILL.md of a skill served here: {uri}", {"uri": uri})
        return {"skill": skill.entry}

    async def handle_read_directory(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/directory/read``: a skill directory's children, paged (-32602 for another URI)."""
        catalog = self._require()
        uri = params_str(params, "uri")
        children = catalog.directories.get(uri)
        if children is None:
            raise McpError(INVALID_PARAMS, f"Not a directory of a skill served here: {uri}", {"uri": uri})
        return self.pager.page("directory", "resources", list(children), params)


def load_skills(path: str | os.PathLike[str], *, prefix: str | None = None) -> SkillCatalog:
    """The skills at ``path`` (rule 1), under the optional ``prefix`` (segments joined by ``/``).

    SkillFormatError names the file and what is wrong: no ``SKILL.md`` at all, a
    frontmatter without ``name`` or ``description``, a name that is not the
    directory's, a symlink out of a skill, a skill over the limits, ...
    """
    top = Path(path)
    if not top.is_dir():
        raise SkillFormatError(f"{top} is not a directory of skills")
    base = [] if prefix is None else prefix.strip("/").split("/")
    for segment in base:
        _check_segment(segment, f"the prefix {prefix!r}")
    top_is_skill = (top / SKILL_FILE).is_file()
    found = sorted(_skill_directories(top))
    if not found:
        raise SkillFormatError(f"{top} holds no {SKILL_FILE}: a skill is a directory with a {SKILL_FILE}")
    skills = []
    files: dict[str, SkillFile] = {}
    for directory in found:
        relative = list(directory.relative_to(top).parts)
        if top_is_skill:  # (top is a skill: rule 1 names it, and the skills inside it, after its directory)
            relative.insert(0, top.resolve().name)
        for segment in relative[:-1]:
            _check_segment(segment, str(directory))
        skill = _load_skill(directory, "/".join([*base, *relative]))
        skills.append(skill)
        for file in skill.files:
            files.setdefault(file.uri, file)  # (a skill inside another publishes its files twice: the same bytes)
    skills.sort(key=lambda skill: skill.uri)
    return SkillCatalog(tuple(skills), MappingProxyType(files), MappingProxyType(_directories(skills, files)))


def _skill_directories(top: Path) -> Iterator[Path]:
    """Every directory at or below ``top`` holding a ``SKILL.md`` (not under dot-names)."""
    for directory, subdirectories, names in os.walk(top):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        if SKILL_FILE in names:
            yield Path(directory)


def _check_segment(segment: str, where: str) -> None:
    if not _SEGMENT.fullmatch(segment):
        raise SkillFormatError(
            f"{where}: the path segment {segment!r} must be lowercase letters, digits and . _ ~ - "
            "(it becomes part of the skill's URI)"
        )


def _load_skill(directory: Path, skill_path: str) -> Skill:
    """One skill read from ``directory``, published at ``skill://<skill_path>``."""
    skill_md = directory / SKILL_FILE
    try:
        text = skill_md.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SkillFormatError(f"{skill_md} is not UTF-8 text") from None
    try:
        frontmatter = parse_frontmatter(text)
    except SkillFormatError as error:
        raise SkillFormatError(f"{skill_md}: {error}") from None
    for key in ("name", "description"):
        value = frontmatter.get(key)
        if not isinstance(value, str) or not value.strip():
            raise SkillFormatError(f"{skill_md}: the frontmatter needs a non-empty {key!r} string")
    name = frontmatter["name"]
    problem = check_skill_name(name)
    if problem is not None:
        raise SkillFormatError(f"{skill_md}: {problem}")
    last = skill_path.rsplit("/", 1)[-1]
    if name != last:
        raise SkillFormatError(
            f"{skill_md}: the skill is named {name!r} but its directory is {last!r}: they must agree"
        )
    metadata = frontmatter.get("metadata")
    if isinstance(metadata, dict):
        reserved = sorted(key for key in metadata if key.startswith(RESERVED_PREFIX))
        if reserved:
            raise SkillFormatError(f"{skill_md}: metadata keys starting {RESERVED_PREFIX!r} are reserved: {reserved}")
    root = SCHEME + skill_path
    files = sorted(_read_files(directory, root), key=lambda file: file.uri)
    if len(files) > MAX_SKILL_FILES:
        raise SkillFormatError(f"{directory}: {len(files)} files, more than the {MAX_SKILL_FILES} a skill may publish")
    total = sum(len(file.data) for file in files)
    if total > MAX_SKILL_BYTES:
        raise SkillFormatError(f"{directory}: {total} bytes, more than the {MAX_SKILL_BYTES} a skill may publish")
    return Skill(f"{root}/{SKILL_FILE}", root, MappingProxyType(frontmatter), tuple(files))


def _read_files(directory: Path, root: str) -> Iterator[SkillFile]:
    """Every file rule 2 publishes from the skill at ``directory``."""
    inside = directory.resolve()
    for entry in _walk(directory):
        relative = entry.relative_to(directory)
        where = entry.lstat()
        if stat.S_ISLNK(where.st_mode):
            target = entry.resolve()
            if not target.is_relative_to(inside):
                raise SkillFormatError(f"{entry} is a symlink out of the skill's directory ({target})")
            if target.is_dir():
                raise SkillFormatError(f"{entry} is a symlinked directory: link the files instead")
            where = target.stat()
        if not stat.S_ISREG(where.st_mode):
            raise SkillFormatError(f"{entry} is not a regular file: a skill publishes files only")
        data = entry.read_bytes()
        uri = root + "/" + "/".join(quote(part) for part in relative.parts)
        yield _file(uri, relative.name, data, entry)


def _walk(directory: Path) -> Iterator[Path]:
    """Every non-directory below ``directory``, skipping dot-names; real directories only are entered."""
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)
        else:
            yield entry


def _file(uri: str, name: str, data: bytes, path: Path) -> SkillFile:
    suffix = Path(name).suffix.lower()
    mime_type = SKILL_MIME_TYPE if name == SKILL_FILE else _TEXT_TYPES.get(suffix)
    if mime_type is None:
        mime_type = mimetypes.guess_type(name, strict=False)[0]
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if mime_type is None:
        mime_type = "text/plain" if text is not None else "application/octet-stream"
    return SkillFile(uri, name, data, mime_type, path, text, digest_of(data))


def _directories(skills: Iterable[Skill], files: Mapping[str, SkillFile]) -> dict[str, tuple[dict[str, Any], ...]]:
    """Every directory of every skill tree -> its direct children (rule 4's order)."""
    children: dict[str, dict[str, dict[str, Any]]] = {}
    for skill in skills:
        children.setdefault(skill.root, {})
        for file in skill.files:
            parent, _, _ = file.uri.rpartition("/")
            children.setdefault(parent, {})[file.uri] = files[file.uri].row()
            while parent != skill.root:  # every directory between the file and the root
                grandparent, _, name = parent.rpartition("/")
                siblings = children.setdefault(grandparent, {})
                siblings[parent] = {"uri": parent, "name": unquote(name), "mimeType": DIRECTORY_MIME_TYPE}
                parent = grandparent
    return {uri: tuple(rows[key] for key in sorted(rows)) for uri, rows in children.items()}
