"""``skills TARGET``: the skills a server offers (the skills extension); ``--fetch NAME-or-URI``
writes one skill's files, each verified against its entry, under a directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .errors import BadUsage, Failure, describe_error
from .reach import TARGET_HELP, ServerSpec, connected, describe_revision, run, with_target
from .render import ProgressReporter, _printable, description_lines, pretty_json

if TYPE_CHECKING:
    from ..client import McpClient, SkillEntry, SkillFile


@click.command(
    help="List the skills TARGET offers (name, description, URI, file count), or write one skill's files, "
    f"each checked against the server's listing, with --fetch.\n\n{TARGET_HELP}"
)
@with_target
@click.option(
    "--fetch", "wanted", metavar="NAME-or-URI", help="Write this skill's files (a name, or its SKILL.md URI)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Where --fetch writes the skill's files (default: a new directory named after the skill, here).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the skills as JSON, as the server listed them.")
@click.option("-l", "--long", "long", is_flag=True, help="Print whole descriptions.")
@click.option("-v", "--verbose", is_flag=True, help="Also say which protocol revision the server speaks (on stderr).")
def skills(spec: ServerSpec, wanted: str | None, out: str | None, as_json: bool, long: bool, verbose: bool) -> None:
    """List TARGET's skills, or fetch one (``--fetch``)."""
    reporter = ProgressReporter(sys.stderr)

    async def go() -> tuple[list[SkillEntry], list[SkillFile]]:
        async with connected(spec, reporter) as client:
            if verbose:
                click.echo(describe_revision(client), err=True)
            if not client.skills.declared:
                raise Failure(f"{spec.label} does not offer skills (it does not declare the skills extension)")
            if wanted is None:
                with spec.failing("list skills"):
                    return await client.skills.list(), []
            return await _fetch(client, spec, wanted)

    entries, files = run(go())
    if wanted is None:
        _show(spec, entries, as_json, long)
        return
    (entry,) = entries
    target = Path(out) if out is not None else Path(entry.name)
    _write(entry, files, target)
    click.echo(f"{entry.name}: {len(files)} file{'s' if len(files) != 1 else ''} written to {target}")


async def _fetch(client: McpClient, spec: ServerSpec, wanted: str) -> tuple[list[SkillEntry], list[SkillFile]]:
    """The skill ``wanted`` names (a URI: asked with skills/get; a name: found in the listing) and its
    verified files. A name several listed skills share is refused: names are labels, URIs identify."""
    from ..client import SkillVerificationError

    if "://" in wanted:
        with spec.failing(f"get the skill {wanted}"):
            entry = await client.skills.get(wanted)
    else:
        with spec.failing("list skills"):
            listed = await client.skills.list()
        matches = [entry for entry in listed if entry.name == wanted]
        if not matches:
            names = ", ".join(sorted({entry.name for entry in listed})) or "none listed"
            raise BadUsage(f"no skill named {wanted!r} on {spec.label}; its skills are: {names}")
        if len(matches) > 1:
            uris = ", ".join(entry.uri for entry in matches)
            raise BadUsage(f"{len(matches)} skills are named {wanted!r} on {spec.label}: fetch one by URI ({uris})")
        (entry,) = matches
    try:
        files = await client.skills.load(entry)
    except SkillVerificationError as error:
        raise Failure(f"{spec.label}: skill {entry.uri} refused, nothing written: {error}") from error
    except Exception as error:
        raise Failure(f"{spec.label}: cannot read skill {entry.uri}: {describe_error(error)}") from error
    return [entry], files


def _show(spec: ServerSpec, entries: list[SkillEntry], as_json: bool, long: bool) -> None:
    if as_json:
        click.echo(pretty_json([entry.raw for entry in entries]))
        return
    if not entries:
        # (a server may list only some of its skills: an empty listing is what it chose to show)
        click.echo(f"{spec.label} lists no skills.")
    for entry in entries:
        count = "dynamic files" if entry.resources is None else f"{len(entry.resources)} files"
        click.echo(_printable(f"{entry.name}  {entry.uri} ({count})"))
        for line in description_lines(entry.description, long, indent=4):
            click.echo(_printable(line))


def _write(entry: SkillEntry, files: list[SkillFile], target: Path) -> None:
    """Write the verified ``files`` under ``target``; every path is checked before anything is written,
    so a file whose path would leave ``target``, or overwrite a file there, fails the command with
    nothing written."""
    from urllib.parse import unquote

    top = target.resolve()
    placed: list[tuple[Path, bytes]] = []
    for file in files:
        relative = unquote(entry.path_of(file.uri))
        parts = relative.split("/")
        path = (top / relative).resolve()
        if relative.startswith("/") or "\\" in relative or any(part in ("", ".", "..") for part in parts):
            raise Failure(f"refusing {file.uri}: its path {relative!r} would leave {target}")
        if not path.is_relative_to(top):
            raise Failure(f"refusing {file.uri}: it would be written outside {target}")
        if path.exists() or path.is_symlink():
            raise Failure(f"{path} exists already: nothing written (choose another --out)")
        placed.append((path, file.data))
    for path, data in placed:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError as error:
            raise Failure(f"cannot write {path}: {describe_error(error)}") from error
