"""The OAuth proxy's state in Redis (``RedisProxyStore``, a real redis-server): a sign-in started
on one worker finishes on another (the IdP's callback and the token request reach a second
``AuthProxy`` sharing only Redis and the key rings), and the store's atomic steps hold under
concurrency (one ``take`` wins; ``swap`` returns what it replaced)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import socket
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from fixtures.auth_proxy import REDIRECT, Browser, proxied_endpoint, walk_to_code
from fixtures.messages import initialize_message
from fixtures.redis_server import RedisServer
from mcp_sse_server.auth.proxy import AuthProxy, RedisProxyStore, Sealer, SigningKeys, Upstream

redis_asyncio = pytest.importorskip("redis.asyncio")


@pytest.fixture
async def store(redis_server: RedisServer) -> AsyncIterator[RedisProxyStore]:
    client = redis_asyncio.Redis.from_url(redis_server.url)
    prefix = f"mcp:auth:{secrets.token_hex(4)}:"
    try:
        yield RedisProxyStore(client, prefix)
    finally:
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_the_store_takes_once_and_swaps(store: RedisProxyStore) -> None:
    await store.put("code:x", b"one", 60)
    taken = await asyncio.gather(*(store.take("code:x") for _ in range(8)))
    assert sorted(taken, key=lambda v: v is None) == [b"one"] + [None] * 7
    assert await store.swap("rt:y", b"a", 60) is None
    assert await store.swap("rt:y", b"b", 60) == b"a"
    assert await store.get("rt:y") == b"b"
    await store.delete("rt:y")
    assert await store.get("rt:y") is None


class _Split(httpx.AsyncBaseTransport):
    """A browser's network where ``paths`` of the proxy's origin reach worker B (in process)."""

    def __init__(self, origin: str, paths: set[str], worker: Any) -> None:
        self._origin, self._paths = origin, paths
        self._b = httpx.ASGITransport(app=worker)
        self._net = httpx.AsyncHTTPTransport()
        self.hits: list[str] = []  # what worker B served

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        here = f"{request.url.scheme}://{request.url.netloc.decode()}"
        if here == self._origin and request.url.path in self._paths:
            self.hits.append(request.url.path)
            return await self._b.handle_async_request(request)
        return await self._net.handle_async_request(request)


async def test_a_sign_in_started_on_one_worker_finishes_on_another(store: RedisProxyStore) -> None:
    keys, sealer = SigningKeys.generate(), Sealer.generate()
    async with proxied_endpoint(store=store, keys=keys, sealer=sealer) as proxied:
        a = proxied.proxy
        b = AuthProxy(
            issuer=a.issuer,
            resource=a.resource,
            upstream=a.upstream,
            scopes=a.scopes,
            store=store,
            keys=keys,
            sealer=sealer,
        )

        async def nothing_else(scope: Any, receive: Any, send: Any) -> None:
            raise AssertionError(f"worker B got {scope['path']}")

        transport = _Split(proxied.issuer, {"/oauth/callback", "/oauth/token"}, b.wrap(nothing_else))
        async with httpx.AsyncClient(transport=transport, timeout=30) as http:
            registered = await http.post(
                a.issuer + "/oauth/register",
                json={"redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "refresh_token"]},
            )
            client_id = registered.json()["client_id"]
            back, verifier = await walk_to_code(Browser(http), a.issuer, client_id, resource=a.resource)
            assert back["state"] == "s" and "code" in back, back
            answer = await http.post(
                a.issuer + "/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": client_id,
                    "code": back["code"],
                    "code_verifier": verifier,
                    "redirect_uri": REDIRECT,
                },
            )
            assert answer.status_code == 200, answer.text
            # The token minted by worker B is taken by worker A's resource server (shared keys).
            initialize = initialize_message()
            reply = await http.post(
                a.resource,
                json=initialize,
                headers={
                    "authorization": f"Bearer {answer.json()['access_token']}",
                    "accept": "application/json, text/event-stream",
                },
            )
            assert reply.status_code == 200
        await b.aclose()
    assert transport.hits == ["/oauth/callback", "/oauth/token"]


def offline_upstream() -> Upstream:
    return Upstream(
        issuer="https://idp.example",
        client_id="c",
        client_secret="s",
        authorization_endpoint="https://idp.example/authorize",
        token_endpoint="https://idp.example/token",
    )


async def test_a_shared_store_needs_shared_keys(store: RedisProxyStore) -> None:
    with pytest.raises(ValueError, match="shared keys"):
        AuthProxy(
            issuer="https://mcp.example", resource="https://mcp.example/mcp", upstream=offline_upstream(), store=store
        )


async def test_redis_out_of_reach_is_503_not_500() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    client = redis_asyncio.Redis(port=port, socket_connect_timeout=1)
    proxy = AuthProxy(
        issuer="https://mcp.example",
        resource="https://mcp.example/mcp",
        upstream=offline_upstream(),
        store=RedisProxyStore(client),
        keys=SigningKeys.generate(),
        sealer=Sealer.generate(),
    )

    async def nothing(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not the proxy's")

    transport = httpx.ASGITransport(app=proxy.wrap(nothing))
    async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example") as http:
        registered = await http.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
        redeemed = await http.post(
            "/oauth/token", data={"grant_type": "authorization_code", "client_id": "x", "code": "y"}
        )
    await client.aclose()
    assert registered.status_code == 503 and registered.headers["retry-after"] == "1"
    assert redeemed.status_code == 503


async def test_two_workers_racing_on_one_code_or_one_refresh_token(store: RedisProxyStore) -> None:
    """Worker A (served) and worker B (another ``AuthProxy`` on the same Redis and keys) get the
    same code at once: one redemption wins and the other revokes the grant; then, on a fresh
    grant, the same refresh token at once on both: the same answer twice (the grace window), and
    replayed on B after the window: the family is revoked on both."""
    offset = [0.0]
    keys, sealer = SigningKeys.generate(), Sealer.generate()

    def clock() -> float:
        return time.time() + offset[0]

    async with proxied_endpoint(store=store, keys=keys, sealer=sealer, clock=clock) as proxied:
        a = proxied.proxy
        shared: dict[str, Any] = {"store": store, "keys": keys, "sealer": sealer, "clock": clock}
        b = AuthProxy(issuer=a.issuer, resource=a.resource, upstream=a.upstream, scopes=a.scopes, **shared)

        async def nothing(scope: Any, receive: Any, send: Any) -> None:
            raise AssertionError(scope["path"])

        async with (
            httpx.AsyncClient(timeout=30) as to_a,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=b.wrap(nothing)), base_url=a.issuer) as to_b,
        ):
            registered = await to_a.post(
                a.issuer + "/oauth/register",
                json={"redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "refresh_token"]},
            )
            client_id = registered.json()["client_id"]

            async def code() -> tuple[str, str]:
                verifier = secrets.token_urlsafe(48)
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
                query = {
                    "response_type": "code",
                    "client_id": client_id,
                    "redirect_uri": REDIRECT,
                    "code_challenge": challenge.decode(),
                    "code_challenge_method": "S256",
                }
                browser = Browser()
                back = await browser.walk(a.issuer + "/oauth/authorize?" + urlencode(query), REDIRECT)
                await browser.aclose()
                return back["code"], verifier

            def form(code: str, verifier: str) -> dict[str, str]:
                return {
                    "grant_type": "authorization_code",
                    "client_id": client_id,
                    "code": code,
                    "code_verifier": verifier,
                    "redirect_uri": REDIRECT,
                }

            one, verifier = await code()
            raced = await asyncio.gather(
                to_a.post(a.issuer + "/oauth/token", data=form(one, verifier)),
                to_b.post("/oauth/token", data=form(one, verifier)),
            )
            assert sorted(r.status_code for r in raced) == [200, 400]
            won = next(r for r in raced if r.status_code == 200).json()
            revoked = await to_a.post(
                a.issuer + "/oauth/token",
                data={"grant_type": "refresh_token", "client_id": client_id, "refresh_token": won["refresh_token"]},
            )
            assert revoked.status_code == 400  # the losing redemption revoked the grant, on A too

            two, verifier = await code()
            answer = (await to_b.post("/oauth/token", data=form(two, verifier))).json()
            refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": answer["refresh_token"]}
            both = await asyncio.gather(
                to_a.post(a.issuer + "/oauth/token", data=refresh), to_b.post("/oauth/token", data=refresh)
            )
            assert [r.status_code for r in both] == [200, 200]
            assert both[0].json() == both[1].json()  # one rotation; the other got the same answer
            offset[0] = 31.0
            replayed = await to_b.post("/oauth/token", data=refresh)
            assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
            newest = dict(refresh, refresh_token=both[0].json()["refresh_token"])
            assert (await to_a.post(a.issuer + "/oauth/token", data=newest)).status_code == 400
        await b.aclose()
