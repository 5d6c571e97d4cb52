"""tools/list and tools/call: validation, output schemas, handler failures, sync handlers."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from fixtures.sessions import Connect, text_of
from mcp_sse_server import CallToolResult, McpServer, RequestContext, TextContent, Tool, ToolAnnotations
from mcp_sse_server.engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, JsonRpcError, JsonRpcResponse, McpError

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def add(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    return CallToolResult.text(str(arguments["a"] + arguments["b"]))


async def test_tools_list_gives_the_wire_form(server: McpServer, connect: Connect) -> None:
    server.add_tool(
        Tool(
            "search",
            {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            lambda args, ctx: CallToolResult.structured({"hits": []}),
            title="Search the index",
            description="Finds documents.",
            output_schema={"type": "object", "properties": {"hits": {"type": "array", "items": {"type": "string"}}}},
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
            meta={"example.com/owner": "search-team"},
        )
    )
    server.add_tool(Tool("bare", handler=lambda arguments, context: ""))
    client = await connect(server)
    result = await client.result("tools/list")
    assert result == {
        "tools": [
            {
                "name": "search",
                "title": "Search the index",
                "description": "Finds documents.",
                "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
                "outputSchema": {
                    "type": "object",
                    "properties": {"hits": {"type": "array", "items": {"type": "string"}}},
                },
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
                "_meta": {"example.com/owner": "search-team"},
            },
            {"name": "bare", "inputSchema": {"type": "object"}},
        ]
    }


def test_tool_annotations_serialize_every_hint() -> None:
    annotations = ToolAnnotations("Nice", True, False, True, False)
    assert annotations.to_dict() == {
        "title": "Nice",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert ToolAnnotations().to_dict() == {}


async def test_call_a_sync_tool(server: McpServer, connect: Connect) -> None:
    server.add_tool(Tool("add", ADD_SCHEMA, add))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result == {"content": [{"type": "text", "text": "5"}]}


async def test_call_an_async_tool(server: McpServer, connect: Connect) -> None:
    async def handler(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        await asyncio.sleep(0)
        return CallToolResult.text(arguments["s"].upper())

    server.add_tool(Tool("shout", {"type": "object", "properties": {"s": {"type": "string"}}}, handler))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "shout", "arguments": {"s": "hi"}})
    assert text_of(result) == "HI"


async def test_an_object_with_an_async_call_is_awaited(server: McpServer, connect: Connect) -> None:
    class Handler:
        async def __call__(self, arguments: dict[str, Any], context: RequestContext) -> str:
            return "from __call__"

    server.add_tool(Tool("obj", {"type": "object"}, Handler()))
    client = await connect(server)
    assert text_of(await client.result("tools/call", {"name": "obj"})) == "from __call__"


async def test_handlers_may_return_str_or_dict(server: McpServer, connect: Connect) -> None:
    server.add_tool(Tool("s", {"type": "object"}, lambda args, ctx: "plain"))
    server.add_tool(Tool("d", {"type": "object"}, lambda args, ctx: {"n": 1}))
    client = await connect(server)
    assert await client.result("tools/call", {"name": "s"}) == {"content": [{"type": "text", "text": "plain"}]}
    assert await client.result("tools/call", {"name": "d"}) == {
        "content": [{"type": "text", "text": '{"n":1}'}],
        "structuredContent": {"n": 1},
    }


async def test_missing_arguments_mean_an_empty_object(server: McpServer, connect: Connect) -> None:
    seen: list[dict[str, Any]] = []
    server.add_tool(Tool("noargs", {"type": "object"}, lambda args, ctx: seen.append(args) or "ok"))
    client = await connect(server)
    await client.result("tools/call", {"name": "noargs"})
    await client.result("tools/call", {"name": "noargs", "arguments": None})
    assert seen == [{}, {}]


async def test_unknown_tool_is_invalid_params(server: McpServer, connect: Connect) -> None:
    server.add_tool(Tool("add", ADD_SCHEMA, add))
    client = await connect(server)
    error = await client.error("tools/call", {"name": "subtract", "arguments": {}})
    assert error.code == INVALID_PARAMS
    assert "subtract" in error.message


@pytest.mark.parametrize(
    "params",
    [None, {}, {"name": 5}, {"name": None}, {"name": "add", "arguments": [1, 2]}, {"name": "add", "arguments": "a"}],
)
async def test_malformed_tools_call_is_invalid_params(
    server: McpServer, connect: Connect, params: dict[str, Any] | None
) -> None:
    server.add_tool(Tool("add", ADD_SCHEMA, add))
    client = await connect(server)
    error = await client.error("tools/call", params)
    assert error.code == INVALID_PARAMS


# --- argument validation ---------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        ({"a": 1}, ['"b"', "missing"]),
        ({}, ['"a"', "missing"]),
        ({"a": "one", "b": 2}, ['"a"']),
        ({"a": 1, "b": True}, ['"b"']),
        ({"a": 1, "b": 2, "c": 3}, ['"c"', "unexpected"]),
        ({"a": 1, "b": 2, "c": 3, "d": 4}, ['"c"', '"d"']),
    ],
)
async def test_invalid_arguments_are_an_is_error_result_naming_the_field(
    server: McpServer, connect: Connect, arguments: dict[str, Any], names: list[str]
) -> None:
    calls: list[dict[str, Any]] = []
    server.add_tool(Tool("add", ADD_SCHEMA, lambda args, ctx: calls.append(args) or "ran"))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "add", "arguments": arguments})
    assert result["isError"] is True
    message = text_of(result)
    assert "\n" not in message
    for name in names:
        assert name in message
    assert calls == []  # the handler never saw the bad arguments


async def test_nested_argument_errors_name_the_path(server: McpServer, connect: Connect) -> None:
    schema = {
        "type": "object",
        "properties": {"user": {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}},
    }
    server.add_tool(Tool("nested", schema, lambda args, ctx: "ok"))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "nested", "arguments": {"user": {}}})
    assert result["isError"] is True
    assert "user.age" in text_of(result)
    result = await client.result("tools/call", {"name": "nested", "arguments": {"user": {"age": "x"}}})
    assert "user.age" in text_of(result)


async def test_the_validation_message_does_not_dump_the_schema(server: McpServer, connect: Connect) -> None:
    schema = {"type": "object", "properties": {"mode": {"enum": [f"mode-{i}" for i in range(200)]}}}
    server.add_tool(Tool("modes", schema, lambda args, ctx: "ok"))
    client = await connect(server)
    result = await client.result("tools/call", {"name": "modes", "arguments": {"mode": "x"}})
    assert result["isError"] is True
    assert "mode-150" not in text_of(result)
    assert len(text_of(result)) < 300


def test_invalid_schemas_are_refused_at_registration() -> None:
    server = McpServer("s", "1")
    with pytest.raises(ValueError, match="inputSchema"):
        server.add_tool(Tool("not-object", {"type": "string"}, add))
    with pytest.raises(ValueError, match="bad-input"):
        server.add_tool(Tool("bad-input", {"type": "object", "properties": {"a": {"type": 12}}}, add))
    with pytest.raises(ValueError, match="bad-output"):
        server.add_tool(Tool("bad-output", {"type": "object"}, add, output_schema={"type": "nonsense"}))
    assert server.tools == []


def test_schemas_are_compiled_once_at_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_sse_server.engine.tools as tools_module

    compiled: list[Any] = []
    original = tools_module.SchemaValidator

    def counting(schema: dict[str, Any]) -> Any:
        compiled.append(schema)
        return original(schema)

    monkeypatch.setattr(tools_module, "SchemaValidator", counting)
    server = McpServer("s", "1")
    server.add_tool(Tool("add", ADD_SCHEMA, add, output_schema={"type": "object"}))
    assert len(compiled) == 2


async def test_schemas_are_not_recompiled_per_call(
    server: McpServer, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp_sse_server.engine.tools as tools_module

    server.add_tool(Tool("add", ADD_SCHEMA, add))
    client = await connect(server)

    def refuse(schema: dict[str, Any]) -> Any:
        raise AssertionError("a schema was compiled during a call")

    monkeypatch.setattr(tools_module, "SchemaValidator", refuse)
    for _ in range(3):
        assert text_of(await client.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})) == "2"


# --- output schemas ----------------------------------------------------------------

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sum": {"type": "number"}},
    "required": ["sum"],
}


async def test_structured_output_is_returned_with_its_text(server: McpServer, connect: Connect) -> None:
    server.add_tool(
        Tool(
            "add",
            ADD_SCHEMA,
            lambda args, ctx: CallToolResult.structured({"sum": args["a"] + args["b"]}),
            output_schema=OUTPUT_SCHEMA,
        )
    )
    client = await connect(server)
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert result == {"content": [{"type": "text", "text": '{"sum":3}'}], "structuredContent": {"sum": 3}}


async def test_missing_structured_content_is_an_internal_error(
    server: McpServer, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    server.add_tool(Tool("add", ADD_SCHEMA, add, output_schema=OUTPUT_SCHEMA))
    client = await connect(server)
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        error = await client.error("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert error.code == INTERNAL_ERROR
    assert "structured" in error.message
    assert any("structuredContent" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("structured", [{"sum": "three"}, {"total": 3}, {}])
async def test_mismatching_structured_content_is_an_internal_error(
    server: McpServer, connect: Connect, structured: dict[str, Any]
) -> None:
    server.add_tool(
        Tool("add", ADD_SCHEMA, lambda args, ctx: CallToolResult.structured(structured), output_schema=OUTPUT_SCHEMA)
    )
    client = await connect(server)
    error = await client.error("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert error.code == INTERNAL_ERROR
    assert "output schema" in error.message


async def test_an_error_result_needs_no_structured_content(server: McpServer, connect: Connect) -> None:
    server.add_tool(
        Tool("add", ADD_SCHEMA, lambda args, ctx: CallToolResult.error("cannot add today"), output_schema=OUTPUT_SCHEMA)
    )
    client = await connect(server)
    result = await client.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert result == {"content": [{"type": "text", "text": "cannot add today"}], "isError": True}


# --- handler failures ---------------------------------------------------------------


async def test_handler_exception_is_an_is_error_result_without_its_text(
    server: McpServer, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        raise RuntimeError("secret path /etc/shadow")

    async def explode_async(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        raise KeyError("secret key")

    server.add_tool(Tool("explode", {"type": "object"}, explode))
    server.add_tool(Tool("explode_async", {"type": "object"}, explode_async))
    client = await connect(server)
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        for name, secret in (("explode", "/etc/shadow"), ("explode_async", "secret key")):
            reply = await client.call("tools/call", {"name": name})
            assert isinstance(reply, JsonRpcResponse)
            assert reply.result["isError"] is True
            assert secret not in str(reply.result)
            assert name in text_of(reply.result)
    # The detail goes to the log instead.
    assert "secret path /etc/shadow" in caplog.text


async def test_mcp_error_from_a_handler_is_a_json_rpc_error(server: McpServer, connect: Connect) -> None:
    def refuse(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        raise McpError(INVALID_PARAMS, "the call itself is malformed", {"hint": "x"})

    server.add_tool(Tool("refuse", {"type": "object"}, refuse))
    client = await connect(server)
    error = await client.error("tools/call", {"name": "refuse"})
    assert (error.code, error.message, error.data) == (INVALID_PARAMS, "the call itself is malformed", {"hint": "x"})


async def test_a_bad_return_value_is_an_internal_error_without_detail(server: McpServer, connect: Connect) -> None:
    # Returning the wrong type is the server author's bug, not something the model can fix.
    server.add_tool(Tool("bad", {"type": "object"}, lambda args, ctx: 42))
    client = await connect(server)
    error = await client.error("tools/call", {"name": "bad"})
    assert error.code == INTERNAL_ERROR
    assert "int" not in error.message


def test_a_tool_without_handler_on_a_plain_server_is_refused_at_registration(server: McpServer) -> None:
    with pytest.raises(ValueError, match="Tool 'nohandler' has no handler"):
        server.add_tool(Tool("nohandler"))
    assert server.tools == []


@pytest.mark.parametrize(
    "handler",
    [
        lambda a, b, c: "three parameters",
        lambda: "none",
    ],
)
def test_a_handler_that_cannot_take_arguments_and_context_is_refused_at_registration(
    server: McpServer, handler: Any
) -> None:
    with pytest.raises(ValueError, match=r"a Tool handler is called as handler\(arguments, context\)"):
        server.add_tool(Tool("odd", handler=handler))


def test_a_typed_function_given_as_a_handler_is_refused_at_registration(server: McpServer) -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ValueError, match=r"Tool 'add': its handler takes \(a: .*register it with @server.tool"):
        server.add_tool(Tool("add", handler=add))
    # (arguments, context) handlers, annotated or not, are accepted.
    server.add_tool(Tool("plain", handler=lambda arguments, context: "ok"))

    def typed(arguments: dict[str, Any], context: RequestContext) -> str:
        return "ok"

    server.add_tool(Tool("typed", handler=typed))
    assert [tool.name for tool in server.tools] == ["plain", "typed"]


async def test_on_tool_call_answers_tools_without_handler(connect: Connect) -> None:
    class Dispatching(McpServer):
        async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            return CallToolResult.text(f"dispatched {name}")

    server = Dispatching("d", "1")
    server.add_tool(Tool("dynamic"))
    client = await connect(server)
    assert text_of(await client.result("tools/call", {"name": "dynamic"})) == "dispatched dynamic"


# --- sync handlers run off the event loop ------------------------------------------------


async def test_a_blocking_sync_handler_does_not_block_other_requests(server: McpServer, connect: Connect) -> None:
    release = threading.Event()
    started = threading.Event()

    def blocking(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        started.set()
        # If this ran on the event loop, the ping below could never be answered.
        released = release.wait(timeout=5)
        return CallToolResult.text("released" if released else "timed out")

    server.add_tool(Tool("block", {"type": "object"}, blocking))
    server.add_tool(Tool("add", ADD_SCHEMA, add))
    client = await connect(server)
    call_id = await client.send_request("tools/call", {"name": "block"})
    assert await asyncio.to_thread(started.wait, 5)
    # The handler is now blocked in its thread; the loop still answers.
    assert await client.result("ping") == {}
    assert text_of(await client.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})) == "2"
    release.set()
    reply = await client.response(call_id)
    assert isinstance(reply, JsonRpcResponse)
    assert text_of(reply.result) == "released"


async def test_sync_handlers_run_in_a_worker_thread(server: McpServer, connect: Connect) -> None:
    threads: list[threading.Thread] = []
    server.add_tool(
        Tool("where", {"type": "object"}, lambda args, ctx: threads.append(threading.current_thread()) or "")
    )
    client = await connect(server)
    await client.result("tools/call", {"name": "where"})
    assert threads and threads[0] is not threading.main_thread()


async def test_concurrent_calls_are_answered_independently(server: McpServer, connect: Connect) -> None:
    gate = asyncio.Event()

    async def slow(arguments: dict[str, Any], context: RequestContext) -> str:
        await gate.wait()
        return "slow"

    server.add_tool(Tool("slow", {"type": "object"}, slow))
    server.add_tool(Tool("fast", {"type": "object"}, lambda args, ctx: "fast"))
    client = await connect(server)
    slow_id = await client.send_request("tools/call", {"name": "slow"})
    assert text_of(await client.result("tools/call", {"name": "fast"})) == "fast"
    gate.set()
    reply = await client.response(slow_id)
    assert isinstance(reply, JsonRpcResponse) and text_of(reply.result) == "slow"


def test_call_tool_result_shortcuts() -> None:
    assert CallToolResult.text("hi").to_dict() == {"content": [{"type": "text", "text": "hi"}]}
    assert CallToolResult.error("bad").to_dict() == {"content": [{"type": "text", "text": "bad"}], "isError": True}
    assert CallToolResult.structured({"a": [1, 2]}).to_dict() == {
        "content": [{"type": "text", "text": '{"a":[1,2]}'}],
        "structuredContent": {"a": [1, 2]},
    }
    assert CallToolResult.structured({"a": 1}, text="one").to_dict()["content"] == [{"type": "text", "text": "one"}]
    meta_result = CallToolResult([TextContent("x")], meta={"k": "v"})
    assert meta_result.to_dict() == {"content": [{"type": "text", "text": "x"}], "_meta": {"k": "v"}}
    assert CallToolResult().to_dict() == {"content": []}


async def test_replacing_a_tool_keeps_one_entry(server: McpServer, connect: Connect) -> None:
    server.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: "old"))
    server.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: "new"))
    client = await connect(server)
    assert [t["name"] for t in (await client.result("tools/list"))["tools"]] == ["t"]
    assert text_of(await client.result("tools/call", {"name": "t"})) == "new"


async def test_errors_for_a_tool_call_carry_the_request_id(server: McpServer, connect: Connect) -> None:
    client = await connect(server)
    reply = await client.call("tools/call", {"name": "ghost"}, id="abc")
    assert isinstance(reply, JsonRpcError) and reply.id == "abc"
