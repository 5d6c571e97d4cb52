"""A fuller MCP server: typed tools with output schemas, a resource, a resource
template with listing and completion, and a prompt with completion.

Run it over Streamable HTTP (one server serves every client session):

    python examples/example.py --port 8080

or serve it with the command line, which calls build_server() once per session:

    mcp-sse-server serve examples/example.py:build_server

or use ``build_server()`` in-process, as tests/core/test_example.py does:

    async with InMemoryClient(build_server()) as client:
        print(await client.call_tool("add", {"a": 2, "b": 3}))

The tools and the fixed resource are typed functions (``@server.tool``,
``@server.resource``). The decorators take no lister or completer, so the
template and the prompt, which complete note ids, are ``ResourceTemplate`` and
``Prompt`` objects.
"""

import argparse
import asyncio
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcp_sse_server import (
    CompleteRequest,
    CompleteResult,
    EmbeddedResource,
    GetPromptResult,
    McpServer,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    RequestContext,
    ResourceInfo,
    ResourceTemplate,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError

# Demo data shared by every session; the server only reads it.
NOTES: dict[str, tuple[str, str]] = {
    "groceries": ("Groceries", "Milk, eggs, coffee beans, lemons."),
    "garden": ("Garden plan", "Plant tomatoes in May; move the basil to the south bed."),
    "release": ("Release checklist", "Bump the version, update the changelog, tag, publish."),
    "reading": ("Reading list", "Designing Data-Intensive Applications; The Mythical Man-Month."),
}


def note_uri(note_id: str) -> str:
    return f"notes://{note_id}"


# --- tool results: models are objects, so each is the tool's output schema -----------------


class Sum(BaseModel):
    sum: float


class Hit(BaseModel):
    uri: str
    title: str


class SearchResult(BaseModel):
    hits: list[Hit]


# --- the template and the prompt: object form, for their lister and completer -----------------


def list_notes() -> list[ResourceInfo]:
    return [
        ResourceInfo(note_uri(note_id), note_id, title=title, mime_type="text/plain")
        for note_id, (title, _) in NOTES.items()
    ]


def read_note(uri: str, variables: dict[str, str], context: RequestContext) -> ReadResourceResult:
    note = NOTES.get(variables["id"])
    if note is None:
        raise McpError(RESOURCE_NOT_FOUND, f"No note {variables['id']!r}", {"uri": uri})
    return ReadResourceResult([TextResourceContents(uri, note[1], "text/plain")])


def complete_note_id(request: CompleteRequest, context: RequestContext) -> CompleteResult:
    """Completes a note id (the template's {id}, or the prompt's id argument) by prefix."""
    if request.argument_name != "id":
        return CompleteResult([])
    matches = [note_id for note_id in NOTES if note_id.startswith(request.argument_value)]
    return CompleteResult(matches, total=len(matches), has_more=False)


def summarize_note(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
    note_id = arguments["id"]
    note = NOTES.get(note_id)
    if note is None:
        raise McpError(INVALID_PARAMS, f"No note {note_id!r}")
    style = arguments.get("style", "one paragraph")
    return GetPromptResult(
        [
            PromptMessage.user(EmbeddedResource(TextResourceContents(note_uri(note_id), note[1], "text/plain"))),
            PromptMessage.user(f"Summarize the note {note[0]!r} above in {style}."),
        ],
        description=f"Summarize {note[0]}",
    )


def build_server() -> McpServer:
    """A new McpServer with everything registered: call it once per session."""
    server = McpServer(
        "example-notes",
        "1.0.0",
        title="Example notes server",
        instructions="Search notes with search_notes, read them as notes://{id}, add numbers with add.",
    )

    @server.tool(
        title="Add two numbers",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    def add(a: float, b: float) -> Sum:
        """Adds a and b."""
        # A plain def runs in a worker thread, so it could block without stalling the server.
        return Sum(sum=a + b)

    @server.tool(title="Search notes", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    async def search_notes(
        query: Annotated[str, Field(min_length=1)],
        context: RequestContext,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> SearchResult:
        """Finds notes whose title or text contains the query.

        Args:
            query: The text to look for, in any case.
            limit: The most notes to return.
        """
        lowered = query.lower()
        hits: list[Hit] = []
        for done, (note_id, (title, text)) in enumerate(NOTES.items(), start=1):
            context.throw_if_cancelled()
            if lowered in title.lower() or lowered in text.lower():
                hits.append(Hit(uri=note_uri(note_id), title=title))
            await context.report_progress(done, total=len(NOTES), message=f"searched {title}")
        await context.log("info", {"query": lowered, "hits": len(hits)}, logger="search")
        return SearchResult(hits=hits[:limit])

    @server.resource("config://app", name="app-config")
    async def app_config() -> dict[str, Any]:
        """The app's settings."""
        return {"theme": "dark", "autosave": True}  # a dict is read as JSON, application/json

    server.add_resource_template(
        ResourceTemplate(
            "notes://{id}",
            "note",
            read_note,
            lister=list_notes,
            completer=complete_note_id,
            title="A note",
            description="One note by id.",
            mime_type="text/plain",
        )
    )
    server.add_prompt(
        Prompt(
            "summarize_note",
            summarize_note,
            title="Summarize a note",
            description="Asks the model to summarize one note.",
            arguments=[
                PromptArgument("id", "The note id", required=True),
                PromptArgument("style", "How to summarize, e.g. 'three bullet points'"),
            ],
            completer=complete_note_id,
        )
    )
    return server


async def main(port: int) -> None:
    # Imported here so build_server() works without the HTTP transport loaded.
    from mcp_sse_server.transport.http import McpHttpServer

    http = await McpHttpServer.bind(build_server(), port=port)
    print(f"listening on {http.endpoint}", flush=True)
    await http.serve_forever()  # until Ctrl-C or SIGTERM, then a graceful close


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default 8080)")
    asyncio.run(main(parser.parse_args().port))
