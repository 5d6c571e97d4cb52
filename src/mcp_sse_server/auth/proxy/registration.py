"""The proxy's discovery and client endpoints, and how a client is found:

- ``GET /.well-known/oauth-authorization-server``: RFC 8414 metadata (S256 only; ``none`` auth;
  ``authorization_response_iss_parameter_supported``).
- ``GET /oauth/jwks``: our public signing keys.
- ``POST /oauth/register``: RFC 7591, public clients (``none``) only; redirect URIs checked now
  (``redirects.py``); at most 10 of them, a name of at most 100 characters, 16 KiB of metadata.
- A client id that is an https URL is a client ID metadata document (``cimd.py``), fetched,
  checked and kept 5 minutes, when ``client_documents`` is on.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from . import asgi, redirects
from .state import ProxyState, digest

__all__ = ["METADATA_PATH", "Registration"]

METADATA_PATH: Final = "/.well-known/oauth-authorization-server"
_CLIENT_TTL: Final = 30 * 86400.0
_DOCUMENT_TTL: Final = 300.0


class Registration:
    """Metadata, keys and registration endpoints over ``state``, and the lookup of clients."""

    __slots__ = ("state",)

    def __init__(self, state: ProxyState) -> None:
        self.state = state

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 document."""
        state = self.state
        base = state.issuer
        return {
            "issuer": base,
            "authorization_endpoint": base + "/oauth/authorize",
            "token_endpoint": base + "/oauth/token",
            "registration_endpoint": base + "/oauth/register",
            "revocation_endpoint": base + "/oauth/revoke",
            "jwks_uri": base + "/oauth/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [*state.scopes, "offline_access"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": state.client_documents,
            **({"dpop_signing_alg_values_supported": list(state.dpop.algorithms)} if state.dpop is not None else {}),
        }

    async def serve_metadata(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``GET /.well-known/oauth-authorization-server``."""
        await asgi.json(send, 200, self.metadata(), cache=True)

    async def serve_jwks(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``GET /oauth/jwks``."""
        await asgi.json(send, 200, self.state.keys.jwks(), cache=True)

    async def register(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        """``POST /oauth/register``."""
        body = await asgi.body(receive)
        try:
            if body is None:
                raise asgi.Refusal("invalid_client_metadata", "the registration is larger than 16 KiB")
            try:
                metadata = orjson.loads(body)
            except orjson.JSONDecodeError:
                metadata = None
            if not isinstance(metadata, dict):
                raise asgi.Refusal("invalid_client_metadata", "the registration must be a JSON object")
            record = self._client_record(metadata)
        except asgi.Refusal as refusal:
            await asgi.json(send, refusal.status, {"error": refusal.error, "error_description": refusal.description})
            return
        client_id = "mcp_" + secrets.token_urlsafe(18)
        record["client_id"] = client_id
        record["client_id_issued_at"] = int(self.state.clock())
        await self.state.save(f"cl:{client_id}", record, _CLIENT_TTL)
        await asgi.json(send, 201, record)

    def _client_record(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        method = metadata.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise asgi.Refusal(
                "invalid_client_metadata", "only public clients (token_endpoint_auth_method none) register"
            )
        uris = metadata.get("redirect_uris")
        if not isinstance(uris, list) or not uris or len(uris) > 10:
            raise asgi.Refusal("invalid_redirect_uri", "redirect_uris: a list of 1 to 10 URIs")
        for uri in uris:
            try:
                redirects.check_registered(uri, self.state.redirect_allow)
            except ValueError as error:
                raise asgi.Refusal("invalid_redirect_uri", str(error)) from None
        grants = metadata.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
            raise asgi.Refusal("invalid_client_metadata", "grant_types: authorization_code and refresh_token only")
        responses = metadata.get("response_types", ["code"])
        if responses != ["code"]:
            raise asgi.Refusal("invalid_client_metadata", "response_types: code only")
        name = metadata.get("client_name", "")
        if not isinstance(name, str) or len(name) > 100:
            raise asgi.Refusal("invalid_client_metadata", "client_name: a string of at most 100 characters")
        return {
            "redirect_uris": uris,
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "client_name": name,
        }

    async def client_of(self, client_id: str) -> tuple[dict[str, Any] | None, str]:
        """The client's record (registered, or its metadata document), or None and why."""
        from .cimd import is_client_document_url

        state = self.state
        if not client_id:
            return None, "The request names no client."
        if not is_client_document_url(client_id):
            record = await state.load(f"cl:{client_id}")
            return record, "This application is not registered with this server."
        if not state.client_documents:
            return None, "This server does not take client ID metadata documents."
        key = f"cimd:{digest(client_id)}"
        record = await state.load(key)
        if record is not None:
            return record, ""
        from .cimd import ClientDocumentError, fetch_client_document

        try:
            document = await fetch_client_document(
                state.client(), client_id, allow_private=state.client_documents_private
            )
            # Its redirect URIs: loopback, the document's own host over https, or the allowlist.
            own = f"https://{urlsplit(client_id).netloc}/*"
            for uri in document["redirect_uris"]:
                redirects.check_registered(uri, (*state.redirect_allow, own))
        except (ClientDocumentError, ValueError) as error:
            return None, f"The client's metadata document was refused: {error}"
        grants = document.get("grant_types", ["authorization_code"])
        name = document.get("client_name")
        record = {
            "client_id": client_id,
            "redirect_uris": document["redirect_uris"],
            "grant_types": grants if isinstance(grants, list) else ["authorization_code"],
            "client_name": name[:100] if isinstance(name, str) else "",
            "document": True,
        }
        await state.save(key, record, _DOCUMENT_TTL)
        return record, ""
