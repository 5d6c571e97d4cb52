"""StatelessCalls: one request of the stateless revision (2026-07-28), from the client's side.

Rules:

1. Every request carries the ``_meta`` envelope (``ClientCore._stamp``): the revision, the
   capabilities of the handlers set, ``client_info`` and the ``effective_log_level``.
2. A -32022 naming a revision both speak is retried once at that revision; a -32020 (the
   ``Mcp-Param-*`` headers disagree) on ``tools/call`` once after listing the tools again.
3. ``input_required`` results (MRTR) are answered through the client's handlers, every
   ``inputRequests`` entry concurrently, and the call is retried with ``inputResponses`` and
   the ``requestState`` as received, at most ``max_input_rounds`` rounds
   (``InputRoundsExceededError``). An unknown ``resultType`` is an error; none means complete.
   ``request_round`` sends one round and returns its result undriven (a proxy's way to pass
   the questions on to its own client).
4. A request whose stream broke before its answer (``StreamLostError``) is sent again once, with
   a new id, except ``tools/call``: it may have side effects, so the caller decides.
5. With telemetry on, the whole of one such request is one span (``ClientCore._traced_call``);
   each retry and ``input_required`` round is an event of it (``_note``), and every request
   sent for it carries its context.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from typing import Any, Final

from ..engine import versions
from ..engine.jsonrpc import INTERNAL_ERROR, McpError
from ..engine.protocol import ProgressCallback
from .core import ClientCore
from .stateless import (
    CLIENT_CAPABILITIES_KEY,
    HEADER_MISMATCH,
    UNSUPPORTED_PROTOCOL_VERSION,
    InputRoundsExceededError,
    StreamLostError,
    UnsupportedProtocolVersionError,
)

__all__ = ["StatelessCalls"]

logger = logging.getLogger("mcp_sse_server.client")

# Requests that may answer input_required (MRTR).
_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_STATE_ONLY_DELAYS: Final = (0.05, 0.1, 0.2, 0.25)


class StatelessCalls(ClientCore):
    """Requests of the stateless revision (see the module)."""

    @abstractmethod
    async def _relist_tools(self) -> None:
        """List the tools again, so that the ``Mcp-Param-*`` headers follow them (``methods.py``)."""

    async def _stateless_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        *,
        tasks: bool = False,
        capabilities: dict[str, Any] | None = None,
        driven: bool = True,
    ) -> dict[str, Any]:
        """One request of the stateless revision, driven to its complete result (rules 1-4);
        ``tasks``: declaring the Tasks extension, so that a task is a result too;
        ``capabilities``: declared instead of the handlers'; not ``driven``: its first result
        returned as it came (``request_round``)."""
        retried_version = retried_headers = reissued = False
        while True:
            try:
                stamped = self._stamp(params, tasks=tasks)
                if capabilities is not None:
                    stamped["_meta"][CLIENT_CAPABILITIES_KEY] = capabilities
                if self._hooks is None:  # the hot path, without _exchange's call (core.py, rule 4)
                    result = await self.transport.request(self._live(), method, stamped, timeout, on_progress)
                else:
                    result = await self._exchange(method, stamped, timeout, on_progress)
                if not driven:
                    return _one_round(method, result)
                if result.get("resultType") == "complete":  # the usual answer: nothing to drive (as _complete)
                    return result
                return await self._complete(method, params, result, timeout, on_progress, tasks=tasks)
            except StreamLostError:
                # The stream broke before the answer and nothing resumes it: send the request
                # again (new id), once, unless it may have side effects (tools/call).
                if reissued or method == "tools/call":
                    raise
                reissued = True
                logger.info("the stream of %s broke before its answer; sending it again", method)
                self._note("retry", reason="stream_lost")
                continue
            except McpError as error:
                if error.code == UNSUPPORTED_PROTOCOL_VERSION:
                    refusal = UnsupportedProtocolVersionError(error.message, error.data)
                    mutual = [name for name in refusal.supported if name in versions.CLIENT_STATELESS]
                    if mutual and not retried_version:
                        retried_version = True
                        self.protocol_version = mutual[-1]
                        self._note("retry", reason="unsupported_protocol_version")
                        continue
                    raise refusal from None
                if error.code == HEADER_MISMATCH and method == "tools/call" and not retried_headers:
                    # Our Mcp-Param-* headers came from a stale tools/list: refresh it and retry.
                    retried_headers = True
                    self._note("retry", reason="header_mismatch")
                    self.invalidate_cache("tools/list")
                    await self._relist_tools()
                    continue
                raise

    async def _complete(
        self,
        method: str,
        params: dict[str, Any] | None,
        result: dict[str, Any],
        timeout: float | None,
        on_progress: ProgressCallback | None,
        *,
        tasks: bool = False,
    ) -> dict[str, Any]:
        """Drive ``input_required`` results until the result is complete (or, for a request that
        declared the Tasks extension, a task); each round a new request id (rule 3)."""
        rounds = 0
        while True:
            kind = result.get("resultType", "complete")
            if kind == "complete" or (tasks and kind == "task"):
                return result
            if kind != "input_required" or method not in _INPUT_METHODS:
                raise McpError(INTERNAL_ERROR, f"The server answered {method} with an unrecognised resultType {kind!r}")
            if rounds >= self.max_input_rounds:
                raise InputRoundsExceededError(method, self.max_input_rounds)
            requests = result.get("inputRequests")
            if requests is not None and not isinstance(requests, dict):
                raise McpError(INTERNAL_ERROR, f"The server answered {method} with malformed inputRequests")
            if self._telemetry is not None:
                entries = (requests or {}).values()
                asked = sorted({str(entry.get("method")) for entry in entries if isinstance(entry, dict)})
                self._note("input_required", round=rounds + 1, methods=asked)
            retry = {
                key: value for key, value in (params or {}).items() if key not in ("inputResponses", "requestState")
            }
            if requests:
                retry["inputResponses"] = await self.answer_inputs(requests)
            else:  # only state: the server is still working; give it a moment
                await asyncio.sleep(_STATE_ONLY_DELAYS[min(rounds, len(_STATE_ONLY_DELAYS) - 1)])
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            rounds += 1
            stamped = self._stamp(retry, tasks=tasks)
            result = await self._exchange(method, stamped, timeout, on_progress)

    async def request_round(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        capabilities: dict[str, Any] | None = None,
        timeout: float | bool | None = True,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """One round of a stateless (2026-07-28) request, not driven: ``params`` (with any
        ``inputResponses`` and ``requestState``) sent once with the envelope, declaring
        ``capabilities`` instead of this client's handlers' when given, and the result returned
        as the server gave it, an ``input_required`` one included (a proxy passes it on to its
        own client). Retried as any request is (rules 2 and 4); McpError for an error reply;
        RuntimeError on a session."""
        if not self.stateless:
            raise RuntimeError(f"request_round needs the stateless revision; this client speaks {self.era}")
        limit = self.request_timeout if timeout is True else (None if timeout is False else timeout)
        return await self._stateless_request(
            method, params, limit, on_progress, capabilities=capabilities, driven=False
        )

    async def answer_inputs(self, requests: dict[str, Any]) -> dict[str, Any]:
        """Answers to a result's ``inputRequests`` (by key) from this client's handlers,
        concurrently; the first failure cancels the rest and is raised."""
        answers: dict[str, Any] = {}

        async def answer(key: str, request: Any) -> None:
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise McpError(INTERNAL_ERROR, f"The server sent a malformed input request {key!r}")
            params = request.get("params")
            answers[key] = await self._answer(request["method"], params if isinstance(params, dict) else {}, key)

        try:
            async with asyncio.TaskGroup() as group:
                for key, request in requests.items():
                    group.create_task(answer(str(key), request))
        except BaseExceptionGroup as failures:
            raise failures.exceptions[0] from None
        return answers

    async def task_request(
        self, method: str, params: dict[str, Any], timeout: float | bool | None = True
    ) -> dict[str, Any]:
        """A request of a task (``TaskHandle``'s): at 2026-07-28 it declares the Tasks extension."""
        if not self.stateless:
            return await self.request(method, params, timeout=timeout)
        limit = self.request_timeout if timeout is True else (None if timeout is False else timeout)
        if self._telemetry is not None:
            return await self._telemetry.logical(
                self, method, params, lambda sent: self._stateless_request(method, sent, limit, None, tasks=True)
            )
        return await self._stateless_request(method, params, limit, None, tasks=True)


def _one_round(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` of one undriven round, when its ``resultType`` is one it may have (rule 3)."""
    kind = result.get("resultType", "complete")
    if kind != "complete" and (kind != "input_required" or method not in _INPUT_METHODS):
        raise McpError(INTERNAL_ERROR, f"The server answered {method} with an unrecognised resultType {kind!r}")
    return result
