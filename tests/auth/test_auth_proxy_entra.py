"""The OAuth proxy with Entra ID upstream (``Upstream.entra``). Entra cannot be reached from the
tests: its stand-in is the real oidc-provider serving at Entra's documented issuer shape
``{authority}/{tid}/v2.0``, with Entra's ID token claims (``tid``, ``oid``, ``groups``,
``roles``) and, for the multi-tenant case, Entra's ``{tenantid}`` issuer template and no RFC 9207
``iss`` on redirects. It is a stand-in of the shapes Microsoft documents, not Entra.

Our client signs in through the proxy and calls a tool, which sees ``entra:<tid>:<oid>``; allow
rules on ``group:``, ``role:`` and ``tenant:`` admit and refuse; with ``organizations`` an ID token
whose issuer is not its own ``tid``'s is refused (Entra signs every tenant's tokens with the same
keys, so the issuer is all that ties a token to its tenant)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import parse_qsl

import httpx
import orjson
import pytest

from fixtures.auth_proxy import UPSTREAM_CLIENT, client_signs_in, listening, refusal, serving
from fixtures.oidc_provider import running_oidc_provider
from mcp_sse_server.auth.providers import PRESETS, AllowPolicy
from mcp_sse_server.auth.providers.discovery import fetch_discovery
from mcp_sse_server.auth.proxy import AuthProxy, Upstream
from mcp_sse_server.auth.proxy.upstream import ENTRA_CLAIMS

TID = "72f988bf-86f1-41af-91ab-2d7cd011db47"
OTHER_TID = "f8cdef31-a31e-4b4a-93e4-5f571e91255a"
OID = "00000000-0000-0000-66f3-3332eca7ea81"
OPS = "5b6ef2a6-b8a8-4b2e-8f1c-6e2f0f5bb1a1"  # a group's object id, as Entra's groups claim holds
ANN = {"tid": TID, "oid": OID, "groups": [OPS], "roles": ["Tools.Call"], "name": "Ann"}
CLAIMS = ("tid", "oid", "groups", "roles")


@contextlib.asynccontextmanager
async def entra_proxy(
    allow: tuple[str, ...], *, tenant: str = TID, account: Mapping[str, Any] = ANN
) -> AsyncIterator[AuthProxy]:
    """The proxy in front of the Entra stand-in for ``tenant`` (the tid, or ``organizations``)."""
    sock, issuer = listening()
    multi = tenant == "organizations"
    with running_oidc_provider(
        path=f"/{TID}/v2.0",
        code_clients={UPSTREAM_CLIENT: [issuer + "/oauth/callback"]},
        account=OID,
        account_claims=account,
        id_token_claims=CLAIMS,
        no_iss=multi,
    ) as op:
        authority = op.issuer.removesuffix(f"/{TID}/v2.0")
        document = await asyncio.to_thread(fetch_discovery, PRESETS["oidc"], op.issuer)
        if multi:
            # What Entra's /organizations/v2.0 document says: an issuer template, no iss parameter.
            document = {**document, "issuer": authority + "/{tenantid}/v2.0"}
            document.pop("authorization_response_iss_parameter_supported", None)
        upstream = Upstream.entra(
            document,
            tenant=tenant,
            client_id=UPSTREAM_CLIENT,
            client_secret=op.secrets[UPSTREAM_CLIENT],
            authority=authority,
            scopes=("openid", "profile"),
        )
        proxy = AuthProxy(
            issuer=issuer,
            resource=issuer + "/mcp",
            upstream=upstream,
            idp="entra",
            allow=AllowPolicy(allow, claims=ENTRA_CLAIMS),
        )
        async with serving(proxy, sock):
            yield proxy


async def signed_in_subject(proxy: AuthProxy) -> str:
    """Our OAuth client signs in through ``proxy`` and calls whoami: the subject it sees."""
    _, _, result = await client_signs_in(proxy.resource, "entra")
    seen: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    subject: str = seen["subject"]
    return subject


@pytest.mark.parametrize("rule", [f"group:{OPS}", "role:Tools.Call", f"tenant:{TID}", f"user:{OID}"])
async def test_an_entra_user_signs_in_and_the_tool_sees_tid_and_oid(rule: str) -> None:
    async with entra_proxy((rule,)) as proxy:
        assert await signed_in_subject(proxy) == f"entra:{TID}:{OID}"  # never Entra's pairwise sub


@pytest.mark.parametrize("rule", ["group:other-group", "role:Tools.Admin", f"tenant:{OTHER_TID}", "user:someone"])
async def test_an_entra_user_no_rule_admits_is_refused(rule: str) -> None:
    async with entra_proxy((rule,)) as proxy:
        back = await refusal(proxy)
    assert back["error"] == "access_denied" and "code" not in back


def test_entra_has_no_email_rule() -> None:
    # Entra's email claim is not verified by Entra: a rule on it would admit whoever sets it.
    with pytest.raises(ValueError, match="no domain claim"):
        AllowPolicy(["domain:acme.example"], claims=ENTRA_CLAIMS)


async def test_multi_tenant_checks_each_id_token_against_its_own_tenant() -> None:
    async with entra_proxy((f"tenant:{TID}",), tenant="organizations") as proxy:
        assert proxy.upstream.issuer.endswith("/{tenantid}/v2.0")
        assert await signed_in_subject(proxy) == f"entra:{TID}:{OID}"


async def test_multi_tenant_refuses_a_token_whose_issuer_is_another_tenants() -> None:
    # The ID token is issued at .../{TID}/v2.0 but says tid OTHER_TID: whatever the allow rules, refused.
    async with entra_proxy(
        (f"tenant:{OTHER_TID}",), tenant="organizations", account={**ANN, "tid": OTHER_TID}
    ) as proxy:
        back = await refusal(proxy)
    assert back["error"] == "server_error" and "code" not in back


def test_entra_checks_the_documents_issuer() -> None:
    document = {
        "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0",
        "authorization_endpoint": "https://login.microsoftonline.com/organizations/oauth2/v2.0/authorize",
        "token_endpoint": "https://login.microsoftonline.com/organizations/oauth2/v2.0/token",
    }
    upstream = Upstream.entra(document, tenant="common", client_id="app", client_secret="s")
    assert upstream.tenant_issuer == document["issuer"] and upstream.subject_claims == ("tid", "oid")
    with pytest.raises(ValueError, match="names the issuer"):
        Upstream.entra(document, tenant=TID, client_id="app", client_secret="s")  # a template for one tenant


async def test_entra_token_requests_name_the_scopes() -> None:
    """Entra refuses a code exchange that names no scope (AADSTS28003, per Microsoft's error
    reference): a stand-in token endpoint that refuses the same way, then answers."""
    seen: list[dict[str, str]] = []

    async def token_endpoint(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form = dict(parse_qsl(body.decode()))
        seen.append(form)
        answer: dict[str, Any] = {"access_token": "at", "token_type": "Bearer", "expires_in": 3600}
        status = 200
        if not form.get("scope"):
            status, answer = 400, {"error": "invalid_request", "error_description": "AADSTS28003"}
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})

    document = {
        "issuer": f"https://login.microsoftonline.com/{TID}/v2.0",
        "authorization_endpoint": f"https://login.microsoftonline.com/{TID}/oauth2/v2.0/authorize",
        "token_endpoint": f"https://login.microsoftonline.com/{TID}/oauth2/v2.0/token",
    }
    upstream = Upstream.entra(document, tenant=TID, client_id="app", client_secret="s")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=token_endpoint)) as http:
        answer = await upstream.exchange(http, code="c", callback="https://mcp.example/oauth/callback", verifier="v")
        await upstream.refresh(http, "rt")
    assert answer["access_token"] == "at"
    assert [form["scope"] for form in seen] == ["openid profile offline_access"] * 2
