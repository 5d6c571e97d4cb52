"""RequestLog: one record per request with method, target, outcome, code, duration, principal
hash and session prefix; no payloads unless asked; the logger and the sink both receive it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import McpError, RequestContext, Tool
from mcp_sse_server.middleware import RequestLog

from .conftest import build, envelope


class Ticks:
    """A clock that moves 0.25 s per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


async def test_each_request_is_one_record_with_its_outcome(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    records: list[dict[str, Any]] = []
    server = build(RequestLog(sink=records.append, clock=Ticks()))

    def refuse(arguments: dict[str, Any], context: RequestContext) -> str:
        raise McpError(-32042, "no")

    server.add_tool(Tool("refuse", {"type": "object"}, refuse))
    caplog.set_level(logging.INFO, "mcp_sse_server.requests")
    client = await connect(server)
    records.clear()
    caplog.clear()
    await client.result("tools/call", {"name": "echo", "arguments": {"text": "secret words"}})
    await client.error("tools/call", {"name": "refuse", "arguments": {}})
    await client.error("prompts/get", {"name": "missing"})
    await client.result("resources/read", {"uri": "test://a"})
    assert [(r["method"], r["target"], r["outcome"], r["code"]) for r in records] == [
        ("tools/call", "echo", "ok", None),
        ("tools/call", "refuse", "error", -32042),
        ("prompts/get", "missing", "error", -32602),
        ("resources/read", "test://a", "ok", None),
    ]
    assert all(r["duration_ms"] == 250.0 and r["principal"] is None for r in records)
    assert "params" not in records[0] and "secret words" not in caplog.text
    logged = [record for record in caplog.records if record.name == "mcp_sse_server.requests"]
    assert len(logged) == 4 and logged[0].getMessage() == "tools/call echo ok 250.000 ms"
    assert logged[1].mcp["code"] == -32042  # type: ignore[attr-defined]


async def test_payloads_only_when_asked(connect: Connect) -> None:
    records: list[dict[str, Any]] = []
    client = await connect(build(RequestLog(sink=records.append, include_payloads=True)))
    await client.result("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert records[-1]["params"]["arguments"] == {"text": "hi"}
    assert records[-1]["result"]["content"][0]["text"].startswith("echo hi")


async def test_a_tool_error_and_an_mrtr_round_have_their_own_outcomes(connect: Connect) -> None:
    records: list[dict[str, Any]] = []

    def broken(arguments: dict[str, Any], context: RequestContext) -> str:
        raise RuntimeError("detail")

    server = build(RequestLog(sink=records.append))
    server.add_tool(Tool("broken", {"type": "object"}, broken))
    client = await connect(server, initialize=False)
    await client.result("tools/call", {**envelope(), "name": "broken", "arguments": {}})
    await client.result("tools/call", {**envelope({"elicitation": {"form": {}}}), "name": "greet", "arguments": {}})
    assert [(r["outcome"], r["code"]) for r in records] == [("tool_error", None), ("input_required", None)]


async def test_a_disabled_logger_without_a_sink_builds_nothing(connect: Connect) -> None:
    quiet = logging.getLogger("mcp_sse_server.tests.quiet")
    quiet.setLevel(logging.WARNING)
    readings = Ticks()
    client = await connect(build(RequestLog(quiet, clock=readings)))
    await client.result("tools/call", {"name": "echo", "arguments": {}})
    assert readings.now == 0.0


async def test_a_failing_sink_never_fails_the_request(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    def sink(record: dict[str, Any]) -> None:
        raise OSError("disk full")

    client = await connect(build(RequestLog(sink=sink)))
    result = await client.result("tools/call", {"name": "echo", "arguments": {}})
    assert result["content"][0]["text"].startswith("echo") and "request log sink failed" in caplog.text


async def test_over_http_the_principal_is_a_hash_and_the_session_a_prefix() -> None:
    import hashlib

    import httpx

    from fixtures.asgi import open_session
    from fixtures.keys import ISSUER, RESOURCE, SigningKey
    from mcp_sse_server.auth import JwtVerifier
    from mcp_sse_server.auth.resource import ResourceServer
    from mcp_sse_server.transport.http import HttpSettings, McpHttpApp

    from .conftest import post, serving

    key = SigningKey("k1", "ES256")
    records: list[dict[str, Any]] = []
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    settings = HttpSettings(json_response=True, auth=ResourceServer(RESOURCE, [ISSUER], verifier=verifier))
    token = key.sign(sub="alice", client_id="app")
    async with serving(build(RequestLog(sink=records.append)), settings) as http, httpx.AsyncClient() as client:
        await post(client, http.endpoint, "tools/call", {"name": "echo", "arguments": {}}, token)
    expected = hashlib.sha256("\x1f".join((ISSUER, "alice", "app")).encode()).hexdigest()[:16]
    assert records[-1]["principal"] == expected and records[-1]["session"] is None  # 2026-07-28: no session
    assert token not in repr(records) and "alice" not in repr(records)

    app = McpHttpApp(build(RequestLog(sink=records.append)))
    session = await open_session(app)
    await session.result("tools/list")
    assert records[-1]["session"] == session.id[:8] and records[-1]["principal"] is None


async def test_records_carry_every_field_an_ordinary_record_has(connect: Connect) -> None:
    # The records are made from a per-thread template (request_log.py's _RecordMaker): compared
    # here with one the logging module makes itself, through a formatter using every field.
    logger = logging.getLogger("test.request_log.fields")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    logger.addHandler(Keep())
    factory = logging.getLogRecordFactory()

    def tagged(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        record.tag = "from-the-factory"
        return record

    logging.setLogRecordFactory(tagged)
    try:
        client = await connect(build(RequestLog(logger)))
        await client.result("tools/call", {"name": "echo", "arguments": {"text": "a"}})
        await client.result("tools/call", {"name": "echo", "arguments": {"text": "b"}})
        reference = logger.makeRecord(logger.name, logging.INFO, "x.py", 0, "m", (), None)
    finally:
        logging.setLogRecordFactory(factory)
    calls = [record for record in seen if record.mcp["method"] == "tools/call"]  # type: ignore[attr-defined]
    assert len(calls) == 2 and calls[0] is not calls[1]
    assert set(vars(reference)) - {"tag"} <= set(vars(calls[0]))
    assert calls[0].tag == "from-the-factory"  # type: ignore[attr-defined]
    assert calls[0].created <= calls[1].created and abs(calls[1].created - reference.created) < 60
    assert abs((calls[1].relativeCreated - reference.relativeCreated) / 1000) < 60
    fields = "%(asctime)s %(msecs)d %(relativeCreated)d %(name)s %(levelname)s %(module)s %(funcName)s %(thread)d "
    fields += "%(threadName)s %(process)d %(processName)s %(filename)s %(message)s"
    line = logging.Formatter(fields).format(calls[1])
    assert line.endswith("request_log.py tools/call echo ok " + calls[1].getMessage().rsplit("ok ", 1)[1])
    assert f"test.request_log.fields INFO request_log on_request {reference.thread} " in line
    assert calls[0].mcp is not calls[1].mcp and calls[1].args[1] == "echo"  # type: ignore[attr-defined]
