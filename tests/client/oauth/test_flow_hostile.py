"""Our OAuth client against hostile servers: small real ASGI apps on 127.0.0.1 playing the MCP
server and the authorization server, each keeping every request it got (``Site.hits``), with the
``Authorization`` header and the body.

The rule every case checks on top of its own: the client's token (if it got one) reaches the MCP
endpoint only; a rule broken before the token request means no token request at all, and a rule
broken before authorization means the user is never sent anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import Message, Receive, Scope, Send

from fixtures.authorization_server import AuthorizationServer
from fixtures.protected import whoami_server
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.client import McpConnectionError, StreamableHttpClient
from mcp_sse_server.client.oauth import CallbackUserAgent, HeadlessUserAgent, OAuth, OAuthError, OAuthSettings
from mcp_sse_server.engine.jsonrpc import McpError
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp, McpHttpServer
from mcp_sse_server.transport.http.server import listening_socket

from ..asgi_server import serve

REDIRECT = "http://127.0.0.1:9/callback"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
AS_METADATA = "/.well-known/oauth-authorization-server"
EVIL = "http://evil.example"

Handler = Callable[[Request], Awaitable[Response]]


@dataclasses.dataclass
class Hit:
    method: str
    path: str
    query: str
    authorization: str | None
    body: bytearray = dataclasses.field(default_factory=bytearray)

    def carries(self, token: str) -> bool:
        """Whether ``token`` travels in this request anywhere: a header, the query or the body."""
        return token in (self.authorization or "") or token in self.query or token.encode() in self.body


class Site:
    """One origin: an ASGI app answering ``routes[(method, path)]``, 404 otherwise, keeping every
    request in ``hits``. ``base`` is its URL once served."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.base = ""
        self.routes: dict[tuple[str, str], Handler] = {}
        self.hits: list[Hit] = []

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[(method, path)] = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        hit = Hit(scope["method"], scope["path"], scope["query_string"].decode("latin-1"), headers.get("authorization"))
        self.hits.append(hit)

        async def recording() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                hit.body += message.get("body", b"")
            return message

        request = Request(scope, recording)
        handler = self.routes.get((scope["method"], scope["path"]))
        response = await handler(request) if handler is not None else Response("not here", status_code=404)
        await response(scope, recording, send)

    def paths(self) -> list[tuple[str, str]]:
        return [(hit.method, hit.path) for hit in self.hits]

    def count(self, method: str, path: str) -> int:
        return self.paths().count((method, path))


@dataclasses.dataclass
class Knobs:
    """What the hostile servers do differently from honest ones (None: the honest answer)."""

    issuer: str | None = None  # the AS metadata's issuer
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    pkce: bool = True  # code_challenge_methods_supported lists S256
    iss_supported: bool = True  # authorization_response_iss_parameter_supported
    state: str | None = None  # the state the authorization response carries
    iss: str | None = None  # the iss the authorization response carries
    omit_iss: bool = False
    token_reply: dict[str, Any] | None = None
    resource: str | None = None  # the PRM resource
    prm_site: bool = False  # the PRM on an origin of its own, named by the challenge
    always_401: bool = False  # the MCP endpoint refuses every request, even with a fresh token
    call_refusal: tuple[int, Mapping[str, str]] | None = None  # status and headers for tools/call
    call_redirect: str | None = None  # tools/call answered with a 307 to this URL


class Hostile:
    """An MCP endpoint (``mcp``), an authorization server (``auth``) and, with ``prm_site``, a
    protected-resource metadata host (``prm``), each on its own origin, played as ``knobs`` say."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.mcp = Site("mcp")
        self.auth = Site("auth")
        self.prm = Site("prm")
        self.issued: list[str] = []
        self.user_agent = HeadlessUserAgent(REDIRECT)  # what a client uses unless a test gives another
        self.mcp.route("POST", "/mcp", self._mcp)
        self.mcp.route("GET", "/mcp", self._mcp_stream)
        self.mcp.route("DELETE", "/mcp", self._mcp_stream)
        (self.prm if knobs.prm_site else self.mcp).route("GET", PRM_PATH, self._prm)
        self.auth.route("GET", AS_METADATA, self._metadata)
        self.auth.route("POST", "/register", self._register)
        self.auth.route("GET", "/authorize", self._authorize)
        self.auth.route("POST", "/token", self._token)

    @property
    def endpoint(self) -> str:
        return f"{self.mcp.base}/mcp"

    def sites(self) -> tuple[Site, ...]:
        return (self.mcp, self.auth, self.prm)

    # --- the MCP endpoint ---

    def _challenge(self) -> str:
        metadata = f"{(self.prm if self.knobs.prm_site else self.mcp).base}{PRM_PATH}"
        return f'Bearer resource_metadata="{metadata}", scope="mcp"'

    async def _mcp(self, request: Request) -> Response:
        authorization = request.headers.get("authorization", "")
        if self.knobs.always_401 or authorization.removeprefix("Bearer ") not in self.issued:
            return JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Unauthorized"}},
                status_code=401,
                headers={"www-authenticate": self._challenge()},
            )
        message = orjson.loads(await request.body())
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            return Response(status_code=202)
        if method == "tools/call" and self.knobs.call_refusal is not None:
            status, headers = self.knobs.call_refusal
            error = {"code": -32600, "message": "Forbidden: this origin may not call tools"}
            return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status, headers=dict(headers))
        if method == "tools/call" and self.knobs.call_redirect is not None:
            return RedirectResponse(self.knobs.call_redirect, status_code=307)
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "echo"}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": "Method not found"}
            return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error})
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _mcp_stream(self, request: Request) -> Response:
        return Response(status_code=405, headers={"allow": "POST"})

    async def _prm(self, request: Request) -> Response:
        return JSONResponse(
            {
                "resource": self.knobs.resource or self.endpoint,
                "authorization_servers": [self.auth.base],
                "scopes_supported": ["mcp"],
            }
        )

    # --- the authorization server ---

    async def _metadata(self, request: Request) -> Response:
        base = self.auth.base
        document: dict[str, Any] = {
            "issuer": self.knobs.issuer or base,
            "authorization_endpoint": self.knobs.authorization_endpoint or f"{base}/authorize",
            "token_endpoint": self.knobs.token_endpoint or f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": self.knobs.iss_supported,
        }
        if self.knobs.pkce:
            document["code_challenge_methods_supported"] = ["S256"]
        return JSONResponse(document)

    async def _register(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        return JSONResponse(
            {**body, "client_id": "hostile-client", "token_endpoint_auth_method": "none"}, status_code=201
        )

    async def _authorize(self, request: Request) -> Response:
        query = request.query_params
        answer = {"code": secrets.token_urlsafe(16), "state": self.knobs.state or query.get("state", "")}
        if not self.knobs.omit_iss:
            answer["iss"] = self.knobs.iss or self.auth.base
        return RedirectResponse(f"{query['redirect_uri']}?{urlencode(answer)}", status_code=302)

    async def _token(self, request: Request) -> Response:
        if self.knobs.token_reply is not None:
            return JSONResponse(self.knobs.token_reply)
        token = secrets.token_urlsafe(24)
        self.issued.append(token)
        return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 3600})


@contextlib.asynccontextmanager
async def hostile(knobs: Knobs) -> AsyncIterator[Hostile]:
    servers = Hostile(knobs)
    async with serve(servers.mcp) as mcp_base, serve(servers.auth) as auth_base, serve(servers.prm) as prm_base:
        servers.mcp.base, servers.auth.base, servers.prm.base = mcp_base, auth_base, prm_base
        try:
            yield servers
        finally:
            await servers.user_agent.aclose()


class RecordingUserAgent(CallbackUserAgent):
    """A user agent that follows nothing: it records each authorization URL it is given and answers
    with the parameters ``answer`` builds from that URL's query."""

    def __init__(self, answer: Callable[[dict[str, str]], dict[str, str]]) -> None:
        self.asked: list[str] = []

        async def authorize(url: str) -> Mapping[str, str]:
            self.asked.append(url)
            query = {name: values[0] for name, values in parse_qs(url.partition("?")[2]).items()}
            return answer(query)

        super().__init__(REDIRECT, authorize)


def client_for(servers: Hostile, user_agent: Any = None) -> tuple[StreamableHttpClient, OAuth]:
    auth = OAuth(OAuthSettings(client_name="hostile test"), user_agent=user_agent or servers.user_agent)
    return StreamableHttpClient(servers.endpoint, auth=auth, mode="session"), auth


def assert_token_stayed_home(servers: Hostile) -> None:
    """Every bearer the client sent went to the MCP endpoint, and none of the tokens issued travelled
    anywhere else (the authorization server and the PRM host never saw one, in any part of a request)."""
    for site in servers.sites():
        for hit in site.hits:
            if site is servers.mcp and hit.path == "/mcp":
                continue
            assert hit.authorization is None, (site.name, hit)
            assert not any(hit.carries(token) for token in servers.issued), (site.name, hit)


# --- the table: a rule broken, an OAuthError, and nothing sent after the rule was broken -----------


@dataclasses.dataclass
class Case:
    id: str
    knobs: Knobs
    error: str  # a fragment of the OAuthError's message
    auth_paths: list[tuple[str, str]]  # every request the authorization server gets, in order
    authorizes: bool  # whether the user agent is asked at all


LOGIN_UNTIL_AUTHORIZE = [("GET", AS_METADATA), ("POST", "/register"), ("GET", "/authorize")]
CASES = [
    Case(
        "issuer-mismatch",
        Knobs(issuer=EVIL),
        "names issuer 'http://evil.example'",
        [("GET", AS_METADATA)],
        authorizes=False,
    ),
    Case(
        "non-https-authorization-endpoint",
        Knobs(authorization_endpoint=f"{EVIL}/authorize"),
        "the authorization endpoint must be https",
        [("GET", AS_METADATA)],
        authorizes=False,
    ),
    Case(
        "no-pkce",
        Knobs(pkce=False),
        "PKCE",
        [("GET", AS_METADATA)],
        authorizes=False,
    ),
    Case(
        "resource-mismatch-path",
        Knobs(resource="http://127.0.0.1:1/mcp"),
        "names another resource",
        [],
        authorizes=False,
    ),
    Case(
        "resource-mismatch-origin",
        Knobs(resource=f"{EVIL}/mcp"),
        "names another resource",
        [],
        authorizes=False,
    ),
    Case("wrong-state", Knobs(state="forged"), "state", LOGIN_UNTIL_AUTHORIZE, authorizes=True),
    Case("wrong-iss", Knobs(iss=EVIL), "comes from issuer 'http://evil.example'", LOGIN_UNTIL_AUTHORIZE, True),
    Case("iss-missing-though-promised", Knobs(omit_iss=True), "has no iss", LOGIN_UNTIL_AUTHORIZE, True),
    Case(
        "token-reply-without-access-token",
        Knobs(token_reply={}),
        "without an access_token",
        [*LOGIN_UNTIL_AUTHORIZE, ("POST", "/token")],
        authorizes=True,
    ),
    Case(
        "unknown-token-type",
        Knobs(token_reply={"access_token": "at-mac", "token_type": "mac", "expires_in": 60}),
        "token_type ('mac')",
        [*LOGIN_UNTIL_AUTHORIZE, ("POST", "/token")],
        authorizes=True,
    ),
    Case(
        "non-https-token-endpoint",
        Knobs(token_endpoint=f"{EVIL}/token"),
        "the token endpoint must be https",
        [("GET", AS_METADATA)],  # refused before the user is asked to authorize for nothing
        authorizes=False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_a_hostile_server_ends_the_flow_with_an_oauth_error_before_anything_else_is_sent(case: Case) -> None:
    async with asyncio.timeout(30), hostile(case.knobs) as servers:
        # A user agent that behaves as the headless one does, but says whether it was asked.
        headless = HeadlessUserAgent(REDIRECT)
        asked: list[str] = []

        async def follow(url: str) -> Mapping[str, str]:
            asked.append(url)
            return await headless.authorize(url)

        client, auth = client_for(servers, CallbackUserAgent(REDIRECT, follow))
        try:
            with pytest.raises(OAuthError) as caught:
                await client.__aenter__()
        finally:
            await client.close()
            await headless.aclose()

    assert case.error in str(caught.value)
    assert servers.auth.paths() == case.auth_paths
    assert bool(asked) == case.authorizes and len(asked) <= 1
    # The MCP endpoint was asked once, without a token: the client never got one it would send.
    assert [(hit.method, hit.authorization) for hit in servers.mcp.hits if hit.path == "/mcp"] == [("POST", None)]
    assert auth.tokens is None
    assert_token_stayed_home(servers)
    if case.knobs.token_reply is not None:
        assert "at-mac" not in str(caught.value)  # the message never holds a token


async def test_a_forged_callback_state_is_refused_before_the_token_request() -> None:
    """The application's callback hands back a code with another state (an injected redirect)."""
    async with asyncio.timeout(30), hostile(Knobs()) as servers:
        user_agent = RecordingUserAgent(
            lambda query: {"code": "stolen", "state": "not-yours", "iss": servers.auth.base}
        )
        client, _ = client_for(servers, user_agent)
        with pytest.raises(OAuthError, match="state"):
            async with client:
                pass

    assert len(user_agent.asked) == 1
    assert servers.auth.count("POST", "/token") == 0


async def test_an_authorization_error_with_a_wrong_iss_is_never_shown() -> None:
    """CL-21: an error response from the wrong issuer is refused for its iss; its text is not shown."""
    async with asyncio.timeout(30), hostile(Knobs()) as servers:
        user_agent = RecordingUserAgent(
            lambda query: {
                "error": "access_denied",
                "error_description": "call +1-555-SCAM to unlock",
                "state": query["state"],
                "iss": EVIL,
            }
        )
        client, _ = client_for(servers, user_agent)
        with pytest.raises(OAuthError) as caught:
            async with client:
                pass

    assert "evil.example" in str(caught.value) and "SCAM" not in str(caught.value)
    assert "access_denied" not in str(caught.value)
    assert servers.auth.count("POST", "/token") == 0


# --- a 401 loop -------------------------------------------------------------------------------------


async def test_an_endpoint_refusing_every_token_gets_one_authorization_per_attempt_not_a_loop() -> None:
    async with asyncio.timeout(30), hostile(Knobs(always_401=True)) as servers:
        client, auth = client_for(servers)
        with pytest.raises(OAuthError, match="refused the token it was just given"):
            async with client:
                pass
        assert servers.auth.count("GET", "/authorize") == 1 and servers.auth.count("POST", "/token") == 1
        mcp_posts = [hit.authorization for hit in servers.mcp.hits if hit.method == "POST"]
        assert mcp_posts == [None, f"Bearer {servers.issued[0]}"]

        # Connecting again (the same OAuth, its token refused): one more authorization, then the error.
        again = StreamableHttpClient(servers.endpoint, auth=auth, mode="session")
        with pytest.raises(OAuthError, match="refused the token it was just given"):
            async with again:
                pass

    assert servers.auth.count("GET", "/authorize") == 2 and servers.auth.count("POST", "/token") == 2
    assert servers.auth.count("POST", "/register") == 1
    assert len([hit for hit in servers.mcp.hits if hit.method == "POST"]) == 4
    assert_token_stayed_home(servers)


# --- where the token goes ---------------------------------------------------------------------------


async def test_the_token_goes_to_the_mcp_endpoint_only_never_to_the_prm_host_the_as_or_a_redirect() -> None:
    """The PRM is on an origin of its own (the challenge names it), the AS on another, and a
    tools/call is answered with a 307 to the PRM host's origin: the token reaches none of them."""
    async with asyncio.timeout(30), hostile(Knobs(prm_site=True)) as servers:
        servers.knobs.call_redirect = f"{servers.prm.base}/mcp"
        client, auth = client_for(servers)
        async with client:
            assert [tool.name for tool in await client.list_tools()] == ["echo"]
            with pytest.raises(McpConnectionError, match="another origin"):
                await client.call_tool("echo", {})

    [token] = servers.issued
    assert auth.tokens is not None and auth.tokens.access_token == token
    assert servers.prm.paths() == [("GET", PRM_PATH)]  # the metadata, and never the redirect's target
    assert servers.mcp.count("GET", PRM_PATH) == 0
    bearers = [hit.authorization for hit in servers.mcp.hits if hit.path == "/mcp"]
    assert bearers[0] is None and set(bearers[1:]) == {f"Bearer {token}"}
    assert_token_stayed_home(servers)


# --- a 403 that is not about scope -----------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"www-authenticate": 'Bearer error="invalid_request", error_description="origin refused"'}],
    ids=["no-challenge", "another-bearer-error"],
)
async def test_a_403_without_insufficient_scope_is_the_servers_error_not_an_oauth_retry(
    headers: dict[str, str],
) -> None:
    async with asyncio.timeout(30), hostile(Knobs(call_refusal=(403, headers))) as servers:
        client, auth = client_for(servers)
        async with client:
            held = auth.tokens
            with pytest.raises(McpError) as caught:
                await client.call_tool("echo", {})
            assert [tool.name for tool in await client.list_tools()] == ["echo"]  # the session goes on

    assert not isinstance(caught.value, OAuthError)
    assert "this origin may not call tools" in caught.value.message
    assert auth.tokens is held  # the token was kept: a policy refusal says nothing about it
    assert servers.auth.count("GET", "/authorize") == 1 and servers.auth.count("POST", "/token") == 1
    calls = [hit for hit in servers.mcp.hits if hit.method == "POST" and b'"tools/call"' in hit.body]
    assert len(calls) == 1  # not retried
    assert_token_stayed_home(servers)


async def test_our_servers_origin_refusal_reaches_the_caller_and_starts_no_oauth() -> None:
    """Our real endpoint refuses a foreign Origin with 403 before it looks at tokens."""
    async with asyncio.timeout(30), AuthorizationServer() as auth_server:
        sock = listening_socket("127.0.0.1", 0)
        resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        verifier = JwtVerifier(issuer=auth_server.issuer, audience=resource, jwks_uri=auth_server.jwks_uri)
        protection = ResourceServer(resource, [auth_server.issuer], verifier=verifier, required_scopes={"mcp:tools"})
        app = McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=protection), bind_host="127.0.0.1")
        http = await McpHttpServer.on_socket(app, sock)
        try:
            auth = OAuth(OAuthSettings(), user_agent=HeadlessUserAgent(REDIRECT))
            client = StreamableHttpClient(resource, {"origin": EVIL}, auth=auth)
            with pytest.raises(McpError) as caught:
                async with client:
                    pass
            await auth.aclose()
        finally:
            await http.close(1.0)
            await verifier.aclose()

    assert not isinstance(caught.value, OAuthError), caught.value
    assert "Origin is not allowed" in caught.value.message
    assert auth_server.requests == []  # no discovery, no authorization
    assert auth.tokens is None
