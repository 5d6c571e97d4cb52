"""JsonLines: RequestLog records appended to a file as JSON lines, buffered by count and time."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from fixtures.sessions import Connect
from mcp_sse_server.middleware import JsonLines, RequestLog

from .conftest import build

WAIT = 10.0  # bounded: only catches a timer that never fires


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_request_log_records_reach_the_file(connect: Connect, tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    sink = JsonLines(path, max_lines=100, interval=60)
    client = await connect(build(RequestLog(sink=sink)))
    for text in ("a", "b"):
        await client.result("tools/call", {"name": "echo", "arguments": {"text": text}})
    sink.flush()
    calls = [line for line in lines_of(path) if line["method"] == "tools/call"]
    assert [(line["target"], line["outcome"]) for line in calls] == [("echo", "ok"), ("echo", "ok")]
    assert "params" not in calls[0]
    sink.close()


async def test_waiting_lines_are_written_when_the_interval_ends(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    sink = JsonLines(path, max_lines=100, interval=0.05)
    sink({"n": 1})
    assert not path.exists()  # buffered: nothing awaited yet, so the timer cannot have fired
    for _ in range(int(WAIT / 0.01)):
        if path.exists() and lines_of(path):
            break
        await asyncio.sleep(0.01)
    assert lines_of(path) == [{"n": 1}]
    sink.close()


def test_max_lines_writes_at_once_and_close_writes_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    sink = JsonLines(path, max_lines=2, interval=60)
    sink({"n": 1, "when": object()})  # a value JSON has no form for is written as its str
    assert not path.exists()
    sink({"n": 2})
    assert [line["n"] for line in lines_of(path)] == [1, 2]
    assert str(lines_of(path)[0]["when"]).startswith("<object object")
    sink({"n": 3})
    sink.close()
    assert [line["n"] for line in lines_of(path)] == [1, 2, 3]


def test_a_callers_stream_is_flushed_not_closed() -> None:
    stream = io.BytesIO()
    sink = JsonLines(stream, max_lines=1)
    sink({"n": 1})
    sink.close()
    assert not stream.closed and stream.getvalue() == b'{"n":1}\n'


def test_a_failing_write_is_logged_and_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sink = JsonLines(tmp_path / "missing-dir" / "requests.jsonl", max_lines=1)
    sink({"n": 1})  # no such directory: logged, never raised
    assert "could not write 1 request log lines" in caplog.text
    sink.close()


def test_bad_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_lines"):
        JsonLines(tmp_path / "x", max_lines=0)
