"""What a verifier asks the authorization server (a key set, an introspection), fetched one way:
within a timeout, a size cap, as a JSON object; anything else is ``VerifierUnavailable`` (the
token is neither let through nor called invalid). The error's message says what failed and how
(the exception's kind, the status), never the body or the token; the verifier's ``Backoff`` logs
it when an outage starts, so a fetch logs nothing itself (an outage is not a line per request)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from ..engine.tokens import VerifierUnavailable

__all__ = ["fetch_json"]


async def fetch_json(
    http: httpx.AsyncClient, method: str, url: str, *, what: str, timeout: float, limit: int, **request: Any
) -> dict[str, Any]:
    """The JSON object ``method url`` answers with 200 (``request``: httpx's keywords); ``what``
    names it in the ``VerifierUnavailable`` raised for everything else."""
    try:
        async with asyncio.timeout(timeout):
            response = await http.request(method, url, **request)
    except (httpx.HTTPError, TimeoutError) as error:
        raise VerifierUnavailable(f"{what} at {url} cannot be fetched: {type(error).__name__}") from None
    if response.status_code != 200 or len(response.content) > limit:
        # (For introspection, 401 or 403 means this resource's own credentials were refused.)
        raise VerifierUnavailable(f"{what} at {url} answered {response.status_code} ({len(response.content)} bytes)")
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise VerifierUnavailable(f"{what} at {url} is not a JSON object")
    return data
