"""Rule 2 of ``transport/http/replies.py``, row by row: where an outbound message goes
(``destination(kind, answers_related, related)``), as a table of plain values.

``related`` is None when the message relates to no request in flight here, else whether that
request's client takes an SSE stream (False: it reads JSON only); ``answers_related`` is True
when the message is that request's response.
"""

from __future__ import annotations

import itertools

import pytest

from mcp_sse_server.engine.jsonrpc import JsonRpcError, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse
from mcp_sse_server.transport.http.replies import Destination, destination

REPLY, POST_STREAM, STANDALONE, DROP = (
    Destination.REPLY,
    Destination.POST_STREAM,
    Destination.STANDALONE,
    Destination.DROP,
)
SSE, JSON_ONLY, UNRELATED = True, False, None

RULE_2 = [
    # (row of the rule, kind, answers_related, related, destination)
    ("the in-flight request's response ends its reply", JsonRpcResponse, True, SSE, REPLY),
    ("the in-flight request's error ends its reply", JsonRpcError, True, SSE, REPLY),
    ("the in-flight request's response, JSON client", JsonRpcResponse, True, JSON_ONLY, REPLY),
    ("the in-flight request's error, JSON client", JsonRpcError, True, JSON_ONLY, REPLY),
    ("a related notification, SSE client: its POST stream", JsonRpcNotification, False, SSE, POST_STREAM),
    ("a related server request, SSE client: its POST stream", JsonRpcRequest, False, SSE, POST_STREAM),
    ("a related notification, JSON client: nowhere", JsonRpcNotification, False, JSON_ONLY, DROP),
    ("a related server request, JSON client: the standalone stream", JsonRpcRequest, False, JSON_ONLY, STANDALONE),
    # A server request whose id happens to equal its related client request's id (the engine's
    # counter is 1, 2, ... too): SseTransport.send says it "answers", but a request is no reply.
    ("a related server request with the client's id, SSE client", JsonRpcRequest, True, SSE, POST_STREAM),
    ("a related server request with the client's id, JSON client", JsonRpcRequest, True, JSON_ONLY, STANDALONE),
    ("a response whose request is gone", JsonRpcResponse, False, UNRELATED, DROP),
    ("an error whose request is gone", JsonRpcError, False, UNRELATED, DROP),
    ("an unrelated notification", JsonRpcNotification, False, UNRELATED, STANDALONE),
    ("an unrelated server request", JsonRpcRequest, False, UNRELATED, STANDALONE),
]


@pytest.mark.parametrize(
    ("kind", "answers_related", "related", "expected"),
    [pytest.param(*row[1:], id=row[0]) for row in RULE_2],
)
def test_rule_2(kind: type, answers_related: bool, related: bool | None, expected: Destination) -> None:
    assert destination(kind, answers_related, related) is expected


def test_the_table_reaches_every_destination_and_every_input_the_transport_makes() -> None:
    assert {row[-1] for row in RULE_2} == set(Destination)
    # What SseTransport.send passes: answers_related = "related to a request in flight here, and the
    # message's id is that request's id". A notification has no id; a response or error the engine
    # sends relates to the request it answers (or to none, once that request is gone).
    inputs = {(JsonRpcNotification, False, related) for related in (SSE, JSON_ONLY, UNRELATED)}
    inputs |= {(JsonRpcRequest, False, UNRELATED)}
    inputs |= {(JsonRpcRequest, answers, related) for answers in (True, False) for related in (SSE, JSON_ONLY)}
    inputs |= {(kind, True, related) for kind in (JsonRpcResponse, JsonRpcError) for related in (SSE, JSON_ONLY)}
    inputs |= {(kind, False, UNRELATED) for kind in (JsonRpcResponse, JsonRpcError)}
    assert [row[1:4] for row in RULE_2 if row[1:4] not in inputs] == []
    assert inputs == {row[1:4] for row in RULE_2}


def test_a_transport_without_a_standalone_stream_keeps_only_the_post_stream() -> None:
    # The stateless transport (a 2026-07-28 request) asks with answers_related=False and drops
    # anything but POST_STREAM: only related messages to an SSE client go out.
    kept = {
        (kind, related)
        for kind, related in itertools.product((JsonRpcNotification, JsonRpcRequest), (SSE, JSON_ONLY, None))
        if destination(kind, False, related) is POST_STREAM
    }
    assert kept == {(JsonRpcNotification, SSE), (JsonRpcRequest, SSE)}
