"""``task get|result|cancel TARGET ID``: a task started earlier (``call --detach``), by its id."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from .call import follow
from .errors import Failure, describe_error
from .reach import TARGET_HELP, ServerSpec, connected, run, with_target
from .render import OutputDir, ProgressReporter, pretty_json, render_result
from .values import DURATION

if TYPE_CHECKING:
    from ..client import McpClient, TaskHandle


@click.group(help=f"Follow a task a call started (`call --detach` prints its id).\n\n{TARGET_HELP}")
def task() -> None:
    pass


def _handle(client: McpClient, task_id: str) -> TaskHandle:
    from ..client import TaskHandle

    return TaskHandle.of(client, task_id)


def _reach(spec: ServerSpec, task_id: str, what: str, act: Any) -> Any:
    """Run ``act(handle)`` on the task ``task_id`` of ``spec``'s server; a Failure naming ``what``."""
    reporter = ProgressReporter(sys.stderr)

    async def go() -> Any:
        async with connected(spec, reporter) as client:
            try:
                return await act(_handle(client, task_id))
            except Failure:
                raise
            except Exception as error:
                raise Failure(f"{what} task {task_id} on {spec.label}: {describe_error(error)}") from error

    return run(go())


@task.command(name="get")
@with_target
@click.argument("task_id", metavar="ID")
def get(spec: ServerSpec, task_id: str) -> None:
    """Print the task ID as the server has it now (JSON): its status, and its questions, result or error."""

    async def read(handle: TaskHandle) -> dict[str, Any] | None:
        return await handle.refresh()

    click.echo(pretty_json(_reach(spec, task_id, "read", read)))


@task.command(name="result")
@with_target
@click.argument("task_id", metavar="ID")
@click.option("--timeout", type=DURATION, help="Give up (and cancel the task) after this long.")
@click.pass_context
def result(ctx: click.Context, spec: ServerSpec, task_id: str, timeout: float | None) -> None:
    """Wait for the task ID to end (its status changes on stderr, its questions asked here) and print its result."""

    async def wait(handle: TaskHandle) -> Any:
        await handle.refresh()
        return await follow(handle, timeout)

    outcome = _reach(spec, task_id, "wait for", wait)
    ctx.exit(render_result(outcome, out=sys.stdout, err=sys.stderr, output_dir=OutputDir(None), stem="task"))


@task.command(name="cancel")
@with_target
@click.argument("task_id", metavar="ID")
def cancel(spec: ServerSpec, task_id: str) -> None:
    """Ask the server to cancel the task ID; print its status afterwards."""

    async def stop(handle: TaskHandle) -> str:
        await handle.cancel()
        return handle.status

    click.echo(f"task {task_id}: {_reach(spec, task_id, 'cancel', stop)}")
