"""Every McpClient result method returns typed objects (prompts and templates as listed,
prompts/get results, resources, completions, tools), and ``raw=True`` returns the wire
form as the server sent it. Our own server, in process and over real HTTP, in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_sse_server.client import InMemoryClient, McpClient, PromptInfo, ResourceTemplateInfo, StreamableHttpClient
from mcp_sse_server.client.results import (
    get_prompt_result_from_dict,
    prompt_info_from_dict,
    resource_template_info_from_dict,
)
from mcp_sse_server.engine.context import RequestContext
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.engine.types import (
    Annotations,
    CallToolResult,
    CompleteRequest,
    CompleteResult,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceInfo,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)
from mcp_sse_server.transport.http import McpHttpServer

ICON = Icon("https://example.com/greet.png", "image/png", ["48x48"])
GREET_ARGUMENTS = [PromptArgument("who", "Whom to greet", required=True), PromptArgument("mood", title="Mood")]


def catalogue() -> McpServer:
    server = McpServer("catalogue", "1.0.0")

    def greet(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
        note = EmbeddedResource(TextResourceContents("memo://note", "a note", "text/plain"))
        return GetPromptResult(
            [PromptMessage.user(f"Hello, {arguments['who']}!"), PromptMessage.assistant(note)], "A greeting"
        )

    def complete_who(request: CompleteRequest, context: RequestContext) -> list[str]:
        return [name for name in ("Ada", "Alan", "Grace") if name.startswith(request.argument_value)]

    def read_item(uri: str, variables: dict[str, str], context: RequestContext) -> str:
        return f"item {variables['id']}"

    server.add_prompt(Prompt("greet", greet, "Greeting", "Greets someone", GREET_ARGUMENTS, complete_who, icons=[ICON]))
    server.add_resource(Resource.text("memo://note", "note", "a note", description="A note"))
    server.add_resource_template(
        ResourceTemplate(
            "memo://items/{id}",
            "item",
            read_item,
            description="One item",
            mime_type="text/plain",
            annotations=Annotations(priority=0.5),
        )
    )
    server.add_tool(Tool("echo", {"type": "object"}, lambda arguments, context: "echoed"))
    return server


@pytest.fixture(params=["memory-auto", "memory-session", "http-auto", "http-session"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[McpClient]:
    transport, mode = request.param.split("-")
    served = None
    if transport == "memory":
        opened: McpClient = InMemoryClient(catalogue(), mode=mode)
    else:
        served = await McpHttpServer.bind(catalogue(), port=0)
        opened = StreamableHttpClient(served.endpoint, mode=mode)
    try:
        async with opened:
            assert opened.era == ("stateless" if mode == "auto" else "session")
            yield opened
    finally:
        if served is not None:
            await served.close()


async def test_prompts_are_typed(client: McpClient) -> None:
    [prompt] = await client.list_prompts()
    assert prompt == PromptInfo("greet", "Greeting", "Greets someone", GREET_ARGUMENTS, None, [ICON])
    assert await client.list_prompts(raw=True) == [prompt.to_dict()]

    result = await client.get_prompt("greet", {"who": "Ada"})
    assert isinstance(result, GetPromptResult) and result.description == "A greeting"
    first, second = result.messages
    assert (first.role, first.content) == ("user", TextContent("Hello, Ada!"))
    assert second.role == "assistant" and isinstance(second.content, EmbeddedResource)
    assert second.content.resource == TextResourceContents("memo://note", "a note", "text/plain")
    raw = await client.get_prompt("greet", {"who": "Ada"}, raw=True)
    assert raw["messages"][0] == {"role": "user", "content": {"type": "text", "text": "Hello, Ada!"}}
    assert get_prompt_result_from_dict(raw) == result


async def test_resources_templates_and_completions_are_typed(client: McpClient) -> None:
    resources = await client.list_resources()
    assert resources == [ResourceInfo("memo://note", "note", None, "A note", "text/plain", len(b"a note"))]
    assert [item["uri"] for item in await client.list_resources(raw=True)] == ["memo://note"]

    [template] = await client.list_resource_templates()
    assert template == ResourceTemplateInfo(
        "memo://items/{id}", "item", None, "One item", "text/plain", Annotations(priority=0.5)
    )
    assert await client.list_resource_templates(raw=True) == [template.to_dict()]

    read = await client.read_resource("memo://items/7")
    assert isinstance(read, ReadResourceResult) and read.contents[0].text == "item 7"  # type: ignore[union-attr]
    assert (await client.read_resource("memo://items/7", raw=True))["contents"][0]["text"] == "item 7"

    ref = {"type": "ref/prompt", "name": "greet"}
    assert await client.complete(ref, "who", "A") == CompleteResult(["Ada", "Alan"])
    raw = await client.complete(ref, "who", "G", raw=True)
    assert raw["completion"]["values"] == ["Grace"]


async def test_tools_are_typed_and_raw_on_request(client: McpClient) -> None:
    [tool] = await client.list_tools()
    assert isinstance(tool, Tool) and tool.name == "echo"
    assert [item["name"] for item in await client.list_tools(raw=True)] == ["echo"]
    assert client.tools == [tool]  # a raw listing leaves the parsed one alone
    assert isinstance(await client.call_tool("echo"), CallToolResult)
    assert (await client.call_tool("echo", raw=True))["content"] == [{"type": "text", "text": "echoed"}]


def test_malformed_entries_are_value_errors() -> None:
    with pytest.raises(ValueError, match="name must be a string"):
        prompt_info_from_dict({"title": "no name"})
    with pytest.raises(ValueError, match="arguments must be a list"):
        prompt_info_from_dict({"name": "p", "arguments": "who"})
    with pytest.raises(ValueError, match="uriTemplate"):
        resource_template_info_from_dict({"name": "t"})
    with pytest.raises(ValueError, match="messages must be a list"):
        get_prompt_result_from_dict({})
    with pytest.raises(ValueError, match="a role and a content block"):
        get_prompt_result_from_dict({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]})
    # A template without a name is named by its template, as a resource by its URI.
    assert resource_template_info_from_dict({"uriTemplate": "a://{x}"}).name == "a://{x}"
