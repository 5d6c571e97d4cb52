"""The ``http_path`` fixture (conftest.py) serves what it says: a test that binds a server runs as
``[fast]`` with the endpoint's requests on the fast path's cycle, and as ``[asgi]`` on uvicorn's."""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from mcp_sse_server.transport.http import McpHttpServer
from mcp_sse_server.transport.http.fast_protocol import FastCycle

from .test_fast_path import Raw, cycle_types, session


async def test_the_path_a_bound_server_serves_on(bound: McpHttpServer, http_path: str) -> None:
    raw = await Raw.open(bound)
    await session(raw)
    assert cycle_types(bound) == {FastCycle if http_path == "fast" else RequestResponseCycle}
    raw.close()
