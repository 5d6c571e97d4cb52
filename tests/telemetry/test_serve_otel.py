"""``serve --otel`` in a subprocess exports over OTLP/HTTP to a local receiver
(opentelemetry-test-utils' ``OtlpProtoTestServer``, 127.0.0.1): the SERVER span of a served call,
in the trace of the caller's span, and a point of ``mcp.server.operation.duration``."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.served import Served
from mcp_sse_server.client import StreamableHttpClient

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
receiver_module = pytest.importorskip("opentelemetry.test._otlp_test_server")

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture
def receiver() -> Iterator[object]:
    with receiver_module.OtlpProtoTestServer() as server:
        yield server


def serve_env(tmp_path: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MCP_SSE_SERVER_CONFIG=str(tmp_path / "registry.json"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
        OTEL_SERVICE_NAME="probe-server",
        OTEL_METRIC_EXPORT_INTERVAL="600000",  # (the shutdown's flush exports the point)
        PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parents[2] / "src"), env.get("PYTHONPATH")])),
    )
    return env


def test_serve_otel_exports_the_span_of_a_served_call(receiver: object, tmp_path: Path) -> None:
    served = Served(["math", "--port", "0", "--otel"], tmp_path, serve_env(tmp_path, receiver.port))  # type: ignore[attr-defined]
    try:

        async def call() -> None:
            async with StreamableHttpClient(served.url, mode="session") as client:
                await client.request(
                    "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {"traceparent": PARENT}}
                )

        asyncio.run(call())
    finally:
        code, stderr = served.stop(signal.SIGTERM)
    assert code == 0, stderr
    recorded = receiver.wait_for_span(name="tools/call add", timeout=30)  # type: ignore[attr-defined]
    span = recorded.span
    assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == "00f067aa0ba902b7"
    assert span.kind == 2  # SPAN_KIND_SERVER
    attributes = {a.key: a.value for a in span.attributes}
    assert attributes["gen_ai.tool.name"].string_value == "add"
    assert attributes["network.transport"].string_value == "tcp"
    resource = {a.key: a.value.string_value for a in recorded.resource.attributes}
    assert resource["service.name"] == "probe-server"
    metric = receiver.wait_for_metric(name="mcp.server.operation.duration", timeout=30)  # type: ignore[attr-defined]
    assert metric.metric.unit == "s"
    assert sum(p.count for p in metric.metric.histogram.data_points) >= 1


def test_serve_otel_without_the_api_names_the_extra(tmp_path: Path) -> None:
    # A Python where opentelemetry cannot be imported: a sitecustomize blocking it.
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'opentelemetry' or name.startswith('opentelemetry.'):\n"
        "            raise ImportError('blocked for the test')\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    import subprocess

    env = serve_env(tmp_path, 9)
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sse_server", "serve", "math", "--port", "0", "--otel"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "mcp-sse-server[otel]" in done.stderr and "Traceback" not in done.stderr
