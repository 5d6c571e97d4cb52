"""The typed client (issue 37 item 4): ``complete`` with ``PromptRef``/``ResourceTemplateRef``,
elicitation handlers that read an ``ElicitRequest`` and answer a model, a dataclass,
``Accept``/``Decline``/``Cancel`` (content checked against the requested schema before it is
sent), sampling handlers that read a ``SamplingRequest`` and answer a ``CreateMessageResult``,
roots given by a function; against our McpServer in memory (2026-07-28 and a session) and over
HTTP, and against the official SDK's server and fastmcp's. The dict forms keep working alongside."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from fixtures.peers import Peer
from mcp_sse_server.client import (
    Accept,
    Cancel,
    Decline,
    ElicitationAnswerError,
    ElicitRequest,
    InMemoryClient,
    McpClient,
    PromptRef,
    ResourceTemplateRef,
    SamplingRequest,
    StdioClient,
    StreamableHttpClient,
)
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.jsonrpc import McpError
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.engine.types import (
    CompleteRequest,
    CompleteResult,
    CreateMessageRequest,
    CreateMessageResult,
    ElicitResult,
    Root,
    SamplingMessage,
)
from mcp_sse_server.transport.http import McpHttpApp

from .asgi_server import serve
from .test_stdio_fallback import fastmcp_command


class Booking(BaseModel):
    date: str = Field(description="YYYY-MM-DD")
    guests: int = 2
    seating: Literal["inside", "outside"] | None = None


@dataclasses.dataclass
class BookingData:
    """The same form as a dataclass."""

    date: str
    guests: int = 2


class Colour(BaseModel):
    name: str


class WrongTypes(BaseModel):
    date: int


USERS = {"eng": ["grace", "guido", "ada"], "ops": ["gene"]}


def build_server() -> McpServer:
    """A server written as the README writes one: every question it asks is typed."""
    server = McpServer("typed")

    @server.tool
    async def book(ctx: RequestContext) -> str:
        """Books a table."""
        answer = await ctx.session.elicit("When, and for how many?", schema=Booking)
        if answer.value is None:
            return f"no booking ({answer.action})"
        return f"booked {answer.value.guests} on {answer.value.date} {answer.value.seating or 'anywhere'}"

    @server.tool
    async def ask_model(ctx: RequestContext) -> str:
        """Asks the client's model."""
        reply = await ctx.session.create_message(
            CreateMessageRequest([SamplingMessage.user("2+2?")], max_tokens=5, system_prompt="Be brief.")
        )
        return f"{reply.model}: {reply.text} ({reply.stop_reason})"

    @server.tool
    async def list_roots(ctx: RequestContext) -> str:
        """The client's roots."""
        return ",".join(f"{root.uri}={root.name}" for root in await ctx.session.list_roots())

    def names(request: CompleteRequest, context: RequestContext) -> list[str]:
        return [name for name in ("Ada", "Alan", "Grace") if name.startswith(request.argument_value)]

    @server.prompt(completer=names)
    def greet(name: str, greeting: str = "Hello") -> str:
        """Greets someone."""
        return f"{greeting}, {name}!"

    def members(request: CompleteRequest, context: RequestContext) -> CompleteResult:
        team = USERS.get(request.context_arguments.get("team", ""), [])
        found = [user for user in team if user.startswith(request.argument_value)]
        return CompleteResult(found, total=len(found), has_more=False)

    @server.resource("users://{team}/{user}", completer=members)
    def user(team: str, user: str) -> str:
        """One user."""
        return f"{team}/{user}"

    return server


@asynccontextmanager
async def connected(where: str, **options: Any) -> AsyncIterator[McpClient]:
    """A client of a fresh ``build_server()``: in memory at 2026-07-28 ("memory") or on a
    session ("session"), or over Streamable HTTP ("http")."""
    server = build_server()
    if where == "http":
        async with serve(McpHttpApp(server)) as base, StreamableHttpClient(f"{base}/mcp", **options) as client:
            yield client
        return
    async with InMemoryClient(server, mode="session" if where == "session" else "auto", **options) as client:
        yield client


WHERE = ["memory", "session", "http"]


def answering(answer: Callable[[ElicitRequest], object], asked: list[ElicitRequest] | None = None) -> Any:
    async def handler(request: ElicitRequest) -> object:
        if asked is not None:
            asked.append(request)
        return answer(request)

    return handler


def text_of(result: Any) -> str:
    return str(result.content[0].text)


# --- completion ------------------------------------------------------------------------


@pytest.mark.parametrize("where", WHERE)
async def test_complete_takes_typed_refs_and_context(where: str) -> None:
    async with connected(where) as client:
        assert await client.complete(PromptRef("greet"), "name", "A") == CompleteResult(["Ada", "Alan"])
        members = await client.complete(ResourceTemplateRef("users://{team}/{user}"), "user", "g", {"team": "eng"})
        assert (members.values, members.total, members.has_more) == (["grace", "guido"], 2, False)
        keyword = await client.complete(
            ResourceTemplateRef("users://{team}/{user}"), "user", "g", context={"team": "ops"}
        )
        assert keyword.values == ["gene"]
        # the wire form keeps working, and raw=True still gives it back
        assert (await client.complete({"type": "ref/prompt", "name": "greet"}, "name", "G")).values == ["Grace"]
        raw = await client.complete(PromptRef("greet"), "name", "G", raw=True)
        assert raw["completion"]["values"] == ["Grace"]


async def test_a_ref_of_another_type_is_a_clear_error() -> None:
    async with connected("memory") as client:
        with pytest.raises(TypeError, match="ref must be a PromptRef, a ResourceTemplateRef or a dict, not str"):
            await client.complete("greet", "name", "A")  # type: ignore[call-overload]


# --- elicitation -----------------------------------------------------------------------


@pytest.mark.parametrize("where", WHERE)
async def test_an_elicitation_handler_reads_a_typed_request_and_answers_a_model(where: str) -> None:
    asked: list[ElicitRequest] = []
    handler = answering(lambda request: Booking(date="2026-01-02", seating="outside"), asked)
    async with connected(where, elicitation_handler=handler) as client:
        assert text_of(await client.call_tool("book")) == "booked 2 on 2026-01-02 outside"
    request = asked[-1]
    assert isinstance(request, ElicitRequest) and isinstance(request, dict)
    assert (request.message, request.mode, request.url) == ("When, and for how many?", "form", None)
    assert request.requested_schema is not None
    assert request.requested_schema["properties"]["date"] == {"type": "string", "description": "YYYY-MM-DD"}
    assert request["message"] == request.message  # the dict a handler read before


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (lambda request: Accept(Booking(date="2026-03-04", guests=5)), "booked 5 on 2026-03-04 anywhere"),
        (lambda request: BookingData(date="2026-03-04"), "booked 2 on 2026-03-04 anywhere"),
        (lambda request: Accept(BookingData(date="2026-03-04", guests=3)), "booked 3 on 2026-03-04 anywhere"),
        (lambda request: Accept({"date": "2026-03-04"}), "booked 2 on 2026-03-04 anywhere"),
        (lambda request: ElicitResult("accept", {"date": "2026-03-04"}), "booked 2 on 2026-03-04 anywhere"),
        (lambda request: {"action": "accept", "content": {"date": "d"}}, "booked 2 on d anywhere"),
        (lambda request: Decline(), "no booking (decline)"),
        (lambda request: Cancel(), "no booking (cancel)"),
        (lambda request: ElicitResult("decline"), "no booking (decline)"),
        (lambda request: {"action": "cancel"}, "no booking (cancel)"),
    ],
)
async def test_every_answer_form_reaches_the_server(answer: Callable[[ElicitRequest], object], expected: str) -> None:
    async with connected("session", elicitation_handler=answering(answer)) as client:
        assert text_of(await client.call_tool("book")) == expected


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (lambda request: Colour(name="red"), 'unexpected field "name"'),
        (lambda request: WrongTypes(date=5), 'field "date": 5 is not of type "string"'),
        (lambda request: Accept({"date": "d", "colour": "red"}), 'unexpected field "colour"'),
        (lambda request: Accept({"date": "d", "seating": "roof"}), 'field "seating"'),
        (lambda request: 42, "an elicitation handler answered 'int', which is not an answer"),
    ],
)
async def test_a_typed_answer_that_does_not_fit_is_a_clear_error_and_never_sent(
    answer: Callable[[ElicitRequest], object], problem: str
) -> None:
    # At 2026-07-28 the answer is made within the caller's request; on a session the server gets
    # the error in place of an answer, and its tool fails with it. Either way nothing is booked.
    for where in WHERE:
        async with connected(where, elicitation_handler=answering(answer)) as client:
            with pytest.raises(McpError) as refused:
                await client.call_tool("book")
        assert problem in refused.value.message, where
        if client.stateless:
            assert isinstance(refused.value, ElicitationAnswerError)


async def test_a_url_elicitation_is_typed_and_accepted_without_content() -> None:
    asked: list[ElicitRequest] = []
    server = McpServer("url")

    @server.tool
    async def sign_in(ctx: RequestContext) -> str:
        """Sends the user to a page."""
        answer = await ctx.session.elicit_url("Sign in, please", "https://example.invalid/login", "e-1")
        return str(answer.action)

    def answer(request: ElicitRequest) -> object:
        return Accept() if len(asked) == 1 else Accept({"x": "1"})

    handler = answering(answer, asked)
    async with InMemoryClient(server, mode="session", elicitation_handler=handler, elicitation_url=True) as client:
        assert text_of(await client.call_tool("sign_in")) == "accept"
        with pytest.raises(McpError, match="a URL elicitation is accepted without content: answer Accept"):
            await client.call_tool("sign_in")
    assert (asked[0].mode, asked[0].url, asked[0].elicitation_id) == ("url", "https://example.invalid/login", "e-1")
    assert asked[0].requested_schema is None


# --- sampling --------------------------------------------------------------------------


@pytest.mark.parametrize("where", WHERE)
async def test_a_sampling_handler_reads_a_typed_request_and_answers_a_result(where: str) -> None:
    asked: list[SamplingRequest] = []

    async def sample(request: SamplingRequest) -> CreateMessageResult:
        asked.append(request)
        return CreateMessageResult.reply("4", "test-model")

    async with connected(where, sampling_handler=sample) as client:
        assert text_of(await client.call_tool("ask_model")) == "test-model: 4 (endTurn)"
    request = asked[-1]
    assert isinstance(request, SamplingRequest) and request["maxTokens"] == 5
    assert (request.max_tokens, request.system_prompt, request.tools) == (5, "Be brief.", None)
    assert request.messages == [SamplingMessage.user("2+2?")]
    assert request.request == CreateMessageRequest([SamplingMessage.user("2+2?")], 5, system_prompt="Be brief.")


async def test_a_dict_sampling_handler_still_works_and_a_wrong_answer_is_named() -> None:
    async def wire(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "four"}, "model": "m"}

    async with connected("session", sampling_handler=wire) as client:
        assert text_of(await client.call_tool("ask_model")) == "m: four (None)"

    async def wrong(request: SamplingRequest) -> Any:
        return "four"

    async with connected("memory", sampling_handler=wrong) as client:
        with pytest.raises(McpError, match="a sampling handler answered 'str': return a CreateMessageResult"):
            await client.call_tool("ask_model")


# --- roots -----------------------------------------------------------------------------


@pytest.mark.parametrize("where", WHERE)
async def test_roots_may_be_a_function_asked_each_time(where: str) -> None:
    current = [Root("file:///a", "a")]

    async def roots() -> list[Root]:
        return current

    async with connected(where, roots=roots) as client:
        assert client.capabilities["roots"] == {"listChanged": True}
        assert text_of(await client.call_tool("list_roots")) == "file:///a=a"
        current.append(Root("file:///b", "b"))
        await client.notify_roots_changed()
        assert text_of(await client.call_tool("list_roots")) == "file:///a=a,file:///b=b"
    async with connected(where, roots=lambda: [{"uri": "file:///c"}]) as client:
        assert text_of(await client.call_tool("list_roots")) == "file:///c=None"
    async with connected(where, roots=[Root("file:///d", "d"), {"uri": "file:///e", "name": "e"}]) as client:
        assert text_of(await client.call_tool("list_roots")) == "file:///d=d,file:///e=e"


async def test_a_malformed_root_is_named() -> None:
    async with connected("memory", roots=lambda: [{"name": "no uri"}]) as client:
        with pytest.raises(McpError, match="roots must be a list of Root"):
            await client.call_tool("list_roots")


# --- the official SDK's server ---------------------------------------------------------


@dataclasses.dataclass
class Favourite:
    colour: str


@pytest.mark.parametrize("mode", ["session", "auto"])
async def test_typed_handlers_answer_the_sdk_server(sdk_http: Peer, mode: str) -> None:
    async def elicit(request: ElicitRequest) -> object:
        assert request.message == "Favourite colour?"
        return Favourite("green")

    async def sample(request: SamplingRequest) -> CreateMessageResult:
        return CreateMessageResult.reply(f"{request.messages[0].content.text} is 42", "m")  # type: ignore[union-attr]

    async with StreamableHttpClient(
        f"{sdk_http.base}/mcp",
        mode=mode,
        elicitation_handler=elicit,
        sampling_handler=sample,
        roots=lambda: [Root("file:///w")],
    ) as client:
        assert text_of(await client.call_tool("ask_user")) == "accept: green"
        assert text_of(await client.call_tool("resolve_user")) == "accept: green"
        assert text_of(await client.call_tool("ask_model", {"question": "why"})) == "model said: why is 42"
        assert text_of(await client.call_tool("ask_roots")) == "file:///w"


@dataclasses.dataclass
class FastmcpColour:
    colour: str


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (FastmcpColour("teal"), "you said teal"),
        (Accept({"colour": "red"}), "you said red"),
        (Decline(), "no answer: decline"),
    ],
)
async def test_typed_handlers_answer_a_fastmcp_server_that_elicits(answer: object, expected: str) -> None:
    program, args, env = fastmcp_command()
    schemas: list[dict[str, Any] | None] = []

    async def elicit(request: ElicitRequest) -> object:
        schemas.append(request.requested_schema)
        return answer

    async with StdioClient(
        program, args, env, cwd=Path(__file__).parent, mode="session", elicitation_handler=elicit, request_timeout=30.0
    ) as client:
        assert text_of(await client.call_tool("ask_colour")) == expected
    assert schemas[0] is not None and "colour" in schemas[0]["properties"]
