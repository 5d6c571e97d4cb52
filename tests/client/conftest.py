"""Real servers for the client tests: the official SDK's, each in a subprocess (``Peer``, in
tests/fixtures/peers.py), serving legacy SSE or Streamable HTTP.

Every subprocess is killed when its fixture ends, whatever the test did.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.peers import Peer, running_peer


@pytest.fixture(scope="session")
def sdk_http() -> Iterator[Peer]:
    """The SDK's Streamable HTTP server answering with SSE streams."""
    yield from running_peer("http")


@pytest.fixture(scope="session")
def sdk_http_json() -> Iterator[Peer]:
    """The SDK's Streamable HTTP server answering with JSON bodies."""
    yield from running_peer("http", "--json")


@pytest.fixture(scope="session")
def sdk_http_resumable() -> Iterator[Peer]:
    """The SDK's Streamable HTTP server with an event store: priming events, ``retry: 100``,
    streams a tool may close (``interrupted``) and Last-Event-ID replay."""
    yield from running_peer("http", "--resumable")


@pytest.fixture(scope="session")
def sdk_sse() -> Iterator[Peer]:
    """The SDK's legacy HTTP+SSE server."""
    yield from running_peer("sse")


@pytest.fixture
def fresh_sdk_http() -> Iterator[Peer]:
    """A Streamable HTTP peer of the test's own, for tests that kill it."""
    yield from running_peer("http")


@pytest.fixture
def fresh_sdk_sse() -> Iterator[Peer]:
    yield from running_peer("sse")
