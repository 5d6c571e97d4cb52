"""The official conformance suite's authorization-server scenarios (``conformance-next``
0.2.0-alpha.12, its ``authorization`` command) against our OAuth proxy in front of oidc-provider:
``authorization-server-metadata-endpoint`` and ``authorization-code-grant``. The suite prints
an authorization URL and waits for its loopback callback; ``Browser`` plays the user (our consent
page, the IdP's scripted sign-in) and delivers the redirect to the suite's listener."""

from __future__ import annotations

import asyncio
import os
import re
import socket

import httpx
import pytest

from fixtures.auth_proxy import Browser, proxied_endpoint
from fixtures.node import require_node


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def conformance_suite() -> tuple[str, str]:
    """The node binary and conformance-next's entry point (skips when not installed)."""
    node, modules = require_node()
    suite = os.path.join(modules, "conformance-next", "dist", "index.js")
    if not os.path.isfile(suite):
        pytest.skip("conformance-next is not installed (tests/node/package.json)")
    return node, suite


async def test_the_conformance_authorization_scenarios_pass_against_the_proxy() -> None:
    node, suite = conformance_suite()
    port = free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    delivered: list[int] = []
    async with proxied_endpoint() as proxied:
        async with httpx.AsyncClient() as http:
            registered = await http.post(proxied.issuer + "/oauth/register", json={"redirect_uris": [redirect]})
        client_id = registered.json()["client_id"]
        process = await asyncio.create_subprocess_exec(
            node,
            suite,
            "authorization",
            "--url",
            proxied.issuer,
            "--client-id",
            client_id,
            "--resource",
            proxied.resource,
            "-p",
            str(port),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert process.stdout is not None
        output = []
        async with asyncio.timeout(120):
            while line := (await process.stdout.readline()).decode():
                output.append(line)
                if line.startswith(proxied.issuer + "/oauth/authorize?"):
                    browser = Browser()
                    answer = await browser.walk(line.strip(), redirect)
                    await browser.aclose()
                    async with httpx.AsyncClient() as http:
                        delivered.append((await http.get(redirect, params=answer)).status_code)
            await process.wait()
    log = "".join(output)
    assert delivered == [200], log
    assert process.returncode == 0, log
    for scenario in ("authorization-server-metadata-endpoint", "authorization-code-grant"):
        assert re.search(rf"✓ {scenario}: [1-9]\d* passed, 0 failed", log), log
    assert re.search(r"Total: \d+ passed, 0 failed", log), log
