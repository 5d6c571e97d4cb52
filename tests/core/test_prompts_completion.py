"""Prompts (required arguments checked first) and completion/complete."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import (
    CompleteRequest,
    CompleteResult,
    GetPromptResult,
    McpServer,
    Prompt,
    PromptArgument,
    PromptMessage,
    RequestContext,
    ResourceTemplate,
    TextContent,
)
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, McpError

PATHS = ["src/app.py", "src/api.py", "tests/test_app.py", "README.md"]


def review_handler(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
    return GetPromptResult([PromptMessage.user(f"Review {arguments['path']}")])


async def complete_paths(request: CompleteRequest, context: RequestContext) -> CompleteResult:
    return CompleteResult([p for p in PATHS if p.startswith(request.argument_value)])


def review_prompt(**kwargs: Any) -> Prompt:
    return Prompt(
        "review",
        kwargs.pop("handler", review_handler),
        title="Code review",
        description="Review one file.",
        arguments=[
            PromptArgument("path", "The file to review", required=True),
            PromptArgument("focus", title="Focus"),
        ],
        **kwargs,
    )


async def test_prompts_list(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt(meta={"example.com/x": 1}))
    server.add_prompt(Prompt("bare", lambda args, ctx: "hi"))
    client = await connect(server)
    assert await client.result("prompts/list") == {
        "prompts": [
            {
                "name": "review",
                "title": "Code review",
                "description": "Review one file.",
                "arguments": [
                    {"name": "path", "description": "The file to review", "required": True},
                    {"name": "focus", "title": "Focus"},
                ],
                "_meta": {"example.com/x": 1},
            },
            {"name": "bare"},
        ]
    }


async def test_get_prompt(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt())
    client = await connect(server)
    result = await client.result("prompts/get", {"name": "review", "arguments": {"path": "src/app.py"}})
    # The prompt's description fills in when the handler gives none.
    assert result == {
        "description": "Review one file.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Review src/app.py"}}],
    }


async def test_prompt_handlers_may_return_str_or_messages(server: McpServer, connect: Connect) -> None:
    async def conversation(arguments: dict[str, str], context: RequestContext) -> list[PromptMessage]:
        return [PromptMessage.user("Q"), PromptMessage.assistant("A"), PromptMessage.user(TextContent("Q2"))]

    server.add_prompt(Prompt("text", lambda args, ctx: "just text"))
    server.add_prompt(Prompt("conversation", conversation))
    client = await connect(server)
    assert await client.result("prompts/get", {"name": "text"}) == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "just text"}}]
    }
    result = await client.result("prompts/get", {"name": "conversation", "arguments": {}})
    assert [(m["role"], m["content"]["text"]) for m in result["messages"]] == [
        ("user", "Q"),
        ("assistant", "A"),
        ("user", "Q2"),
    ]


async def test_handler_description_wins(server: McpServer, connect: Connect) -> None:
    server.add_prompt(
        Prompt("p", lambda args, ctx: GetPromptResult([PromptMessage.user("x")], "own"), description="declared")
    )
    client = await connect(server)
    assert (await client.result("prompts/get", {"name": "p"}))["description"] == "own"


async def test_unknown_prompt_is_invalid_params(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt())
    client = await connect(server)
    error = await client.error("prompts/get", {"name": "nope"})
    assert error.code == INVALID_PARAMS
    assert "nope" in error.message


async def test_required_arguments_are_checked_before_the_handler(server: McpServer, connect: Connect) -> None:
    calls: list[dict[str, str]] = []

    def handler(arguments: dict[str, str], context: RequestContext) -> str:
        calls.append(arguments)
        return "ran"

    server.add_prompt(review_prompt(handler=handler))
    client = await connect(server)
    for params in ({"name": "review"}, {"name": "review", "arguments": {"focus": "security"}}):
        error = await client.error("prompts/get", params)
        assert error.code == INVALID_PARAMS
        assert "path" in error.message
    assert calls == []
    # Optional arguments may be left out.
    await client.result("prompts/get", {"name": "review", "arguments": {"path": "x"}})
    assert calls == [{"path": "x"}]


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"name": 3},
        {"name": "review", "arguments": ["path"]},
        {"name": "review", "arguments": []},
        {"name": "review", "arguments": ""},
        {"name": "review", "arguments": {"path": 5}},
        {"name": "review", "arguments": {"path": None}},
    ],
)
async def test_malformed_prompts_get_is_invalid_params(
    server: McpServer, connect: Connect, params: dict[str, Any] | None
) -> None:
    server.add_prompt(review_prompt())
    client = await connect(server)
    assert (await client.error("prompts/get", params)).code == INVALID_PARAMS


async def test_mcp_error_from_a_prompt_handler(server: McpServer, connect: Connect) -> None:
    def handler(arguments: dict[str, str], context: RequestContext) -> str:
        raise McpError(INVALID_PARAMS, "path must be inside the project")

    server.add_prompt(review_prompt(handler=handler))
    client = await connect(server)
    error = await client.error("prompts/get", {"name": "review", "arguments": {"path": "/etc"}})
    assert (error.code, error.message) == (INVALID_PARAMS, "path must be inside the project")


def test_prompt_message_shortcuts() -> None:
    assert PromptMessage.user("hi").to_dict() == {"role": "user", "content": {"type": "text", "text": "hi"}}
    assert PromptMessage.assistant("yo").to_dict() == {"role": "assistant", "content": {"type": "text", "text": "yo"}}


# --- completion ------------------------------------------------------------------------


def _complete_params(ref: dict[str, Any], name: str, value: str, context: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = context
    return params


async def test_complete_a_prompt_argument(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt(completer=complete_paths))
    client = await connect(server)
    result = await client.result(
        "completion/complete", _complete_params({"type": "ref/prompt", "name": "review"}, "path", "src/")
    )
    assert result == {"completion": {"values": ["src/app.py", "src/api.py"]}}


async def test_the_completer_sees_the_request(server: McpServer, connect: Connect) -> None:
    seen: list[CompleteRequest] = []

    def completer(request: CompleteRequest, context: RequestContext) -> list[str]:
        seen.append(request)
        return ["x"]

    server.add_prompt(review_prompt(completer=completer))
    server.add_resource_template(
        ResourceTemplate("repo://{owner}/{name}", "repo", lambda u, v, c: "", completer=completer)
    )
    client = await connect(server)
    await client.result(
        "completion/complete",
        _complete_params({"type": "ref/prompt", "name": "review"}, "focus", "se", {"arguments": {"path": "a.py"}}),
    )
    await client.result(
        "completion/complete",
        _complete_params({"type": "ref/resource", "uri": "repo://{owner}/{name}"}, "name", "mc"),
    )
    assert seen == [
        CompleteRequest("ref/prompt", "review", "focus", "se", {"path": "a.py"}),
        CompleteRequest("ref/resource", "repo://{owner}/{name}", "name", "mc", {}),
    ]


async def test_complete_a_template_variable(server: McpServer, connect: Connect) -> None:
    async def complete_owner(request: CompleteRequest, context: RequestContext) -> list[str]:
        return [o for o in ("anthropic", "apple", "google") if o.startswith(request.argument_value)]

    server.add_resource_template(
        ResourceTemplate("repo://{owner}/{name}", "repo", lambda uri, v, ctx: "", completer=complete_owner)
    )
    client = await connect(server)
    result = await client.result(
        "completion/complete", _complete_params({"type": "ref/resource", "uri": "repo://{owner}/{name}"}, "owner", "a")
    )
    assert result == {"completion": {"values": ["anthropic", "apple"]}}


async def test_more_than_100_values_are_cut_to_100_with_has_more_and_total(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt(completer=lambda req, ctx: [f"v{i}" for i in range(250)]))
    client = await connect(server)
    result = await client.result(
        "completion/complete", _complete_params({"type": "ref/prompt", "name": "review"}, "path", "")
    )
    completion = result["completion"]
    assert completion["values"] == [f"v{i}" for i in range(100)]
    assert completion["hasMore"] is True
    assert completion["total"] == 250


def test_complete_result_keeps_a_declared_total_and_has_more() -> None:
    assert CompleteResult(["a"], total=10, has_more=True).to_dict() == {
        "completion": {"values": ["a"], "total": 10, "hasMore": True}
    }
    assert CompleteResult([str(i) for i in range(101)], total=5000).to_dict()["completion"]["total"] == 5000
    exactly_100 = CompleteResult([str(i) for i in range(100)]).to_dict()["completion"]
    assert len(exactly_100["values"]) == 100
    assert "hasMore" not in exactly_100


async def test_a_prompt_without_a_completer_completes_to_nothing(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt(completer=complete_paths))
    server.add_prompt(Prompt("plain", lambda args, ctx: "x"))
    client = await connect(server)
    result = await client.result(
        "completion/complete", _complete_params({"type": "ref/prompt", "name": "plain"}, "a", "")
    )
    assert result == {"completion": {"values": []}}


async def test_completion_without_any_completer_is_method_not_found(server: McpServer, connect: Connect) -> None:
    server.add_prompt(review_prompt())
    client = await connect(server)
    error = await client.error(
        "completion/complete", _complete_params({"type": "ref/prompt", "name": "review"}, "path", "")
    )
    assert error.code == METHOD_NOT_FOUND


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"ref": {"type": "ref/prompt", "name": "review"}},
        {"argument": {"name": "path", "value": ""}},
        {"ref": "review", "argument": {"name": "path", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "path"}},
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"value": ""}},
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": 1, "value": ""}},
        {"ref": {"type": "ref/prompt"}, "argument": {"name": "path", "value": ""}},
        {"ref": {"type": "ref/resource"}, "argument": {"name": "path", "value": ""}},
        {"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "path", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "ghost"}, "argument": {"name": "path", "value": ""}},
        {"ref": {"type": "ref/resource", "uri": "ghost://{x}"}, "argument": {"name": "x", "value": ""}},
    ],
)
async def test_malformed_completion_is_invalid_params(
    server: McpServer, connect: Connect, params: dict[str, Any] | None
) -> None:
    server.add_prompt(review_prompt(completer=complete_paths))
    client = await connect(server)
    assert (await client.error("completion/complete", params)).code == INVALID_PARAMS


async def test_failing_prompt_handlers_and_completers_are_internal_errors_without_their_text(
    server: McpServer, connect: Connect
) -> None:
    def explode(*args: Any) -> Any:
        raise RuntimeError("secret detail")

    server.add_prompt(review_prompt(handler=explode, completer=explode))
    client = await connect(server)
    for method, params in (
        ("prompts/get", {"name": "review", "arguments": {"path": "x"}}),
        ("completion/complete", _complete_params({"type": "ref/prompt", "name": "review"}, "path", "")),
    ):
        error = await client.error(method, params)
        assert error.code == -32603
        assert "secret" not in error.message
