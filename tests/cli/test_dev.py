"""``dev TARGET``: serve, edit the file, see the new code served on the same port; Ctrl-C or SIGTERM
stops the child and exits 0. Every wait is bounded, and every process is killed in the end."""

from __future__ import annotations

import importlib.util
import re
import signal
from pathlib import Path

import pytest

from fixtures.commands import Cli, Main
from fixtures.served import CommandProcess

if importlib.util.find_spec("mcp_sse_server.transport.http.server") is None:
    pytest.skip("McpHttpServer (mcp_sse_server.transport.http) has not landed yet", allow_module_level=True)

_SERVING = re.compile(r"^Serving shop\.py:build at (?P<url>http://\S+)$")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_dev_reloads_after_an_edit_and_stops(
    cli: Cli, shop: Path, tmp_path: Path, cli_env: dict[str, str], stop: signal.Signals
) -> None:
    dev = CommandProcess("dev", ["shop.py:build", "--port", "0"], tmp_path, cli_env)
    try:
        url = dev.next_out(_SERVING)["url"]
        inspector = dev.next_out(re.compile(r"^Inspect it: (?P<command>.*)$"))["command"]
        assert inspector == f"npx @modelcontextprotocol/inspector --transport http --server-url {url}"
        assert cli("call", url, "add", "a=2", "b=3").stdout == "5\n"

        shop.write_text(shop.read_text().replace("return int(a + b)", "return int(a + b) + 100"))
        dev.wait_err("Reloading: shop.py changed")
        assert dev.next_out(_SERVING)["url"] == url  # the port --port 0 picked is kept
        done = cli("call", url, "add", "a=2", "b=3")
        assert (done.returncode, done.stdout) == (0, "105\n"), done.stderr

        status, stderr = dev.stop(stop)
        assert status == 0, stderr
        gone = cli("tools", url)  # the child stopped with its parent
        assert gone.returncode == 1, gone.stdout
        assert "Traceback" not in stderr
    finally:
        dev.kill()


def test_a_child_that_never_listens_ends_dev_with_its_status(cli: Cli, shop: Path) -> None:
    done = cli("dev", "shop.py:nothing", "--port", "0")
    assert done.returncode == 2
    assert "Error: shop.py has no attribute 'nothing'" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.py:build"], "Error: no such file: missing.py\n"),
        (["no_such_module_xyz:build"], "Error: no module named 'no_such_module_xyz'\n"),
        (["nope"], "Error: unknown server 'nope'; use a built-in"),
    ],
)
def test_a_target_without_a_file_is_a_usage_error(main: Main, args: list[str], message: str) -> None:
    status, out, err = main("dev", *args)
    assert (status, out) == (2, "")
    assert err.startswith(message)
