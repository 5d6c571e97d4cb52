"""The peer matrix: our StreamableHttpClient against the official Python SDK's, fastmcp's and the
TypeScript SDK v2's servers in each of their modes, side by side with the official ``mcp`` 2.3
Python client, both in their default mode (``auto``).

The requirement it checks: no case where our client does worse than the official one. Every
peer, mode and scenario is run with both clients (a fresh connection per case, 15 s bound); a case
fails when ours fails and the official client passes, naming peer, mode, scenario and both
reasons. Cases where both fail are recorded, not failed: they are the servers' limits (or both
clients'), and the table shows them.

The peers are real SDK code (tests/client/matrix_python_peer.py, matrix_ts_peer.mjs), one
process per peer and mode, started once for its test and always killed after. The scenarios:
list_tools, echo, read (memo://note), greet (the prompt), sample, elicit, roots (asked the way
each SDK recommends for a tool that works in both eras), and sample_push, elicit_push,
roots_push (always a request pushed on the session, which 2026-07-28 has no back-channel for).

The whole matrix is printed as a table when the module ends (visible with ``pytest -s``) and
written as JSON to ``$MCP_TEST_MATRIX_JSON``, else to ``peer-matrix.json`` in pytest's temporary
directory (the path is printed). ``python tests/client/test_peer_matrix.py`` runs the file that
way. A missing peer (node, the TypeScript SDK, fastmcp's virtualenv) skips its tests, which
``MCP_TEST_NO_SKIP=1`` (scripts/test.sh) turns into failures.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
PYTHON_PEER = str(HERE / "matrix_python_peer.py")
TS_PEER = str(HERE / "matrix_ts_peer.mjs")
CALL_TIMEOUT = 15.0
ROOT_URI = "file:///work"

PEERS: list[tuple[str, str]] = [
    *(("sdk", mode) for mode in ("stateful", "json", "stateless")),
    *(("fastmcp", mode) for mode in ("stateful", "json", "stateless")),
    *(("ts", mode) for mode in ("stateful", "json", "stateless", "2026-07-28")),
]
SCENARIOS = [
    "list_tools",
    "echo",
    "read",
    "greet",
    "sample",
    "elicit",
    "roots",
    "sample_push",
    "elicit_push",
    "roots_push",
]
# What each scenario's text must be (list_tools: the names that must be listed).
EXPECTED = {
    "echo": "hello",
    "read": "a note",
    "greet": "Hello, Alice!",
    "sample": "Paris",
    "elicit": "blue",
    "roots": ROOT_URI,
}
for _name in ("sample", "elicit", "roots"):
    EXPECTED[f"{_name}_push"] = EXPECTED[_name]
TOOLS = {"echo", "sample", "elicit", "roots", "sample_push", "elicit_push", "roots_push"}


@dataclass
class Outcome:
    ok: bool
    # Why not ok: "isError: <text>" (a tool result with isError), "<Exception> <code>: <message>"
    # (raised: with a code, a JSON-RPC error response or the client's own error code), or a mismatch.
    reason: str = ""
    era: str = ""  # the protocol version the client spoke, when it got that far


@dataclass
class Case:
    peer: str
    mode: str
    scenario: str
    ours: Outcome
    official: Outcome

    @property
    def worse(self) -> bool:
        return self.official.ok and not self.ours.ok


RESULTS: list[Case] = []


# --- the peers ---------------------------------------------------------------------------


def peer_command(peer: str, mode: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment that start ``peer`` in ``mode``; skips when it is missing."""
    if peer == "sdk":
        return [sys.executable, PYTHON_PEER, "sdk", mode], dict(os.environ)
    if peer == "fastmcp":
        python = os.environ.get("MCP_TEST_FASTMCP_PYTHON") or str(HERE.parents[1] / ".tools/fastmcp/bin/python")
        if not os.path.isfile(python):
            pytest.skip("fastmcp is not set up: run `source scripts/setup.sh && setup_fastmcp` (scripts/test.sh does)")
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # its own mcp, not ours
        return [python, PYTHON_PEER, "fastmcp", mode], env
    from fixtures.node import node_setup  # here, not at the top: `python test_peer_matrix.py` has no fixtures

    found = node_setup()
    if found is None or not os.path.isdir(os.path.join(found[1], "@modelcontextprotocol/server")):
        pytest.skip(
            "node or @modelcontextprotocol/server 2.4 is not set up: run `source scripts/setup.sh && setup_node`"
        )
    node, modules = found
    return [node, TS_PEER, mode], {**os.environ, "MCP_TEST_NODE_MODULES": modules}


@contextmanager
def running(peer: str, mode: str) -> Iterator[str]:
    """The /mcp URL of ``peer`` serving ``mode`` while the block runs; the process is killed after."""
    from fixtures.peers import START_TIMEOUT

    command, env = peer_command(peer, mode)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=HERE)
    try:
        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(START_TIMEOUT)
        if not line or not line[0].startswith(b"PORT "):
            raise RuntimeError(f"{peer} peer ({mode}) did not start: {line}")
        yield f"http://127.0.0.1:{int(line[0].split()[1])}/mcp"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(5)


# --- one scenario, through either client's methods ----------------------------------------


async def play(
    scenario: str,
    list_tools: Callable[[], Awaitable[Any]],
    read_resource: Callable[[str], Awaitable[Any]],
    get_prompt: Callable[[str, dict[str, str]], Awaitable[Any]],
    call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]],
) -> Any:
    """What ``scenario`` gives, asked through one client's methods (both clients name them alike)."""
    if scenario == "list_tools":
        return {tool.name for tool in await list_tools()}
    if scenario == "read":
        read = await read_resource("memo://note")
        return str(getattr(read.contents[0], "text", ""))
    if scenario == "greet":
        prompt = await get_prompt("greet", {"name": "Alice"})
        return str(getattr(prompt.messages[0].content, "text", ""))
    result = await call_tool(scenario, _arguments(scenario))
    return _tool_text(result, result.is_error)


# --- our client ----------------------------------------------------------------------------


async def our_sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}


async def our_elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": "blue"}}


def _tool_text(result: Any, is_error: bool) -> str:
    texts = [getattr(block, "text", "") for block in result.content]
    text = " ".join(t for t in texts if t)
    if is_error:
        raise ToolFailed(text)
    return text


class ToolFailed(Exception):
    """A tool result with isError: the text it carried."""


async def run_ours(url: str, scenario: str, spoke: list[str]) -> Any:
    from mcp_sse_server.client import StreamableHttpClient
    from mcp_sse_server.engine.types import Root

    async with StreamableHttpClient(
        url,
        sampling_handler=our_sample,
        elicitation_handler=our_elicit,
        roots=[Root(ROOT_URI)],
        request_timeout=CALL_TIMEOUT,
    ) as client:
        spoke.append(str(client.protocol_version))
        return await play(scenario, client.list_tools, client.read_resource, client.get_prompt, client.call_tool)


# --- the official client -------------------------------------------------------------------


async def run_official(url: str, scenario: str, spoke: list[str]) -> Any:
    import mcp_types as types
    from mcp import Client

    async def sample(context: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m", stop_reason="endTurn"
        )

    async def elicit(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    async def list_roots(context: Any) -> Any:
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": ROOT_URI})])

    async with Client(
        url,
        sampling_callback=sample,
        elicitation_callback=elicit,
        list_roots_callback=list_roots,
        read_timeout_seconds=CALL_TIMEOUT,
    ) as client:
        spoke.append(str(client.protocol_version))

        async def list_tools() -> Any:
            return (await client.list_tools()).tools

        return await play(scenario, list_tools, client.read_resource, client.get_prompt, client.call_tool)


# --- the cases -----------------------------------------------------------------------------


def _arguments(scenario: str) -> dict[str, Any]:
    base = scenario.removesuffix("_push")
    return {
        "echo": {"text": "hello"},
        "sample": {"prompt": "Capital of France?"},
        "elicit": {"question": "Colour?"},
    }.get(base, {})


def _describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, ToolFailed):
        return f"isError: {error}"
    if isinstance(error, TimeoutError):
        return f"timeout after {CALL_TIMEOUT:g} s"
    detail = getattr(error, "message", None) or str(error) or repr(error)
    code = getattr(error, "code", None)
    if code is None:
        code = getattr(getattr(error, "error", None), "code", None)
    return f"{type(error).__name__}{f' {code}' if code is not None else ''}: {detail}"[:600]


async def outcome(run: Callable[[str, str, list[str]], Awaitable[Any]], url: str, scenario: str) -> Outcome:
    spoke: list[str] = []  # the protocol version, once connected
    try:
        value = await asyncio.wait_for(run(url, scenario, spoke), CALL_TIMEOUT)
    except Exception as error:  # every failure is a recorded outcome
        return Outcome(False, _describe(error), "".join(spoke))
    era = "".join(spoke)
    if scenario == "list_tools":
        missing = TOOLS - value
        return Outcome(not missing, f"missing tools {sorted(missing)}" if missing else "", era)
    expected = EXPECTED[scenario]
    return Outcome(value == expected, "" if value == expected else f"got {value!r}, expected {expected!r}", era)


# --- the table -----------------------------------------------------------------------------


def _cell(result: Outcome) -> str:
    spoke = f" ({result.era})" if result.era else ""
    return f"ok{spoke}" if result.ok else f"FAIL{spoke}: {result.reason}"


def table(cases: list[Case]) -> str:
    """Two lines a case: ours, then the official client's, each with the revision it spoke."""
    keys = [(c.peer, c.mode, c.scenario) for c in cases]
    widths = [max(len(key[i]) for key in [("peer", "mode", "scenario"), *keys]) for i in range(3)]

    def left(values: tuple[str, str, str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(values, widths, strict=True))

    lines = [f"{left(('peer', 'mode', 'scenario'))}  | outcome (protocol version spoken)"]
    for key, case in zip(keys, cases, strict=True):
        lines.append(f"{left(key)}  | ours:     {_cell(case.ours)}")
        lines.append(f"{left(('', '', ''))}  | official: {_cell(case.official)}")
    return "\n".join(lines)


def summary(cases: list[Case]) -> str:
    counts = {
        "both ok": sum(c.ours.ok and c.official.ok for c in cases),
        "ours only": sum(c.ours.ok and not c.official.ok for c in cases),
        "official only (ours worse)": sum(c.worse for c in cases),
        "both fail": sum(not c.ours.ok and not c.official.ok for c in cases),
    }
    return ", ".join(f"{name}: {count}" for name, count in counts.items())


@pytest.fixture(scope="module", autouse=True)
def matrix_report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Prints the table and writes the JSON once every peer of the module has run."""
    yield
    if not RESULTS:
        return
    path = Path(os.environ.get("MCP_TEST_MATRIX_JSON") or tmp_path_factory.getbasetemp() / "peer-matrix.json")
    path.write_text(json.dumps([{**asdict(c), "worse": c.worse} for c in RESULTS], indent=2))
    print(f"\n== peer matrix ({summary(RESULTS)})\n{table(RESULTS)}\n== written to {path}")


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("peer", "mode"), PEERS, ids=[f"{peer}-{mode}" for peer, mode in PEERS])
async def test_ours_never_worse_than_the_official_client(peer: str, mode: str) -> None:
    started = time.monotonic()
    with running(peer, mode) as url:
        cases = []
        for scenario in SCENARIOS:
            ours, official = await asyncio.gather(
                outcome(run_ours, url, scenario), outcome(run_official, url, scenario)
            )
            cases.append(Case(peer, mode, scenario, ours, official))
        RESULTS.extend(cases)
    worse = [c for c in cases if c.worse]
    print(f"\n{peer}/{mode}: {summary(cases)} in {time.monotonic() - started:.1f} s")
    assert not worse, "ours fails where the official client passes:\n" + "\n".join(
        f"{c.peer}/{c.mode}/{c.scenario}: ours {c.ours.reason!r}; official ok ({c.official.era})" for c in worse
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-s", "-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
