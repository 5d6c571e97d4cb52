"""``skills TARGET`` and ``skills TARGET --fetch``: the CLI (a real process) listing a server's skills
and writing one skill's verified files, refusing tampered files and paths that leave the directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.commands import Cli

FIXTURE = Path(__file__).parent.parent / "fixtures" / "skills"

SERVERS = f'''\
import dataclasses
from pathlib import Path
from types import MappingProxyType

from mcp_sse_server import McpServer
from mcp_sse_server.engine.skills import SkillCatalog, load_skills

SKILLS = Path({str(FIXTURE)!r})
SKILL = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"


def honest():
    return McpServer("honest", skills=[SKILLS])


def twice():
    return McpServer("twice", skills=[load_skills(SKILLS), load_skills(SKILLS, prefix="mirror")])


def tampered():
    """Serves a SKILL.md of the listed size whose bytes differ from the listed digest."""
    catalog = load_skills(SKILLS)
    original = catalog.files[SKILL]
    data = original.data.replace(b"Fill in", b"Kill in")
    served = dataclasses.replace(original, data=data, text=data.decode())
    files = MappingProxyType({{**catalog.files, SKILL: served}})
    return McpServer("tampered", skills=[SkillCatalog(catalog.skills, files, catalog.directories)])


def escaping():
    """Lists (and serves) a file whose path climbs out of the skill's directory."""
    catalog = load_skills(SKILLS)
    evil = "skill://pdf-processing/%2E%2E/%2E%2E/escaped.md"
    moved = dataclasses.replace(catalog.files[FORMS], uri=evil)
    skills = tuple(
        dataclasses.replace(skill, files=tuple(moved if file.uri == FORMS else file for file in skill.files))
        for skill in catalog.skills
    )
    files = {{uri: file for uri, file in catalog.files.items() if uri != FORMS}}
    return McpServer("escaping", skills=[SkillCatalog(skills, MappingProxyType({{**files, evil: moved}}), {{}})])
'''


@pytest.fixture
def servers(tmp_path: Path) -> str:
    (tmp_path / "skill_servers.py").write_text(SERVERS)
    return "skill_servers.py"


def test_the_skills_are_listed(cli: Cli, servers: str) -> None:
    listed = cli("skills", f"{servers}:honest")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "pdf-processing  skill://pdf-processing/SKILL.md (2 files)",
        "    Fill in PDF forms and extract their fields. Use when the user hands over a PDF form.",
    ]
    as_json = cli("skills", "--json", f"{servers}:honest")
    assert '"uri": "skill://pdf-processing/SKILL.md"' in as_json.stdout and '"digest": "sha256:' in as_json.stdout


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
def test_a_skill_is_fetched_by_name_or_uri(cli: Cli, servers: str, tmp_path: Path, mode: str) -> None:
    by_name = cli("skills", "--mode", mode, f"{servers}:honest", "--fetch", "pdf-processing")
    assert by_name.returncode == 0, by_name.stderr
    assert by_name.stdout.strip() == "pdf-processing: 2 files written to pdf-processing"
    written = tmp_path / "pdf-processing"
    assert (written / "SKILL.md").read_bytes() == (FIXTURE / "pdf-processing" / "SKILL.md").read_bytes()
    assert (written / "references" / "FORMS.md").read_bytes() == (
        FIXTURE / "pdf-processing" / "references" / "FORMS.md"
    ).read_bytes()
    again = cli("skills", "--mode", mode, f"{servers}:honest", "--fetch", "pdf-processing")
    assert again.returncode == 1 and "exists already: nothing written" in again.stderr, again.stderr
    out = tmp_path / "elsewhere"
    by_uri = cli(
        "skills", "--mode", mode, f"{servers}:honest", "--fetch", "skill://pdf-processing/SKILL.md", "--out", str(out)
    )
    assert by_uri.returncode == 0, by_uri.stderr
    assert sorted(path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file()) == [
        "SKILL.md",
        "references/FORMS.md",
    ]


def test_a_tampered_skill_is_refused_and_nothing_written(cli: Cli, servers: str, tmp_path: Path) -> None:
    refused = cli("skills", f"{servers}:tampered", "--fetch", "pdf-processing", "--out", "got")
    assert refused.returncode == 1
    assert "skill skill://pdf-processing/SKILL.md refused, nothing written" in refused.stderr, refused.stderr
    assert "its digest sha256:" in refused.stderr
    assert not (tmp_path / "got").exists()


def test_a_path_leaving_the_directory_is_refused(cli: Cli, servers: str, tmp_path: Path) -> None:
    refused = cli("skills", f"{servers}:escaping", "--fetch", "pdf-processing", "--out", "got/inner")
    assert refused.returncode == 1
    assert "would leave got/inner" in refused.stderr, refused.stderr
    assert not (tmp_path / "got").exists() and not (tmp_path / "escaped.md").exists()


def test_unknown_and_shared_names_and_servers_without_skills(cli: Cli, servers: str) -> None:
    unknown = cli("skills", f"{servers}:honest", "--fetch", "nope")
    assert unknown.returncode == 2 and "no skill named 'nope'" in unknown.stderr and "pdf-processing" in unknown.stderr
    shared = cli("skills", f"{servers}:twice", "--fetch", "pdf-processing")
    assert shared.returncode == 2 and "2 skills are named 'pdf-processing'" in shared.stderr, shared.stderr
    assert "skill://mirror/pdf-processing/SKILL.md" in shared.stderr
    bare = cli("skills", "math")
    assert bare.returncode == 1 and "math does not offer skills" in bare.stderr, bare.stderr
