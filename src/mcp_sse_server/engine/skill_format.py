"""The skills extension's formats (SEP-2640, ``io.modelcontextprotocol/skills``), shared by server and client.

A skill is a directory whose ``SKILL.md`` opens with a YAML frontmatter block
(at least ``name`` and ``description``). The extension serves every file of it
as a resource ``skill://<skill-path>/<file-path>`` and lists skills as entries:
the ``SKILL.md`` URI, the frontmatter rendered as JSON, and every file's URI,
``sha256:`` digest and size.

Rules, kept here and nowhere else:

1. Frontmatter is read with YAML 1.2's core schema (what JavaScript's ``yaml``
   and other 1.2 parsers give): ``yes``/``on`` stay strings, ``010`` is ten,
   dates stay strings. It must be a mapping of string keys to JSON values.
2. A skill's name is 1-64 characters of ``a-z``, ``0-9`` and ``-``, with no
   leading, trailing or doubled ``-``; it is the last segment of the skill path.
3. A digest is ``sha256:`` and 64 lowercase hex digits of the file's raw bytes;
   the size is their count.
4. Servers publish at most ``MAX_SKILL_FILES`` files and ``MAX_SKILL_BYTES``
   bytes per skill; hosts accept up to those.

>>> parse_frontmatter("---\\nname: pdf-processing\\ndescription: Fill PDF forms\\nbeta: yes\\n---\\n# PDF\\n")
{'name': 'pdf-processing', 'description': 'Fill PDF forms', 'beta': 'yes'}
>>> check_skill_name("pdf--processing")
"skill name 'pdf--processing' must not start or end with '-' or contain '--'"
>>> digest_of(b"")
'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "RESERVED_PREFIX",
    "SKILLS_EXTENSION",
    "SKILL_FILE",
    "SKILL_MIME_TYPE",
    "SkillFormatError",
    "check_entry",
    "check_skill_name",
    "digest_of",
    "parse_frontmatter",
]

SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
SKILL_FILE: Final = "SKILL.md"
SKILL_MIME_TYPE: Final = "text/markdown"
DIRECTORY_MIME_TYPE: Final = "inode/directory"
# metadata keys with this prefix are the extension's own (none defined yet): skills must not use them
RESERVED_PREFIX: Final = "io.modelcontextprotocol/"
MAX_SKILL_FILES: Final = 512
MAX_SKILL_BYTES: Final = 16 * 1024 * 1024

_NAME: Final = re.compile(r"[a-z0-9-]{1,64}")
_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")


class SkillFormatError(ValueError):
    """A skill file or entry breaks the extension's format; the message says which and how."""


def check_skill_name(name: str) -> str | None:
    """Why ``name`` breaks the naming rule (rule 2), or None when it keeps it."""
    if not _NAME.fullmatch(name):
        return f"skill name {name!r} must be 1-64 characters of a-z, 0-9 and '-'"
    if name.startswith("-") or name.endswith("-") or "--" in name:
        return f"skill name {name!r} must not start or end with '-' or contain '--'"
    return None


def digest_of(data: bytes) -> str:
    """The extension's digest of ``data``: ``sha256:`` and the lowercase hex SHA-256."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_digest(value: object) -> bool:
    """True when ``value`` is a digest as rule 3 spells it."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def check_entry(entry: object) -> str | None:
    """Why ``entry`` is not a well-formed skill entry (of ``skills/list`` or ``skills/get``), or None.

    Well-formed: a ``uri`` ending ``/<name>/SKILL.md``, a ``frontmatter`` object with non-empty
    string ``name`` and ``description``, and ``resources``: ``"dynamic"`` or a list of
    ``{uri, digest, size}`` (rule 3) naming each file once, inside the skill's directory, the
    ``SKILL.md`` among them."""
    if not isinstance(entry, dict):
        return "a skill entry must be an object"
    uri = entry.get("uri")
    if not isinstance(uri, str) or not uri:
        return "a skill entry needs a uri"
    frontmatter = entry.get("frontmatter")
    if not isinstance(frontmatter, dict):
        return f"skill {uri} has no frontmatter object"
    for key in ("name", "description"):
        if not isinstance(frontmatter.get(key), str) or not frontmatter[key]:
            return f"the frontmatter of skill {uri} needs a non-empty string {key!r}"
    root, _, file = uri.rpartition("/")
    if file != SKILL_FILE or root.rpartition("/")[2] != frontmatter["name"]:
        return f"skill {uri} must end with /{frontmatter['name']}/{SKILL_FILE} (its frontmatter's name)"
    resources = entry.get("resources")
    if resources == "dynamic":
        return None
    if not isinstance(resources, list):
        return f'skill {uri} needs resources: a list of files or "dynamic"'
    seen: set[str] = set()
    for index, resource in enumerate(resources):
        where = f"resources[{index}] of skill {uri}"
        if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
            return f"{where} must be an object with a uri"
        if not resource["uri"].startswith(root + "/"):
            return f"{where} ({resource['uri']}) is not inside the skill's directory {root}"
        if resource["uri"] in seen:
            return f"{where} lists {resource['uri']} a second time"
        seen.add(resource["uri"])
        if not is_digest(resource.get("digest")):
            return f"{where} needs a digest of the form sha256:<64 lowercase hex digits>"
        size = resource.get("size")
        if type(size) is not int or size < 0:
            return f"{where} needs a size: a non-negative integer"
    if uri not in seen:
        return f"the resources of skill {uri} do not list its {SKILL_FILE}"
    return None


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter of a ``SKILL.md`` as JSON values (rule 1); SkillFormatError when it has none,
    it is not YAML, or it is not a mapping of strings to JSON values. A BOM and CRLF lines are fine."""
    block = _frontmatter_block(text)
    import yaml

    try:
        value = yaml.load(block, Loader=_core_schema_loader())  # (a SafeLoader: no object construction)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error)
        mark = getattr(error, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        raise SkillFormatError(f"the frontmatter of {SKILL_FILE} is not valid YAML: {problem}{where}") from None
    if not isinstance(value, dict):
        raise SkillFormatError(f"the frontmatter of {SKILL_FILE} must be a mapping (name: ..., description: ...)")
    _check_json(value, "frontmatter")
    return value


def _frontmatter_block(text: str) -> str:
    """The YAML between the opening ``---`` line and the next ``---`` (or ``...``) line."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if lines and lines[0].rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                return "".join(lines[1:end])
    raise SkillFormatError(f"{SKILL_FILE} must open with a '---' line and a frontmatter block closed by '---'")


def _check_json(value: Any, where: str) -> None:
    """SkillFormatError unless ``value`` is made of JSON values only (string keys, finite numbers)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SkillFormatError(f"{where} has the key {key!r}: keys must be strings")
            _check_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise SkillFormatError(f"{where} is {value!r}, which JSON cannot carry")
    elif value is not None and not isinstance(value, str | int | bool):
        raise SkillFormatError(f"{where} is a {type(value).__name__}, which JSON cannot carry")


_LOADER: type[yaml.SafeLoader] | None = None

# YAML 1.2's core schema, as regular expressions over plain scalars (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_CORE_RESOLVERS: Final = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$",
        "-+0123456789.",
    ),
)


def _core_schema_loader() -> type[yaml.SafeLoader]:
    """A SafeLoader that resolves plain scalars by YAML 1.2's core schema (PyYAML follows 1.1)."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    class CoreSchemaLoader(yaml.SafeLoader):
        """PyYAML's SafeLoader with YAML 1.2 core-schema scalars (rule 1), refusing aliases: a
        frontmatter read by a host is untrusted, and nested aliases expand exponentially."""

        def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("aliases (*name) are not allowed in a frontmatter")
            return super().compose_node(parent, index)

    CoreSchemaLoader.yaml_implicit_resolvers = {}
    for tag, pattern, first in _CORE_RESOLVERS:
        CoreSchemaLoader.add_implicit_resolver(tag, re.compile(pattern), list(first))

    def construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
        text = str(loader.construct_scalar(node))
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)  # (1.1's "010" octal and "1_000" are not 1.2)

    CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    _LOADER = CoreSchemaLoader
    return _LOADER
