"""Skills served from directories (the skills extension, SEP-2640): what a catalog publishes, what it
refuses at registration, and the server's skills/list, skills/get, resources/directory/read and
resources/read in both eras."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import CallToolResult, McpServer, Tool
from mcp_sse_server.engine.skill_format import MAX_SKILL_FILES, SKILLS_EXTENSION, SkillFormatError, parse_frontmatter
from mcp_sse_server.engine.skills import load_skills
from mcp_sse_server.engine.stateless_meta import CachePolicy

MODERN = "2026-07-28"
ENVELOPE = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
}


def skill_md(name: str, description: str = "Does things.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\n\nSee references/FORMS.md.\n"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


PDF_SKILL_MD = len(skill_md("pdf-processing").encode())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """acme/billing/refunds (with a skill inside it) and pdf-processing, with a binary file."""
    root = tmp_path / "skills"
    write(root / "acme" / "billing" / "refunds" / "SKILL.md", skill_md("refunds", extra="license: MIT\n"))
    write(root / "acme" / "billing" / "refunds" / "examples" / "email.md", "Dear customer,\n")
    write(root / "acme" / "billing" / "refunds" / "partial" / "SKILL.md", skill_md("partial"))
    write(root / "pdf-processing" / "SKILL.md", skill_md("pdf-processing"))
    write(root / "pdf-processing" / "references" / "FORMS.md", "# Forms\n")
    write(root / "pdf-processing" / "templates" / "blank.pdf", b"%PDF-1.4\x00\xff\xfe")
    write(root / "pdf-processing" / ".cache" / "ignored.txt", "not published")
    write(root / "pdf-processing" / ".hidden.md", "not published")
    write(root / "README.md", "not part of any skill")
    return root


def test_a_directory_of_skills_publishes_every_file_with_its_digest_and_size(tree: Path) -> None:
    catalog = load_skills(tree)
    assert [skill.uri for skill in catalog.skills] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds/partial/SKILL.md",
        "skill://pdf-processing/SKILL.md",
    ]
    refunds, partial, pdf = catalog.entries()
    assert refunds["frontmatter"] == {"name": "refunds", "description": "Does things.", "license": "MIT"}
    # the skill inside refunds is a plain file of it, and its own entry too
    assert [resource["uri"] for resource in refunds["resources"]] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds/examples/email.md",
        "skill://acme/billing/refunds/partial/SKILL.md",
    ]
    assert [resource["uri"] for resource in partial["resources"]] == ["skill://acme/billing/refunds/partial/SKILL.md"]
    data = (tree / "pdf-processing" / "templates" / "blank.pdf").read_bytes()
    blank = next(resource for resource in pdf["resources"] if resource["uri"].endswith("blank.pdf"))
    assert blank == {
        "uri": "skill://pdf-processing/templates/blank.pdf",
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }
    assert not any("hidden" in uri or ".cache" in uri for uri in catalog.files)


def test_a_skill_directory_alone_is_one_skill_and_a_prefix_puts_it_under_segments(tree: Path) -> None:
    catalog = load_skills(tree / "pdf-processing", prefix="acme/docs")
    assert [skill.uri for skill in catalog.skills] == ["skill://acme/docs/pdf-processing/SKILL.md"]
    assert catalog.skills[0].root == "skill://acme/docs/pdf-processing"
    alone = load_skills(tree / "acme" / "billing" / "refunds")
    assert [skill.uri for skill in alone.skills] == ["skill://refunds/SKILL.md", "skill://refunds/partial/SKILL.md"]


def test_directories_list_their_direct_children(tree: Path) -> None:
    catalog = load_skills(tree)
    assert catalog.directories["skill://pdf-processing"] == (
        {
            "uri": "skill://pdf-processing/SKILL.md",
            "name": "SKILL.md",
            "mimeType": "text/markdown",
            "size": PDF_SKILL_MD,
        },
        {"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"},
        {"uri": "skill://pdf-processing/templates", "name": "templates", "mimeType": "inode/directory"},
    )
    assert [row["uri"] for row in catalog.directories["skill://acme/billing/refunds"]] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds/examples",
        "skill://acme/billing/refunds/partial",
    ]
    assert "skill://acme" not in catalog.directories  # above the skills: not a directory of a skill tree


def test_frontmatter_is_yaml_1_2_and_file_names_are_uri_encoded(tmp_path: Path) -> None:
    write(tmp_path / "s" / "SKILL.md", skill_md("s", extra="beta: yes\nversion: 010\nsince: 2024-01-01\n"))
    write(tmp_path / "s" / "my notes.md", "x")
    catalog = load_skills(tmp_path / "s")
    assert catalog.skills[0].frontmatter["beta"] == "yes" and catalog.skills[0].frontmatter["version"] == 10
    assert catalog.skills[0].frontmatter["since"] == "2024-01-01"
    assert "skill://s/my%20notes.md" in catalog.files
    assert catalog.files["skill://s/my%20notes.md"].name == "my notes.md"


def test_a_symlink_to_a_file_inside_the_skill_is_published(tmp_path: Path) -> None:
    write(tmp_path / "s" / "SKILL.md", skill_md("s"))
    write(tmp_path / "s" / "real.md", "real")
    (tmp_path / "s" / "alias.md").symlink_to(tmp_path / "s" / "real.md")
    assert load_skills(tmp_path / "s").files["skill://s/alias.md"].data == b"real"


def breakage(tmp_path: Path, kind: str) -> Path:
    """A skill at tmp_path/s broken one way."""
    skill = tmp_path / "s"
    if kind == "no frontmatter":
        write(skill / "SKILL.md", "# s\n")
    elif kind == "no description":
        write(skill / "SKILL.md", "---\nname: s\n---\n")
    elif kind == "bad name":
        write(tmp_path / "S_1" / "SKILL.md", skill_md("S_1"))
        return tmp_path / "S_1"
    elif kind == "name is not the directory's":
        write(skill / "SKILL.md", skill_md("other"))
    elif kind == "not yaml":
        write(skill / "SKILL.md", "---\nname: [s\n---\n")
    elif kind == "not utf-8":
        write(skill / "SKILL.md", b"---\nname: s\ndescription: \xff\n---\n")
    elif kind == "reserved metadata":
        write(skill / "SKILL.md", skill_md("s", extra="metadata:\n  io.modelcontextprotocol/x: 1\n"))
    elif kind == "symlink out":
        write(skill / "SKILL.md", skill_md("s"))
        write(tmp_path / "secret.txt", "secret")
        (skill / "leak.txt").symlink_to(tmp_path / "secret.txt")
    elif kind == "symlinked directory":
        write(skill / "SKILL.md", skill_md("s"))
        write(skill / "real" / "a.md", "a")
        (skill / "linked").symlink_to(skill / "real")
    elif kind == "fifo":
        write(skill / "SKILL.md", skill_md("s"))
        os.mkfifo(skill / "pipe")
    elif kind == "too many files":
        write(skill / "SKILL.md", skill_md("s"))
        for number in range(MAX_SKILL_FILES):
            write(skill / "files" / f"{number}.txt", "x")
    elif kind == "too many bytes":
        write(skill / "SKILL.md", skill_md("s"))
        write(skill / "big.bin", b"\0" * (16 * 1024 * 1024))
    elif kind == "no skill":
        write(skill / "README.md", "nothing")
    elif kind == "uppercase organisation":
        write(tmp_path / "Acme" / "s" / "SKILL.md", skill_md("s"))
        return tmp_path
    return skill


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("no frontmatter", "must open with a '---' line"),
        ("no description", "needs a non-empty 'description'"),
        ("bad name", "must be 1-64 characters of a-z"),
        ("name is not the directory's", "named 'other' but its directory is 's'"),
        ("not yaml", "is not valid YAML"),
        ("not utf-8", "is not UTF-8 text"),
        ("reserved metadata", "are reserved"),
        ("symlink out", "is a symlink out of the skill's directory"),
        ("symlinked directory", "is a symlinked directory"),
        ("fifo", "is not a regular file"),
        ("too many files", "513 files, more than the 512"),
        ("too many bytes", "more than the 16777216"),
        ("no skill", "holds no SKILL.md"),
        ("uppercase organisation", "the path segment 'Acme' must be lowercase"),
    ],
)
def test_a_malformed_skill_is_refused_naming_the_file(tmp_path: Path, kind: str, message: str) -> None:
    server = McpServer("skills")
    with pytest.raises(SkillFormatError, match=message):
        server.add_skills(breakage(tmp_path, kind))
    assert not server.skills and "extensions" not in server.capabilities  # nothing half-registered


def test_a_uri_served_twice_is_refused(tree: Path, tmp_path: Path) -> None:
    server = McpServer("skills", skills=[tree / "pdf-processing"])
    with pytest.raises(SkillFormatError, match="already served as a resource"):
        server.add_skills(tree / "pdf-processing")
    # skill x/y's file is also a file of skill x: refused, and nothing of x/y is registered
    write(tmp_path / "x" / "SKILL.md", skill_md("x"))
    write(tmp_path / "x" / "y" / "a.md", "outer")
    write(tmp_path / "y" / "SKILL.md", skill_md("y"))
    write(tmp_path / "y" / "a.md", "inner")
    server.add_skills(tmp_path / "x")
    with pytest.raises(SkillFormatError, match=re.escape("skill://x/y/a.md is published twice")):
        server.add_skills(tmp_path / "y", prefix="x")
    assert server.skills.skill("skill://x/y/SKILL.md") is None
    assert server.skills.files["skill://x/y/a.md"].data == b"outer"


def test_the_frontmatter_must_be_json_and_alias_free() -> None:
    with pytest.raises(SkillFormatError, match="aliases"):
        parse_frontmatter("---\na: &x [1]\nb: *x\n---\n")
    with pytest.raises(SkillFormatError, match="keys must be strings"):
        parse_frontmatter("---\n1: a\n---\n")
    assert parse_frontmatter("\ufeff---\r\nname: a\r\n---\r\nbody") == {"name": "a"}


async def test_a_session_lists_gets_reads_and_walks_skills(tree: Path, connect: Connect) -> None:
    server = McpServer("skills", skills=[tree])
    client = await connect(server, initialize=False)
    initialized = await client.initialize()
    assert initialized["capabilities"]["extensions"] == {SKILLS_EXTENSION: {"directoryRead": True}}
    assert "resources" in initialized["capabilities"]
    listed = await client.result("skills/list", {})
    assert [entry["uri"] for entry in listed["skills"]] == [skill.uri for skill in server.skills.skills]
    assert "resultType" not in listed and "ttlMs" not in listed  # (2026-07-28's members only)
    got = await client.result("skills/get", {"uri": "skill://pdf-processing/SKILL.md"})
    assert got == {"skill": listed["skills"][2]}
    unknown = await client.error("skills/get", {"uri": "skill://nope/SKILL.md"})
    assert unknown.code == -32602 and "skill://nope/SKILL.md" in unknown.message
    not_skill_md = await client.error("skills/get", {"uri": "skill://pdf-processing/references/FORMS.md"})
    assert not_skill_md.code == -32602
    # SKILL.md files are listed resources; every file reads back with the listed bytes
    resources = await client.result("resources/list", {})
    assert {
        "uri": "skill://pdf-processing/SKILL.md",
        "name": "pdf-processing",
        "description": "Does things.",
        "mimeType": "text/markdown",
        "size": PDF_SKILL_MD,
    } in resources["resources"]
    assert not any(resource["uri"].endswith("FORMS.md") for resource in resources["resources"])
    forms = await client.result("resources/read", {"uri": "skill://pdf-processing/references/FORMS.md"})
    assert forms["contents"] == [
        {"uri": "skill://pdf-processing/references/FORMS.md", "mimeType": "text/markdown", "text": "# Forms\n"}
    ]
    blank = await client.result("resources/read", {"uri": "skill://pdf-processing/templates/blank.pdf"})
    data = base64.b64decode(blank["contents"][0]["blob"])
    assert blank["contents"][0]["mimeType"] == "application/pdf"
    assert "sha256:" + hashlib.sha256(data).hexdigest() == listed["skills"][2]["resources"][2]["digest"]
    directory = await client.result("resources/directory/read", {"uri": "skill://pdf-processing/templates"})
    assert directory == {
        "resources": [
            {
                "uri": "skill://pdf-processing/templates/blank.pdf",
                "name": "blank.pdf",
                "mimeType": "application/pdf",
                "size": len(data),
            }
        ]
    }
    for uri in ("skill://pdf-processing/SKILL.md", "skill://acme", "file:///etc"):
        error = await client.error("resources/directory/read", {"uri": uri})
        assert error.code == -32602, uri
    assert (await client.error("resources/directory/read", {})).code == -32602


async def test_skills_and_directories_are_paged(tree: Path, connect: Connect) -> None:
    server = McpServer("skills", skills=[tree], page_size=2)
    client = await connect(server)
    first = await client.result("skills/list", {})
    second = await client.result("skills/list", {"cursor": first["nextCursor"]})
    assert len(first["skills"]) == 2 and len(second["skills"]) == 1 and "nextCursor" not in second
    page = await client.result("resources/directory/read", {"uri": "skill://pdf-processing"})
    rest = await client.result(
        "resources/directory/read", {"uri": "skill://pdf-processing", "cursor": page["nextCursor"]}
    )
    assert [row["name"] for row in page["resources"] + rest["resources"]] == ["SKILL.md", "references", "templates"]
    bad = await client.error("skills/list", {"cursor": "nope"})
    assert bad.code == -32602


async def test_a_server_without_skills_does_not_offer_them(connect: Connect) -> None:
    client = await connect(McpServer("plain"))
    for method in ("skills/list", "skills/get", "resources/directory/read"):
        assert (await client.error(method, {"uri": "skill://a/SKILL.md"})).code == -32601


async def test_the_stateless_revision_declares_skills_in_discover_and_stamps_caching(
    tree: Path, connect: Connect
) -> None:
    server = McpServer("skills", skills=[tree], cache=CachePolicy(ttl_ms=60_000, scope="public"))

    def work(arguments: dict[str, Any], context: Any) -> CallToolResult:
        return CallToolResult.text("done")

    server.add_tool(Tool("work", {"type": "object"}, work, task_support="optional"))
    client = await connect(server, initialize=False)
    found = await client.result("server/discover", ENVELOPE)
    assert found["capabilities"]["extensions"] == {
        SKILLS_EXTENSION: {"directoryRead": True},
        "io.modelcontextprotocol/tasks": {},
    }
    listed = await client.result("skills/list", ENVELOPE)
    assert listed["resultType"] == "complete" and listed["ttlMs"] == 60_000 and listed["cacheScope"] == "public"
    got = await client.result("skills/get", {**ENVELOPE, "uri": "skill://pdf-processing/SKILL.md"})
    assert got["skill"]["uri"] == "skill://pdf-processing/SKILL.md" and got["cacheScope"] == "public"
    assert "nextCursor" not in got
