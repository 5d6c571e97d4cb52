"""Today's HTTP app (one process) on the Redis stores: the app's own tests, rerun.

The tests of ``tests/http_transport`` for the behaviour the stores carry
(session lifecycle and limits, the standalone stream and its backlog,
resumable streams with ``Last-Event-ID``) run here again with the app's
``session_store`` and ``event_log`` replaced by ``RedisSessionStore`` and
``RedisEventLog`` on a real redis-server. The test functions are imported
unchanged; only the ``make_app`` fixture differs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from types import ModuleType
from typing import Any

import pytest

import http_transport.conftest as http_fixtures
from fixtures.http_app import Clock, Gate, http_app
from fixtures.redis_server import RedisServer, client_for
from http_transport import (
    test_app_rules,
    test_resumable_streams,
    test_session_limits,
    test_standalone_stream,
)
from mcp_sse_server.server import McpServer
from mcp_sse_server.stores.redis import RedisEventLog, RedisSessionStore
from mcp_sse_server.transport.http import HttpLimits, McpHttpApp

# The http_transport fixtures these tests use besides make_app.
app = http_fixtures.app
clock = http_fixtures.clock
gate = http_fixtures.gate

MODULES: tuple[ModuleType, ...] = (test_app_rules, test_resumable_streams, test_session_limits, test_standalone_stream)

# The grace of an ended stream runs on Redis's clock (PEXPIRE), not on the app's injected one,
# which this test advances; test_redis.py checks the grace with real time instead.
SKIP = {"test_a_finished_streams_log_is_dropped_after_the_grace_period"}

for _module in MODULES:
    for _name in dir(_module):
        if _name.startswith("test_") and _name not in SKIP and _name not in globals():
            globals()[_name] = getattr(_module, _name)


@pytest.fixture
async def make_app(
    gate: Gate, clock: Clock, redis_server: RedisServer, redis_prefix: str
) -> AsyncIterator[Callable[..., McpHttpApp]]:
    """The http_transport ``make_app`` with the Redis stores."""
    apps: list[McpHttpApp] = []
    async with client_for(redis_server, redis_prefix) as client:

        def make(factory: McpServer | Callable[[], Any] | None = None, **options: Any) -> McpHttpApp:
            limits = HttpLimits(**options)
            app = http_app(
                factory,
                gate,
                clock,
                limits=limits,
                session_store=RedisSessionStore(
                    client,
                    idle_timeout=limits.session_idle_timeout,
                    max_lifetime=limits.session_max_lifetime,
                    prefix=redis_prefix,
                ),
                event_log=RedisEventLog(
                    client, limits.backlog_limit, limits.replay_buffer_size, ttl=600.0, prefix=redis_prefix
                ),
            )
            apps.append(app)
            return app

        yield make
        for built in apps:
            await built.shutdown(deadline=0.5)
