"""How a client authenticates to an authorization server with a secret (RFC 6749 §2.3.1): used by
this package's OAuth client and by the introspection verifier, which is that server's client too.

>>> client_secret_basic("mcp server", "s3:cret")
'Basic bWNwJTIwc2VydmVyOnMzJTNBY3JldA=='
"""

from __future__ import annotations

import base64
from urllib.parse import quote

__all__ = ["client_secret_basic"]


def client_secret_basic(client_id: str, secret: str) -> str:
    """The ``Authorization`` value of ``client_secret_basic``: both parts form-encoded, then base64."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")
