"""The user agents, over real sockets on loopback: the headless one against a tiny authorization
endpoint (uvicorn, in the test's loop), the browser one with its "browser" replaced by a
function that makes the redirect's GET itself, and the callback one."""

from __future__ import annotations

import asyncio
import socket
import webbrowser
from collections.abc import AsyncIterator, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp_sse_server.client.oauth.errors import OAuthError
from mcp_sse_server.client.oauth.user_agent import (
    BrowserUserAgent,
    CallbackUserAgent,
    HeadlessUserAgent,
    UserAgent,
)

from ..asgi_server import serve

REDIRECT = "http://localhost:3000/callback"  # what conformance uses; nothing listens there
ISSUER = "https://as.example/tenant1"


# -- a tiny authorization endpoint ---------------------------------------------------------


def _back(request: Request, **extra: str) -> str:
    params = {"code": "test-auth-code", "state": request.query_params["state"], "iss": ISSUER, **extra}
    return f"{request.query_params['redirect_uri']}?{urlencode(params)}"


async def authorize(request: Request) -> Response:
    """Approves at once: 302 to the redirect URI with code, state and iss."""
    return RedirectResponse(_back(request), status_code=302)


async def login(request: Request) -> Response:
    """A login page that sends the user on to consent (a relative Location), which then authorizes."""
    return RedirectResponse(f"/consent?{request.url.query}", status_code=303)


async def consent(request: Request) -> Response:
    return RedirectResponse(f"{request.url.scheme}://{request.url.netloc}/authorize?{request.url.query}", 307)


async def page(request: Request) -> Response:
    return HTMLResponse("<form>Log in</form>", status_code=200)


async def forbidden(request: Request) -> Response:
    return Response("no", status_code=400)


async def redirect_without_location(request: Request) -> Response:
    return Response(status_code=302)


async def foreign(request: Request) -> Response:
    return RedirectResponse("https://idp.elsewhere.example/login?code=leaked", status_code=302)


async def lookalike(request: Request) -> Response:
    """Redirects to the redirect URI's string plus more path: not the redirect URI."""
    return RedirectResponse(f"{request.query_params['redirect_uri']}-evil?code=leaked", status_code=302)


async def loop(request: Request) -> Response:
    hop = int(request.query_params.get("hop", "0"))
    return RedirectResponse(f"/loop?hop={hop + 1}&{request.url.query}", status_code=302)


async def odd_query(request: Request) -> Response:
    location = f"{request.query_params['redirect_uri']}?code=first&code=second&state=&iss={ISSUER}&x=a%20b"
    return RedirectResponse(location, status_code=302)


APP = Starlette(
    routes=[
        Route("/authorize", authorize),
        Route("/login", login),
        Route("/consent", consent),
        Route("/page", page),
        Route("/bad", forbidden),
        Route("/nolocation", redirect_without_location),
        Route("/foreign", foreign),
        Route("/lookalike", lookalike),
        Route("/loop", loop),
        Route("/odd", odd_query),
    ]
)


@pytest.fixture
async def endpoint() -> AsyncIterator[str]:
    async with serve(APP) as base:
        yield base


def auth_url(base: str, path: str = "/authorize", redirect_uri: str = REDIRECT, state: str = "st-1") -> str:
    return f"{base}{path}?{urlencode({'response_type': 'code', 'redirect_uri': redirect_uri, 'state': state})}"


# -- HeadlessUserAgent ---------------------------------------------------------------------


async def test_headless_reads_the_redirect(endpoint: str) -> None:
    agent = HeadlessUserAgent()
    try:
        assert agent.redirect_uri == REDIRECT
        params = await agent.authorize(auth_url(endpoint))
    finally:
        await agent.aclose()
    assert params == {"code": "test-auth-code", "state": "st-1", "iss": ISSUER}


async def test_headless_follows_same_origin_hops(endpoint: str) -> None:
    agent = HeadlessUserAgent()
    try:
        params = await agent.authorize(auth_url(endpoint, "/login"))  # login -> consent -> authorize -> back
    finally:
        await agent.aclose()
    assert params["code"] == "test-auth-code" and params["state"] == "st-1"


async def test_headless_first_value_wins_and_blanks_stay(endpoint: str) -> None:
    async with httpx.AsyncClient() as http:
        agent = HeadlessUserAgent(http=http)
        params = await agent.authorize(auth_url(endpoint, "/odd"))
        await agent.aclose()
        assert not http.is_closed  # a client it was given is the caller's to close
    assert params == {"code": "first", "state": "", "iss": ISSUER, "x": "a b"}


@pytest.mark.parametrize("path, status", [("/page", 200), ("/bad", 400), ("/nolocation", 302)])
async def test_headless_refuses_an_answer_that_is_not_a_redirect(endpoint: str, path: str, status: int) -> None:
    agent = HeadlessUserAgent()
    try:
        with pytest.raises(OAuthError, match=f"HTTP {status}"):
            await agent.authorize(auth_url(endpoint, path))
    finally:
        await agent.aclose()


@pytest.mark.parametrize("path", ["/foreign", "/lookalike"])
async def test_headless_refuses_a_redirect_elsewhere(endpoint: str, path: str) -> None:
    agent = HeadlessUserAgent()
    try:
        with pytest.raises(OAuthError, match="another site") as caught:
            await agent.authorize(auth_url(endpoint, path))
    finally:
        await agent.aclose()
    assert "leaked" not in str(caught.value)


async def test_headless_gives_up_after_max_hops(endpoint: str) -> None:
    agent = HeadlessUserAgent(max_hops=3)
    try:
        with pytest.raises(OAuthError, match="more than 3 times"):
            await agent.authorize(auth_url(endpoint, "/loop"))
    finally:
        await agent.aclose()
    # Zero hops: only a direct redirect back is accepted.
    agent = HeadlessUserAgent(max_hops=0)
    try:
        assert (await agent.authorize(auth_url(endpoint)))["code"] == "test-auth-code"
        with pytest.raises(OAuthError, match="more than 0 times"):
            await agent.authorize(auth_url(endpoint, "/login"))
    finally:
        await agent.aclose()


async def test_headless_unreachable_endpoint() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        agent = HeadlessUserAgent()
        try:
            with pytest.raises(OAuthError, match="could not reach the authorization endpoint"):
                await agent.authorize(f"http://127.0.0.1:{port}/authorize?state=s")
        finally:
            await agent.aclose()


@pytest.mark.parametrize("url", ["file:///etc/passwd", "javascript:alert(1)", "/authorize?x=1", "ftp://as.example/"])
async def test_only_http_urls_are_opened(url: str) -> None:
    opened: list[str] = []
    agents: list[UserAgent] = [
        HeadlessUserAgent(),
        BrowserUserAgent(open_browser=opened.append, announce=opened.append),
        CallbackUserAgent(REDIRECT, lambda u: _recorded(opened, u)),
    ]
    for agent in agents:
        try:
            with pytest.raises(OAuthError, match="not an http"):
                await agent.authorize(url)
        finally:
            await agent.aclose()
    assert opened == []


async def _recorded(opened: list[str], url: str) -> Mapping[str, str]:
    opened.append(url)
    return {}


async def test_headless_bounds_a_slow_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sse_server.client.oauth import user_agent

    release = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        await release.wait()  # accepts, never answers
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(user_agent, "_REQUEST_TIMEOUT", 0.2)
    agent = HeadlessUserAgent()  # its own client, with the shortened timeout
    try:
        with pytest.raises(OAuthError) as caught:
            await agent.authorize(f"http://127.0.0.1:{port}/authorize?state=s")
        assert "ReadTimeout" in str(caught.value) or "in time" in str(caught.value)
    finally:
        await agent.aclose()
        release.set()
        await asyncio.gather(*handlers, return_exceptions=True)
        server.close()
        await server.wait_closed()


def test_headless_bad_arguments() -> None:
    with pytest.raises(ValueError, match="redirect_uri"):
        HeadlessUserAgent("/callback")
    with pytest.raises(ValueError, match="max_hops"):
        HeadlessUserAgent(max_hops=-1)


# -- BrowserUserAgent ----------------------------------------------------------------------


class FakeBrowser:
    """Stands in for the system browser and an authorization server that approves at once: asked
    to open the authorization URL, it GETs the given paths on the origin of the URL's
    ``redirect_uri`` in a task, with the URL's state, as the redirect would make a browser do."""

    def __init__(self, *requests: tuple[str, dict[str, str]]) -> None:
        self.requests = requests
        self.opened: list[str] = []
        self.responses: list[httpx.Response] = []
        self.task: asyncio.Task[None] | None = None

    def __call__(self, url: str) -> None:
        self.opened.append(url)
        self.task = asyncio.get_running_loop().create_task(self._visit(dict(parse_qsl(urlsplit(url).query))))

    async def _visit(self, params: dict[str, str]) -> None:
        back = urlsplit(params["redirect_uri"])
        async with httpx.AsyncClient(timeout=5.0) as http:
            for path, query in self.requests:
                values = {name: params["state"] if value == "$state" else value for name, value in query.items()}
                self.responses.append(await http.get(f"{back.scheme}://{back.netloc}{path}?{urlencode(values)}"))

    async def finished(self) -> list[int]:
        assert self.task is not None
        await self.task
        return [response.status_code for response in self.responses]


def browser_url(agent: UserAgent, state: str, base: str = "https://as.example/authorize") -> str:
    return f"{base}?{urlencode({'response_type': 'code', 'state': state, 'redirect_uri': agent.redirect_uri})}"


CALLBACK = ("/callback", {"code": "c-123", "state": "$state", "iss": ISSUER})


async def test_browser_catches_the_redirect() -> None:
    browser = FakeBrowser(CALLBACK)
    agent = BrowserUserAgent(open_browser=browser, timeout=10.0, announce=lambda url: None)
    try:
        uri = agent.redirect_uri
        parts = urlsplit(uri)
        assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/callback"
        assert parts.port and parts.port > 0
        assert agent.redirect_uri == uri  # bound once
        url = browser_url(agent, "st-9")
        params = await agent.authorize(url)
    finally:
        await agent.aclose()
    assert params == {"code": "c-123", "state": "st-9", "iss": ISSUER}
    assert browser.opened == [url]
    assert await browser.finished() == [200]
    (response,) = browser.responses
    assert response.headers["content-type"].startswith("text/html")
    assert "Authorization complete, you can close this window" in response.text
    assert "c-123" not in response.text


async def run_browser(browser: FakeBrowser, state: str) -> Mapping[str, str]:
    agent = BrowserUserAgent(open_browser=browser, timeout=10.0, announce=lambda url: None)
    try:
        return await agent.authorize(browser_url(agent, state))
    finally:
        await agent.aclose()


async def test_browser_serves_404_and_keeps_waiting() -> None:
    browser = FakeBrowser(("/favicon.ico", {}), ("/callbackx", {"code": "wrong", "state": "$state"}), CALLBACK)
    params = await run_browser(browser, "st-2")
    assert params["code"] == "c-123"
    assert await browser.finished() == [404, 404, 200]


async def test_browser_ignores_a_callback_with_another_state() -> None:
    browser = FakeBrowser(("/callback", {"code": "forged", "state": "not-it"}), ("/callback", {"code": "x"}), CALLBACK)
    params = await run_browser(browser, "st-3")
    assert params["code"] == "c-123"
    assert await browser.finished() == [400, 400, 200]


async def test_browser_returns_an_error_redirect() -> None:
    browser = FakeBrowser(
        ("/callback", {"error": "access_denied", "error_description": "<b>no</b>", "state": "$state"})
    )
    params = await run_browser(browser, "st-4")
    assert params == {"error": "access_denied", "error_description": "<b>no</b>", "state": "st-4"}
    assert await browser.finished() == [200]
    text = browser.responses[0].text
    assert "did not complete" in text
    assert "<b>no</b>" not in text and "access_denied" not in text  # never shown (CL-21)


async def test_browser_keeps_its_port_for_the_next_authorization() -> None:
    browsers: list[FakeBrowser] = []

    def open_browser(url: str) -> None:
        browsers.append(FakeBrowser(CALLBACK))
        browsers[-1](url)

    agent = BrowserUserAgent(open_browser=open_browser, timeout=10.0, announce=lambda url: None)
    try:
        uri = agent.redirect_uri
        for state in ("first", "second"):
            params = await agent.authorize(browser_url(agent, state))
            assert params["state"] == state
            assert agent.redirect_uri == uri
    finally:
        await agent.aclose()
    assert [await browser.finished() for browser in browsers] == [[200], [200]]


async def test_browser_times_out() -> None:
    opened: list[str] = []
    agent = BrowserUserAgent(timeout=0.2, open_browser=opened.append, announce=lambda url: None)
    try:
        with pytest.raises(OAuthError, match="no authorization arrived") as caught:
            await agent.authorize("https://as.example/authorize?state=s")
        assert agent.redirect_uri in str(caught.value)
        assert opened == ["https://as.example/authorize?state=s"]
    finally:
        await agent.aclose()


async def test_browser_awaits_an_async_opener_and_announces() -> None:
    announced: list[str] = []

    async def open_browser(url: str) -> None:
        params = dict(parse_qsl(urlsplit(url).query))
        async with httpx.AsyncClient(timeout=5.0) as http:
            # Sent from inside the opener: the listener already serves while the browser opens.
            response = await http.get(f"{params['redirect_uri']}?code=c-async&state={params['state']}")
            assert response.status_code == 200

    agent = BrowserUserAgent(open_browser=open_browser, timeout=10.0, announce=announced.append)
    try:
        url = browser_url(agent, "s-5")
        params = await agent.authorize(url)
    finally:
        await agent.aclose()
    assert params["code"] == "c-async"
    assert announced == [url]


async def test_browser_default_opener_and_announcement(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = BrowserUserAgent(timeout=10.0)
    uri = agent.redirect_uri
    opened: list[str] = []

    def fake_open(url: str) -> bool:
        # webbrowser.open runs in a worker thread, so a blocking GET here is what a browser does.
        opened.append(url)
        httpx.get(f"{uri}?code=c-default&state=s-6", timeout=5.0)
        return True

    monkeypatch.setattr(webbrowser, "open", fake_open)
    try:
        params = await agent.authorize("https://as.example/authorize?state=s-6")
    finally:
        await agent.aclose()
    assert params["code"] == "c-default"
    assert opened == ["https://as.example/authorize?state=s-6"]
    assert "Open this URL to authorize: https://as.example/authorize?state=s-6" in capsys.readouterr().err


async def test_browser_without_a_browser_still_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_browser(url: str) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "open", no_browser)
    announced: list[str] = []
    agent = BrowserUserAgent(timeout=0.3, announce=announced.append)
    try:
        with pytest.raises(OAuthError, match="no authorization arrived"):
            await agent.authorize("https://as.example/authorize?state=s")
    finally:
        await agent.aclose()
    assert announced == ["https://as.example/authorize?state=s"]


async def test_browser_answers_other_methods_and_garbage() -> None:
    async def visit(uri: str) -> list[bytes]:
        parts = urlsplit(uri)
        answers = []
        for raw in (b"POST /callback?code=x&state=s-7 HTTP/1.1\r\nHost: x\r\n\r\n", b"garbage\r\n\r\n"):
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
            writer.write(raw)
            await writer.drain()
            answers.append(await reader.read())
            writer.close()
        async with httpx.AsyncClient() as http:
            await http.get(f"{uri}?code=c-ok&state=s-7")
        return answers

    results: list[asyncio.Task[list[bytes]]] = []

    def open_browser(url: str) -> None:
        uri = dict(parse_qsl(urlsplit(url).query))["redirect_uri"]
        results.append(asyncio.get_running_loop().create_task(visit(uri)))

    agent = BrowserUserAgent(open_browser=open_browser, timeout=10.0, announce=lambda url: None)
    try:
        params = await agent.authorize(browser_url(agent, "s-7"))
    finally:
        await agent.aclose()
    assert params["code"] == "c-ok"
    post, garbage = await results[0]
    assert post.startswith(b"HTTP/1.1 405 ") and b"Allow: GET" in post
    assert garbage.startswith(b"HTTP/1.1 400 ")


async def test_browser_one_authorization_at_a_time() -> None:
    agent = BrowserUserAgent(open_browser=lambda url: None, timeout=10.0, announce=lambda url: None)
    try:
        first = asyncio.create_task(agent.authorize(browser_url(agent, "one")))
        await asyncio.sleep(0.05)
        with pytest.raises(RuntimeError, match="already waiting"):
            await agent.authorize(browser_url(agent, "two"))
        async with httpx.AsyncClient(timeout=5.0) as http:
            await http.get(f"{agent.redirect_uri}?code=c&state=one")
        assert (await first)["state"] == "one"
    finally:
        await agent.aclose()


async def test_browser_listens_from_the_first_read_until_closed() -> None:
    agent = BrowserUserAgent()
    parts = urlsplit(agent.redirect_uri)
    _, writer = await asyncio.open_connection(parts.hostname, parts.port)  # accepted by the backlog
    writer.close()
    await agent.aclose()
    with pytest.raises(OSError):
        await asyncio.open_connection(parts.hostname, parts.port)
    with pytest.raises(RuntimeError):
        await agent.authorize("https://as.example/authorize")


async def test_browser_localhost_and_ipv6_redirect_uris() -> None:
    agent = BrowserUserAgent(host="localhost", path="/cb")
    try:
        assert agent.redirect_uri.startswith("http://localhost:") and agent.redirect_uri.endswith("/cb")
    finally:
        await agent.aclose()
    if socket.has_ipv6:
        agent = BrowserUserAgent(host="::1")
        try:
            try:
                uri = agent.redirect_uri
            except OAuthError:
                pytest.skip("no IPv6 loopback here")
            assert uri.startswith("http://[::1]:") and uri.endswith("/callback")
        finally:
            await agent.aclose()


def test_browser_bad_arguments() -> None:
    with pytest.raises(ValueError, match="loopback"):
        BrowserUserAgent(host="0.0.0.0")
    with pytest.raises(ValueError, match="loopback"):
        BrowserUserAgent(host="example.com")
    with pytest.raises(ValueError, match="path"):
        BrowserUserAgent(path="callback")
    with pytest.raises(ValueError, match="path"):
        BrowserUserAgent(path="/callback?x=1")
    with pytest.raises(ValueError, match="timeout"):
        BrowserUserAgent(timeout=0)
    with pytest.raises(ValueError, match="port"):
        BrowserUserAgent(port=70000)


async def test_browser_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        agent = BrowserUserAgent(port=taken.getsockname()[1])
        with pytest.raises(OAuthError, match="cannot listen"):
            _ = agent.redirect_uri
        await agent.aclose()


# -- CallbackUserAgent ---------------------------------------------------------------------


async def test_callback_hands_the_url_to_the_application() -> None:
    seen: list[str] = []

    async def on_authorize(url: str) -> Mapping[str, str]:
        seen.append(url)
        return {"code": "c-app", "state": "s"}

    agent: UserAgent = CallbackUserAgent("https://app.example/oauth/callback", on_authorize)
    assert agent.redirect_uri == "https://app.example/oauth/callback"
    assert await agent.authorize("https://as.example/authorize?state=s") == {"code": "c-app", "state": "s"}
    assert seen == ["https://as.example/authorize?state=s"]
    await agent.aclose()
