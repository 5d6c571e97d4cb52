"""``serve --auth-proxy oidc --auth-issuer IDP --auth-upstream-client-id ID
--auth-upstream-client-secret-env VAR``: the OAuth proxy from the command line, in front of a real
OpenID provider (oidc-provider on loopback). Our OAuth client signs in through a served process
and calls a tool; two served processes sharing a Redis backend and the key rings finish on one a
sign-in started on the other; and the settings it refuses."""

from __future__ import annotations

import asyncio
import re
import secrets
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from fixtures.auth_proxy import ALICE, REDIRECT, UPSTREAM_CLIENT, Browser, client_signs_in, walk_to_code
from fixtures.commands import Main
from fixtures.github_double import GitHubDouble, running_github
from fixtures.google_double import GoogleDouble, running_google
from fixtures.messages import initialize_message
from fixtures.oidc_provider import OpenIdProvider, running_oidc_provider
from fixtures.redis_server import RedisServer
from fixtures.served import Served
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.oauth import MemoryTokenStorage, OAuth, OAuthSettings

SECRET_VAR = "MCP_TEST_UPSTREAM_SECRET"
GITHUB_USERS = {"octocat": {"id": 583231, "email": "octocat@github.example"}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture
def op(ports: tuple[int, int]) -> Iterator[OpenIdProvider]:
    callback = f"http://127.0.0.1:{ports[0]}/oauth/callback"  # the one the IdP knows, for both processes
    with running_oidc_provider(code_clients={UPSTREAM_CLIENT: [callback]}, account_claims=ALICE) as provider:
        yield provider


def proxy_args(op: OpenIdProvider, port: int, resource: str) -> list[str]:
    return [
        "demo",
        "--port",
        str(port),
        "--auth-proxy",
        "oidc",
        "--auth-issuer",
        op.issuer,
        "--auth-upstream-client-id",
        UPSTREAM_CLIENT,
        "--auth-upstream-client-secret-env",
        SECRET_VAR,
        "--auth-scope",
        "mcp:tools",
        "--auth-resource",
        resource,
        "--auth-allow",
        "domain:acme.example",
    ]


async def test_our_client_signs_in_through_a_served_proxy(
    op: OpenIdProvider, ports: tuple[int, int], tmp_path: Path, cli_env: dict[str, str]
) -> None:
    resource = f"http://127.0.0.1:{ports[0]}/mcp"
    env = {**cli_env, SECRET_VAR: op.secrets[UPSTREAM_CLIENT]}
    served = Served(proxy_args(op, ports[0], resource), tmp_path, env)
    try:
        assert (served.next_line() or "").startswith(
            f"Protected resource {resource}: bearer tokens from http://127.0.0.1:{ports[0]}"
        )
        _, browser, tools = await client_signs_in(resource, "cli proxy test", call=list_tools)
        assert tools and browser.upstream_url is not None and browser.upstream_url.startswith(op.url)
    finally:
        status, stderr = served.stop()
    assert status == 0, stderr
    assert "keys made for this process" in stderr  # no MCP_AUTH_* given: said, not hidden


class _Second(httpx.AsyncBaseTransport):
    """The network of a browser and client whose ``paths`` on port ``first`` reach port ``second``
    instead (a load balancer sending them to another worker)."""

    def __init__(self, first: int, second: int, paths: set[str]) -> None:
        self._first, self._second, self._paths = first, second, paths
        self._net = httpx.AsyncHTTPTransport()
        self.moved: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.port == self._first and request.url.path in self._paths:
            self.moved.append(request.url.path)
            request.url = request.url.copy_with(port=self._second)
        return await self._net.handle_async_request(request)


async def test_two_served_processes_sharing_redis_finish_each_others_sign_ins(
    op: OpenIdProvider, ports: tuple[int, int], tmp_path: Path, cli_env: dict[str, str], redis_server: RedisServer
) -> None:
    first, second = ports
    resource = f"http://127.0.0.1:{first}/mcp"
    private_key = jwt.algorithms.ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()), as_dict=True)
    private = {"keys": [{**private_key, "kid": "k1"}]}
    key_file = tmp_path / "signing.jwks"
    key_file.write_bytes(orjson.dumps(private))
    env = {
        **cli_env,
        SECRET_VAR: op.secrets[UPSTREAM_CLIENT],
        "MCP_AUTH_SIGNING_KEYS": str(key_file),
        "MCP_AUTH_SECRETS": secrets.token_urlsafe(32),
    }
    backend = ["--backend", redis_server.url + "/14"]
    a = Served([*proxy_args(op, first, resource), *backend], tmp_path, env)
    try:
        b = Served([*proxy_args(op, second, resource), *backend], tmp_path, env)
        try:
            transport = _Second(first, second, {"/oauth/callback", "/oauth/token"})
            async with httpx.AsyncClient(transport=transport, timeout=30) as http:
                issuer = f"http://127.0.0.1:{first}"
                registered = await http.post(issuer + "/oauth/register", json={"redirect_uris": [REDIRECT]})
                client_id = registered.json()["client_id"]
                back, verifier = await walk_to_code(Browser(http), issuer, client_id, resource=resource)
                form = {"grant_type": "authorization_code", "client_id": client_id, "code": back["code"]}
                answer = await http.post(
                    issuer + "/oauth/token", data={**form, "code_verifier": verifier, "redirect_uri": REDIRECT}
                )
                assert answer.status_code == 200, answer.text
                token = answer.json()["access_token"]
                # The token B minted opens a session on A and on B (one signing key ring).
                body = initialize_message()
                headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
                for port in (first, second):
                    opened = await http.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers)
                    assert opened.status_code == 200, (port, opened.text)
            assert transport.moved == ["/oauth/callback", "/oauth/token"]
        finally:
            status_b, stderr_b = b.stop()
    finally:
        status_a, stderr_a = a.stop()
    assert status_a == 0 and status_b == 0, stderr_a + stderr_b


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--auth-proxy", "oidc", "--auth-issuer", "https://idp.example"], "--auth-upstream-client-id"),
        (
            ["--auth-proxy", "nope", "--auth-issuer", "https://idp.example"],
            "not github, google, entra, cognito or an OpenID provider preset",
        ),
        (
            [
                "--auth-proxy",
                "oidc",
                "--auth-issuer",
                "https://idp.example",
                "--auth-jwks-uri",
                "https://idp.example/j",
            ],
            "own tokens",
        ),
        (
            ["--auth-issuer", "https://a", "--auth-jwks-uri", "https://a/j", "--auth-redirect-allow", "https://x/cb"],
            "go with --auth-proxy",
        ),
        (["--auth-proxy", "entra"], "--auth-proxy entra needs --auth-tenant"),
        (["--auth-proxy", "entra", "--auth-tenant", "organizations"], "--auth-proxy entra needs --auth-allow"),
        (["--auth-proxy", "oidc", "--auth-issuer", "https://a", "--auth-tenant", "t"], "--auth-tenant goes with"),
        (["--auth-proxy", "cognito", "--auth-region", "us-east-1", "--auth-pool", "us-east-1_A"], "--auth-domain"),
        (["--auth-proxy", "cognito", "--auth-domain", "a.auth.us-east-1.amazoncognito.com"], "--auth-region"),
        (["--auth-proxy", "google", "--auth-pool", "p", "--auth-allow", "org:a"], "go with --auth-proxy cognito"),
    ],
)
def test_settings_the_proxy_refuses(main: Main, extra: list[str], message: str) -> None:
    status, _, err = main("serve", "demo", "--auth-resource", "http://127.0.0.1:8000/mcp", *extra)
    assert status == 2 and message in err, err


async def test_serve_auth_proxy_github_with_dpop(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``--auth-proxy github`` against the GitHub stand-in (as a GitHub Enterprise Server at
    ``--auth-issuer``), with ``--auth-dpop allowed``: our DPoP client signs in, its tokens bound."""
    port = free_port()
    double = GitHubDouble("Ov23liCLI", "cli-secret", f"http://127.0.0.1:{port}/oauth/callback", GITHUB_USERS)
    async with running_github(double):
        args = ["demo", "--port", str(port), "--auth-proxy", "github", "--auth-issuer", double.url]
        args += ["--auth-upstream-client-id", "Ov23liCLI", "--auth-upstream-client-secret-env", SECRET_VAR]
        args += ["--auth-allow", "user:583231", "--auth-scope", "mcp:tools", "--auth-dpop", "allowed"]
        served = Served(args, tmp_path, {**cli_env, SECRET_VAR: "cli-secret"})
        try:
            browser = Browser()
            settings = OAuthSettings(client_name="cli github", dpop=True)
            auth = OAuth(settings, storage=MemoryTokenStorage(), user_agent=browser.user_agent(REDIRECT))
            async with (
                httpx.AsyncClient(timeout=30) as http,
                StreamableHttpClient(served.url, auth=auth, http_client=http) as client,
            ):
                tools = await client.list_tools()
            await browser.aclose()
            assert tools and auth.tokens is not None and auth.tokens.token_type == "DPoP"
            claims = jwt.decode(auth.tokens.access_token, options={"verify_signature": False})
            assert claims["sub"] == "github:583231" and claims["cnf"]["jkt"]
        finally:
            status, stderr = served.stop()
    assert status == 0, stderr


def test_serve_auth_proxy_github_needs_an_allow_rule(main: Main) -> None:
    status, _, err = main(
        "serve", "demo", "--auth-proxy", "github", "--auth-upstream-client-id", "x",
        "--auth-upstream-client-secret-env", SECRET_VAR, "--auth-resource", "http://127.0.0.1:8000/mcp",
    )  # fmt: skip
    assert status == 2 and "--auth-proxy github needs --auth-allow" in err, err


async def test_login_signs_in_through_a_served_proxy(
    op: OpenIdProvider, ports: tuple[int, int], tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """``login`` (the real command: discovery, registration, PKCE, its loopback callback) against a
    served proxy; the user (``Browser``) passes our consent page and the IdP's sign-in."""
    resource = f"http://127.0.0.1:{ports[0]}/mcp"
    served = Served(proxy_args(op, ports[0], resource), tmp_path, {**cli_env, SECRET_VAR: op.secrets[UPSTREAM_CLIENT]})
    callback_port = free_port()
    redirect = f"http://127.0.0.1:{callback_port}/callback"
    env = {**cli_env, "XDG_STATE_HOME": str(tmp_path / "state")}
    try:
        async with asyncio.timeout(120):
            login = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "mcp_sse_server", "login", resource, "--no-browser",
                "--redirect-port", str(callback_port),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=tmp_path,
            )  # fmt: skip
            assert login.stderr is not None
            lines: list[str] = []
            pattern = rf"(http://127\.0\.0\.1:{ports[0]}/oauth/authorize\?\S+)"
            while (found := re.search(pattern, "".join(lines))) is None:
                line = (await login.stderr.readline()).decode()
                assert line, f"no authorization URL on stderr: {lines}"
                lines.append(line)
            browser = Browser()
            answer = await browser.walk(found[1], redirect)
            landed = await browser.http.get(redirect, params=answer)  # back to login's loopback port
            await browser.aclose()
            assert landed.status_code == 200
            out, err = await login.communicate()
            assert login.returncode == 0, err.decode()
            # The client commands use the kept token: a tool called with no second sign-in.
            call = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "mcp_sse_server", "call", resource, "describe_demo",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=tmp_path,
            )  # fmt: skip
            called, call_err = await call.communicate()
            assert call.returncode == 0, call_err.decode()
            assert called.strip() and "/oauth/authorize" not in call_err.decode()
    finally:
        status, stderr = served.stop()
    assert status == 0, stderr
    assert login.returncode == 0, err.decode()
    issuer = f"http://127.0.0.1:{ports[0]}"
    assert f"a token from {issuer}" in out.decode()
    kept = orjson.loads((tmp_path / "state" / "mcp-sse-server" / "oauth.json").read_bytes())
    token = kept["tokens"][issuer][resource]
    assert token["refresh_token"].startswith("mrt_")  # ours: never the IdP's
    claims = jwt.decode(token["access_token"], options={"verify_signature": False})
    assert claims["iss"] == issuer and claims["sub"] == "oidc:alice"


async def test_serve_auth_proxy_google(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``--auth-proxy google`` against the Google stand-in at ``--auth-issuer``: our client signs in
    (sub google:<sub>) and lists tools; Google without an allow rule is refused at start-up."""
    port = free_port()
    user = {"sub": "1077", "email": "ann@acme.example", "email_verified": True, "hd": "acme.example"}
    double = GoogleDouble("g.apps.googleusercontent.com", "g-secret", f"http://127.0.0.1:{port}/oauth/callback", user)
    async with running_google(double):
        args = ["demo", "--port", str(port), "--auth-proxy", "google", "--auth-issuer", double.url]
        args += ["--auth-upstream-client-id", double.client_id, "--auth-upstream-client-secret-env", SECRET_VAR]
        env = {**cli_env, SECRET_VAR: "g-secret"}
        # Served blocks while the process starts, and it fetches the stand-in's discovery then.
        served = await asyncio.to_thread(Served, [*args, "--auth-allow", "org:acme.example"], tmp_path, env)
        try:
            auth, _, tools = await client_signs_in(served.url, "cli google", call=list_tools)
            assert tools and auth.tokens is not None
            assert jwt.decode(auth.tokens.access_token, options={"verify_signature": False})["sub"] == "google:1077"
        finally:
            status, stderr = served.stop()
        assert status == 0, stderr
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcp_sse_server", "serve", "demo", "--auth-proxy", "google",
        "--auth-upstream-client-id", "g", "--auth-upstream-client-secret-env", SECRET_VAR,
        "--auth-resource", "http://127.0.0.1:8000/mcp",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**cli_env, SECRET_VAR: "s"},
    )  # fmt: skip
    _, err = await proc.communicate()
    assert proc.returncode == 2 and "--auth-proxy google needs --auth-allow" in err.decode()


async def list_tools(client: StreamableHttpClient) -> Any:
    """What the served demo is asked once signed in (it has no whoami)."""
    return await client.list_tools()


async def _served_sign_in(args: list[str], tmp_path: Path, env: dict[str, str], name: str) -> str:
    """Our OAuth client signs in through the process ``args`` serve and lists tools: our token's sub."""
    # Served blocks while the process starts, and it fetches the stand-in's discovery then.
    served = await asyncio.to_thread(Served, args, tmp_path, env)
    try:
        auth, _, tools = await client_signs_in(served.url, name, call=list_tools)
        assert tools and auth.tokens is not None
        subject: str = jwt.decode(auth.tokens.access_token, options={"verify_signature": False})["sub"]
    finally:
        status, stderr = served.stop()
    assert status == 0, stderr
    return subject


async def test_serve_auth_proxy_entra(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``--auth-proxy entra --auth-tenant TID`` against a stand-in of Entra's documented shapes (the
    real oidc-provider at ``/{tid}/v2.0`` with ``tid``/``oid`` in its ID tokens; not Entra), its
    login host at ``--auth-issuer``: our client signs in, the subject ``entra:<tid>:<oid>``."""
    port, tid, oid = free_port(), "72f988bf-86f1-41af-91ab-2d7cd011db47", "00000000-0000-0000-66f3-3332eca7ea81"
    with running_oidc_provider(
        path=f"/{tid}/v2.0",
        code_clients={UPSTREAM_CLIENT: [f"http://127.0.0.1:{port}/oauth/callback"]},
        account=oid,
        account_claims={"tid": tid, "oid": oid},
        id_token_claims=("tid", "oid"),
    ) as op:
        args = ["demo", "--port", str(port), "--auth-proxy", "entra", "--auth-tenant", tid, "--auth-allow"]
        args += [f"tenant:{tid}", "--auth-issuer", op.issuer.removesuffix(f"/{tid}/v2.0")]
        args += ["--auth-upstream-client-id", UPSTREAM_CLIENT, "--auth-upstream-client-secret-env", SECRET_VAR]
        env = {**cli_env, SECRET_VAR: op.secrets[UPSTREAM_CLIENT]}
        assert await _served_sign_in(args, tmp_path, env, "cli entra") == f"entra:{tid}:{oid}"


async def test_serve_auth_proxy_cognito(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``--auth-proxy cognito`` against a stand-in of Cognito's documented shapes (the real
    oidc-provider at ``/{poolId}``, its endpoints at the hosted UI's ``/oauth2/*`` paths, on one
    host; not Cognito), the pool's issuer at ``--auth-issuer``: our client signs in as a member of
    the group the allow rule names."""
    port, pool, sub = free_port(), "us-east-1_Ab12Cd34E", "94f8a4b8-0031-70b5-6e3c-e1f0a2b3c4d5"
    routes = {"authorization": "/oauth2/authorize", "token": "/oauth2/token", "userinfo": "/oauth2/userInfo"}
    with running_oidc_provider(
        path=f"/{pool}",
        code_clients={UPSTREAM_CLIENT: [f"http://127.0.0.1:{port}/oauth/callback"]},
        account=sub,
        account_claims={"email": "ann@acme.example", "email_verified": True, "cognito:groups": ["ops"]},
        id_token_claims=("cognito:groups",),
        routes={**routes, "revocation": "/oauth2/revoke", "jwks": "/.well-known/jwks.json"},
    ) as op:
        args = ["demo", "--port", str(port), "--auth-proxy", "cognito", "--auth-issuer", op.issuer]
        args += ["--auth-domain", op.issuer, "--auth-allow", "group:ops"]
        args += ["--auth-upstream-client-id", UPSTREAM_CLIENT, "--auth-upstream-client-secret-env", SECRET_VAR]
        env = {**cli_env, SECRET_VAR: op.secrets[UPSTREAM_CLIENT]}
        assert await _served_sign_in(args, tmp_path, env, "cli cognito") == f"cognito:{sub}"
