"""``serve`` for real: a subprocess listening on a free port, used with ``tools`` and ``call``, then stopped."""

from __future__ import annotations

import importlib.util
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.commands import Cli
from fixtures.served import Served

# find_spec, not import: the command runs in subprocesses, and importing httpx here could pick up
# tests/http as the stdlib's http package (tests/ is on sys.path under pytest's default import mode).
for module, missing in (
    ("mcp_sse_server.transport.http.server", "McpHttpServer (mcp_sse_server.transport.http)"),
    ("mcp_sse_server.client.http", "StreamableHttpClient (mcp_sse_server.client.http)"),
):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{missing} has not landed yet", allow_module_level=True)


# ``serve(args, env=None)``: a ``serve`` process in tmp_path, killed after the test.
StartServe = Callable[..., Served]


@pytest.fixture
def serve(cli_env: dict[str, str], tmp_path: Path) -> Iterator[StartServe]:
    started: list[Served] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> Served:
        served = Served(args, tmp_path, env or cli_env)
        started.append(served)
        return served

    yield start
    for served in started:
        served.kill()


def test_serve_the_demo_then_list_call_and_stop_with_sigterm(cli: Cli, serve: StartServe) -> None:
    server = serve(["--port", "0"])  # the port it picked is in the endpoint it printed: no port race
    assert (server.label, server.url) == ("demo", f"http://127.0.0.1:{server.port}/mcp")

    listed = cli("tools", server.url)
    assert listed.returncode == 0, listed.stderr
    names = [line.split("(", 1)[0] for line in listed.stdout.splitlines() if not line.startswith(" ")]
    assert {"add", "factorial", "get_artifact_instructions", "slow_count", "draw_swatch"} <= set(names)

    done = cli("call", server.url, "add", "a=2", "b=3")
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr
    done = cli("call", server.url, "divide", "a=1", "b=0")
    assert done.returncode == 1
    assert "zero" in done.stderr
    done = cli("call", server.url, "add", "a=x", "b=1")
    assert done.returncode == 2

    # progress and log notifications travel over the request's SSE stream
    done = cli("call", server.url, "slow_count", "steps=2", "interval=0")
    assert (done.returncode, done.stdout) == (0, "Counted to 2.\n"), done.stderr
    assert "progress: 2/2 (100%) step 2 of 2" in done.stderr
    assert "[info] slow_count:" in done.stderr

    status, stderr = server.stop(signal.SIGTERM)
    assert status == 0, stderr
    assert "Shutting down" in stderr
    assert "Traceback" not in stderr


def test_ctrl_c_stops_gracefully(cli: Cli, serve: StartServe) -> None:
    server = serve(["math", "--port", "0"])
    assert server.label == "math"
    assert cli("call", server.url, "sqrt", "x=16").stdout == "4\n"
    status, stderr = server.stop(signal.SIGINT)
    assert status == 0, stderr
    assert "Traceback" not in stderr


def test_port_0_prints_the_port_actually_bound(cli: Cli, serve: StartServe) -> None:
    server = serve(["artifact_instructions", "--port", "0", "--path", "/custom"])
    port = int(server.url.rsplit(":", 1)[1].split("/", 1)[0])
    assert port != 0
    assert server.url.endswith("/custom")
    done = cli("tools", server.url)
    assert done.stdout.startswith("get_artifact_instructions(type: code|documents|html|svg|mermaid|react)")


_COUNTING_FACTORY = (
    "from mcp_sse_server import McpServer, Tool, shared_server\n"
    "sessions = 0\n"
    "def build():\n"
    "    global sessions\n"
    "    sessions += 1\n"
    "    server = McpServer('mine', '1.0.0')\n"
    "    number = sessions\n"
    "    server.add_tool(Tool('session', {'type': 'object'}, lambda arguments, context: f'server {number}'))\n"
    "    return server\n"
    "instance = build()\n"
    "@shared_server\n"
    "def shared():\n"
    "    return build()\n"
)


@pytest.mark.parametrize(
    ("target", "flags", "seen"),
    [
        ("build", [], ["server 2", "server 3"]),  # a factory: a server per session (1 is the module's instance)
        ("build", ["--server-per-session"], ["server 2", "server 3"]),
        ("shared", [], ["server 2", "server 2"]),  # marked @shared_server: one server for every session
        ("shared", ["--server-per-session"], ["server 2", "server 3"]),
        ("instance", [], ["server 1", "server 1"]),  # an McpServer itself
    ],
)
def test_serve_a_factory_or_a_server_from_a_file(
    cli: Cli, serve: StartServe, tmp_path: Path, target: str, flags: list[str], seen: list[str]
) -> None:
    (tmp_path / "my_server.py").write_text(_COUNTING_FACTORY)
    server = serve([f"{tmp_path / 'my_server.py'}:{target}", "--port", "0", *flags])
    # Sessions (the handshake): a per-session factory gives each a server of its own.
    calls = [cli("call", server.url, "session", "--mode", "session").stdout for _ in seen]
    assert calls == [f"{text}\n" for text in seen]
    status, _ = server.stop()
    assert status == 0


def test_serve_a_module_factory(cli: Cli, serve: StartServe, tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(
        "from mcp_sse_server import McpServer, Tool\n"
        "def make():\n"
        "    server = McpServer('shop', '1.0.0')\n"
        "    server.add_tool(Tool('price', {'type': 'object'}, lambda arguments, context: '9.99'))\n"
        "    return server\n"
    )
    server = serve(["shop:make", "--port", "0"])  # the module is found in the working directory
    assert server.label == "shop:make"
    assert cli("call", server.url, "price").stdout == "9.99\n"


def test_a_port_in_use_is_one_line_and_exit_1(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli("serve", "--port", str(port))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(f"Error: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in done.stderr


def test_listening_beyond_loopback_needs_auth_or_allowed_origins_said_in_options(cli: Cli) -> None:
    done = cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2
    error = done.stderr.splitlines()[-1]
    assert error.startswith("Error: --host 0.0.0.0 exposes the server beyond this machine")
    for flag in ("--auth-issuer", "--auth-jwks-uri", "--auth-introspection-url", "--allowed-origin"):
        assert flag in error
    # The CLI's words, not the Python API's parameters.
    assert "auth=" not in error and "allowed_origins" not in error and "HttpSettings" not in error


def test_tls_with_a_generated_certificate(cli: Cli, serve: StartServe, cli_env: dict[str, str], tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    certfile, keyfile, cafile = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    certificate.private_key_pem.write_to_path(str(keyfile))
    certificate.cert_chain_pems[0].write_to_path(str(certfile))
    authority.cert_pem.write_to_path(str(cafile))
    server = serve(["math", "--port", "0", "--certfile", str(certfile), "--keyfile", str(keyfile)])
    assert server.url.startswith("https://127.0.0.1:")
    trusting = {**cli_env, "SSL_CERT_FILE": str(cafile)}
    done = cli("call", server.url, "add", "a=1", "b=1", env=trusting)
    assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr
    done = cli("call", server.url, "add", "a=1", "b=1")  # without trusting the authority
    assert done.returncode == 1
    assert "Traceback" not in done.stderr


def test_limits_reach_the_server(cli: Cli, serve: StartServe) -> None:
    server = serve(["math", "--port", "0", "--max-request-bytes", "1K"])
    assert cli("call", server.url, "add", "a=1", "b=2").stdout == "3\n"
    done = cli("call", server.url, "add", "a=1", f"b={'1' * 2000}")  # a body over 1024 bytes
    assert done.returncode == 1
    assert "1024 bytes" in done.stderr
    assert done.stderr.count("\n") == 1
