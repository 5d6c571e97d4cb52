"""A peer server of the client matrix (tests/client/test_peer_matrix.py), written with a real
Python SDK and nothing of ours, so the matrix compares our client with the official one against
servers that neither of them wrote.

    python matrix_python_peer.py sdk MODE       # official `mcp` 2.3 MCPServer (run with .venv's python)
    python matrix_python_peer.py fastmcp MODE   # fastmcp 4 (run with $MCP_TEST_FASTMCP_PYTHON)

MODE: ``stateful`` (Streamable HTTP with sessions, SSE replies: the default), ``json``
(``json_response=True``) or ``stateless`` (``stateless_http=True``). Neither SDK has a setting
that serves 2026-07-28 only (both answer 2026-07-28 requests in every mode, routed by their
MCP-Protocol-Version header), so there is no ``2026-07-28`` mode here.

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` first, serves /mcp. The surface every matrix
peer offers: tools ``echo(text)``, ``sample(prompt)``, ``elicit(question)`` (one string field
``answer``), ``roots()`` (URIs joined by commas), resource ``memo://note`` ("a note"), prompt
``greet(name)``.

``sample``, ``elicit`` and ``roots`` ask the client the way each SDK recommends for a tool meant
to work in both eras: resolvers (``Resolve(Sample/Elicit/ListRoots)``) for the official SDK,
which send real requests on a handshake session and input_required rounds at 2026-07-28; for
fastmcp, which has no such helper, the branch its own error messages prescribe (``ctx.elicit`` /
``ctx.session`` requests on a handshake session, an ``InputRequiredResult`` at 2026-07-28).
``sample_push``, ``elicit_push`` and ``roots_push`` only ever push the request on the context's
session (the pre-2026 way most servers are written): at 2026-07-28 that has no back-channel, and
those tools show what each server answers then.
"""

# No `from __future__ import annotations`: the SDKs read the tools' annotations, which name
# classes imported inside the functions below, so they are evaluated where the tools are defined.
import socket
import sys
import warnings
from typing import Any

warnings.simplefilter("ignore")  # both SDKs flag sampling and roots as deprecated for 2026-07-28

import mcp_types as types  # noqa: E402  (both SDKs ship mcp_types; fastmcp's venv has its own copy)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: E402
from pydantic import BaseModel  # noqa: E402


class Answer(BaseModel):
    answer: str


ANSWER_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def _message(prompt: str) -> list[types.SamplingMessage]:
    return [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))]


def _sampled_text(result: Any) -> str:
    content = result.content
    if isinstance(content, list):
        content = content[0]
    return str(content.text)


def _roots_text(result: Any) -> str:
    return ",".join(str(root.uri) for root in result.roots)


def sdk_server() -> Any:
    """The official SDK's MCPServer with the matrix surface."""
    from typing import Annotated

    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample

    server = MCPServer("matrix-sdk-peer")

    def _sample(prompt: str) -> Sample:
        return Sample(_message(prompt), max_tokens=50)

    def _elicit(question: str) -> Elicit[Answer]:
        return Elicit(question, Answer)

    def _roots() -> ListRoots:
        return ListRoots()

    @server.tool()
    def echo(text: str) -> str:
        """Answers its text."""
        return text

    @server.tool()
    async def sample(prompt: str, reply: Annotated[types.CreateMessageResult, Resolve(_sample)]) -> str:
        """Samples the client's model (a resolver: works in both eras)."""
        return _sampled_text(reply)

    @server.tool()
    async def elicit(question: str, answer: Annotated[Answer, Resolve(_elicit)]) -> str:
        """Asks the user (a resolver: works in both eras)."""
        return answer.answer

    @server.tool()
    async def roots(listed: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
        """Lists the client's roots (a resolver: works in both eras)."""
        return _roots_text(listed)

    @server.tool()
    async def sample_push(prompt: str, ctx: Context) -> str:
        """Samples with a request pushed on the session (no back-channel at 2026-07-28)."""
        result = await ctx.session.create_message(_message(prompt), max_tokens=50, related_request_id=ctx.request_id)
        return _sampled_text(result)

    @server.tool()
    async def elicit_push(question: str, ctx: Context) -> str:
        """Elicits with ctx.elicit, a request pushed on the session."""
        result = await ctx.elicit(question, Answer)
        return result.data.answer if result.action == "accept" and result.data else result.action

    @server.tool()
    async def roots_push(ctx: Context) -> str:
        """Lists roots with a request pushed on the session."""
        return _roots_text(await ctx.session.list_roots())

    @server.resource("memo://note", mime_type="text/plain")
    def note() -> str:
        """A short note."""
        return "a note"

    @server.prompt()
    def greet(name: str) -> str:
        """A greeting."""
        return f"Hello, {name}!"

    return server


def fastmcp_server() -> Any:
    """fastmcp's FastMCP with the matrix surface."""
    from fastmcp import Context, FastMCP

    server = FastMCP("matrix-fastmcp-peer")

    def modern(ctx: Context) -> bool:
        context = ctx.request_context
        return context is not None and context.protocol_version in MODERN_PROTOCOL_VERSIONS

    def response(ctx: Context, key: str) -> Any:
        return (ctx.input_responses or {}).get(key)

    @server.tool
    def echo(text: str) -> str:
        """Answers its text."""
        return text

    @server.tool
    async def sample(prompt: str, ctx: Context) -> Any:
        """Samples the client's model: input_required at 2026-07-28, a session request before."""
        if not modern(ctx):
            return _sampled_text(await ctx.session.create_message(_message(prompt), max_tokens=50))
        reply = response(ctx, "model")
        if reply is None:
            request = types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=_message(prompt), max_tokens=50)
            )
            return types.InputRequiredResult(input_requests={"model": request})
        return _sampled_text(reply)

    @server.tool
    async def elicit(question: str, ctx: Context) -> Any:
        """Asks the user: input_required at 2026-07-28, ctx.elicit before."""
        if not modern(ctx):
            result = await ctx.elicit(question, Answer)
            return result.data.answer if result.action == "accept" else result.action
        reply = response(ctx, "answer")
        if reply is None:
            params = types.ElicitRequestFormParams(message=question, requested_schema=ANSWER_SCHEMA)
            return types.InputRequiredResult(input_requests={"answer": types.ElicitRequest(params=params)})
        return str((reply.content or {}).get("answer")) if reply.action == "accept" else reply.action

    @server.tool
    async def roots(ctx: Context) -> Any:
        """Lists the client's roots: input_required at 2026-07-28, a session request before."""
        if not modern(ctx):
            return _roots_text(await ctx.session.list_roots())
        reply = response(ctx, "roots")
        if reply is None:
            return types.InputRequiredResult(input_requests={"roots": types.ListRootsRequest()})
        return _roots_text(reply)

    @server.tool
    async def sample_push(prompt: str, ctx: Context) -> str:
        """Samples with a request pushed on the session (no back-channel at 2026-07-28)."""
        result = await ctx.session.create_message(_message(prompt), max_tokens=50, related_request_id=ctx.request_id)
        return _sampled_text(result)

    @server.tool
    async def elicit_push(question: str, ctx: Context) -> str:
        """Elicits with ctx.elicit (fastmcp refuses it at 2026-07-28)."""
        result = await ctx.elicit(question, Answer)
        return result.data.answer if result.action == "accept" else result.action

    @server.tool
    async def roots_push(ctx: Context) -> str:
        """Lists roots with a request pushed on the session."""
        return _roots_text(await ctx.session.list_roots())

    @server.resource("memo://note", mime_type="text/plain")
    def note() -> str:
        """A short note."""
        return "a note"

    @server.prompt
    def greet(name: str) -> str:
        """A greeting."""
        return f"Hello, {name}!"

    return server


MODES = {"stateful": {}, "json": {"json_response": True}, "stateless": {"stateless_http": True}}


def main() -> None:
    kind, mode = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "stateful"
    if mode not in MODES or kind not in ("sdk", "fastmcp"):
        sys.exit(f"usage: matrix_python_peer.py sdk|fastmcp {'|'.join(MODES)}")
    import uvicorn

    if kind == "sdk":
        app = sdk_server().streamable_http_app(**MODES[mode])
    else:
        app = fastmcp_server().http_app(path="/mcp", **MODES[mode])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn is up, instead of being refused
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])


if __name__ == "__main__":
    main()
