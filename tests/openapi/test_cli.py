"""``mcp-sse-server serve --openapi SPEC --base-url URL``: a real ``serve`` process in front of a real
HTTP API (the FastAPI shop under uvicorn on 127.0.0.1:0), its spec given as a YAML file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from client.asgi_server import serve
from fixtures.served import WAIT, Served
from mcp_sse_server.client import StreamableHttpClient

from .shop_app import API_KEY, build_app


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def run_serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mcp_sse_server", "serve", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env(), cwd=cwd, timeout=WAIT, check=False)


async def test_serve_openapi_calls_a_real_api(tmp_path: Path) -> None:
    app, seen = build_app()
    spec = tmp_path / "shop.yaml"
    spec.write_text(yaml.safe_dump(app.openapi()), encoding="utf-8")
    async with serve(app) as base:
        args = ["--openapi", str(spec), "--base-url", base, "--header", f"X-Api-Key: {API_KEY}", "--port", "0"]
        served = Served(args, tmp_path, env())
        try:
            async with StreamableHttpClient(served.url) as client:
                names = {tool.name for tool in await client.list_tools()}
                item = await client.call_tool("read_item", {"item_id": 1})
                private = await client.call_tool("private", {})
                missing = await client.call_tool("read_item", {"item_id": 7})
        finally:
            status, stderr = served.stop()
    assert {"list_items", "read_item", "create_item", "private"} <= names
    assert served.label == f"openapi:{spec}"
    assert item.structured_content is not None and item.structured_content["name"] == "kettle"
    assert private.structured_content == {"ok": True} and all(request["x-api-key"] == API_KEY for request in seen)
    assert missing.is_error and missing.content[0].text.startswith("HTTP 404")  # type: ignore[union-attr]
    assert status == 0, stderr


def test_serve_openapi_says_what_is_wrong(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"openapi": "3.1.0", "info": {"title": "x", "version": "1"}, "paths": {}}', encoding="utf-8")
    no_base = run_serve("--openapi", str(spec), "--port", "0", cwd=tmp_path)
    assert no_base.returncode == 2 and "no base URL: pass base_url=" in no_base.stderr
    with_target = run_serve("demo", "--openapi", str(spec), "--base-url", "http://127.0.0.1:9", cwd=tmp_path)
    assert with_target.returncode == 2 and "does not go with TARGET (demo)" in with_target.stderr
    bad_header = run_serve(
        "--openapi", str(spec), "--base-url", "http://127.0.0.1:9", "--header", "nocolon", cwd=tmp_path
    )
    assert bad_header.returncode == 2 and "give it as 'NAME: VALUE'" in bad_header.stderr
    stray = run_serve("demo", "--base-url", "http://127.0.0.1:9", cwd=tmp_path)
    assert stray.returncode == 2 and "--base-url and --header go with --openapi" in stray.stderr
    not_openapi = tmp_path / "other.yaml"
    not_openapi.write_text("swagger: '2.0'\n", encoding="utf-8")
    refused = run_serve("--openapi", str(not_openapi), "--base-url", "http://127.0.0.1:9", cwd=tmp_path)
    assert refused.returncode == 2 and "not an OpenAPI 3 document" in refused.stderr


def test_print_config_masks_the_api_headers(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"openapi": "3.1.0", "info": {"title": "x", "version": "1"}, "paths": {}}', encoding="utf-8")
    shown = run_serve(
        "--openapi", str(spec), "--base-url", "http://127.0.0.1:9", "--header", "X-Api-Key: s3cret", "--print-config",
        cwd=tmp_path,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "s3cret" not in shown.stdout and 'header = ["X-Api-Key: ***"]' in shown.stdout
    assert 'base-url = "http://127.0.0.1:9"' in shown.stdout
