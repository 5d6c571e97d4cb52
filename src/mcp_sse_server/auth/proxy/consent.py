"""The user's side of a sign-in, before the IdP:

- ``GET /oauth/authorize``: the client and its ``redirect_uri`` are checked before anything can
  redirect (a failure there is an HTML 400 page, never a redirect); then ``response_type=code``,
  an S256 ``code_challenge`` (``plain`` or none: ``invalid_request``, a PKCE downgrade),
  ``resource`` = this resource, scopes among ours. A transaction is stored (sealed, 10 min) and a
  consent page shown: the client's name marked unverified, the redirect's host, the scopes, the
  IdP. Its form carries a CSRF token stored in the transaction and double-submitted in a cookie
  set with the page; CSP ``frame-ancestors 'none'``.
- ``POST /oauth/consent``: a form whose transaction, CSRF field and cookie all agree (else 403).
  Deny: ``access_denied`` to the client. Approve: the transaction is marked consented, a binding
  cookie (a MAC of the transaction id) is set in this browser, and the user goes to the IdP
  (``upstream.py``), with our own PKCE, nonce and ``state`` = the transaction id.
"""

from __future__ import annotations

import hmac
import html
import secrets
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from . import asgi, redirects
from .registration import Registration
from .state import ProxyState, s256

__all__ = ["Consent"]

_TX_TTL: Final = 600.0


class Consent:
    """The authorize and consent endpoints over ``state``; ``clients`` finds the client."""

    __slots__ = ("clients", "state")

    def __init__(self, state: ProxyState, clients: Registration) -> None:
        self.state = state
        self.clients = clients

    async def authorize(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``GET /oauth/authorize``."""
        state = self.state
        params = asgi.query(scope)
        client_id = params.get("client_id", "")
        client, problem = await self.clients.client_of(client_id)
        if client is None:
            await asgi.page(send, 400, "Unknown client", problem)
            return
        redirect_uri = params.get("redirect_uri")
        if redirect_uri is None and len(client["redirect_uris"]) == 1:
            redirect_uri = client["redirect_uris"][0]
        if redirect_uri is None or not redirects.matches(
            redirect_uri, client["redirect_uris"], strict=state.strict_redirects
        ):
            # Never a redirect: the URI is not known to be the client's.
            await asgi.page(
                send, 400, "Invalid redirect URI", "The redirect URI is not one this application registered."
            )
            return
        client_state = params.get("state")

        async def refuse(error: str, description: str) -> None:
            await state.to_client(send, redirect_uri, {"error": error, "error_description": description}, client_state)

        if params.get("response_type") != "code":
            await refuse("unsupported_response_type", "response_type must be code")
            return
        challenge = params.get("code_challenge", "")
        if params.get("code_challenge_method") != "S256" or not 43 <= len(challenge) <= 128:
            await refuse("invalid_request", "PKCE with code_challenge_method S256 is required")
            return
        resource = params.get("resource", state.resource)
        if resource != state.resource:
            await refuse("invalid_target", "resource must be this server's MCP endpoint")
            return
        asked = params.get("scope", "").split()
        unknown = [s for s in asked if s not in state.scopes and s != "offline_access"]
        if unknown:
            await refuse("invalid_scope", f"unknown scope {unknown[0]}")
            return
        granted = [s for s in asked if s in state.scopes] or list(state.scopes)
        txn = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        await state.save(
            f"tx:{txn}",
            {
                "client_id": client_id,
                "redirect_uri": redirect_uri,
                "state": client_state,
                "challenge": challenge,
                "jkt": params.get("dpop_jkt"),  # RFC 9449 10: the code bound to this key
                "resource": resource,
                "scopes": granted,
                "csrf": csrf,
                "verifier": secrets.token_urlsafe(48),
                "nonce": secrets.token_urlsafe(24),
                "consented": False,
            },
            _TX_TTL,
        )
        await self._page(send, txn, csrf, client, redirect_uri, granted)

    async def _page(
        self, send: asgi.Send, txn: str, csrf: str, client: Mapping[str, Any], redirect_uri: str, scopes: list[str]
    ) -> None:
        e = html.escape
        host = urlsplit(redirect_uri).netloc or redirect_uri
        name = client.get("client_name") or client["client_id"]
        if client.get("document"):
            name = f"{name} (described by {urlsplit(client['client_id']).netloc})"
        loopback = urlsplit(redirect_uri).hostname in ("127.0.0.1", "::1", "localhost")
        warning = (
            "<p><strong>It sends you back to this computer:</strong> any program here could be it.</p>"
            if loopback
            else ""
        )
        unverified = "" if client.get("document") else " (name not verified)"
        body = (
            f"<p><b>{e(name)}</b>{unverified} asks to use this server on your behalf, "
            f"with the scopes <b>{e(' '.join(scopes))}</b>.</p>"
            f"<p>After you sign in at <b>{e(self.state.upstream.issuer)}</b>, you go back to <b>{e(host)}</b>.</p>"
            f"{warning}"
            f'<form method="post" action="/oauth/consent">'
            f'<input type="hidden" name="txn" value="{e(txn)}">'
            f'<input type="hidden" name="csrf" value="{e(csrf)}">'
            f'<button name="decision" value="approve">Allow</button> '
            f'<button name="decision" value="deny">Deny</button></form>'
        )
        cookie = self.state.cookie(f"mcp_csrf_{txn[:16]}", csrf, 600)
        await asgi.page(send, 200, "Allow access?", body, raw=True, cookies=[cookie])

    async def consent(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``POST /oauth/consent``."""
        state = self.state
        form = await asgi.form(receive)
        txn = form.get("txn", "")
        tx = await state.load(f"tx:{txn}") if txn else None
        cookie = state.cookie_of(scope, f"mcp_csrf_{txn[:16]}") or ""
        sent = form.get("csrf", "")
        if (
            tx is None
            or tx["consented"]
            or not sent
            or not hmac.compare_digest(sent, tx["csrf"])
            or not hmac.compare_digest(cookie, tx["csrf"])
        ):
            await asgi.page(
                send, 403, "Refused", "This consent form is not valid here: start again from the application."
            )
            return
        if form.get("decision") != "approve":
            await state.store.delete(f"tx:{txn}")
            await state.to_client(send, tx["redirect_uri"], {"error": "access_denied"}, tx["state"])
            return
        tx["consented"] = True
        await state.save(f"tx:{txn}", tx, _TX_TTL)
        url = state.upstream.authorize_url(
            callback=state.callback_url, state=txn, challenge=s256(tx["verifier"]), nonce=tx["nonce"]
        )
        binding = state.cookie(f"mcp_bind_{txn[:16]}", state.sealer.mac(txn.encode()), 600)
        await asgi.redirect(send, url, cookies=[binding])
