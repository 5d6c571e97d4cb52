"""A connection cut in the middle of a call: a TCP proxy between client and server closes
the connection right after the first progress event of a tools/call. With 2025-11-25
resumable streams the client resumes the stream with GET + Last-Event-ID and the call
completes, with our client and with the official Python SDK client."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mcp_sse_server import CallToolResult, McpServer, StreamableHttpClient, Tool
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.transport.http import HttpLimits, HttpSettings, McpHttpServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class CuttingProxy:
    """Forwards 127.0.0.1:port to the server; cuts the first response that carries a progress event."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.cuts = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        done = asyncio.Event()

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, watch: bool) -> None:
            try:
                while data := await source.read(65536):
                    if watch and self.cuts == 0 and b"notifications/progress" in data:
                        # Forward up to the end of that event, then cut both sides.
                        end = data.index(b"\n\n", data.index(b"notifications/progress")) + 2
                        sink.write(data[:end])
                        await sink.drain()
                        self.cuts += 1
                        break
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                done.set()

        for task in (
            asyncio.create_task(pump(reader, up_writer, False)),
            asyncio.create_task(pump(up_reader, writer, True)),
        ):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await done.wait()
        for stream in (writer, up_writer):
            stream.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()


async def steps(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    for step in range(1, 4):
        await context.report_progress(step, 3, f"step {step}")
        await asyncio.sleep(0.05)
    return CallToolResult.text("all three steps done")


@pytest.fixture
async def proxied() -> AsyncIterator[tuple[str, CuttingProxy]]:
    server = McpServer("cut", "1.0.0")
    server.add_tool(Tool("steps", {"type": "object"}, steps))
    http = await McpHttpServer.bind(server, settings=HttpSettings(limits=HttpLimits(retry_interval=0.1)))
    proxy = await CuttingProxy(http.port).start()
    try:
        yield f"http://127.0.0.1:{proxy.port}/mcp", proxy
    finally:
        await proxy.close()
        await http.close(deadline=0.5)


async def test_our_client_completes_a_call_whose_stream_was_cut(proxied: tuple[str, CuttingProxy]) -> None:
    url, proxy = proxied
    progress: list[float] = []
    async with StreamableHttpClient(url, mode="session") as client:  # 2025-11-25: resumable streams
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("steps", on_progress=lambda p, total, message: progress.append(p))
    assert proxy.cuts == 1
    assert result.content[0].text == "all three steps done"  # type: ignore[union-attr]
    assert progress == [1, 2, 3]  # the events sent while the client was away were replayed


async def test_the_official_python_client_completes_a_call_whose_stream_was_cut(
    proxied: tuple[str, CuttingProxy],
) -> None:
    url, proxy = proxied
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(url, mode="legacy") as sdk:
            result = await sdk.call_tool("steps", {}, progress_callback=on_progress)
    assert proxy.cuts == 1
    assert result.content[0].text == "all three steps done"  # type: ignore[union-attr]
    assert progress == [1, 2, 3]
