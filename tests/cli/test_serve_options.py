"""How ``serve``'s options become ``McpHttpServer.bind`` arguments (one ``HttpSettings``), and that its help
tells the real defaults."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import click
import pytest

from fixtures.commands import COMMAND_TIMEOUT, Cli
from mcp_sse_server.cli import bind_options, cli
from mcp_sse_server.transport.http.limits import DEFAULT_LIMITS, HttpLimits
from mcp_sse_server.transport.http.settings import HttpSettings


def test_limits_left_out_keep_binds_defaults() -> None:
    assert bind_options(host="127.0.0.1", port=0, path="/mcp", max_sessions=None, allowed_origins=()) == {
        "host": "127.0.0.1",
        "port": 0,
        "settings": HttpSettings(path="/mcp", limits=DEFAULT_LIMITS),
    }


def test_every_limit_is_an_option_and_reaches_bind_as_one_limits_object() -> None:
    options = {
        "max_sessions": 5,
        "session_idle_timeout": 60.0,
        "session_max_lifetime": 3600.0,
        "max_request_bytes": 1024,
        "max_request_streams": 8,
        "max_batch_messages": 4,
        "backlog_limit": 0,
        "replay_buffer_size": 16,
        "keepalive_interval": 5.0,
        "shutdown_deadline": 2.5,
        "reap_interval": 7.0,
        "max_header_bytes": 8192,
        "max_header_count": 50,
        "header_timeout": 3.0,
        "body_timeout": 4.0,
        "connection_idle_timeout": 6.0,
        "max_connections": 10,
        "retry_interval": 0.5,
        "stream_log_grace": 12.0,
        "ended_streams_kept": 3,
        "stream_reconnect_after": 90.0,
        "allowed_origins": ("https://a.example",),
        "allowed_hosts": ("mcp.example", "*"),
    }
    assert set(options) == {field.name for field in dataclasses.fields(HttpLimits)}
    assert bind_options(host="::1", port=9, path="/x", **options) == {
        "host": "::1",
        "port": 9,
        "settings": HttpSettings(path="/x", limits=HttpLimits(**options)),  # type: ignore[arg-type]
    }
    # ...and each is an option of the command, so nothing above is dead code
    serve = cli.get_command(click.Context(cli), "serve")
    assert serve is not None
    names = {parameter.name for parameter in serve.params}
    assert set(options) <= names


def test_a_limit_httplimits_refuses_is_a_usage_error(cli: Cli) -> None:
    done = cli("serve", "math", "--port", "0", "--max-header-count", "0")
    assert done.returncode == 2
    assert "max_header_count must be a positive integer" in done.stderr


def test_help_states_binds_real_defaults(cli: Cli) -> None:
    # In a subprocess: the HTTP stack is not needed, or wanted, in the test process.
    probe = (
        "import json, dataclasses; from mcp_sse_server.transport.http.limits import DEFAULT_LIMITS as d; "
        "print(json.dumps(dataclasses.asdict(d), default=list))"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if found.returncode != 0:
        pytest.skip(f"the HTTP transport's limits are not importable: {found.stderr.strip()}")
    defaults = json.loads(found.stdout)
    shown = " ".join(cli("serve", "--help").stdout.split())
    expected = {
        "--max-sessions": f"({defaults['max_sessions']})",
        "--session-idle-timeout": f"({defaults['session_idle_timeout'] / 60:g}m)",
        "--session-max-lifetime": f"({defaults['session_max_lifetime'] / 3600:g}h)",
        "--max-request-bytes": f"({defaults['max_request_bytes'] // (1024 * 1024)}MiB)",
        "--max-request-streams": f"({defaults['max_request_streams']})",
        "--backlog-limit": f"({defaults['backlog_limit']})",
        "--replay-buffer-size": f"({defaults['replay_buffer_size']})",
        "--shutdown-deadline": f"({defaults['shutdown_deadline']:g}s)",
        "--keepalive-interval": f"({defaults['keepalive_interval']:g}s)",
        "--reap-interval": f"({defaults['reap_interval']:g}s)",
        "--max-header-bytes": f"({defaults['max_header_bytes'] // 1024}KiB)",
        "--max-header-count": f"({defaults['max_header_count']})",
        "--header-timeout": f"({defaults['header_timeout']:g}s)",
        "--body-timeout": f"({defaults['body_timeout']:g}s)",
        "--connection-idle-timeout": f"({defaults['connection_idle_timeout']:g}s)",
        "--max-connections": f"({defaults['max_connections']})",
    }
    for option, default in expected.items():
        start = shown.index(option)
        following = shown[start : shown.find(" --", start + len(option))]
        assert default in following, f"{option} help should say {default}: {following!r}"


def test_a_backend_url_nobody_registered_is_a_usage_error(cli: Cli) -> None:
    done = cli("serve", "math", "--port", "0", "--backend", "nowhere://x")
    assert done.returncode == 2
    assert "no backend for nowhere:" in done.stderr and "memory:" in done.stderr


def test_an_option_the_backend_does_not_take_is_a_usage_error(cli: Cli) -> None:
    done = cli("serve", "math", "--port", "0", "--worker-ttl", "1s")  # (memory: by default)
    assert done.returncode == 2
    assert "--worker-ttl does not go with --backend memory:" in done.stderr


def test_backend_and_its_older_spelling_are_one_option(cli: Cli) -> None:
    done = cli("serve", "math", "--port", "0", "--backend", "memory:", "--redis-url", "redis://127.0.0.1:1/0")
    assert done.returncode == 2
    assert "--redis-url is the older spelling of --backend" in done.stderr
