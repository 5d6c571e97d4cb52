"""Printing tool results, progress and log notifications for people."""

from __future__ import annotations

import io
import os
from pathlib import Path

from mcp_sse_server.cli import OutputDir, ProgressReporter, render_result
from mcp_sse_server.engine.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from mcp_sse_server.servers.demo import solid_png


def render(result: CallToolResult, tmp_path: Path, **options: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = render_result(result, out=out, err=err, output_dir=OutputDir(str(tmp_path)), stem="tool", **options)  # type: ignore[arg-type]
    return status, out.getvalue(), err.getvalue()


def test_text_prints_as_text(tmp_path: Path) -> None:
    assert render(CallToolResult([TextContent("hello"), TextContent("world\n")]), tmp_path) == (
        0,
        "hello\nworld\n",
        "",
    )


def test_structured_content_alone_prints_as_indented_json(tmp_path: Path) -> None:
    result = CallToolResult([], structured_content={"hits": ["a", "b"]})
    assert render(result, tmp_path)[1] == '{\n  "hits": [\n    "a",\n    "b"\n  ]\n}\n'


def test_a_text_block_that_only_repeats_the_structured_content_is_shown_once_as_json(tmp_path: Path) -> None:
    result = CallToolResult.structured({"sum": 5})  # also carries '{"sum":5}' as text
    assert render(result, tmp_path)[1] == '{\n  "sum": 5\n}\n'


def test_readable_text_wins_over_structured_content_unless_asked(tmp_path: Path) -> None:
    result = CallToolResult.structured({"result": 5}, text="5")
    assert render(result, tmp_path)[1] == "5\n"
    assert render(result, tmp_path, show_structured=True)[1] == '5\n{\n  "result": 5\n}\n'


def test_error_results_go_to_stderr_and_fail(tmp_path: Path) -> None:
    assert render(CallToolResult.error("division by zero"), tmp_path) == (1, "", "division by zero\n")


def test_an_error_without_content_still_says_something(tmp_path: Path) -> None:
    status, _, err = render(CallToolResult([], is_error=True), tmp_path)
    assert status == 1
    assert "error" in err


def test_images_and_audio_are_saved_and_their_paths_printed(tmp_path: Path) -> None:
    png = solid_png((1, 2, 3))
    result = CallToolResult(
        [ImageContent.from_bytes(png, "image/png"), AudioContent.from_bytes(b"RIFF....", "audio/wav")]
    )
    status, out, _ = render(result, tmp_path)
    assert status == 0
    image_line, audio_line = out.splitlines()
    image_path = image_line.rsplit("saved to ", 1)[1].rstrip("]")
    audio_path = audio_line.rsplit("saved to ", 1)[1].rstrip("]")
    assert image_line.startswith("[image image/png, ")
    assert image_path.endswith(".png")
    assert Path(image_path).read_bytes() == png
    assert audio_line.startswith("[audio audio/wav, 8 bytes")
    assert Path(audio_path).read_bytes() == b"RIFF...."
    assert os.path.dirname(image_path) == str(tmp_path)


def test_saving_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "tool-1.png").write_bytes(b"keep me")
    _, out, _ = render(CallToolResult([ImageContent.from_bytes(b"new", "image/png")]), tmp_path)
    assert (tmp_path / "tool-1.png").read_bytes() == b"keep me"
    assert "tool-1-2.png" in out


def test_default_output_dir_is_made_only_when_needed() -> None:
    directory = OutputDir(None)
    path = directory.save("x", b"data", "image/png")
    assert Path(path).read_bytes() == b"data"
    assert "mcp-sse-server-" in path


def test_invalid_base64_is_reported_not_saved(tmp_path: Path) -> None:
    _, out, _ = render(CallToolResult([ImageContent("!!not base64!!", "image/png")]), tmp_path)
    assert "invalid base64" in out
    assert list(tmp_path.iterdir()) == []


def test_resource_links_and_embedded_resources_are_summarized(tmp_path: Path) -> None:
    result = CallToolResult(
        [
            ResourceLink("file:///r.txt", "r.txt", description="A report", mime_type="text/plain", size=12),
            EmbeddedResource(TextResourceContents("demo://readme", "# Hi", "text/markdown")),
            EmbeddedResource(BlobResourceContents.from_bytes("demo://b", b"\x00\x01", "application/octet-stream")),
        ]
    )
    _, out, _ = render(result, tmp_path)
    lines = out.splitlines()
    assert lines[0] == "[resource link file:///r.txt (r.txt), text/plain, 12 bytes] A report"
    assert lines[1] == "[resource demo://readme, text/markdown, 4 characters]"
    assert lines[2] == "# Hi"
    assert lines[3].startswith("[resource demo://b, application/octet-stream, 2 bytes, saved to ")
    assert Path(lines[3].rsplit("saved to ", 1)[1].rstrip("]")).read_bytes() == b"\x00\x01"


def test_progress_is_plain_lines_off_a_terminal() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, tty=False)
    reporter.progress(1, 4, "first")
    reporter.progress(2, None, None)
    reporter.finish()
    assert stream.getvalue() == "progress: 1/4 (25%) first\nprogress: 2\n"


def test_progress_is_a_bar_on_a_terminal_and_cleared_at_the_end() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, tty=True, width=80)
    reporter.progress(1, 2, "halfway")
    reporter.log({"level": "info", "logger": "job", "data": {"step": 1}})
    reporter.finish()
    text = stream.getvalue()
    assert "\r\x1b[2K[############............]  50% 1/2 halfway" in text
    # the log line clears the bar, prints, and redraws the bar after it
    assert '\r\x1b[2K[info] job: {"step": 1}\n[############' in text
    assert text.endswith("\r\x1b[2K")


def test_log_lines_show_level_logger_and_data() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, tty=False)
    reporter.log({"level": "warning", "data": "disk almost full"})
    reporter.log({"level": "info", "logger": "db", "data": {"rows": 3}})
    assert stream.getvalue() == '[warning] disk almost full\n[info] db: {"rows": 3}\n'


def test_servers_cannot_drive_the_terminal_through_progress_or_logs() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, tty=True, width=200)
    reporter.progress(1, 2, "\x1b]0;owned\x07step\nnext")
    reporter.log({"level": "info", "data": "line one\nline two \x1b[2J"})
    text = stream.getvalue()
    assert "\\x1b]0;owned\\x07step\\nnext" in text
    assert "line one\nline two \\x1b[2J" in text
    assert "\x07" not in text and "\x1b]" not in text and "\x1b[2J" not in text
