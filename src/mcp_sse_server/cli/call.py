"""``tools`` and ``call``: list the tools of the server TARGET names, or call one.

``call --traceparent 00-<trace id>-<parent id>-<flags>`` makes the call part of a trace another
program started (a W3C ``traceparent``, checked before anything connects). With the
OpenTelemetry API installed (the ``otel`` extra) the client's telemetry is switched on under that
parent (global providers: an SDK configured in this process, by ``opentelemetry-instrument`` say,
records the spans; without one nothing is recorded and the given parent is passed on as it is);
without the API the ``traceparent`` is sent as given in the call's ``_meta``. Either way the
server sees it in ``_meta``, and an HTTP server in the ``traceparent`` header too.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import click

from .answers import parse_answers
from .arguments import ArgumentError, convert_arguments, tool_signature
from .elicit import Answerer, answering, explain_refusal, terminal
from .errors import EXIT_FAILURE, BadUsage, Failure, describe_error
from .reach import TARGET_HELP, ServerSpec, connected, describe_revision, listed, run, unknown_name, with_target
from .render import OutputDir, ProgressReporter, description_lines, pretty_json, render_result, safe_stem
from .values import DURATION

if TYPE_CHECKING:
    from ..client import McpClient, TaskHandle
    from ..engine.types import CallToolResult

# W3C Trace Context: version, trace id, parent id, flags (lower-case hex; the ids not all zeros).
_TRACEPARENT: Final = re.compile(r"(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")


def check_traceparent(value: str | None) -> str | None:
    """``value`` when it is a W3C ``traceparent``; BadUsage saying what one looks like otherwise.

    >>> check_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    """
    if value is None or _TRACEPARENT.fullmatch(value):
        return value
    raise BadUsage(
        f"--traceparent {value!r} is not a W3C traceparent: 00-<32 hex digits>-<16 hex digits>-<2 hex digits>, "
        "lower case, ids not all zeros"
    )


@contextlib.contextmanager
def traced(spec: ServerSpec, traceparent: str | None) -> Iterator[dict[str, Any]]:
    """Around the whole command: its clients traced under ``traceparent`` where OpenTelemetry is
    installed (see the module); yields the ``_meta`` the call carries (the traceparent as given,
    which a traced client replaces with its own span's context in the copy it sends)."""
    if traceparent is None:
        yield {}
        return
    try:
        from ..telemetry.client import remote_parent
    except ImportError:  # no OpenTelemetry API: the traceparent travels as it is
        yield {"traceparent": traceparent}
        return
    make = spec.make

    def make_traced() -> McpClient:
        client = make()
        client.telemetry = True
        return client

    spec.make = make_traced
    with remote_parent(traceparent):
        yield {"traceparent": traceparent}


@click.command(help=f"List the tools of TARGET.\n\n{TARGET_HELP}")
@with_target
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON, as the server listed them.")
@click.option("-l", "--long", "long", is_flag=True, help="Print whole descriptions.")
@click.option("-v", "--verbose", is_flag=True, help="Also say which protocol revision the server speaks (on stderr).")
def tools(spec: ServerSpec, as_json: bool, long: bool, verbose: bool) -> None:
    reporter = ProgressReporter(sys.stderr)

    async def fetch() -> list[dict[str, Any]]:
        async with connected(spec, reporter) as client:
            if verbose:
                click.echo(describe_revision(client), err=True)
            return await listed(spec, "tools", client.list_tools(raw=True))

    entries = run(fetch())
    if as_json:
        click.echo(pretty_json(entries))
        return
    from ..engine.types import tool_from_dict

    with spec.failing("read the tools"):
        found = [tool_from_dict(entry) for entry in entries]
    if not found:
        click.echo(f"{spec.label} has no tools.")
    for tool in found:
        click.echo(tool_signature(tool))
        for line in description_lines(tool.description, long, indent=4):
            click.echo(line)


@click.command(context_settings={"ignore_unknown_options": False})
@with_target
@click.argument("tool")
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--json", "json_text", metavar="OBJECT", help="Arguments as a JSON object; KEY=VALUE words override it.")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    help="Where to save images, audio and binary resources (default: a new temporary directory).",
)
@click.option("--structured", is_flag=True, help="Also print structured content when text accompanies it.")
@click.option("--raw", is_flag=True, help="Print the result exactly as received, as JSON.")
@click.option("--timeout", type=DURATION, help="Give up (and cancel the call) after this long.")
@click.option(
    "--task",
    "as_task",
    is_flag=True,
    help="Run the call as a task where the server can: its status changes go to stderr, then the result.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Start the call as a task and print its id without waiting (a 2026-07-28 server; then "
    "`mcp-sse-server task get|result|cancel TARGET ID`).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]),
    help="Ask the server to send only log messages at this level or above.",
)
@click.option(
    "--answer",
    "answers",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Answer a field of a form the tool asks (elicitation); read as the form types it, "
    "several choices as a,b. Fields not given are asked on a terminal, else take their defaults.",
)
@click.option("--accept", is_flag=True, help="Accept the tool's forms with the --answer values and defaults.")
@click.option("--decline", is_flag=True, help="Decline every question the tool asks.")
@click.option("--cancel", is_flag=True, help="Cancel every question the tool asks.")
@click.option("--accept-url", is_flag=True, help="Accept a request to open a web page (URL elicitation) unasked.")
@click.option(
    "--traceparent",
    metavar="TRACEPARENT",
    help="Make the call part of this W3C trace (00-<trace id>-<parent id>-<flags>): the parent of its "
    "OpenTelemetry span where the otel extra is installed, else sent as it is in the call's _meta.",
)
@click.pass_context
def call(
    ctx: click.Context,
    spec: ServerSpec,
    tool: str,
    assignments: tuple[str, ...],
    json_text: str | None,
    output_dir: str | None,
    structured: bool,
    raw: bool,
    timeout: float | None,
    as_task: bool,
    detach: bool,
    log_level: str | None,
    answers: tuple[str, ...],
    accept: bool,
    decline: bool,
    cancel: bool,
    accept_url: bool,
    traceparent: str | None,
) -> None:
    """Call TOOL on TARGET with KEY=VALUE arguments.

    TARGET is a registry name, a built-in (demo, math, artifact_instructions), a URL, your module:attr
    or path/to/file.py:attr (run in this process), or a command line for a stdio server (quote it).
    Values are read as the tool's input schema says: numbers, booleans (true/false), JSON for arrays
    and objects; strings stay as typed.

    \b
    Examples:
      mcp-sse-server call math add a=2 b=3
      mcp-sse-server call demo slow_count steps=5
      mcp-sse-server call my_server.py:build search query=cats
      mcp-sse-server call http://127.0.0.1:8080/mcp get_artifact_instructions type=svg
      mcp-sse-server call --detach http://127.0.0.1:8080/mcp render scene=cat
      mcp-sse-server call app.py ask_color --answer color=red
      mcp-sse-server call --traceparent 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 math add a=1 b=2

    When the tool asks a question (elicitation), a terminal is asked its fields; without one,
    --answer, --accept, --decline or --cancel answer it, and a question they leave open is
    cancelled and the command fails naming the fields. A web page to open (URL elicitation) is
    shown, and accepted by Enter on a terminal or --accept-url, else declined. A tool asking for
    a model (sampling) fails: this command runs none.
    """
    check_traceparent(traceparent)
    chosen = [name for name, on in (("accept", accept), ("decline", decline), ("cancel", cancel)) if on]
    if len(chosen) > 1 or (answers and chosen and chosen[0] != "accept"):
        given = [f"--{name}" for name in chosen] + (["--answer"] if answers else [])
        raise BadUsage(f"{' and '.join(given)} contradict each other: give one answer to the tool's questions")
    reporter = ProgressReporter(sys.stderr)
    read, write = terminal()
    answerer = Answerer(
        tool,
        given=parse_answers(answers),
        action=chosen[0] if chosen else None,
        accept_url=accept_url,
        read=read,
        write=write,
        before_asking=reporter.finish,
    )
    spec = answering(spec, answerer)
    detached: list[str] = []
    meta: dict[str, Any] = {}

    async def invoke() -> CallToolResult | None:
        async with connected(spec, reporter) as client:
            known = client.tools if client.tools is not None else await listed(spec, "tools", client.list_tools())
            found = next((candidate for candidate in known if candidate.name == tool), None)
            if found is None:
                raise unknown_name("tool", tool, spec, [candidate.name for candidate in known])
            try:
                arguments = convert_arguments(found.input_schema, assignments, json_text, tool=tool)
            except ArgumentError as error:
                raise BadUsage(str(error)) from None
            if log_level is not None:
                await client.set_log_level(log_level)
            try:
                if as_task or detach:
                    return await as_a_task(client, tool, arguments, timeout, detached if detach else None)
                if not meta:
                    return await client.call_tool(
                        tool, arguments, on_progress=reporter.progress, timeout=timeout if timeout is not None else True
                    )
                from ..engine.types import call_tool_result_from_dict

                params = {"name": tool, "arguments": arguments, "_meta": meta}
                limit = timeout if timeout is not None else True
                return call_tool_result_from_dict(
                    await client.request("tools/call", params, timeout=limit, on_progress=reporter.progress)
                )
            except (Failure, BadUsage):
                raise
            except Exception as error:
                raise Failure(f"{tool} on {spec.label}: {explain_refusal(error) or describe_error(error)}") from error
            finally:
                reporter.finish()

    try:
        with traced(spec, traceparent) as carried:
            meta.update(carried)
            result = run(invoke())
    except Failure:
        if answerer.problem is None:
            raise
        result = None  # (what the tool made of a cancelled question matters less than why it was)
    if answerer.problem is not None:
        raise BadUsage(answerer.problem)
    if answerer.unused():
        click.echo(f"note: no form asked for --answer {', '.join(answerer.unused())}", err=True)
    if result is None:  # detached: the task id is the output
        click.echo(detached[0])
        return
    if raw:
        click.echo(pretty_json(result.to_dict()))
        ctx.exit(EXIT_FAILURE if result.is_error else 0)
    status = render_result(
        result,
        out=sys.stdout,
        err=sys.stderr,
        output_dir=OutputDir(output_dir),
        stem=safe_stem(tool),
        show_structured=structured,
    )
    ctx.exit(status)


async def as_a_task(
    client: McpClient, tool: str, arguments: dict[str, Any], timeout: float | None, detached: list[str] | None
) -> CallToolResult | None:
    """``call --task``: the call as a task, its status changes on stderr, then its result;
    ``--detach`` (``detached`` given): the task's id goes into ``detached`` and nothing is awaited."""
    handle = await client.call_tool_task(tool, arguments)
    if detached is not None:
        if handle.task_id is None:
            raise Failure(f"{tool} ran inline: the server did not make it a task (its result was not kept)")
        if not client.stateless:
            raise BadUsage(
                "--detach needs a server speaking 2026-07-28: a 2025-11-25 task is bound to its session, "
                "which ends with this command (use --task to wait for it here)"
            )
        detached.append(handle.task_id)
        return None
    return await follow(handle, timeout)


async def follow(handle: TaskHandle, timeout: float | None) -> CallToolResult:
    """Print the task's status changes on stderr while waiting for its result (at most ``timeout``),
    the first and the last included."""
    import asyncio
    import contextlib

    shown: list[tuple[Any, Any]] = []

    def show(task: dict[str, Any] | None) -> None:
        seen = (task or {}).get("status"), (task or {}).get("statusMessage")
        if task is not None and (not shown or shown[-1] != seen):
            shown.append(seen)
            status, message = seen
            click.echo(f"task {handle.task_id}: {status}" + (f" ({message})" if message else ""), err=True)

    async def watch() -> None:
        async for task in handle:
            show(task)

    show(handle.task)
    watcher = asyncio.get_running_loop().create_task(watch()) if handle.task_id is not None else None
    try:
        result = await handle.result(timeout=timeout)
    except TimeoutError:
        await handle.cancel()  # as a call given up on is cancelled
        raise Failure(f"task {handle.task_id}: no result within {timeout:g} s; it was cancelled") from None
    finally:
        if watcher is not None:
            watcher.cancel()
    if handle.task_id is not None:
        with contextlib.suppress(Exception):  # (only what is shown: the result is in hand)
            show(await handle.refresh())
    return result
