"""The skills client (client/skills.py) against our own server's skills (McpServer.add_skills), in
process and over real loopback HTTP, in both eras: listing, getting, loading with every file
verified, directory reads, and a server whose bytes differ from its listing caught before use."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import MappingProxyType

import pytest

from mcp_sse_server import McpServer
from mcp_sse_server.client import InMemoryClient, McpClient, SkillEntry, SkillVerificationError, StreamableHttpClient
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcp_sse_server.engine.skill_format import SkillFormatError, check_entry, digest_of
from mcp_sse_server.engine.skills import SkillCatalog, load_skills
from mcp_sse_server.transport.http import McpHttpServer

FIXTURE = Path(__file__).parent.parent / "fixtures" / "skills"
SKILL = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"
MODES = ["session", "2026-07-28"]


@asynccontextmanager
async def reach(server: McpServer, transport: str, mode: str) -> AsyncIterator[McpClient]:
    """A connected client of ``server``: in process, or over real loopback HTTP."""
    if transport == "memory":
        async with InMemoryClient(server, mode=mode) as client:
            yield client
        return
    http = await McpHttpServer.bind(server, port=0)
    try:
        async with StreamableHttpClient(http.endpoint, mode=mode) as client:
            yield client
    finally:
        await http.close()


def tampered(
    catalog: SkillCatalog, uri: str, change: Callable[[bytes], bytes], *, relist: bool = False
) -> SkillCatalog:
    """``catalog`` serving the bytes ``change`` makes of file ``uri``; ``relist``: its entry lists the
    changed bytes' digest and size too (so only a frontmatter comparison can tell)."""
    original = catalog.files[uri]
    data = change(original.data)
    served = dataclasses.replace(original, data=data, text=data.decode(), digest=digest_of(data))
    skills = tuple(
        dataclasses.replace(skill, files=tuple(served if file.uri == uri else file for file in skill.files))
        if relist
        else skill
        for skill in catalog.skills
    )
    return SkillCatalog(skills, MappingProxyType({**catalog.files, uri: served}), catalog.directories)


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_skill_is_listed_then_loaded_verified(transport: str, mode: str) -> None:
    server = McpServer("skills", skills=[FIXTURE])
    async with reach(server, transport, mode) as client:
        assert client.skills.declared and client.skills.directory_read
        (entry,) = await client.skills.list()
        assert (entry.uri, entry.name, entry.root) == (SKILL, "pdf-processing", "skill://pdf-processing")
        assert entry.description.startswith("Fill in PDF forms")
        assert sorted(resource.uri for resource in entry.resources or ()) == [SKILL, FORMS]
        assert await client.skills.get(SKILL) == entry
        files = await client.skills.load(entry)
        assert [file.uri for file in files] == [SKILL, FORMS]
        assert files[0].data == (FIXTURE / "pdf-processing" / "SKILL.md").read_bytes()
        assert files[1].text == (FIXTURE / "pdf-processing" / "references" / "FORMS.md").read_text()
        assert (await client.skills.read(entry, "references/FORMS.md")).data == files[1].data
        children = await client.skills.read_directory(entry.root)
        assert {child["uri"]: child["mimeType"] for child in children} == {
            "skill://pdf-processing/SKILL.md": "text/markdown",
            "skill://pdf-processing/references": "inode/directory",
        }
        with pytest.raises(McpError) as unknown:
            await client.skills.get("skill://nothing-here/SKILL.md")
        assert unknown.value.code == INVALID_PARAMS


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("change", "relist", "reason"),
    [
        (lambda data: data.replace(b"Fill in", b"Kill in"), False, "its digest"),
        (lambda data: data + b"\nOne more line.\n", False, "bytes where the entry lists"),
        (lambda data: data.replace(b"Fill in PDF forms", b"Exfiltrate tokens"), True, "'description' differs"),
    ],
    ids=["digest", "size", "frontmatter"],
)
async def test_a_skill_md_unlike_its_entry_is_refused_and_nothing_more_read(
    transport: str, mode: str, change: Callable[[bytes], bytes], relist: bool, reason: str
) -> None:
    catalog = tampered(load_skills(FIXTURE), SKILL, change, relist=relist)
    server = McpServer("skills", skills=[catalog])
    async with reach(server, transport, mode) as client:
        (entry,) = await client.skills.list()
        with pytest.raises(SkillVerificationError) as refused:
            await client.skills.load(entry)
        assert refused.value.uri == SKILL and reason in refused.value.reason, refused.value.reason
        assert isinstance(refused.value, SkillFormatError)
        # The supporting file is intact and still reads on its own.
        assert (await client.skills.read(entry, FORMS)).uri == FORMS


async def test_a_file_the_entry_does_not_list_is_refused_without_reading() -> None:
    server = McpServer("skills", skills=[FIXTURE])
    async with InMemoryClient(server) as client:
        (entry,) = await client.skills.list()
        with pytest.raises(SkillVerificationError, match="does not list this file"):
            await client.skills.read(entry, "secrets.md")
        dynamic = SkillEntry.from_dict({**entry.raw, "resources": "dynamic"})
        assert dynamic.dynamic and (await client.skills.read(dynamic)).uri == SKILL  # frontmatter only
        with pytest.raises(SkillVerificationError, match="not inside the directory"):
            await client.skills.read(dynamic, "skill://other/SKILL.md")
        with pytest.raises(SkillVerificationError, match="not inside the directory"):
            await client.skills.read(dynamic, "../other/SKILL.md")


async def test_a_dynamic_entry_still_has_its_frontmatter_compared() -> None:
    server = McpServer("skills", skills=[FIXTURE])
    async with InMemoryClient(server) as client:
        (entry,) = await client.skills.list()
        other = {**entry.raw["frontmatter"], "license": "GPL-3.0"}
        dynamic = SkillEntry.from_dict({**entry.raw, "frontmatter": other, "resources": "dynamic"})
        with pytest.raises(SkillVerificationError, match="'license' differs"):
            await client.skills.read(dynamic)


async def test_directory_reads_are_not_sent_unless_declared() -> None:
    server = McpServer("plain")
    async with InMemoryClient(server) as client:
        assert not client.skills.declared and not client.skills.directory_read
        with pytest.raises(McpError) as refused:
            await client.skills.read_directory("skill://pdf-processing")
        assert refused.value.code == METHOD_NOT_FOUND and "directoryRead" in refused.value.message
        with pytest.raises(McpError) as absent:  # (the server answers: it offers no skills)
            await client.skills.list()
        assert absent.value.code == METHOD_NOT_FOUND


DIGEST = "sha256:" + "0" * 64


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ([], "must be an object"),
        ({"frontmatter": {}}, "needs a uri"),
        ({"uri": SKILL, "frontmatter": {"name": "pdf-processing"}}, "non-empty string 'description'"),
        ({"uri": "skill://x/SKILL.md", "frontmatter": {"name": "pdf-processing", "description": "d"}}, "must end"),
        ({"uri": SKILL, "frontmatter": {"name": "pdf-processing", "description": "d"}}, "needs resources"),
        (
            {
                "uri": SKILL,
                "frontmatter": {"name": "pdf-processing", "description": "d"},
                "resources": [{"uri": SKILL, "digest": "sha256:ABC", "size": 1}],
            },
            "needs a digest",
        ),
        (
            {
                "uri": SKILL,
                "frontmatter": {"name": "pdf-processing", "description": "d"},
                "resources": [{"uri": SKILL, "digest": DIGEST, "size": -1}],
            },
            "non-negative integer",
        ),
        (
            {
                "uri": SKILL,
                "frontmatter": {"name": "pdf-processing", "description": "d"},
                "resources": [{"uri": "skill://elsewhere/a.md", "digest": DIGEST, "size": 1}],
            },
            "not inside the skill's directory",
        ),
        (
            {
                "uri": SKILL,
                "frontmatter": {"name": "pdf-processing", "description": "d"},
                "resources": [{"uri": FORMS, "digest": DIGEST, "size": 1}],
            },
            "do not list its SKILL.md",
        ),
        (
            {
                "uri": SKILL,
                "frontmatter": {"name": "pdf-processing", "description": "d"},
                "resources": [{"uri": SKILL, "digest": DIGEST, "size": 1}, {"uri": SKILL, "digest": DIGEST, "size": 1}],
            },
            "a second time",
        ),
    ],
)
def test_malformed_entries_are_named(entry: object, problem: str) -> None:
    found = check_entry(entry)
    assert found is not None and problem in found, found
    with pytest.raises(SkillFormatError) as refused:
        SkillEntry.from_dict(entry)
    assert str(refused.value) == found


async def test_every_entry_our_server_lists_is_well_formed() -> None:
    server = McpServer("skills", skills=[FIXTURE])
    async with InMemoryClient(server) as client:
        for entry in await client.skills.list():
            assert check_entry(entry.raw) is None
