"""``login`` and the client commands against an OAuth-protected server: the real command in a
subprocess, our protected server and the test authorization server on loopback, and the
"browser" played by an HTTP client that follows the printed authorization URL back to the
command's loopback port."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from pathlib import Path

import httpx
import pytest

from fixtures.authorization_server import AuthorizationServer
from fixtures.commands import COMMAND_TIMEOUT, Main
from fixtures.oidc_provider import running_oidc_provider
from fixtures.protected import protected_endpoint
from fixtures.served import Served
from mcp_sse_server.transport.http.server import listening_socket

AUTHORIZE = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)")


async def command(env: dict[str, str], cwd: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcp_sse_server",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )


async def approve_in_browser(process: asyncio.subprocess.Process) -> list[str]:
    """Read stderr until the authorization URL shows up, then do what the browser would: open it
    and follow the redirects back to the command's loopback port. Returns the stderr lines read."""
    assert process.stderr is not None
    lines: list[str] = []
    while True:
        line = (await process.stderr.readline()).decode()
        assert line, f"no authorization URL on stderr: {lines}"
        lines.append(line)
        found = AUTHORIZE.search(line)
        if found is not None:
            async with httpx.AsyncClient(follow_redirects=True, timeout=30) as browser:
                landed = await browser.get(found[1])
            assert landed.status_code == 200 and str(landed.url).startswith("http://127.0.0.1:")
            return lines


async def test_login_keeps_a_token_that_the_other_commands_use(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "XDG_STATE_HOME": str(tmp_path / "state")}
    async with asyncio.timeout(COMMAND_TIMEOUT * 2), AuthorizationServer() as issuer, protected_endpoint(issuer) as url:
        login = await command(env, tmp_path, "login", url, "--no-browser")
        await approve_in_browser(login)
        out, err = await login.communicate()
        assert login.returncode == 0, err.decode()
        token_file = tmp_path / "state" / "mcp-sse-server" / "oauth.json"
        assert out.decode().strip() == (
            f"Logged in to {url}: a token from {issuer.issuer} with scope mcp:tools, kept in {token_file}"
        )
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        kept = json.loads(token_file.read_text())
        assert issuer.issuer in kept["tokens"] and issuer.issuer in kept["clients"]

        # The client commands use the kept token: no browser, no second authorization.
        authorizations = issuer.requests.count(("GET", "/authorize"))
        call = await command(env, tmp_path, "call", url, "whoami")
        out, err = await call.communicate()
        assert call.returncode == 0, err.decode()
        assert '"subject": "alice"' in out.decode() or '"subject":"alice"' in out.decode()
        assert issuer.requests.count(("GET", "/authorize")) == authorizations
        assert kept["tokens"][issuer.issuer][url]["access_token"] not in err.decode()


async def test_a_command_against_a_protected_url_runs_the_flow_itself(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "XDG_STATE_HOME": str(tmp_path / "state"), "BROWSER": "true"}  # a browser that opens nothing
    async with asyncio.timeout(COMMAND_TIMEOUT * 2), AuthorizationServer() as issuer, protected_endpoint(issuer) as url:
        tools = await command(env, tmp_path, "tools", url)
        await approve_in_browser(tools)
        out, err = await tools.communicate()
        assert tools.returncode == 0, err.decode()
        assert "whoami" in out.decode()


async def test_login_at_an_openid_provider_keeps_a_refresh_token(cli_env: dict[str, str], tmp_path: Path) -> None:
    # oidc-provider (a real OpenID provider) ignores offline_access unless the authorization request
    # says prompt=consent: login asked without it and came back with no refresh token.
    env = {**cli_env, "XDG_STATE_HOME": str(tmp_path / "state")}
    # Free ports: the redirect URI is registered beforehand, and the resource names the port.
    with listening_socket("127.0.0.1", 0) as probe, listening_socket("127.0.0.1", 0) as other:
        port, mcp_port = probe.getsockname()[1], other.getsockname()[1]
    redirect = f"http://127.0.0.1:{port}/callback"
    with running_oidc_provider(public_clients={"mcp-cli": [redirect]}) as op:
        args = ["demo", "--port", str(mcp_port), "--auth-resource", f"http://127.0.0.1:{mcp_port}/mcp"]
        args += ["--auth-provider", "oidc", "--auth-issuer", op.issuer, "--auth-scope", "mcp:tools"]
        served = Served(args, tmp_path, cli_env)
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT * 2):
                login = await command(
                    env, tmp_path, "login", served.url, "--no-browser", "--client-id", "mcp-cli",
                    "--redirect-port", str(port),
                )  # fmt: skip
                assert login.stderr is not None
                lines: list[str] = []
                while (found := re.search(r"(http://127\.0\.0\.1:\d+/auth\?\S+)", "".join(lines))) is None:
                    line = (await login.stderr.readline()).decode()
                    assert line, f"no authorization URL on stderr: {lines}"
                    lines.append(line)
                assert "prompt=consent" in found[1] and "offline_access" in found[1]
                # The browser: the scripted sign-in and consent, then back to login's loopback port.
                async with httpx.AsyncClient(follow_redirects=True, timeout=30) as browser:
                    landed = await browser.get(found[1])
                assert landed.status_code == 200 and str(landed.url).startswith(redirect)
                out, err = await login.communicate()
        finally:
            status, stderr = served.stop()
        assert status == 0, stderr
    assert login.returncode == 0, err.decode()
    assert f"a token from {op.issuer} with scope mcp:tools" in out.decode()
    kept = json.loads((tmp_path / "state" / "mcp-sse-server" / "oauth.json").read_text())
    assert kept["tokens"][op.issuer][served.url]["refresh_token"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["not-a-url-or-entry"], "neither a URL nor a registry entry"),
        (["http://127.0.0.1:9/mcp", "--client-secret-env", "MCP_TEST_UNSET"], "MCP_TEST_UNSET is not set"),
    ],
)
def test_login_refuses_what_cannot_work(main: Main, args: list[str], message: str) -> None:
    status, _, err = main("login", *args)
    assert status == 2 and message in err, err
