"""``serve --skills DIR``: any TARGET also serves the skills in DIR (one catalog, shared by every
server built), over stdio and HTTP; a malformed skill stops the command before it serves."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fixtures.commands import COMMAND_TIMEOUT, Main
from mcp_sse_server.client import StdioClient
from mcp_sse_server.engine.skill_format import SKILLS_EXTENSION

SKILLS = Path(__file__).resolve().parents[1] / "fixtures" / "skills"


async def test_a_factory_served_over_stdio_also_serves_the_skills(
    shop: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    client = StdioClient(
        sys.executable,
        ["-m", "mcp_sse_server", "serve", "shop.py:build", "--stdio", "--skills", str(SKILLS)],
        env=cli_env,
        cwd=tmp_path,
        inherit_env=False,
    )
    async with asyncio.timeout(COMMAND_TIMEOUT), client:
        assert client.server_capabilities is not None
        assert client.server_capabilities["extensions"] == {SKILLS_EXTENSION: {"directoryRead": True}}
        listed = await client.request("skills/list")
        assert [entry["uri"] for entry in listed["skills"]] == ["skill://pdf-processing/SKILL.md"]
        forms = await client.read_resource("skill://pdf-processing/references/FORMS.md")
        assert (
            forms.contents[0].to_dict()["text"] == (SKILLS / "pdf-processing" / "references" / "FORMS.md").read_text()
        )
        built = await client.call_tool("builds", {})
        assert built.structured_content == {"result": 1}  # the target's own tools are still there


def test_a_malformed_skill_is_a_usage_error(main: Main, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: other\ndescription: x\n---\n")
    status, out, err = main("serve", "math", "--skills", str(broken))
    assert (status, out) == (2, "")
    assert err.startswith(f"Error: --skills {broken}: {broken / 'SKILL.md'}: the skill is named 'other'"), err


def test_skills_clashing_with_the_target_are_a_usage_error(main: Main, tmp_path: Path) -> None:
    status, out, err = main("serve", "math", "--skills", str(SKILLS), "--skills", str(SKILLS / "pdf-processing"))
    assert (status, out) == (2, "")
    assert err.startswith("Error: --skills: skill://pdf-processing/SKILL.md is already served as a resource"), err
