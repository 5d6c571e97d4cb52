"""OAuth 2.1 for the HTTP clients: the client finds the authorization server from the MCP
server's 401, gets a token and sends it on every request.

>>> from mcp_sse_server.client import StreamableHttpClient
>>> client = StreamableHttpClient("https://mcp.example.com/mcp", auth=OAuth())  # doctest: +SKIP

Modules, lowest first:

* ``errors.py``: ``OAuthError``.
* ``challenge.py``: ``WWW-Authenticate`` parsing (RFC 9110), pure.
* ``discovery.py``: the discovery URLs in the specification's order, metadata parsing
  with exact strings, the checks the client makes (resource, issuer, PKCE, ``iss``,
  ``state``) and scope selection, pure.
* ``storage.py``: ``TokenStorage``, in memory or in a 0600 file.
* ``user_agent.py``: how the user authorizes (a browser and a loopback redirect, or a
  callback; a headless one for tests).
* ``assertions.py``: client assertions (``private_key_jwt``) and DPoP proofs.
* ``grants.py``: the ``OAuthSettings``, and how tokens are got (the grants, the token
  endpoint, refreshing, the client's identity).
* ``flow.py``: ``OAuth``, the ``httpx.Auth`` that runs it all: when to discover, to get a
  token, to ask for more scope.
"""

from typing import TYPE_CHECKING

from ...engine._lazy import lazy_exports

if TYPE_CHECKING:
    from .errors import OAuthError as OAuthError
    from .flow import OAuth as OAuth
    from .grants import EnterpriseIdentity as EnterpriseIdentity
    from .grants import OAuthSettings as OAuthSettings
    from .storage import (
        ClientRegistration as ClientRegistration,
    )
    from .storage import (
        FileTokenStorage as FileTokenStorage,
    )
    from .storage import (
        MemoryTokenStorage as MemoryTokenStorage,
    )
    from .storage import (
        Tokens as Tokens,
    )
    from .storage import (
        TokenStorage as TokenStorage,
    )
    from .user_agent import (
        BrowserUserAgent as BrowserUserAgent,
    )
    from .user_agent import (
        CallbackUserAgent as CallbackUserAgent,
    )
    from .user_agent import (
        HeadlessUserAgent as HeadlessUserAgent,
    )
    from .user_agent import (
        UserAgent as UserAgent,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__)
