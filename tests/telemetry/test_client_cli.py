"""``mcp-sse-server call --traceparent``: the call joins the trace another program started. The
server is the official SDK's over stdio (sdk_traced_server.py: its tool answers the
``traceparent`` it was sent; its own OpenTelemetry writes its spans to a file), the command a real
process: with an SDK configured in it, the call's CLIENT span has the given parent and the server's
span is that span's child; with the API and no SDK, and without OpenTelemetry at all, the server
is sent the given traceparent as it is; a malformed one is a usage error before anything runs.
And a client switched on without the OpenTelemetry API says which extra to install."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.mcpserver")  # the official SDK 2.x, in this virtualenv

HERE = Path(__file__).parent
REPO = HERE.parents[1]
SERVER = f"{sys.executable} {HERE / 'sdk_traced_server.py'}"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
GIVEN = f"00-{TRACE_ID}-{PARENT_ID}-01"

# The command run in a process of its own, after PRELUDE (which may set up OpenTelemetry or hide it).
RUN = """
import sys
from mcp_sse_server.cli.app import main
try:
    main(sys.argv[1:])
finally:
    flush()
"""
WITH_SDK = """
import json, os
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
def flush():
    with open(os.environ["CLIENT_SPANS"], "w") as out:
        for span in exporter.get_finished_spans():
            parent = span.parent
            out.write(json.dumps({"name": span.name, "kind": span.kind.name,
                "trace_id": format(span.context.trace_id, "032x"), "span_id": format(span.context.span_id, "016x"),
                "parent_id": format(parent.span_id, "016x") if parent else None}) + "\\n")
"""
API_ONLY = """
def flush():
    pass
"""
NO_OTEL = """
import sys
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Hidden())
def flush():
    print(sorted(m for m in sys.modules if m.startswith("opentelemetry")), file=sys.stderr)
"""


def test_switching_telemetry_on_without_the_api_names_the_extra() -> None:
    code = """
    from mcp_sse_server import McpServer
    from mcp_sse_server.client import InMemoryClient
    try:
        InMemoryClient(McpServer("s"), telemetry=True)
    except ImportError as error:
        print(error)
    print(InMemoryClient(McpServer("s")).telemetry)
    flush()
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(NO_OTEL) + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'mcp-sse-server[otel]'" in done.stdout
    assert done.stdout.strip().endswith("None")  # off, a client is made without it
    assert done.stderr.strip().endswith("[]")


def call(prelude: str, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``call ARGS`` after ``prelude``; the process and the server's spans."""
    spans = tmp_path / "server.jsonl"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SPANS_OUT": str(spans),
        "CLIENT_SPANS": str(tmp_path / "client.jsonl"),
    }
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(prelude) + RUN, "call", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO / "src")},
    )
    lines = spans.read_text().splitlines() if spans.exists() else []
    return done, [json.loads(line) for line in lines]


def test_the_calls_span_has_the_given_parent_and_the_servers_span_is_its_child(tmp_path: Path) -> None:
    done, server = call(WITH_SDK, tmp_path, "--traceparent", GIVEN, SERVER, "traceparent")
    assert done.returncode == 0, done.stderr
    client = [json.loads(line) for line in (tmp_path / "client.jsonl").read_text().splitlines()]
    (ours,) = [span for span in client if span["name"] == "tools/call traceparent"]
    assert ours["kind"] == "CLIENT" and ours["trace_id"] == TRACE_ID and ours["parent_id"] == PARENT_ID
    # The server was sent our span, and its own span is our span's child.
    assert done.stdout.strip().startswith(f"00-{TRACE_ID}-{ours['span_id']}-")
    (theirs,) = [span for span in server if span["name"] == "tools/call traceparent"]
    assert theirs["trace_id"] == TRACE_ID and theirs["parent_id"] == ours["span_id"]
    # The command's other requests (the handshake, tools/list) are in the same trace.
    assert {span["trace_id"] for span in client} == {TRACE_ID}


@pytest.mark.parametrize("prelude", [API_ONLY, NO_OTEL], ids=["api-without-sdk", "no-opentelemetry"])
def test_without_an_sdk_the_given_traceparent_is_passed_on(tmp_path: Path, prelude: str) -> None:
    done, server = call(prelude, tmp_path, "--traceparent", GIVEN, SERVER, "traceparent")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == GIVEN
    (theirs,) = [span for span in server if span["name"] == "tools/call traceparent"]
    assert theirs["trace_id"] == TRACE_ID and theirs["parent_id"] == PARENT_ID
    if prelude is NO_OTEL:
        assert done.stderr.strip().endswith("[]")  # (the blocker held: nothing of OpenTelemetry loaded)


@pytest.mark.parametrize(
    "bad", ["00-xyz", f"00-{'0' * 32}-{PARENT_ID}-01", f"ff-{TRACE_ID}-{PARENT_ID}-01", GIVEN.upper()]
)
def test_a_malformed_traceparent_is_a_usage_error(tmp_path: Path, bad: str) -> None:
    done, server = call(API_ONLY, tmp_path, "--traceparent", bad, SERVER, "traceparent")
    assert done.returncode == 2, done.stderr
    assert "is not a W3C traceparent" in done.stderr
    assert server == []  # nothing was started
