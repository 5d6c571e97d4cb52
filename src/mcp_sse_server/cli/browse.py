"""``resources``, ``prompts`` and ``inspect``: what the server TARGET names offers besides tools,
and everything about it at once."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from .arguments import ArgumentError, convert_arguments, typed_signature
from .errors import BadUsage
from .reach import (
    TARGET_HELP,
    ServerSpec,
    connected,
    describe_revision,
    listed,
    revision_text,
    run,
    server_text,
    unknown_name,
    with_target,
)
from .render import OutputDir, ProgressReporter, description_lines, pretty_json, render_result, safe_stem, size_text

if TYPE_CHECKING:
    from ..client.results import PromptInfo, ResourceTemplateInfo
    from ..engine.types import ResourceInfo

_LONG = click.option("-l", "--long", "long", is_flag=True, help="Print whole descriptions.")
_VERBOSE = click.option(
    "-v", "--verbose", is_flag=True, help="Also say which protocol revision the server speaks (on stderr)."
)


# --- how each kind of item is shown ------------------------------------------------------------


def _resource_line(address: str, name: str, title: str | None, mime_type: str | None, size: int | None) -> str:
    """``demo://readme  readme: About this demo (text/markdown, 716 bytes)``."""
    label = name if not title or title == name else f"{name}: {title}"
    details = ", ".join(part for part in (mime_type, size_text(size) if size is not None else None) if part)
    return f"{address}  {label}" + (f" ({details})" if details else "")


def _resource_lines(
    resources: list[ResourceInfo], templates: list[ResourceTemplateInfo], long: bool, *, indent: int
) -> list[str]:
    """The resources, then the templates, each under a heading; nothing for a server with neither."""
    lines: list[str] = []
    pad = " " * indent
    if resources:
        lines.append(f"Resources ({len(resources)}):")
        for resource in resources:
            line = _resource_line(resource.uri, resource.name, resource.title, resource.mime_type, resource.size)
            lines.append(pad + line)
            lines += description_lines(resource.description, long, indent=indent + 4)
    if templates:
        lines.append(f"Resource templates ({len(templates)}):")
        for template in templates:
            line = _resource_line(template.uri_template, template.name, template.title, template.mime_type, None)
            lines.append(pad + line)
            lines += description_lines(template.description, long, indent=indent + 4)
    return lines


def prompt_signature(prompt: PromptInfo) -> str:
    """``write_artifact(type, subject, tone?)``: the prompt's arguments, optional ones marked ``?``."""
    names = [argument.name + ("" if argument.required else "?") for argument in prompt.arguments]
    return f"{prompt.name}({', '.join(names)})"


def _prompt_lines(prompts: list[PromptInfo], long: bool, *, indent: int) -> list[str]:
    lines: list[str] = []
    for prompt in prompts:
        lines.append(" " * indent + prompt_signature(prompt))
        lines += description_lines(prompt.description or prompt.title, long, indent=indent + 4)
    return lines


def _capabilities_text(capabilities: Mapping[str, Any]) -> str:
    """``logging, prompts (listChanged), resources (listChanged, subscribe)``."""
    shown: list[str] = []
    for name in sorted(capabilities):
        value = capabilities[name]
        features = (
            sorted(key for key, on in value.items() if on not in (False, None)) if isinstance(value, dict) else []
        )
        shown.append(name + (f" ({', '.join(features)})" if features else ""))
    return ", ".join(shown) or "none"


def _prompt_schema(prompt: PromptInfo) -> dict[str, Any]:
    """The prompt's arguments as the input schema of a tool taking strings: so KEY=VALUE words are
    checked (unknown, missing, given twice) by the same code, with the same messages, as a tool's."""
    return {
        "type": "object",
        "properties": {argument.name: {"type": "string"} for argument in prompt.arguments},
        "required": [argument.name for argument in prompt.arguments if argument.required],
        "additionalProperties": False,
    }


# --- the commands -------------------------------------------------------------------------------


@click.command(
    help="List the resources and resource templates of TARGET, or read the resource at URI: its text, "
    f"or what it is when it is binary.\n\n{TARGET_HELP}"
)
@with_target
@click.argument("uri", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print what the server sent, as JSON.")
@_LONG
@_VERBOSE
def resources(spec: ServerSpec, uri: str | None, as_json: bool, long: bool, verbose: bool) -> None:
    reporter = ProgressReporter(sys.stderr)

    async def fetch() -> dict[str, Any]:
        async with connected(spec, reporter) as client:
            if verbose:
                click.echo(describe_revision(client), err=True)
            if uri is not None:
                with spec.failing(f"read {uri}"):
                    return await client.read_resource(uri, raw=True)
            return {
                "resources": await listed(spec, "resources", client.list_resources(raw=True)),
                "resourceTemplates": await listed(spec, "resource templates", client.list_resource_templates(raw=True)),
            }

    answer = run(fetch())
    if as_json:
        click.echo(pretty_json(answer))
    elif uri is not None:
        _print_contents(spec, answer)
    else:
        from ..client.results import resource_template_info_from_dict
        from ..engine.types import resource_info_from_dict

        with spec.failing("read the resources"):
            found = [resource_info_from_dict(entry) for entry in answer["resources"]]
            templates = [resource_template_info_from_dict(entry) for entry in answer["resourceTemplates"]]
        lines = _resource_lines(found, templates, long, indent=2)
        click.echo("\n".join(lines) if lines else f"{spec.label} has no resources.")


def _print_contents(spec: ServerSpec, answer: dict[str, Any]) -> None:
    """A resources/read result: text as it is; a blob as one line saying what it is."""
    import base64
    import binascii

    from ..engine.types import BlobResourceContents, read_resource_result_from_dict

    with spec.failing("read the resource"):
        contents = read_resource_result_from_dict(answer).contents
    for item in contents:
        if len(contents) > 1:
            click.echo(f"[{item.uri}" + (f", {item.mime_type}]" if item.mime_type else "]"))
        if isinstance(item, BlobResourceContents):
            try:
                size = size_text(len(base64.b64decode(item.blob, validate=True)))
            except (binascii.Error, ValueError):
                size = "invalid base64"
            kind = item.mime_type or "no MIME type"
            click.echo(f"{item.uri} is binary ({kind}, {size}); --json prints it as base64")
        else:
            click.echo(item.text, nl=not item.text.endswith("\n"))


@click.command(
    help="List the prompts of TARGET with their arguments, or get prompt NAME with KEY=VALUE arguments "
    f"and print its messages.\n\n{TARGET_HELP}"
)
@with_target
@click.argument("name", required=False)
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--json", "as_json", is_flag=True, help="Print what the server sent, as JSON.")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    help="Where to save images and audio in messages (default: a new temporary directory).",
)
@_LONG
@_VERBOSE
def prompts(
    spec: ServerSpec,
    name: str | None,
    assignments: tuple[str, ...],
    as_json: bool,
    output_dir: str | None,
    long: bool,
    verbose: bool,
) -> None:
    from ..client.results import get_prompt_result_from_dict, prompt_info_from_dict

    reporter = ProgressReporter(sys.stderr)

    async def fetch() -> Any:
        async with connected(spec, reporter) as client:
            if verbose:
                click.echo(describe_revision(client), err=True)
            entries = await listed(spec, "prompts", client.list_prompts(raw=True))
            if name is None:
                return entries
            with spec.failing("read the prompts"):
                known = [prompt_info_from_dict(entry) for entry in entries]
            found = next((prompt for prompt in known if prompt.name == name), None)
            if found is None:
                raise unknown_name("prompt", name, spec, [prompt.name for prompt in known])
            try:
                arguments = convert_arguments(_prompt_schema(found), assignments, tool=name)
            except ArgumentError as error:
                raise BadUsage(str(error)) from None
            with spec.failing(f"get prompt {name}"):
                return await client.get_prompt(name, arguments, raw=True)

    answer = run(fetch())
    if as_json:
        click.echo(pretty_json(answer))
        return
    if name is None:
        with spec.failing("read the prompts"):
            lines = _prompt_lines([prompt_info_from_dict(entry) for entry in answer], long, indent=0)
        click.echo("\n".join(lines) if lines else f"{spec.label} has no prompts.")
        return
    from ..engine.types import CallToolResult

    with spec.failing(f"read prompt {name}"):
        messages = get_prompt_result_from_dict(answer).messages
    saved = OutputDir(output_dir)
    for index, message in enumerate(messages, start=1):
        click.echo(f"[{message.role}]")
        # A message holds one content block, shown as a tool result's block is (images saved to files).
        block = CallToolResult([message.content])
        render_result(block, out=sys.stdout, err=sys.stderr, output_dir=saved, stem=f"{safe_stem(name)}-{index}")


@click.command(
    help="Everything about TARGET at once: the server (name, version, title, instructions), the protocol "
    f"revision, its capabilities, tools, resources, resource templates and prompts.\n\n{TARGET_HELP}"
)
@with_target
@click.option("--json", "as_json", is_flag=True, help="Print what the server sent, as JSON.")
@_LONG
def inspect(spec: ServerSpec, as_json: bool, long: bool) -> None:
    reporter = ProgressReporter(sys.stderr)

    async def fetch() -> tuple[dict[str, Any], str]:
        async with connected(spec, reporter) as client:
            summary = dict(await client.initialize())  # the handshake's result (its shape in either revision)
            summary["tools"] = await listed(spec, "tools", client.list_tools(raw=True))
            summary["resources"] = await listed(spec, "resources", client.list_resources(raw=True))
            summary["resourceTemplates"] = await listed(
                spec, "resource templates", client.list_resource_templates(raw=True)
            )
            summary["prompts"] = await listed(spec, "prompts", client.list_prompts(raw=True))
            return summary, revision_text(client)

    summary, revision = run(fetch())
    if as_json:
        click.echo(pretty_json(summary))
        return
    from ..client.results import prompt_info_from_dict, resource_template_info_from_dict
    from ..engine.types import resource_info_from_dict, tool_from_dict

    with spec.failing("read what it listed"):
        found_tools = [tool_from_dict(entry) for entry in summary["tools"]]
        found_resources = [resource_info_from_dict(entry) for entry in summary["resources"]]
        templates = [resource_template_info_from_dict(entry) for entry in summary["resourceTemplates"]]
        found_prompts = [prompt_info_from_dict(entry) for entry in summary["prompts"]]
    info = summary.get("serverInfo")
    info = info if isinstance(info, dict) else {}
    lines = [f"Server: {server_text(info)}"]
    if info.get("title"):
        lines.append(f"Title: {info['title']}")
    lines.append(f"Protocol revision: {revision}")
    capabilities = summary.get("capabilities")
    lines.append(f"Capabilities: {_capabilities_text(capabilities if isinstance(capabilities, dict) else {})}")
    instructions = summary.get("instructions")
    if isinstance(instructions, str) and instructions.strip():
        lines.append("Instructions:")
        lines += description_lines(instructions, True, indent=2)
    lines.append(f"Tools ({len(found_tools)}):" if found_tools else "Tools: none")
    for tool in found_tools:
        lines.append("  " + typed_signature(tool))
        lines += description_lines(tool.description, long, indent=6)
    lines += _resource_lines(found_resources, templates, long, indent=2) or ["Resources: none"]
    lines.append(f"Prompts ({len(found_prompts)}):" if found_prompts else "Prompts: none")
    lines += _prompt_lines(found_prompts, long, indent=2)
    click.echo("\n".join(lines))
