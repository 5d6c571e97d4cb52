"""``GET /oauth/callback``, where the IdP sends the user back: the transaction is taken (read and
deleted in one step: a second callback finds nothing); it must have been consented, in this
browser (binding cookie), and the IdP's ``iss`` must be its issuer when it sends one (RFC 9207).
The code is exchanged, the identity read (ID token or userinfo), the preset's allow policy
applied; a grant is stored with the upstream tokens (sealed, never sent to a client) and our
code (single use, 60 s) goes to the client with its ``state`` and ``iss``.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import Final

from . import asgi
from .state import ProxyState, digest
from .upstream import UpstreamError

__all__ = ["Callback"]

logger = logging.getLogger("mcp_sse_server.auth")

_CODE_TTL: Final = 60.0


class Callback:
    """The upstream callback over ``state``."""

    __slots__ = ("state",)

    def __init__(self, state: ProxyState) -> None:
        self.state = state

    async def callback(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``GET /oauth/callback``."""
        state = self.state
        params = asgi.query(scope)
        txn = params.get("state", "")
        tx = await state.take(f"tx:{txn}") if txn else None
        if tx is None:
            await asgi.page(send, 400, "Sign-in expired", "This sign-in is unknown or was already completed.")
            return
        bound = state.cookie_of(scope, f"mcp_bind_{txn[:16]}") or ""
        if not tx["consented"] or not hmac.compare_digest(bound, state.sealer.mac(txn.encode())):
            await asgi.page(send, 403, "Refused", "This sign-in was not started in this browser.")
            return
        upstream = state.upstream
        if ("iss" in params or upstream.iss_parameter) and params.get("iss") != upstream.issuer:
            # A mix-up: this answer comes from another IdP than the one this sign-in went to.
            await asgi.page(send, 400, "Refused", "The identity provider's answer names another issuer.")
            return
        redirect_uri, client_state = tx["redirect_uri"], tx["state"]
        if "error" in params or "code" not in params:
            # Only access_denied passes through; the IdP's own words never reach the client.
            error = "access_denied" if params.get("error") == "access_denied" else "server_error"
            await state.to_client(send, redirect_uri, {"error": error}, client_state)
            return
        http = state.client()
        try:
            tokens = await upstream.exchange(
                http, code=params["code"], callback=state.callback_url, verifier=tx["verifier"]
            )
            claims = await upstream.identity(http, tokens, nonce=tx["nonce"])
        except UpstreamError as error:
            logger.warning("auth proxy: sign-in at %s failed: %s", upstream.issuer, error)
            await state.to_client(
                send, redirect_uri, {"error": "server_error", "error_description": "the sign-in failed"}, client_state
            )
            return
        if not state.allow.admits(claims):
            await state.to_client(
                send,
                redirect_uri,
                {"error": "access_denied", "error_description": "this account is not allowed here"},
                client_state,
            )
            return
        gid = secrets.token_urlsafe(16).replace("_", "-")  # no "_": the refresh token's separator
        now = state.clock()
        held = {
            "access_token": tokens["access_token"],
            "refresh_token": tokens.get("refresh_token"),
            "expires_at": now + float(tokens["expires_in"]) if "expires_in" in tokens else None,
        }
        await state.save(
            f"grant:{gid}",
            {
                "subject": f"{state.idp}:{claims['sub']}",
                "client_id": tx["client_id"],
                "scopes": tx["scopes"],
                "resource": tx["resource"],
                "created": now,
                "upstream": held,
            },
            state.refresh_ttl,
        )
        code = secrets.token_urlsafe(32)
        await state.save(
            f"code:{digest(code)}",
            {
                "client_id": tx["client_id"],
                "redirect_uri": redirect_uri,
                "challenge": tx["challenge"],
                "jkt": tx.get("jkt"),
                "resource": tx["resource"],
                "grant": gid,
            },
            _CODE_TTL,
        )
        await state.to_client(send, redirect_uri, {"code": code}, client_state)
