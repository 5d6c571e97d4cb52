"""A fuller MCP server: tools with output schemas, a resource, a resource
template with listing and completion, and a prompt.

Run it over Streamable HTTP (one server serves every client session):

    python examples/example.py --port 8080

or use ``build_server()`` in-process, as tests/core/test_example.py does:

    server_side, client_side = MemoryTransport.pair()
    session = await build_server().connect(server_side)
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from mcp_sse_server import (
    CallToolResult,
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
    Resource,
    ResourceInfo,
    ResourceTemplate,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from mcp_sse_server.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError

# Demo data shared by every session; the server only reads it.
NOTES: dict[str, tuple[str, str]] = {
    "groceries": ("Groceries", "Milk, eggs, coffee beans, lemons."),
    "garden": ("Garden plan", "Plant tomatoes in May; move the basil to the south bed."),
    "release": ("Release checklist", "Bump the version, update the changelog, tag, publish."),
    "reading": ("Reading list", "Designing Data-Intensive Applications; The Mythical Man-Month."),
}


def note_uri(note_id: str) -> str:
    return f"notes://{note_id}"


# --- tools ---------------------------------------------------------------------


def add(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    """A sync handler: it runs in a worker thread, so it could block without stalling the server."""
    return CallToolResult.structured({"sum": arguments["a"] + arguments["b"]})


async def search_notes(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
    """Finds notes whose title or text contains the query, reporting progress per note."""
    query = arguments["query"].lower()
    limit = arguments.get("limit", 10)
    hits: list[dict[str, str]] = []
    for done, (note_id, (title, text)) in enumerate(NOTES.items(), start=1):
        context.throw_if_cancelled()
        if query in title.lower() or query in text.lower():
            hits.append({"uri": note_uri(note_id), "title": title})
        await context.report_progress(done, total=len(NOTES), message=f"searched {title}")
    await context.log("info", {"query": query, "hits": len(hits)}, logger="search")
    return CallToolResult.structured({"hits": hits[:limit]})


TOOLS = [
    Tool(
        "add",
        {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        add,
        title="Add two numbers",
        description="Adds a and b.",
        output_schema={"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    ),
    Tool(
        "search_notes",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        search_notes,
        title="Search notes",
        description="Finds notes whose title or text contains the query.",
        output_schema={
            "type": "object",
            "properties": {
                "hits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"uri": {"type": "string"}, "title": {"type": "string"}},
                        "required": ["uri", "title"],
                    },
                }
            },
            "required": ["hits"],
        },
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
]


# --- resources -------------------------------------------------------------------


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


# --- prompts -----------------------------------------------------------------------


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
    """One McpServer per session, with everything registered."""
    server = McpServer(
        "example-notes",
        "1.0.0",
        title="Example notes server",
        instructions="Search notes with search_notes, read them as notes://{id}, add numbers with add.",
    )
    for tool in TOOLS:
        server.add_tool(tool)
    server.add_resource(
        Resource.text(
            "config://app",
            "app-config",
            '{"theme": "dark", "autosave": true}',
            mime_type="application/json",
            description="The app's settings.",
        )
    )
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
    try:
        await asyncio.Event().wait()
    finally:
        await http.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default 8080)")
    try:
        asyncio.run(main(parser.parse_args().port))
    except KeyboardInterrupt:
        pass
