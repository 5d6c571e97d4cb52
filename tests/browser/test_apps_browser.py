"""MCP Apps rendered by a real browser: Debian's Chromium, driven by playwright-core (drive.mjs),
loads a host page (host.js, bundled by build.mjs) from the origin that also serves our MCP
endpoint; the view runs in the inner frame of a sandbox proxy on another origin. Matrix: host
bridge (the official AppBridge with the TypeScript Client in the page, or our Python
``AppHostSession`` behind it, python_host.py) x era (a 2025-11-25 session, 2026-07-28 stateless) x
view (plain JSON-RPC, the official ``App`` class), plus a view whose fetches meet its CSP, and
the demo server's calculator (servers/demo_app.py, what scripts/serve.sh serves) behind each bridge.

What refuses a view's call to a model-only tool: with our bridge, ``AppHostSession`` (rule 3 of
client/app_host.py, -32602); with the official one, the host page's own ``oncalltool``, because
AppBridge 2.0.4 forwards ``tools/call`` without looking at the tool's visibility. Either way the
server never runs it.

Expected noise: Chromium warns that a frame with both ``allow-scripts`` and ``allow-same-origin``
can escape its sandbox. The spec requires exactly that on the proxy frame; it is safe because the
proxy's origin is not the host page's. That warning is the only console message allowed.

Needs node with the packages of tests/node/package.json and a ``chromium`` binary
(``MCP_TEST_CHROMIUM``, else PATH); without them the tests skip locally and fail under
MCP_TEST_NO_SKIP=1. Each case's screenshot is saved in its tmp dir (named in a failure);
docs/images/mcp-app.png is the ``app``/``2026-07-28`` case's, from
``pytest tests/browser -k "renders and official-app-2026" --basetemp DIR``; docs/images/demo-calculator.png
is the demo case's at 2026-07-28 (``-k "demo and 2026"``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fixtures.node import require_node, run_node_json
from mcp_sse_server import McpServer
from mcp_sse_server.servers.demo import build_demo_server
from mcp_sse_server.transport.http import McpHttpApp

from .harness import (
    HERE,
    Calls,
    Canary,
    build_server,
    host_app,
    loopback_socket,
    origin_of,
    sandbox_app,
    serving,
)
from .python_host import PythonHost

pytestmark = pytest.mark.browser

DRIVE_TIMEOUT = 100.0  # only catches a hang (a case takes seconds); under pytest-timeout's 120 s, so this fails first
SANDBOX_WARNING = "can escape its sandboxing"
ERAS = ["2025-11-25", "2026-07-28"]
UI_EXTENSION = "io.modelcontextprotocol/ui"


def chromium() -> str:
    """The chromium binary; the test is skipped without one."""
    found = os.environ.get("MCP_TEST_CHROMIUM") or shutil.which("chromium")
    if not found or not os.path.isfile(found):
        looked = f"MCP_TEST_CHROMIUM={found}" if os.environ.get("MCP_TEST_CHROMIUM") else "no chromium on PATH"
        pytest.skip(f"chromium is not installed ({looked}; scripts/setup.sh: setup_chromium installs Debian's)")
    return found


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """build.mjs's output, built once for the module (not built without a browser to use it)."""
    chromium()
    node, modules = require_node()
    for package in ("@modelcontextprotocol/ext-apps", "playwright-core", "esbuild"):
        if not os.path.isdir(os.path.join(modules, package)):
            pytest.skip(f"{package} is not installed (see tests/node/package.json)")
    out = tmp_path_factory.mktemp("apps-bundle")
    done = subprocess.run(
        [node, str(HERE / "build.mjs"), str(out)],
        env={**os.environ, "MCP_TEST_NODE_MODULES": modules},
        capture_output=True,
        text=True,
        timeout=DRIVE_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return out


async def drive(
    bundle_dir: Path,
    tmp_path: Path,
    case: str,
    tool: str,
    era: str,
    bridge: str = "official",
    server: McpServer | None = None,
) -> dict[str, Any]:
    """Serve both origins, run drive.mjs through one case, and return what it saw, plus the
    server's record (``calls``, ``canary``) and, with ``bridge="python"``, our ``PythonHost``.
    ``server``: serve that one instead of the fixture's (``calls`` stays empty then)."""
    browser = chromium()
    require_node()
    host_sock, sandbox_sock = loopback_socket(), loopback_socket()
    host, sandbox = origin_of(host_sock), origin_of(sandbox_sock)
    calls, canary = Calls(), Canary()
    mcp = McpHttpApp(server or build_server(bundle_dir, host, sandbox, calls))
    python = PythonHost(f"{host}/mcp/") if bridge == "python" else None
    screenshot = tmp_path / f"{case}-{tool}-{era}-{bridge}.png"
    url = f"{host}/?tool={tool}&era={era}&sandbox={sandbox}&bridge={bridge}"
    page = host_app(mcp, bundle_dir, canary, python.routes if python else [])
    async with mcp, serving(page, host_sock), serving(sandbox_app(canary), sandbox_sock):
        try:
            seen = await run_node_json(HERE / "drive.mjs", url, case, str(screenshot), browser, timeout=DRIVE_TIMEOUT)
        finally:
            if python is not None:
                await python.close()
    seen.update(calls=calls.seen, canary=canary.hits, screenshot=screenshot, python=python)
    record = {key: seen.get(key) for key in ("host", "view", "console", "pageErrors", "calls", "canary")}
    assert seen["failure"] is None, f"{seen['failure']}\nscreenshot: {screenshot}\n{json.dumps(record, default=str)}"
    assert not seen["host"]["errors"], seen["host"]["errors"]
    assert python is None or not python.errors, python.errors
    return seen


def assert_quiet(seen: dict[str, Any], allowed: tuple[str, ...] = ()) -> None:
    """No page error and no console error or warning but the sandbox one (and ``allowed``)."""
    assert seen["pageErrors"] == []
    noise = [
        m for m in seen["console"] if SANDBOX_WARNING not in m["text"] and not any(a in m["text"] for a in allowed)
    ]
    assert noise == [], noise


def assert_era(seen: dict[str, Any], era: str) -> None:
    """The page's MCP requests (the official client's) spoke ``era``, declaring the ui extension
    the way it carries it."""
    posts = [r for r in seen["requests"] if r["method"] == "POST"]
    bodies = [json.loads(r["body"]) for r in posts]
    calls = [(r, b) for r, b in zip(posts, bodies, strict=True) if b.get("method") == "tools/call"]
    assert calls and all(r["headers"]["mcp-protocol-version"] == era for r, _ in calls)
    assert UI_EXTENSION in seen["host"]["serverExtensions"]  # initialize's or server/discover's
    if era == "2026-07-28":  # no session: every request carries the client's capabilities
        assert all("mcp-session-id" not in r["headers"] for r, _ in calls)
        for _, body in calls:
            capabilities = body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
            assert UI_EXTENSION in capabilities["extensions"]
    else:
        initialize = next(b for b in bodies if b.get("method") == "initialize")
        assert UI_EXTENSION in initialize["params"]["capabilities"]["extensions"]
        assert all("mcp-session-id" in r["headers"] for r, _ in calls)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("view", ["plain", "app"])
@pytest.mark.parametrize("bridge", ["official", "python"])
async def test_a_view_renders_the_result_calls_a_tool_and_is_refused_a_model_only_one(
    bundle_dir: Path, tmp_path: Path, bridge: str, view: str, era: str
) -> None:
    seen = await drive(bundle_dir, tmp_path, "view", f"sum_{view}", era, bridge)

    # First render: the tool's input and its result, as the host sent them after the handshake.
    assert seen["view"]["input"] == '{"a":2,"b":3}'
    assert seen["view"]["result"] == "2 + 3 = 5"
    assert seen["host"]["result"]["structuredContent"] == {"sum": 5}
    # The button's call went through the host to our server and back.
    assert seen["view"]["answer"] == "20 + 22 = 42"
    # The model-only tool: refused by the host, never run by the server.
    assert seen["view"]["refused"].startswith("refused:")
    assert "secret" in seen["view"]["refused"]
    # Both calls reached our server, which knew (session or request _meta) the client has apps.
    assert seen["calls"] == [(f"sum_{view}", True), ("add", True)]
    # What an agent is offered: not the app-only tool, the model-only one.
    assert "add" not in seen["host"]["modelTools"] and "secret" in seen["host"]["modelTools"]
    assert seen["host"]["protocolVersion"] == era
    python: PythonHost | None = seen["python"]
    if python is None:
        # The order the spec asks of a host, and the view's size and log reached it.
        events = [e["event"] for e in seen["host"]["events"]]
        order = ["sandbox ready", "view initialized", "tool input sent", "tool result sent"]
        assert [e for e in events if e in order] == order
        assert {"size changed", "view log", "call forwarded", "call refused"} <= set(events)
        assert_era(seen, era)
    else:
        # Our session answered ui/initialize first, then sent tool-input, then tool-result.
        said = [m.get("method", "answer") for m in python.sent]
        assert said[:3] == ["answer", "ui/notifications/tool-input", "ui/notifications/tool-result"]
        assert python.sent[0]["result"]["protocolVersion"] == "2026-01-26"
        refusal = next(m for m in python.sent if "error" in m)
        assert refusal["error"]["code"] == -32602  # rule 3 of client/app_host.py
        assert {kind for kind, _ in python.events} == {"size", "log"}
    assert_quiet(seen)


@pytest.mark.parametrize("era", ERAS)
async def test_a_views_fetch_of_an_origin_it_did_not_declare_is_blocked_by_its_csp(
    bundle_dir: Path, tmp_path: Path, era: str
) -> None:
    seen = await drive(bundle_dir, tmp_path, "fetch", "fetch_probe", era)

    assert seen["view"]["declared"] == "answered ok"
    assert seen["view"]["undeclared"].startswith("blocked:")
    assert seen["canary"] == ["declared"]  # the blocked request never left the browser
    assert seen["calls"] == [("fetch_probe", True)]
    violations = [m for m in seen["console"] if "Content Security Policy" in m["text"]]
    assert violations and all("which=undeclared" in m["text"] for m in violations)
    assert any('directive: "connect-src http://localhost:' in m["text"] for m in violations), violations
    assert_era(seen, era)
    assert_quiet(seen, allowed=("Content Security Policy",))


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("bridge", ["official", "python"])
async def test_the_demo_servers_calculator_renders_and_computes_again_from_its_view(
    bundle_dir: Path, tmp_path: Path, bridge: str, era: str
) -> None:
    # The app scripts/serve.sh shows (servers/demo_app.py), as the demo serves it, in a real host.
    seen = await drive(bundle_dir, tmp_path, "demo", "calculator", era, bridge, server=build_demo_server())

    assert seen["host"]["result"]["structuredContent"]["result"] == 5
    assert seen["view"]["answer"] == "2 + 3 = 5"  # the first render: the host's call of the tool
    assert seen["view"]["computed"] == "2 * 3 = 6"  # the view's own call, inputs filled from tool-input
    assert seen["host"]["protocolVersion"] == era
    python: PythonHost | None = seen["python"]
    if python is None:
        bodies = [json.loads(r["body"]) for r in seen["requests"] if r["method"] == "POST"]
        calls = [b["params"]["arguments"] for b in bodies if b.get("method") == "tools/call"]
        assert calls == [{"a": 2, "b": 3}, {"a": 2, "b": 3, "operation": "multiply"}]
        events = [e["event"] for e in seen["host"]["events"]]
        assert "call forwarded" in events and "size changed" in events
        assert_era(seen, era)
    else:
        said = [m.get("method", "answer") for m in python.sent]
        assert said[:3] == ["answer", "ui/notifications/tool-input", "ui/notifications/tool-result"]
        answers = [m["result"] for m in python.sent[1:] if "result" in m]
        (answer,) = answers  # the view's tools/call, proxied by our session to the server
        assert answer["content"] == [{"type": "text", "text": "2 * 3 = 6"}]
        assert answer["structuredContent"]["result"] == 6
        assert "size" in {kind for kind, _ in python.events}
    assert_quiet(seen)
