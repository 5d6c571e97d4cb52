"""What ``serve`` prints once it listens, for one process and for the parent of several workers."""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["announce"]


def announce(label: str, endpoint: str, options: dict[str, Any]) -> None:
    """The start-up lines on stdout: ``Serving LABEL at URL`` (the line ``dev`` and scripts read; a
    URL that works from this machine), then, when they differ from it, what is really bound and
    the protected resource clients elsewhere name."""
    from urllib.parse import urlsplit

    from ..transport.http.server import is_wildcard_host

    click.echo(f"Serving {label} at {endpoint}")
    host = options["host"]
    if is_wildcard_host(host):
        port = urlsplit(endpoint).port
        click.echo(f"Listening on every interface ({host or '0.0.0.0'} port {port}), not only this machine's")
    auth = options["settings"].auth
    if auth is not None:
        tokens = "bearer tokens"
        if auth.dpop is not None:  # (what a client must send: tests and operators read this line)
            tokens = "DPoP-bound tokens" if auth.dpop.required else "bearer or DPoP-bound tokens"
        click.echo(
            f"Protected resource {auth.resource}: {tokens} from {', '.join(auth.authorization_servers)} "
            f"(metadata at {auth.metadata_url})"
        )
    sys.stdout.flush()
