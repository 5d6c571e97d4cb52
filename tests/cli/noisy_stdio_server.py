"""A stdio server whose code writes to stdout and reads stdin in every way it can, and runs child
processes that do the same (test_stdio_isolation.py): none of it may reach the protocol stream.

Served by ``mcp-sse-server serve noisy_stdio_server.py:server --stdio``, by ``python
noisy_stdio_server.py`` (``server.run()``) and by ``python noisy_stdio_server.py transport`` (a
``StdioServerTransport`` made without streams). ``python noisy_stdio_server.py fds`` prints the
descriptors it was started with, and nothing else.
"""

# ruff: noqa: E402 - STARTED_WITH is taken before the imports that may open descriptors

from __future__ import annotations

import os
import sys


def open_fds() -> list[int] | None:
    """This process's open descriptors (Linux; None elsewhere)."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    # Those still open after the listing, whose own descriptor is closed by then.
    return sorted(int(fd) for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


STARTED_WITH = open_fds()
if __name__ == "__main__" and sys.argv[1:] == ["fds"]:  # a child of the tool child_fds: that is all
    print(STARTED_WITH)
    sys.exit()

import asyncio
import json
import logging
import select
import subprocess

from mcp_sse_server import McpServer

# A bound that only matters when something is broken: a stdin that is the protocol's has nothing to
# read while the client waits for the tool's answer.
STDIN_WAIT = 10.0

# What a child reports about its stdin: b'' (end of file) when it is the null device.
READ_STDIN = f"""
import os, select
if select.select([0], [], [], {STDIN_WAIT})[0]:
    try:
        print(repr(os.read(0, 65536)))
    except BlockingIOError:
        print("would block")
else:
    print("nothing to read within {STDIN_WAIT} s")
"""

print("importing the noisy server")  # before any serving: left in stdout's buffer
logging.getLogger("noisy").addHandler(logging.StreamHandler(sys.stdout))
logging.getLogger("noisy").setLevel(logging.INFO)

server = McpServer("noisy")


@server.tool
def echo(text: str) -> str:
    """TEXT, back."""
    return text


@server.tool
def prints() -> str:
    """print() several lines, one without a newline."""
    for number in range(6):
        print(f"printed line {number}")
    print("printed without a newline", end="")
    return "printed"


@server.tool
def writes_to_fd_1() -> str:
    """Write to descriptor 1 itself, as C code would, without a newline."""
    os.write(1, b"written to fd 1 without a newline")
    return "written"


@server.tool
def logs() -> str:
    """Log through a handler on sys.stdout."""
    logging.getLogger("noisy").info("logged to a handler on sys.stdout")
    return "logged"


@server.tool
def child_writes() -> str:
    """Run a child that writes to the stdout it inherited, with no final newline."""
    script = "import sys; sys.stdout.write('child output with no newline'); sys.stdout.flush()"
    subprocess.run([sys.executable, "-c", script], check=True)
    return "child wrote"


@server.tool
def child_shell_writes() -> str:
    """A child started by os.system, which inherits every inheritable descriptor."""
    os.system("printf 'shell output with no newline'")
    return "shell wrote"


@server.tool
async def child_reads_stdin() -> str:
    """Run a child that reads the stdin it inherited; what it read."""
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", READ_STDIN, stdout=subprocess.PIPE)
    out, _ = await process.communicate()
    return out.decode().strip()


@server.tool
def reads_stdin() -> str:
    """Read sys.stdin in this process; what was read."""
    if not select.select([sys.stdin], [], [], STDIN_WAIT)[0]:
        return f"nothing to read within {STDIN_WAIT} s"
    try:
        return repr(sys.stdin.readline())
    except (BlockingIOError, TypeError):  # a non-blocking descriptor: nothing there
        return "would block"


@server.tool
def child_fds() -> str:
    """The descriptors a child started with close_fds=False was given."""
    done = subprocess.run([sys.executable, __file__, "fds"], close_fds=False, stdout=subprocess.PIPE, check=True)
    return done.stdout.decode().strip()


@server.tool
def fakes_on_stderr() -> str:
    """Write answers to the next requests on stderr, which a client must not take for the protocol."""
    for request_id in range(200):
        fake = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "from stderr"}]}}
        print(json.dumps(fake), file=sys.stderr, flush=True)
    return "faked"


@server.tool
def started_with() -> str:
    """The descriptors this process was started with."""
    return str(STARTED_WITH)


async def _serve_transport() -> None:
    from mcp_sse_server.transport.stdio import StdioServerTransport

    transport = StdioServerTransport()
    await server.connect(transport)
    await transport.run()


if __name__ == "__main__":
    if sys.argv[1:] == ["transport"]:
        asyncio.run(_serve_transport())
    else:
        server.run()
