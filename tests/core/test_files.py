"""resolve_under and file_template: files under a root are served, nothing outside it is."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import McpServer, ResourceTemplate, file_template, resolve_under
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError

SECRET = "top secret, outside the root"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text(SECRET)
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello")
    (root / "sub" / "inner.md").write_text("# inner")
    (root / "image.bin").write_bytes(b"\xff\xfe\x00\x01")
    (root / "inside-link").symlink_to(root / "hello.txt")
    (root / "outside-link").symlink_to(tmp_path / "secret.txt")
    (root / "outside-dir").symlink_to(tmp_path, target_is_directory=True)
    return root


ESCAPES = [
    "file:///../secret.txt",
    "file:///%2e%2e/secret.txt",
    "file:///%2E%2E/secret.txt",
    "file:///%252e%252e/secret.txt",
    "file:///sub/../../secret.txt",
    "file:///sub/%2e%2e/%2e%2e/secret.txt",
    "file:///..%5Csecret.txt",
    "file:////etc/hostname",
    "file:///%2Fetc%2Fhostname",
    "file:///outside-link",
    "file:///outside-dir/secret.txt",
    "file:///hello.txt%00.png",
]


@pytest.mark.parametrize("uri", ESCAPES)
async def test_paths_leaving_the_root_are_refused_over_the_protocol(
    server: McpServer, connect: Connect, root: Path, uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sse_server")
    server.add_resource_template(file_template(root, "file:///{+path}", "project-file"))
    client = await connect(server)
    error = await client.error("resources/read", {"uri": uri})
    assert error.code == INVALID_PARAMS
    assert error.message.startswith("Refused path ")
    assert "\n" not in error.message
    assert SECRET not in repr(error.data)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


async def test_files_under_the_root_are_served(server: McpServer, connect: Connect, root: Path) -> None:
    server.add_resource_template(file_template(root, "file:///{+path}", "project-file"))
    client = await connect(server)
    hello = await client.result("resources/read", {"uri": "file:///hello.txt"})
    assert hello["contents"] == [{"uri": "file:///hello.txt", "text": "hello", "mimeType": "text/plain"}]
    inner = await client.result("resources/read", {"uri": "file:///sub/inner.md"})
    assert inner["contents"][0]["text"] == "# inner"
    linked = await client.result("resources/read", {"uri": "file:///inside-link"})
    assert linked["contents"][0]["text"] == "hello"
    dotted = await client.result("resources/read", {"uri": "file:///sub/./inner.md"})
    assert dotted["contents"][0]["text"] == "# inner"
    binary = await client.result("resources/read", {"uri": "file:///image.bin"})
    assert base64.b64decode(binary["contents"][0]["blob"]) == b"\xff\xfe\x00\x01"


@pytest.mark.parametrize("uri", ["file:///missing.txt", "file:///sub", "file:///hello.txt/more"])
async def test_missing_files_and_directories_are_not_found(
    server: McpServer, connect: Connect, root: Path, uri: str
) -> None:
    server.add_resource_template(file_template(root, "file:///{+path}", "project-file"))
    client = await connect(server)
    error = await client.error("resources/read", {"uri": uri})
    assert error.code == RESOURCE_NOT_FOUND
    assert error.data == {"uri": uri}


async def test_the_readme_example_pattern_is_safe(server: McpServer, connect: Connect, root: Path) -> None:
    # the README's hand-written reader: open(resolve_under(ROOT, variables["path"]))
    server.add_resource_template(
        ResourceTemplate(
            "file:///{+path}",
            "project-file",
            reader=lambda uri, variables, context: resolve_under(root, variables["path"]).read_text(),
        )
    )
    client = await connect(server)
    assert (await client.result("resources/read", {"uri": "file:///hello.txt"}))["contents"][0]["text"] == "hello"
    for uri in ("file:///../../../../etc/hostname", "file:///%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/hostname"):
        error = await client.error("resources/read", {"uri": uri})
        assert error.code == INVALID_PARAMS


@pytest.mark.parametrize(
    "relative",
    [
        "..",
        "../x",
        "a/../../x",
        "a\\..\\..\\x",
        "/etc/passwd",
        "C:\\Windows",
        "\\\\server\\share",
        "%2e%2e/x",
        "a\x00b",
        "",
        "/",
    ],
)
def test_resolve_under_refuses(root: Path, relative: str) -> None:
    with pytest.raises(McpError) as refused:
        resolve_under(root, relative)
    assert refused.value.code == INVALID_PARAMS


def test_resolve_under_returns_the_real_path(root: Path) -> None:
    assert resolve_under(root, "sub/inner.md") == Path(os.path.realpath(root)) / "sub" / "inner.md"
    assert resolve_under(str(root), "not/yet/there.txt") == Path(os.path.realpath(root)) / "not/yet/there.txt"
    with pytest.raises(McpError, match=r"'\.\.' segments are not allowed"):
        resolve_under(root, "sub/../hello.txt")  # harmless here, but every '..' is refused
