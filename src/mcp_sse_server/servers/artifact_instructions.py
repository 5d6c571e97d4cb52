"""The built-in ``artifact_instructions`` server: how to write artifacts of each type.

An artifact is a self-contained piece of content (a program, a document, a
diagram, a small web page) that a chat client shows in its own panel instead
of inline. The one tool, ``get_artifact_instructions(type)``, returns guidance
for one artifact type: when an artifact is worth making, the tag format, how
to update or remove an existing artifact, and the type's own rules (with the
type's own update and removal pattern). The text is written
for this project.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Final

from ..engine.context import RequestContext
from ..engine.types import CallToolResult, Tool, ToolAnnotations
from .memory_server import MemoryServer

__all__ = [
    "ARTIFACT_TYPES",
    "TOOL_NAME",
    "ArtifactInstructionsServer",
    "ArtifactTypeError",
    "artifact_instructions",
    "artifact_tool_result",
    "artifact_tools",
]

_GENERAL: Final = """\
# Artifacts

An artifact is a self-contained piece of content that the interface shows in its own panel, next to \
the conversation, where the user can view, copy, download or run it.

## When to make an artifact

Make one when the content is substantial and has a life of its own:
- it is longer than about 15 lines, or the user will likely copy, save, run or edit it;
- it stands on its own and makes sense without the surrounding conversation;
- the user asked for something to be created: a program, a document, a diagram, a page, a component.

Do not make one for:
- short snippets, one-line commands, quick examples or explanations that belong in the conversation;
- answers whose value is the prose itself (advice, comparisons, summaries of the discussion);
- content that only makes sense with the conversation around it;
- a question back to the user. Ask in plain text.

Make at most one artifact per answer unless the user asks for more. Say in a sentence or two, outside \
the artifact, what it is and how to use it; do not repeat its content in the conversation.

## Tag format

Put the whole content between an opening and a closing tag:

<artifact identifier="..." type="..." title="..." language="...">
...content...
</artifact>

- identifier: a short kebab-case name that is unique in this conversation and describes the content, \
such as "csv-parser" or "quarterly-report". It is how the artifact is found again later.
- type: the kind of content, one of: code, documents, html, svg, mermaid, react. It decides how the \
interface renders the content.
- title: a few words shown to the user above the artifact, such as "CSV parser in Python".
- language: the programming language of a code artifact (python, typescript, rust, bash, ...). Leave \
it out for the other types unless their section below says otherwise.

Write the content as it is: no Markdown code fences around it, no escaping of <, > or &, nothing \
before the opening tag on its line and nothing after the closing tag on its line. Never leave parts \
out with placeholders such as "// ... rest of the code unchanged": an artifact is always complete.

## Updating an artifact

To change an artifact that already exists, write it again in full with the same identifier (and the \
same type). The interface shows the new version in place of the old one; earlier versions may stay \
available to the user. Use a new identifier only for content that is genuinely new, not for a new \
version of something already shown. Do not rewrite an artifact the user did not ask to change.

## Removing an artifact

An artifact that has been shown cannot be erased from the conversation, and there is no tag for \
deleting one. To remove part of an artifact, write it again in full with the same identifier, \
without that part: no "[removed]" markers, no commented-out leftovers. To withdraw a whole artifact \
(the user asked to drop it, or it turned out to be wrong), say so in the conversation, naming its \
title, and do not write that identifier again unless the user asks for it back; if a replacement \
takes its place, give the replacement a new identifier only when it is genuinely different content, \
otherwise update the old one.
"""

_SECTIONS: Final[dict[str, str]] = {
    "code": """\
## Type "code"

Source code in any programming language: a script, a module, a configuration file, a query.

- Always set language to the language's common lowercase name (python, javascript, typescript, java, \
go, rust, c, cpp, csharp, bash, sql, yaml, json, ...); the interface uses it for highlighting and for \
the file extension when the user saves the artifact.
- One artifact holds one file. For several files, make the most important one the artifact and \
describe the others, or ask whether the user wants them one at a time.
- The code must run or compile as written: include the imports, define what it uses, and use no \
names or APIs you are not sure exist. Mark real gaps with a clear comment saying what the user must \
supply (an API key, a file path), not with elided code.
- Keep comments for what is not obvious; explain usage in the conversation.
- For HTML pages meant to be viewed, use the html type; for React components, the react type.

Updating and removing: write the whole file again with the same identifier and language, never a \
diff or only the changed function. When removing code, also remove the imports, helpers and \
configuration that only it used, and leave no commented-out code behind.

Example:

<artifact identifier="word-count" type="code" title="Word count script" language="python">
import sys
from collections import Counter

counts = Counter(sys.stdin.read().split())
for word, n in counts.most_common(10):
    print(f"{n:6d} {word}")
</artifact>
""",
    "documents": """\
## Type "documents"

Prose the user will read, keep or publish: a report, an article, a letter, a plan, a README, notes, \
a specification.

- Write Markdown: # headings for structure, lists, tables, **emphasis**, links, and fenced code \
blocks for any code inside the document.
- Start with a single top-level heading that names the document; keep one idea per section.
- Leave out language; the content is always Markdown.
- The document must stand on its own: no references to "the conversation above" or "as you asked".
- Do not use this type for an answer to a question; answers belong in the conversation.

Updating and removing: write the whole document again with the same identifier. To remove a \
section, leave it out and fix what referred to it (a table of contents, "see below" references, \
numbering); do not leave a "removed" note in the document itself.

Example:

<artifact identifier="onboarding-plan" type="documents" title="Onboarding plan">
# Onboarding plan

## Week 1
- Set up the development environment
- Read the architecture overview
</artifact>
""",
    "html": """\
## Type "html"

A web page the interface renders in a sandboxed frame: a small tool, a visualisation, a game, a \
mock-up.

- One self-contained file: a complete document starting with <!DOCTYPE html>, with all CSS in \
<style> elements and all JavaScript in <script> elements of the same file. There are no other files \
to load, so no local images, stylesheets or scripts.
- External resources: only scripts from https://cdnjs.cloudflare.com may be loaded; nothing else \
from the network (no fetch calls, no other CDNs, no web fonts). Draw images with SVG or CSS, or use \
inline data: URLs for very small ones.
- The page cannot use cookies, localStorage, sessionStorage, pop-up windows, alerts or form \
submission to a server; keep state in JavaScript variables.
- Make it usable at any width (the panel may be narrow) and readable on light and dark backgrounds.
- Leave out language.
- To show HTML source code rather than a rendered page, use the code type with language="html".

Updating and removing: write the whole page again with the same identifier, from <!DOCTYPE html> \
to </html>. When removing an element, also remove the CSS rules and the JavaScript that only served \
it, so that no script refers to an element that is gone.
""",
    "svg": """\
## Type "svg"

A vector image the interface renders: an icon, an illustration, a chart, a diagram with a custom look.

- The content is one <svg> element with xmlns="http://www.w3.org/2000/svg" and a viewBox attribute \
(for example viewBox="0 0 400 300"). Give it no fixed width and height, or percentages, so it scales to \
the panel; the viewBox sets the aspect ratio and the coordinate system.
- Self-contained: no external images, fonts, stylesheets or scripts; no <script> or event-handler \
attributes (they are removed). Put styles in presentation attributes or one <style> element inside \
the SVG, and use generic font families (sans-serif, serif, monospace).
- Keep it meaningful at small sizes and give text enough contrast; add a <title> element describing \
the image for accessibility.
- Leave out language.
- For flowcharts, sequence diagrams and similar structured diagrams, prefer the mermaid type: it lays \
the diagram out for you.

Updating and removing: write the whole <svg> element again with the same identifier and keep the \
viewBox unless the user asked for another size. When removing a shape, also remove the gradients, \
patterns, markers and styles in <defs> or <style> that only it used.

Example:

<artifact identifier="sun-icon" type="svg" title="Sun icon">
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">
  <title>A yellow sun</title>
  <circle cx="50" cy="50" r="22" fill="#f5b700"/>
</svg>
</artifact>
""",
    "mermaid": """\
## Type "mermaid"

A diagram written in Mermaid syntax that the interface lays out and draws: flowcharts, sequence \
diagrams, class and state diagrams, entity-relationship diagrams, Gantt charts, pie charts, mind maps, \
timelines.

- The content is Mermaid source only: it starts with the diagram type (flowchart TD, sequenceDiagram, \
classDiagram, stateDiagram-v2, erDiagram, gantt, pie, mindmap, timeline, ...). No ```mermaid fences, \
no HTML, no prose around it.
- Quote labels that contain punctuation, brackets or non-ASCII characters: A["Parse input (CSV)"]. \
Node ids are plain words without spaces.
- Keep it legible: about 30 nodes at most; split larger systems into several diagrams.
- Use %% for comments. Styling with classDef or style is allowed but optional; do not depend on \
themes or configuration blocks.
- Leave out language.

Updating and removing: write the whole diagram again with the same identifier and the same diagram \
type. When removing a node, also remove every edge to and from it and any style or class lines \
that name it: an edge that still names a removed node makes Mermaid draw that node again.

Example:

<artifact identifier="login-flow" type="mermaid" title="Login flow">
flowchart TD
    A[User opens app] --> B{"Has a session?"}
    B -- yes --> C[Show dashboard]
    B -- no --> D[Show login form]
</artifact>
""",
    "react": """\
## Type "react"

A React component the interface renders live: an interactive tool, a calculator, a dashboard, a \
form, a small game.

- The content is one file that default-exports one function component: export default function \
App() { ... }. The component takes no props, or only optional props with defaults, because the \
interface renders it without any.
- Use hooks (useState, useEffect, useMemo, useReducer, ...) imported from "react"; keep all state in \
the component. No localStorage, sessionStorage, cookies or network requests.
- Only these libraries are available; import nothing else:
  - react
  - lucide-react for icons (import { Camera } from "lucide-react")
  - recharts for charts
  - Tailwind CSS utility classes for styling (className="p-4 rounded-lg"), using the default \
classes only, not arbitrary values such as h-[600px]; there is no Tailwind configuration and no \
separate CSS file
- Images: use inline SVG or placeholder shapes; no image URLs.
- Leave out language (the content is always JSX).
- Make it work at any width and give every control a visible label.

Updating and removing: write the whole component again with the same identifier, still with one \
default export. When removing a feature, also remove its state, effects, handlers and the imports \
it alone used, so nothing unused or undefined is left.

Example:

<artifact identifier="counter" type="react" title="Counter">
import { useState } from "react";

export default function Counter() {
  const [count, setCount] = useState(0);
  return (
    <button className="rounded bg-blue-600 px-4 py-2 text-white" onClick={() => setCount(count + 1)}>
      Clicked {count} times
    </button>
  );
}
</artifact>
""",
}

TOOL_NAME: Final = "get_artifact_instructions"

ARTIFACT_TYPES: Final[tuple[str, ...]] = tuple(_SECTIONS)
"""The artifact types, in the order the tool's schema lists them."""

_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "type": {
            "type": "string",
            "enum": list(ARTIFACT_TYPES),
            "description": "The artifact type to get instructions for.",
        }
    },
    "required": ["type"],
    "additionalProperties": False,
}

_DESCRIPTION: Final = (
    "Get the instructions for writing an artifact of one type (code, documents, html, svg, mermaid or "
    "react): when to make an artifact, the <artifact> tag format with its identifier, type, title and "
    "language attributes, how to update or remove an existing artifact, and the rules for that type. Call it "
    "before writing an artifact of a type you have not written yet in this conversation."
)


class ArtifactTypeError(ValueError):
    """An artifact type that does not exist; the message lists the valid ones."""


def artifact_instructions(artifact_type: object) -> str:
    """The instructions for ``artifact_type``: the general rules followed by the type's own."""
    if not isinstance(artifact_type, str) or artifact_type not in _SECTIONS:
        shown = repr(artifact_type) if isinstance(artifact_type, str) else "a non-string value"
        raise ArtifactTypeError(f"Unknown artifact type {shown}; the valid types are: {', '.join(ARTIFACT_TYPES)}")
    return f"{_GENERAL}\n{_SECTIONS[artifact_type]}"


def artifact_tool_result(arguments: object) -> CallToolResult:
    """Answer a ``get_artifact_instructions`` call (an isError result for a bad or missing type)."""
    if not isinstance(arguments, dict) or "type" not in arguments:
        return CallToolResult.error(
            f"Missing required argument 'type'; the valid types are: {', '.join(ARTIFACT_TYPES)}"
        )
    extra = [key for key in arguments if key != "type"]
    if extra:
        return CallToolResult.error(f"Unexpected argument {extra[0]!r}; the only argument is 'type'")
    try:
        return CallToolResult.text(artifact_instructions(arguments["type"]))
    except ArtifactTypeError as error:
        return CallToolResult.error(str(error))


def artifact_tools(*, handlers: bool = True) -> list[Tool]:
    """The ``get_artifact_instructions`` tool as a core ``Tool`` (without a handler if ``handlers=False``)."""
    return [
        Tool(
            TOOL_NAME,
            copy.deepcopy(_INPUT_SCHEMA),
            _handler() if handlers else None,
            title="Artifact instructions",
            description=_DESCRIPTION,
            annotations=ToolAnnotations(
                title="Artifact instructions",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
    ]


def _handler() -> Callable[[dict[str, Any], RequestContext], Awaitable[CallToolResult]]:
    async def handler(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return artifact_tool_result(arguments)

    return handler


class ArtifactInstructionsServer(MemoryServer):
    """The built-in ``artifact_instructions`` server: one tool, ``get_artifact_instructions``."""

    server_name: ClassVar[str] = "artifact_instructions"
    server_title: ClassVar[str | None] = "Artifact Instructions"
    server_instructions: ClassVar[str | None] = (
        "Call get_artifact_instructions with the artifact type before writing an artifact of that type."
    )
    tools: ClassVar[list[Tool]] = artifact_tools(handlers=False)

    async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        if name != TOOL_NAME:
            return CallToolResult.error(f"Unknown tool {name!r}; this server has only {TOOL_NAME}")
        return artifact_tool_result(arguments)
