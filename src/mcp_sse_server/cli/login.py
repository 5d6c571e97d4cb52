"""``login``: authorize with the OAuth-protected MCP server TARGET once, and keep its token.

The other client commands run the same flow when a URL server asks for a token; ``login`` does
it up front (before a script or a non-interactive run) and says what it got.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .errors import BadUsage, Failure, describe_error
from .reach import run
from .registry import registry_option


@click.command()
@click.argument("target")
@click.option("--client-id", metavar="ID", help="A client id registered with the authorization server beforehand.")
@click.option(
    "--client-secret-env", metavar="VAR", help="The environment variable holding that client's secret, if any."
)
@click.option("--scope", metavar="SCOPES", help="Ask for exactly these scopes (space-separated).")
@click.option("--token-file", type=click.Path(dir_okay=False), help="Where to keep the token (default: shown).")
@click.option("--redirect-port", type=click.IntRange(0, 65535), default=0, help="The loopback port to come back to.")
@click.option("--no-browser", is_flag=True, help="Print the authorization URL instead of opening a browser.")
@click.option("--sse", is_flag=True, help="The URL speaks the legacy HTTP+SSE transport (2024-11-05).")
@click.pass_context
def login(
    ctx: click.Context,
    /,
    target: str,
    client_id: str | None,
    client_secret_env: str | None,
    scope: str | None,
    token_file: str | None,
    redirect_port: int,
    no_browser: bool,
    sse: bool,
) -> None:
    """Log in to the MCP server at TARGET (a URL, or a registry name with a URL) and keep its token.

    \b
    The authorization server's page opens in the browser (--no-browser prints its URL); once
    you approve, the browser comes back to this command on a loopback port. The token (and
    its refresh token) is kept in a file only you can read, and the other commands use it:
      mcp-sse-server login https://mcp.example.com/mcp
      mcp-sse-server tools https://mcp.example.com/mcp
    """
    from ..client.config import ServerConfig
    from ..client.oauth.config import oauth_from_config
    from ..client.oauth.storage import default_token_path
    from ..engine.transports import is_url
    from .registry import registry_entry

    entry: ServerConfig | None = None
    if is_url(target):
        url, base_auth = target, None
    else:
        entry = registry_entry(target, registry_option(ctx))
        if entry is None or entry.endpoint is None:
            raise BadUsage(f"{target!r} is neither a URL nor a registry entry with a URL")
        url, base_auth, sse = entry.endpoint, entry.auth, sse or entry.transport == "sse"
    settings: dict[str, Any] = dict(base_auth) if isinstance(base_auth, dict) else {}
    given = {"client_id": client_id, "client_secret_env": client_secret_env, "scope": scope, "token_file": token_file}
    settings.update({key: value for key, value in given.items() if value is not None})
    if redirect_port:
        settings["redirect_port"] = redirect_port
    try:
        oauth = oauth_from_config(settings or "oauth", open_browser=(lambda url: None) if no_browser else None)
    except ValueError as error:
        path, why = error.args
        raise BadUsage(f"{'.'.join(path) or 'auth'}: {why}") from None
    where = settings.get("token_file") or str(default_token_path())

    async def log_in() -> str:
        from ..client.http import StreamableHttpClient
        from ..client.sse import SseClient

        headers = entry.headers if entry is not None else {}
        client = SseClient(url, headers, auth=oauth) if sse else StreamableHttpClient(url, headers, auth=oauth)
        try:
            async with client:
                pass
        except Exception as error:
            raise Failure(f"cannot log in to {url}: {describe_error(error)}") from error
        finally:
            await oauth.aclose()
        tokens = oauth.tokens
        if tokens is None:
            return f"{url} did not ask for a token: there is nothing to log in to"
        scopes = f" with scope {tokens.scope}" if tokens.scope else ""
        return f"Logged in to {url}: a token from {tokens.issuer}{scopes}, kept in {where}"

    click.echo(run(log_in()))
    sys.stdout.flush()
