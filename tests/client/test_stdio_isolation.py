"""Who touches which descriptors around a stdio session (transport/stdio_fds.py; the sessions
themselves, served and driven every way, are tests/cli/test_stdio_isolation.py): our StdioClient gives
its child 0, 1 and 2 alone; streams given to StdioServerTransport, and a ``sys.stdin``/``sys.stdout``
replaced by the program (as here, by the test), leave this process's descriptors as they were."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import IO, Any, BinaryIO, cast

import pytest

from fixtures.peers import ROOT, WAIT, python_env
from mcp_sse_server import McpServer
from mcp_sse_server.client import StdioClient
from mcp_sse_server.transport.stdio import StdioServerTransport, serve_stdio
from mcp_sse_server.transport.stdio_fds import protocol_stdio

NOISY = str(ROOT / "tests" / "cli" / "noisy_stdio_server.py")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists descriptors through /proc (Linux)")
async def test_our_clients_child_is_given_0_1_2_alone() -> None:
    read, write = os.pipe()
    os.set_inheritable(write, True)  # a descriptor of ours that a child could inherit
    try:
        async with StdioClient(sys.executable, [NOISY], env=python_env(), on_stderr=lambda line: None) as client:
            started_with = await asyncio.wait_for(client.call_tool("started_with", {}), WAIT)
    finally:
        os.close(read)
        os.close(write)
    assert started_with.content[0].to_dict()["text"] == "[0, 1, 2]"


def identity(fd: int) -> tuple[int, int]:
    """What descriptor ``fd`` leads to."""
    status = os.fstat(fd)
    return status.st_dev, status.st_ino


@pytest.fixture
def descriptors_kept() -> Iterator[None]:
    """The test must leave descriptors 0 and 1 leading where they led."""
    before = identity(0), identity(1)
    yield
    assert (identity(0), identity(1)) == before


def printing_server() -> McpServer:
    server = McpServer("printing")

    @server.tool
    def shout(text: str) -> str:
        """Print, then shout TEXT."""
        print("from the tool")
        return text.upper()

    return server


class Pipes:
    """A client's ends of two pipes: requests written to ``requests``, answers read from ``answers``;
    the server's ends are ``stdin`` and ``stdout``."""

    def __init__(self) -> None:
        server_in, self._requests = os.pipe()
        self._answers, server_out = os.pipe()
        self.stdin = cast(BinaryIO, os.fdopen(server_in, "rb"))
        self.stdout = cast(BinaryIO, os.fdopen(server_out, "wb"))
        self.requests = os.fdopen(self._requests, "wb")
        self.answers = os.fdopen(self._answers, "rb")

    def send(self, message: dict[str, Any]) -> None:
        self.requests.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.requests.flush()

    async def answer(self) -> dict[str, Any]:
        line = await asyncio.wait_for(asyncio.to_thread(self.answers.readline), WAIT)
        reply: dict[str, Any] = json.loads(line)  # JSON, or the test fails here
        return reply

    def close(self) -> None:
        for stream in (self.stdin, self.stdout, self.requests, self.answers):
            stream.close()


async def shout_through(pipes: Pipes, serving: Callable[[], Awaitable[None]]) -> str:
    """Initialize, call ``shout`` over ``pipes`` while ``serving()`` serves them; the shouted text."""
    served = asyncio.ensure_future(serving())
    try:
        info = {"name": "by-hand", "version": "1"}
        pipes.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info},
            }
        )
        assert (await pipes.answer())["id"] == 1
        pipes.send({"method": "notifications/initialized"})
        pipes.send({"id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "hey"}}})
        reply = await pipes.answer()
        pipes.requests.close()  # end of the session
        await asyncio.wait_for(served, WAIT)
    finally:
        served.cancel()
    text: str = reply["result"]["content"][0]["text"]
    return text


async def test_given_streams_are_used_and_nothing_else_is_touched(
    descriptors_kept: None, capsys: pytest.CaptureFixture[str]
) -> None:
    pipes = Pipes()
    stdout = sys.stdout
    transport = StdioServerTransport(pipes.stdin, pipes.stdout)
    try:
        await printing_server().connect(transport)
        assert await shout_through(pipes, transport.run) == "HEY"
    finally:
        pipes.close()
    assert sys.stdout is stdout
    assert capsys.readouterr().out == "from the tool\n"  # print() was left alone: the protocol was not there


def pipe_text(stream: IO[bytes]) -> io.TextIOWrapper:
    return io.TextIOWrapper(stream, write_through=True)


async def test_replaced_stdin_and_stdout_are_served_without_touching_descriptors(
    descriptors_kept: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pipes = Pipes()
    replaced = pipe_text(pipes.stdout)
    monkeypatch.setattr(sys, "stdin", pipe_text(pipes.stdin))
    monkeypatch.setattr(sys, "stdout", replaced)
    try:
        assert await shout_through(pipes, lambda: serve_stdio(printing_server())) == "HEY"
        assert sys.stdout is replaced  # as it was, once served
    finally:
        pipes.close()
    assert capsys.readouterr().err == "from the tool\n"  # while serving, print() wrote to stderr


def test_protocol_stdio_entered_again_yields_the_same_streams(
    descriptors_kept: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipes = Pipes()
    monkeypatch.setattr(sys, "stdin", pipe_text(pipes.stdin))
    monkeypatch.setattr(sys, "stdout", pipe_text(pipes.stdout))
    try:
        with protocol_stdio() as outer:
            assert outer == (pipes.stdin, pipes.stdout)
            with protocol_stdio() as inner:  # as serve --stdio does, then serve_stdio within it
                assert inner == outer
    finally:
        pipes.close()


def test_no_stdin_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(RuntimeError, match=r"cannot serve over stdio: sys.stdin is None"), protocol_stdio():
        pass
