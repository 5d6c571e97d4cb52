"""The fixtures of the HTTP transport tests: the app (``make_app``, ``app``) the tests drive through
``fixtures.asgi`` (no socket), and ``bound``, a real ``McpHttpServer`` on a loopback port for tests
that need uvicorn, TLS or a real client library. Helpers are in tests/fixtures (asgi, messages,
http_app, node, redis_server).

Deployments: the app is built for one ``deployment``:

* ``local``: the in-process default (memory stores, ``LocalCoordinator``);
* ``redis``: one worker on Redis (``RedisSessionStore``, ``RedisEventLog`` and a
  ``RedisCoordinator`` over a ``WorkerMesh``) under the test's own key prefix, on the
  session's redis-server (tests/conftest.py).

A module whose tests hold for both says so with ``pytestmark = pytest.mark.deployments("local",
"redis")``: each of its tests that builds an app runs once per deployment (``[local]``,
``[redis]``). A test (or module) that checks something only the in-process deployment has says
so with ``@pytest.mark.deployments("local", reason="...")`` (a reason is required; its test ids
stay unchanged). Unmarked modules run on ``local`` only. A Redis app is shut down with
``fixtures.redis_server.shut_down`` (the inbox reader's blocking read would add a second).

HTTP paths: every test that serves on a socket (the ``bound`` fixture, ``McpHttpServer.bind`` or
``on_socket`` in its body, in a helper of its module it calls, or in a fixture of its module)
runs twice, ``[fast]`` on the fast path (fast_protocol.py, the default) and ``[asgi]`` with
every request through uvicorn's cycle, what ``HttpSettings(fast_path=False)`` serves (the
``http_path`` fixture). test_fast_path.py names both paths itself (its ``fast`` parameter).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from fixtures.http_app import Clock, Gate, build_server, http_app
from mcp_sse_server import McpServer
from mcp_sse_server.engine.stores import Backend
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp, McpHttpServer

DEPLOYMENTS = ("local", "redis")
HTTP_PATHS = ("fast", "asgi")
_SERVES = re.compile(r"McpHttpServer\.bind|\.on_socket\(|\bbound\b")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "deployments(*names, reason=None): the deployments (local, redis) the app of these tests is built for",
    )


@functools.cache
def _source(thing: Any) -> str:
    try:
        return inspect.getsource(thing)
    except (OSError, TypeError):
        return ""


def serves_on_a_socket(metafunc: pytest.Metafunc) -> bool:
    """Whether the test binds a server: itself, through a helper of its module, or a fixture of its module."""
    if "bound" in metafunc.fixturenames:
        return True
    module, source = metafunc.module, _source(metafunc.function)
    if _SERVES.search(source):
        return True
    called = set(re.findall(r"\b([A-Za-z_]\w*)\(", source)) | set(metafunc.fixturenames)
    for name in called:
        helper = module.__dict__.get(name)
        wrapped = getattr(helper, "_get_wrapped_function", None)  # (a fixture: pytest 8.4's definition)
        helper = wrapped() if callable(wrapped) else getattr(helper, "__wrapped__", helper)
        if inspect.isfunction(helper) and helper.__module__ == module.__name__ and _SERVES.search(_source(helper)):
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "http_path" in metafunc.fixturenames and "fast" not in metafunc.fixturenames and serves_on_a_socket(metafunc):
        metafunc.parametrize("http_path", HTTP_PATHS, indirect=True)
    if "deployment" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("deployments")
    if marker is None:
        return  # local only, test ids unchanged
    names = marker.args
    unknown = set(names) - set(DEPLOYMENTS)
    assert names and not unknown, f"{metafunc.definition.nodeid}: unknown deployments {sorted(unknown)}"
    assert set(names) == set(DEPLOYMENTS) or marker.kwargs.get("reason"), (
        f"{metafunc.definition.nodeid}: say why it runs on {', '.join(names)} only (reason=...)"
    )
    if names != ("local",):  # (local is the default: its test ids stay unchanged)
        metafunc.parametrize("deployment", names, indirect=True)


@pytest.fixture
def deployment(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "local")


@pytest.fixture(autouse=True)
def http_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which path a bound server answers the endpoint on: "fast" (the default), or "asgi", where
    bind and on_socket get the limited protocol of connections.py, as ``fast_path=False`` gives them."""
    path: str = getattr(request, "param", "fast")
    if path == "asgi":
        from mcp_sse_server.transport.http import connections, fast_protocol

        def asgi_only(limits: HttpLimits, app: McpHttpApp, endpoint: str, observer: Any) -> Any:
            return connections.protocol_class(limits, observer)

        monkeypatch.setattr(fast_protocol, "fast_protocol_class", asgi_only)
    return path


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@contextlib.asynccontextmanager
async def _deployed(
    deployment: str, request: pytest.FixtureRequest, clock: Clock
) -> AsyncIterator[tuple[Callable[[HttpLimits], Backend | None], Callable[[McpHttpApp, float], Awaitable[None]]]]:
    """The backend of ``deployment``, per app (a function of the app's limits; None: the in-process
    one), and how to shut an app down."""
    if deployment == "local":
        yield (lambda limits: None), (lambda app, deadline: app.shutdown(deadline=deadline))
        return
    from fixtures.redis_server import client_for, redis_deployment, shut_down

    prefix: str = request.getfixturevalue("redis_prefix")
    async with client_for(request.getfixturevalue("redis_server"), prefix) as client:
        made = itertools.count(1)

        def backend(limits: HttpLimits) -> Backend:
            # Apps of one test are as apart as in process: the first on the test's prefix, the others under it.
            n = next(made)
            return redis_deployment(client, prefix if n == 1 else f"{prefix}:{n}", limits, f"w{n}", clock=clock)

        yield backend, shut_down


@pytest.fixture
async def make_app(
    gate: Gate, clock: Clock, deployment: str, request: pytest.FixtureRequest
) -> AsyncIterator[Callable[..., McpHttpApp]]:
    """Build apps with test limits on the test's deployment; every app is shut down after the test."""
    apps: list[McpHttpApp] = []
    async with _deployed(deployment, request, clock) as (backend, shut_down):

        def make(factory: McpServer | Callable[[], Any] | None = None, **limits: Any) -> McpHttpApp:
            built = HttpLimits(**limits)
            app = http_app(factory, gate, clock, built, backend(built))
            apps.append(app)
            return app

        yield make
        for app in apps:
            await shut_down(app, 0.5)


@pytest.fixture
async def app(make_app: Callable[..., McpHttpApp]) -> McpHttpApp:
    return make_app()


# --- a real server on a socket ---------------------------------------------------------


@pytest.fixture
async def bound(gate: Gate) -> AsyncIterator[McpHttpServer]:
    http = await McpHttpServer.bind(build_server(gate), port=0)
    try:
        yield http
    finally:
        await http.close(deadline=0.5)
