"""What a verifier asks the authorization server (a key set, an introspection), fetched one way:
within a timeout, a size cap, as a JSON object; anything else is ``VerifierUnavailable`` (the
token is neither let through nor called invalid), logged without the body or the token."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

from .tokens import VerifierUnavailable

__all__ = ["fetch_json"]

logger = logging.getLogger("mcp_sse_server.auth")


async def fetch_json(
    http: httpx.AsyncClient, method: str, url: str, *, what: str, timeout: float, limit: int, **request: Any
) -> dict[str, Any]:
    """The JSON object ``method url`` answers with 200 (``request``: httpx's keywords); ``what``
    names it in log lines and in the ``VerifierUnavailable`` raised for everything else."""
    try:
        async with asyncio.timeout(timeout):
            response = await http.request(method, url, **request)
    except (httpx.HTTPError, TimeoutError) as error:
        logger.warning("could not fetch %s at %s: %s", what, url, type(error).__name__)
        raise VerifierUnavailable(f"{what} cannot be fetched") from None
    if response.status_code != 200 or len(response.content) > limit:
        # (For introspection, 401 or 403 means this resource's own credentials were refused.)
        logger.warning("%s at %s answered %d (%d bytes)", what, url, response.status_code, len(response.content))
        raise VerifierUnavailable(f"{what} cannot be fetched")
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        logger.warning("%s at %s is not a JSON object", what, url)
        raise VerifierUnavailable(f"{what} cannot be read")
    return data
