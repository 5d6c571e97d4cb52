"""The Python blocks of README.md and docs/*.md: each compiles, uses only names it defines or
imports, and runs.

Conventions, read from a block's first line:

- ``# not run: <why>``: the block is compiled and its names are checked, but it is not run
  (it serves until stopped, needs Redis, a server on a port, ...).
- ``# file: <name>.py``: the block is also saved under that name, in a directory on
  ``sys.path`` while the same document's blocks run, so they can import it.

A block may use top-level ``await``: it then runs in a new event loop (``asyncio.run``). Each
block runs as a module of its own (registered in ``sys.modules``, as pydantic needs for models
defined in it), with ``__name__`` other than ``"__main__"``.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import inspect
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^`\s]*)[^`]*$")
_NOT_RUN = re.compile(r"#\s*not run:\s*(?P<why>\S.*)")
_FILE = re.compile(r"#\s*file:\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\.py\s*$")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # the first line of the code, 1-based, in the document
    source: str

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.source.split("\n", 1)[0].strip()

    @property
    def not_run(self) -> str | None:
        found = _NOT_RUN.fullmatch(self.first_line)
        return found["why"] if found else None

    @property
    def module_name(self) -> str | None:
        found = _FILE.fullmatch(self.first_line)
        return found["name"] if found else None

    def compile(self) -> types.CodeType:
        # Blank lines first, so errors and tracebacks name the document's own line numbers.
        padded = "\n" * (self.line - 1) + self.source
        code: types.CodeType = compile(padded, str(self.document), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        return code


def python_blocks(document: Path) -> list[Block]:
    """Every fenced block of ``document`` whose info string is ``python`` or ``py``."""
    blocks: list[Block] = []
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None:
            continue
        indent, start, body = opening["indent"], index, []
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index].removeprefix(indent))
            index += 1
        index += 1  # the closing fence
        if opening["info"] in ("python", "py"):
            blocks.append(Block(document, start + 1, "\n".join(body) + "\n"))
    return blocks


BLOCKS = [block for document in DOCUMENTS for block in python_blocks(document)]


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the block binds, in any scope: assignments, imports, definitions, parameters, ..."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                raise AssertionError("a block must not use `import *`: its names could not be checked")
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def undefined_names(block: Block) -> list[str]:
    """The names the block reads that it neither defines nor imports (and that are not builtins)."""
    tree = ast.parse(block.source)
    known = _bound_names(tree) | set(dir(builtins))
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return sorted(used - known)


def test_every_document_is_found_with_its_blocks() -> None:
    assert (ROOT / "docs").is_dir()
    assert len(DOCUMENTS) > 1
    assert any(block.document.name == "README.md" for block in BLOCKS)
    for block in BLOCKS:
        first = block.first_line
        if first.startswith("#") and re.match(r"#\s*not run", first):
            assert block.not_run, f"{block.where}: say why a block is not run: `# not run: <why>`"


def test_a_name_neither_defined_nor_imported_is_reported() -> None:
    source = (
        "from mcp_sse_server import McpServer\n"
        "def read(uri, context):\n"
        "    return [entry for entry in list_files(uri)]\n"
        "server = McpServer('s')\n"
        "server.add_resource(Resource('a://b', 'b', read))\n"
    )
    assert undefined_names(Block(ROOT / "README.md", 1, source)) == ["Resource", "list_files"]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_the_block_compiles_and_names_only_what_it_defines_or_imports(block: Block) -> None:
    block.compile()
    assert undefined_names(block) == [], f"{block.where}: names used but never defined or imported"


@pytest.fixture
def importable_files(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The ``# file:`` blocks of the block's document, saved where the block can import them."""
    names = []
    for other in python_blocks(block.document):
        name = other.module_name
        if name is not None:
            (tmp_path / f"{name}.py").write_text(other.source, encoding="utf-8")
            names.append(name)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield names
    for name in names:
        sys.modules.pop(name, None)


def run_block(block: Block, module_name: str) -> None:
    code = block.compile()
    module = types.ModuleType(module_name)
    module.__file__ = str(block.document)
    sys.modules[module_name] = module
    try:
        if code.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(code, module.__dict__))
        else:
            exec(code, module.__dict__)
    finally:
        del sys.modules[module_name]


RUN = [block for block in BLOCKS if block.not_run is None]


@pytest.mark.parametrize("block", RUN, ids=lambda block: block.where)
def test_the_block_runs(block: Block, importable_files: list[str]) -> None:
    run_block(block, f"readme_block_{block.document.stem}_{block.line}".replace("-", "_"))


_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _anchors(document: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``document``."""
    anchors = set()
    fenced = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif line.startswith("#") and not fenced:
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda document: str(document.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_a_heading(document: Path) -> None:
    broken = []
    for found in _LINK.finditer(document.read_text(encoding="utf-8")):
        target = found["target"]
        if re.match(r"[a-z]+:", target):
            continue  # https://, mailto:
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert broken == [], f"{document.relative_to(ROOT)}: broken links"


# `tests/file.py::test_name`, or `::test_name` for another test of the file named before it on the
# line (docs/auth.md's threat table names the test that fails without each defence).
_TEST_REFERENCE = re.compile(r"`(?P<file>tests/[\w/.-]+\.py)?::(?P<name>test_\w+)(?:\[[^\]`]*\])?`")


def _stale_references(text: str) -> tuple[int, list[str]]:
    """How many tests ``text`` names, and those of them that do not exist."""
    seen, stale = 0, []
    for line in text.splitlines():
        file = None
        for found in _TEST_REFERENCE.finditer(line):
            seen += 1
            file = found["file"] or file
            source = ROOT / file if file is not None else None
            if source is None or not source.is_file():
                stale.append(f"{file}::{found['name']} (no such file)")
            elif not re.search(
                rf"^\s*(async )?def {found['name']}\(", source.read_text(encoding="utf-8"), re.MULTILINE
            ):
                stale.append(f"{file}::{found['name']}")
    return seen, stale


def test_a_reference_to_a_test_names_one_that_exists() -> None:
    seen, stale = 0, []
    for document in [*DOCUMENTS, ROOT / "bench" / "README.md"]:
        found, missing = _stale_references(document.read_text(encoding="utf-8"))
        seen += found
        stale += [f"{document.relative_to(ROOT)}: {reference}" for reference in missing]
    assert seen > 20  # (the threat table's rows are found at all)
    assert stale == [], "documents name tests that no longer exist"


def test_a_renamed_test_is_reported() -> None:
    text = "`tests/test_readme.py::test_a_renamed_test_is_reported`, `::test_no_such_test`, `tests/no.py::test_x`"
    assert _stale_references(text) == (
        3,
        ["tests/test_readme.py::test_no_such_test", "tests/no.py::test_x (no such file)"],
    )
