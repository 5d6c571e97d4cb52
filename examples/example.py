"""A fuller MCP server: typed tools with output schemas, a resource, a resource
template with listing and completion, and a prompt with completion.

Run it over Streamable HTTP (one server serves every client session):

    python examples/example.py --port 8080

or serve it with the command line, which calls build_server() once per session:

    mcp-sse-server serve examples/example.py:build_server

or use ``build_server()`` in-process, as tests/core/test_example.py does:

    async with InMemoryClient(build_server()) as client:
        print(await client.call_tool("add", {"a": 2, "b": 3}))

Everything is a typed function (``@server.tool``, ``@server.resource``,
``@server.prompt``): the template takes a ``lister`` (its notes in
resources/list) and a ``completer`` (note ids), the prompt the same completer.
A reader or a prompt says "no such note" by raising ``NotFound``: the client
gets the resource-not-found error of its revision (or invalid params, for the
prompt).
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
    NotFound,
    PromptMessage,
    RequestContext,
    ResourceInfo,
    TextResourceContents,
    ToolAnnotations,
)

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


# --- what the template and the prompt share: listing and completing note ids -----------------


def list_notes() -> list[ResourceInfo]:
    return [
        ResourceInfo(note_uri(note_id), note_id, title=title, mime_type="text/plain")
        for note_id, (title, _) in NOTES.items()
    ]


def complete_note_id(request: CompleteRequest, context: RequestContext) -> CompleteResult:
    """Completes a note id (the template's {id}, or the prompt's id argument) by prefix."""
    if request.argument_name != "id":
        return CompleteResult([])
    matches = [note_id for note_id in NOTES if note_id.startswith(request.argument_value)]
    return CompleteResult(matches, total=len(matches), has_more=False)


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

    @server.resource("notes://{id}", title="A note", lister=list_notes, completer=complete_note_id)
    def note(id: str) -> str:
        """One note by id."""
        if id not in NOTES:
            raise NotFound(f"No note {id!r}")  # returning None would say the same, without the message
        return NOTES[id][1]  # a str is read as text/plain, which resources/templates/list shows too

    @server.prompt(title="Summarize a note", completer=complete_note_id)
    def summarize_note(id: str, style: str = "one paragraph") -> GetPromptResult:
        """Asks the model to summarize one note.

        Args:
            id: The note id.
            style: How to summarize, e.g. 'three bullet points'.
        """
        found = NOTES.get(id)
        if found is None:
            raise NotFound(f"no note {id!r}")
        title, text = found
        return GetPromptResult(
            [
                PromptMessage.user(EmbeddedResource(TextResourceContents(note_uri(id), text, "text/plain"))),
                PromptMessage.user(f"Summarize the note {title!r} above in {style}."),
            ],
            description=f"Summarize {title}",
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
