"""The endpoints that hand out and take back our tokens:

- ``POST /oauth/token``: ``authorization_code``: the code is taken atomically (two concurrent
  redemptions: one wins; a redemption of a used code revokes its grant), then client,
  ``redirect_uri``, ``resource`` and the PKCE verifier (constant-time) are checked.
  ``refresh_token``: rotation (``_refresh``). Answers ``Cache-Control: no-store``. With DPoP on,
  a valid proof binds the tokens to its key.
- ``POST /oauth/revoke``: RFC 7009 on our refresh token: the grant (family) is deleted and the
  upstream refresh token revoked at the IdP when it can.

Our access tokens: ES256 JWTs (``typ at+jwt``, ``kid``), ``iss`` ours, ``aud`` the resource,
``sub`` = ``<idp>:<upstream sub>``, ``client_id``, ``scope``, ``sid`` (the grant), ``jti``,
short-lived.

Refresh tokens ``mrt_<grant>_<secret>``, one record each, rotated with one ``swap``: an active
token yields a new pair and becomes ``rotated`` with the answer stashed (sealed) for a grace
window (a client that lost the answer, or refreshed twice at once, gets the same answer again);
a rotated token used after the window is a replay: the whole grant is revoked.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Mapping
from typing import Any, Final

from . import asgi
from .registration import Registration
from .state import ProxyState, digest, s256
from .upstream import UpstreamError

__all__ = ["TokenEndpoint"]

logger = logging.getLogger("mcp_sse_server.auth")

_USED_TTL: Final = 600.0
_GRACE: Final = 30.0


class TokenEndpoint:
    """The token and revocation endpoints over ``state``; ``clients`` finds the client."""

    __slots__ = ("clients", "state")

    def __init__(self, state: ProxyState, clients: Registration) -> None:
        self.state = state
        self.clients = clients

    async def token(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``POST /oauth/token``."""
        form = await asgi.form(receive)
        try:
            client_id = asgi.client_id(scope, form)
            jkt = await self._proof(scope)
            grant_type = form.get("grant_type")
            if grant_type == "authorization_code":
                answer = await self._redeem(client_id, form, jkt)
            elif grant_type == "refresh_token":
                answer = await self._refresh(client_id, form, jkt)
            else:
                raise asgi.Refusal("unsupported_grant_type", "grant_type: authorization_code or refresh_token")
        except asgi.Refusal as refusal:
            error = {"error": refusal.error, "error_description": refusal.description}
            await asgi.json(send, refusal.status, error, headers=refusal.headers)
            return
        await asgi.json(send, 200, answer)

    async def _proof(self, scope: asgi.Scope) -> str | None:
        """The thumbprint of the key a valid DPoP proof at this endpoint proves (None: no proof,
        or DPoP off); ``Refusal`` for a bad, replayed or nonce-less proof."""
        dpop = self.state.dpop
        if dpop is None:
            return None
        proofs = [value for key, value in scope["headers"] if key == b"dpop"]
        if not proofs:
            return None
        if len(proofs) > 1:
            raise asgi.Refusal("invalid_dpop_proof", "send one DPoP proof")
        from ..dpop import DPoPRefused

        try:
            proof = dpop.check(proofs[0], "POST", self.state.issuer, "/oauth/token", None)
        except DPoPRefused as refused:
            headers = []
            if refused.error == "use_dpop_nonce" and dpop.nonces is not None:
                headers.append((b"dpop-nonce", dpop.nonces.issue().encode()))
            raise asgi.Refusal(refused.error, refused.reason, headers=headers) from None
        if not await dpop.first_use(proof):
            raise asgi.Refusal("invalid_dpop_proof", "the proof was used before")
        return proof.jkt

    async def _redeem(self, client_id: str, form: Mapping[str, str], jkt: str | None) -> dict[str, Any]:
        state = self.state
        code = form.get("code", "")
        if not code:
            raise asgi.Refusal("invalid_request", "code is required")
        code_key = digest(code)
        record = await state.take(f"code:{code_key}")
        if record is None:
            used = await state.store.get(f"used:{code_key}")
            if used is not None:
                # A code redeemed twice was stolen or replayed: the grant it made goes too (RFC 9700).
                await state.store.delete(f"grant:{used.decode()}")
            raise asgi.Refusal("invalid_grant", "the code is unknown, expired or already used")
        await state.store.put(f"used:{code_key}", record["grant"].encode(), _USED_TTL)
        verifier = form.get("code_verifier", "")
        if (
            record["client_id"] != client_id
            or form.get("redirect_uri", record["redirect_uri"]) != record["redirect_uri"]
            or form.get("resource", record["resource"]) != record["resource"]
            or not 43 <= len(verifier) <= 128
            or not hmac.compare_digest(s256(verifier), record["challenge"])
        ):
            await state.store.delete(f"grant:{record['grant']}")
            raise asgi.Refusal("invalid_grant", "the code does not belong to this request (client, redirect, PKCE)")
        if record.get("jkt") is not None and record["jkt"] != jkt:
            await state.store.delete(f"grant:{record['grant']}")
            raise asgi.Refusal("invalid_grant", "the code is bound to another DPoP key (dpop_jkt)")
        grant = await state.load(f"grant:{record['grant']}")
        if grant is None:
            raise asgi.Refusal("invalid_grant", "the grant is gone")
        client, _ = await self.clients.client_of(client_id)
        refresh = client is not None and "refresh_token" in client.get("grant_types", ())
        answer, token_record = self._issue(record["grant"], grant, grant["scopes"], refresh, jkt)
        if token_record is not None:
            await state.save(*token_record)
        return answer

    def _issue(
        self, gid: str, grant: Mapping[str, Any], scopes: list[str], refresh: bool, jkt: str | None
    ) -> tuple[dict[str, Any], tuple[str, dict[str, Any], float] | None]:
        """A token answer for ``grant`` and the record of its new refresh token (None: none),
        bound to the DPoP key ``jkt`` when given."""
        state = self.state
        now = int(state.clock())
        bound = {"cnf": {"jkt": jkt}} if jkt is not None else {}
        access = state.keys.sign(
            {
                **bound,
                "iss": state.issuer,
                "aud": grant["resource"],
                "sub": grant["subject"],
                "client_id": grant["client_id"],
                "scope": " ".join(scopes),
                "iat": now,
                "exp": now + int(state.token_ttl),
                "jti": secrets.token_urlsafe(16),
                "sid": gid,
                "idp": state.idp,
            }
        )
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": int(state.token_ttl),
            "scope": " ".join(scopes),
        }
        if not refresh:
            return answer, None
        token = f"mrt_{gid}_{secrets.token_urlsafe(32)}"
        answer["refresh_token"] = token
        record = {"grant": gid, "state": "active", "scopes": scopes, "jkt": jkt}
        return answer, (f"rt:{digest(token)}", record, state.refresh_ttl)

    async def _refresh(self, client_id: str, form: Mapping[str, str], jkt: str | None) -> dict[str, Any]:
        state = self.state
        token = form.get("refresh_token", "")
        parts = token.split("_", 2)
        if len(parts) != 3 or parts[0] != "mrt":
            raise asgi.Refusal("invalid_grant", "the refresh token is unknown")
        gid = parts[1]
        grant = await state.load(f"grant:{gid}")
        if grant is None or grant["client_id"] != client_id:
            raise asgi.Refusal("invalid_grant", "the refresh token is unknown or revoked")
        key = f"rt:{digest(token)}"
        current = await state.load(key)
        if current is None or current.get("grant") != gid:
            raise asgi.Refusal("invalid_grant", "the refresh token is unknown")
        if current.get("jkt") is not None and current["jkt"] != jkt:
            # A bound refresh token (RFC 9449 5): good only with a proof by its key.
            raise asgi.Refusal("invalid_grant", "the refresh token is bound to a DPoP key this request does not prove")
        scopes = current["scopes"]
        asked = form.get("scope")
        if asked is not None:
            if not set(asked.split()) <= set(scopes):
                raise asgi.Refusal("invalid_scope", "a refresh cannot widen the grant")
            scopes = asked.split()
        answer, fresh = self._issue(gid, grant, scopes, True, current.get("jkt"))
        assert fresh is not None
        now = state.clock()
        rotated = {
            "grant": gid,
            "state": "rotated",
            "scopes": current["scopes"],
            "grace_until": now + _GRACE,
            "jkt": current.get("jkt"),
            "answer": answer,
        }
        # One atomic step decides who rotated this token: the first swap finds it active.
        previous = state.open(key, await state.store.swap(key, state.seal(key, rotated), state.refresh_ttl))
        if previous is not None and previous["state"] == "active":
            await state.save(*fresh)
            if not await self._refresh_upstream(gid):
                # The IdP no longer honours the user's grant: neither do we (a new sign-in is needed).
                await state.store.delete(f"grant:{gid}")
                raise asgi.Refusal("invalid_grant", "the identity provider ended this sign-in; sign in again")
            return answer
        if previous is not None and previous["state"] == "rotated" and now <= previous["grace_until"]:
            # Within the grace window: the same answer again (a lost answer, a double refresh).
            await state.save(key, previous, state.refresh_ttl)
            stashed: dict[str, Any] = previous["answer"]
            return stashed
        # A rotated token after its window: replayed, so the whole family goes (RFC 9700 4.14).
        await state.store.delete(f"grant:{gid}")
        await state.store.delete(key)
        raise asgi.Refusal("invalid_grant", "the refresh token was already used; the grant is revoked")

    async def _refresh_upstream(self, gid: str) -> bool:
        """Refresh the grant's upstream token when it expires within a minute, under a lock one
        worker holds (another finding it taken leaves it to that one); False when the IdP refused
        (``invalid_grant``). A failure to reach the IdP keeps the old token (tried next time)."""
        state = self.state
        grant = await state.load(f"grant:{gid}")
        if grant is None:
            return False
        if not self._upstream_due(grant):
            return True
        lock = f"lock:{gid}"
        if not await state.store.add(lock, b"1", 15.0):
            return True
        try:
            grant = await state.load(f"grant:{gid}")  # again, under the lock: another may have done it
            if grant is None:
                return False
            if not self._upstream_due(grant):
                return True
            held = grant["upstream"]
            try:
                tokens = await state.upstream.refresh(state.client(), held["refresh_token"])
            except UpstreamError as error:
                logger.warning("auth proxy: upstream refresh at %s failed: %s", state.upstream.issuer, error)
                return error.error != "invalid_grant"
            now = state.clock()
            grant["upstream"] = {
                "access_token": tokens["access_token"],
                # An IdP that does not rotate (Cognito) sends none: the old one stays good.
                "refresh_token": tokens.get("refresh_token") or held["refresh_token"],
                "expires_at": now + float(tokens["expires_in"]) if "expires_in" in tokens else None,
            }
            left = state.refresh_ttl - (now - float(grant["created"]))
            if left > 0:
                await state.save(f"grant:{gid}", grant, left)
            return left > 0
        finally:
            await state.store.delete(lock)

    def _upstream_due(self, grant: Mapping[str, Any]) -> bool:
        held = grant["upstream"]
        expires = held.get("expires_at")
        return bool(held.get("refresh_token")) and expires is not None and expires - self.state.clock() < 60

    async def revoke(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``POST /oauth/revoke``."""
        state = self.state
        form = await asgi.form(receive)
        try:
            client_id = asgi.client_id(scope, form)
        except asgi.Refusal as refusal:
            await asgi.json(send, refusal.status, {"error": refusal.error, "error_description": refusal.description})
            return
        token = form.get("token", "")
        parts = token.split("_", 2)
        if len(parts) == 3 and parts[0] == "mrt" and await state.store.get(f"rt:{digest(token)}") is not None:
            grant = await state.load(f"grant:{parts[1]}")
            if grant is not None and grant["client_id"] == client_id:
                await state.store.delete(f"grant:{parts[1]}")
                upstream = grant["upstream"]
                held = upstream.get("refresh_token") or upstream.get("access_token")
                if isinstance(held, str):
                    hint = "refresh_token" if upstream.get("refresh_token") else "access_token"
                    await state.upstream.revoke(state.client(), held, hint)
        await asgi.json(send, 200, {})  # RFC 7009: the same answer whatever the token was
