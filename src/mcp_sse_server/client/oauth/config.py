"""The ``"auth"`` of an ``mcp_server.json`` entry: OAuth for a URL server, as plain JSON.

Rules:

1. ``"auth": "oauth"`` is OAuth with every default: a person authorizes in the
   browser, tokens are kept in ``default_token_path()`` (0600).
2. An object takes ``"type": "oauth"`` (the default) and these optional keys:
   ``client_id``, ``client_secret_env`` (the environment variable holding the
   secret: secrets stay out of the file), ``private_key_file`` (a PEM key for
   ``private_key_jwt``), ``grant`` (``authorization_code`` or
   ``client_credentials``), ``scope``, ``client_metadata_url``,
   ``authorization_server``, ``redirect_port`` (the loopback port the browser
   comes back to; a free one by default) and ``token_file`` (``"memory"``: kept
   for this run only).
3. Anything else is a problem naming the key (``auth_problem``; the registry
   reports it as a ``ConfigError`` when the file is read).

>>> auth_problem("oauth") is None
True
>>> auth_problem({"grant": "device"})
(('grant',), "expected authorization_code or client_credentials, got 'device'")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ...engine.jsonrpc import json_type

if TYPE_CHECKING:
    from .flow import OAuth

__all__ = ["auth_problem", "oauth_from_config"]

_STRINGS: Final = (
    "client_id",
    "client_secret_env",
    "private_key_file",
    "scope",
    "client_metadata_url",
    "authorization_server",
    "token_file",
)
_GRANTS: Final = ("authorization_code", "client_credentials")


def auth_problem(data: Any) -> tuple[tuple[str, ...], str] | None:
    """What is wrong with an ``"auth"`` value (the key path under it, and why), or None."""
    if data == "oauth":
        return None
    if not isinstance(data, Mapping):
        return (), f'expected "oauth" or an object, got {json_type(data)}'
    known = {"type", "grant", "redirect_port", *_STRINGS}
    for key, value in data.items():
        if key not in known:
            return (str(key),), f"unknown key; expected one of {', '.join(sorted(known))}"
        if key in _STRINGS and not isinstance(value, str):
            return (key,), f"expected a string, got {json_type(value)}"
    if data.get("type", "oauth") != "oauth":
        return ("type",), f"expected oauth, got {data.get('type')!r}"
    grant = data.get("grant", "authorization_code")
    if grant not in _GRANTS:
        return ("grant",), f"expected {' or '.join(_GRANTS)}, got {grant!r}"
    if grant == "client_credentials" and "client_id" not in data:
        return ("client_id",), "required with grant client_credentials"
    port = data.get("redirect_port")
    if port is not None and (type(port) is not int or not 0 <= port <= 65535):
        return ("redirect_port",), f"expected a port number, got {port!r}"
    return None


def oauth_from_config(
    data: Any, *, environ: Mapping[str, str] | None = None, open_browser: Callable[[str], object] | None = None
) -> OAuth:
    """The ``OAuth`` an ``"auth"`` value describes (``open_browser``: how the browser is opened,
    ``webbrowser.open`` by default). ValueError (whose first argument is the key path, the
    second why) for a value ``auth_problem`` refuses, an unset secret variable or an
    unreadable key file."""
    from .flow import OAuth, OAuthSettings
    from .storage import FileTokenStorage, MemoryTokenStorage, TokenStorage, default_token_path
    from .user_agent import BrowserUserAgent

    problem = auth_problem(data)
    if problem is not None:
        raise ValueError(*problem)
    options: Mapping[str, Any] = {} if data == "oauth" else data
    environ = os.environ if environ is None else environ
    secret = None
    variable = options.get("client_secret_env")
    if variable is not None:
        secret = environ.get(variable)
        if not secret:
            raise ValueError(("client_secret_env",), f"the environment variable {variable} is not set")
    private_key = None
    key_file = options.get("private_key_file")
    if key_file is not None:
        try:
            with open(os.path.expanduser(key_file), "rb") as file:
                private_key = file.read()
        except OSError as error:
            raise ValueError(("private_key_file",), f"cannot read {key_file}: {error.strerror}") from None
    settings = OAuthSettings(
        client_id=options.get("client_id"),
        client_secret=secret,
        private_key=private_key,
        grant=options.get("grant", "authorization_code"),
        scope=options.get("scope"),
        client_metadata_url=options.get("client_metadata_url"),
        authorization_server=options.get("authorization_server"),
    )
    token_file = options.get("token_file")
    storage: TokenStorage
    if token_file == "memory":
        storage = MemoryTokenStorage()
    else:
        storage = FileTokenStorage(os.path.expanduser(token_file) if token_file else default_token_path())
    agent = BrowserUserAgent(port=options.get("redirect_port") or 0, open_browser=open_browser)
    return OAuth(settings, storage=storage, user_agent=agent)
