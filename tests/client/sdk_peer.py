"""A real MCP server written with the official Python SDK (``mcp`` 2.3.0), for
interop tests of our clients. Nobody here wrote its transports.

    python sdk_peer.py stdio
    python sdk_peer.py sse                 # legacy HTTP+SSE at /sse
    python sdk_peer.py http [--json]       # Streamable HTTP at /mcp
    python sdk_peer.py http --resumable    # ... with an event store: priming events, retry, replay

The HTTP modes bind 127.0.0.1 on a free port and print ``PORT <n>`` first.
The ``add`` and ``divide`` tools answer exactly like our math server does for
the inputs the shared scenario uses.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import warnings
from typing import Annotated

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import JSONRPCMessage
from pydantic import BaseModel

warnings.simplefilter("ignore")  # the SDK flags sampling and logging as deprecated for a later revision

server = MCPServer("sdk-peer")


def _number(value: float) -> float | int:
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value


def _result(value: float | int) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(value))], structured_content={"result": value}
    )


@server.tool()
def add(a: float, b: float) -> types.CallToolResult:
    """Add two numbers."""
    return _result(_number(a + b))


@server.tool()
def divide(a: float, b: float) -> types.CallToolResult:
    """Divide a by b."""
    if b == 0:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="Cannot divide by zero: 'b' must not be 0")], is_error=True
        )
    return _result(_number(a / b))


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Reports progress for each step (0.05 s apart); says on stderr when it is cancelled."""
    try:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        print("SLOW-CANCELLED", file=sys.stderr, flush=True)
        raise
    return f"done {steps}"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Logs two messages, then answers."""
    await ctx.log("info", "first", logger_name="peer")
    await ctx.log("warning", {"n": 2}, logger_name="peer")
    return "logged"


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Asks the client's model (sampling) and returns its text."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=50,
        related_request_id=ctx.request_id,
    )
    return f"model said: {result.content.text}"  # type: ignore[union-attr]


class Favourite(BaseModel):
    colour: str


@server.tool()
async def ask_user(ctx: Context) -> str:
    """Asks the user (elicitation) for a colour."""
    answer = await ctx.elicit("Favourite colour?", Favourite)
    return f"{answer.action}: {answer.data.colour if answer.data else '-'}"


@server.tool()
async def ask_roots(ctx: Context) -> str:
    """Lists the client's roots (roots/list, asked directly); answers with their URIs."""
    result = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in result.roots)


class Profile(BaseModel):
    name: str = "John Doe"
    age: int = 30
    verified: bool = True


@server.tool()
async def ask_profile(ctx: Context) -> str:
    """Elicits a profile whose every field has a default; answers with what came back."""
    answer = await ctx.elicit("Your profile?", Profile)
    return f"{answer.action}: {answer.data.model_dump_json() if answer.data else '-'}"


@server.tool()
async def interrupted(steps: int, ctx: Context) -> str:
    """Reports progress, closes its SSE stream half way (the client must resume with
    Last-Event-ID), reports the rest and answers. Needs ``--resumable``."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        if step == steps // 2:
            await ctx.close_sse_stream()
            print("STREAM-CLOSED", file=sys.stderr, flush=True)
        await asyncio.sleep(0.05)
    return f"survived {steps}"


# Tools that ask the client through resolvers: real server-to-client requests on a handshake
# session, input_required rounds (MRTR) at 2026-07-28.


def _favourite() -> Elicit[Favourite]:
    return Elicit("Favourite colour?", Favourite)


def _profile() -> Elicit[Profile]:
    return Elicit("Your profile?", Profile)


def _model(question: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))], max_tokens=50
    )


def _roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def resolve_user(favourite: Annotated[Favourite, Resolve(_favourite)]) -> str:
    """Elicits a colour through a resolver."""
    return f"accept: {favourite.colour}"


@server.tool()
async def resolve_profile(profile: Annotated[Profile, Resolve(_profile)]) -> str:
    """Elicits a profile whose every field has a default, through a resolver."""
    return f"accept: {profile.model_dump_json()}"


@server.tool()
async def resolve_model(question: str, answer: Annotated[types.CreateMessageResult, Resolve(_model)]) -> str:
    """Samples the client's model through a resolver."""
    return f"model said: {answer.content.text}"  # type: ignore[union-attr]


@server.tool()
async def resolve_all(
    question: str,
    favourite: Annotated[Favourite, Resolve(_favourite)],
    answer: Annotated[types.CreateMessageResult, Resolve(_model)],
    roots: Annotated[types.ListRootsResult, Resolve(_roots)],
) -> str:
    """Asks for a colour, a model answer and the roots in one round."""
    text = answer.content.text  # type: ignore[union-attr]
    return f"{favourite.colour} / {text} / {','.join(str(root.uri) for root in roots.roots)}"


@server.prompt()
def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Hello, {name}!"


@server.resource("memo://note", mime_type="text/plain")
def note() -> str:
    """A short note."""
    return "a note"


class MemoryEventStore(EventStore):
    """The smallest event store: every event of every stream, in order.
    Replays say on stderr which id the client resumed from.

    A replay follows its stream until the stream's answer (a response or an error) is sent: the
    SDK hands a resumed stream its live events only after the replay returns and a priming event
    is written, and an event stored in between reaches nobody (the SDK notes that window in
    ``_replay_events``). Following to the answer leaves no event in that window."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []
        self._stored = asyncio.Event()

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(len(self.events) + 1)
        self.events.append((stream_id, event_id, message))
        self._stored.set()
        self._stored = asyncio.Event()
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        print(f"REPLAY-AFTER {last_event_id}", file=sys.stderr, flush=True)
        found = [index for index, (_, event_id, _) in enumerate(self.events) if event_id == last_event_id]
        if not found:
            return None
        stream_id = self.events[found[0]][0]
        index = found[0] + 1
        while True:
            while index < len(self.events):  # events stored while a send awaits are sent too
                stream, event_id, message = self.events[index]
                index += 1
                if stream == stream_id and message is not None:
                    await send_callback(EventMessage(message, event_id))
                    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                        return stream_id
            try:
                await asyncio.wait_for(self._stored.wait(), 30.0)
            except TimeoutError:
                return stream_id


def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        server.run()
        return
    import uvicorn

    if mode == "sse":
        app = server.sse_app()
    elif "--resumable" in sys.argv:
        app = server.streamable_http_app(event_store=MemoryEventStore(), retry_interval=100)
    else:
        app = server.streamable_http_app(json_response="--json" in sys.argv)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn is up, instead of being refused
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
