"""``Backoff``: when a verifier may ask its authorization server again after it failed to answer.

A key set or an introspection endpoint out of reach must neither be asked by
every request (hammered while it is down) nor left unasked for long once it is
back (valid tokens refused). The rules:

1. A failed attempt (``failed``) closes the door for a delay: ``FIRST_DELAY``
   seconds, doubled with each failure in a row up to ``MAX_DELAY``, times a
   jitter factor between 0.5 and 1 (so servers that lost the same
   authorization server do not all come back to it in step). The delay runs
   from the start of the failed attempt: a slow failure does not add its own
   time to it.
2. While the door is closed the verifier does not ask: it raises
   ``unavailable()``, a ``VerifierUnavailable`` whose ``retry_after`` is the
   delay left (the HTTP layer's ``Retry-After``). ``MAX_DELAY`` is 4 s, so an
   authorization server that is back is asked again at most 4 s later.
3. Attempts that began before the last recorded outcome and fail count as
   one failure, not one each: requests that were all waiting on a server
   that went away do not double the delay once per request.
4. An answer (``succeeded``) ends the outage and opens the door.
5. Logged once when an outage starts (what failed, how) and once when it
   ends (after how long, how many attempts), at WARNING; the attempts between
   at DEBUG. Never per request.

Times are on ``timer``, monotonic seconds (a wall-clock step neither locks the
door nor opens it); ``jitter`` draws from [0, 1). Both are injectable for tests.

>>> now = [100.0]
>>> backoff = Backoff("the key set", timer=lambda: now[0], jitter=lambda: 1.0)
>>> backoff.failed(backoff.attempt(), "the key set cannot be fetched: ConnectError")
>>> backoff.failing, backoff.remaining(), backoff.unavailable("down").retry_after
(True, 1.0, 1)
>>> now[0] += 1.0
>>> backoff.failed(backoff.attempt(), "still down")
>>> backoff.remaining()
2.0
>>> backoff.succeeded()
>>> backoff.failing, backoff.remaining()
(False, 0.0)
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Final, NamedTuple

from ..engine.tokens import VerifierUnavailable

__all__ = ["FIRST_DELAY", "MAX_DELAY", "Attempt", "Backoff"]

logger = logging.getLogger("mcp_sse_server.auth")

FIRST_DELAY: Final = 1.0
"""Seconds the door closes for after a first failure (before jitter)."""

MAX_DELAY: Final = 4.0
"""The longest delay between attempts: a server that is back is seen at most this long after."""


class Attempt(NamedTuple):
    """One try at the authorization server: what ``failed`` needs to place it (rules 1 and 3)."""

    generation: int
    started: float


class Backoff:
    """The door to one authorization server's ``what`` (rules in the module docstring)."""

    __slots__ = ("_failures", "_generation", "_outage_started", "_until", "jitter", "timer", "what")

    def __init__(
        self,
        what: str,
        *,
        timer: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.what = what
        self.timer = timer
        self.jitter = jitter
        self._failures = 0
        self._generation = 0  # outcomes recorded so far (rule 3)
        self._until = 0.0
        self._outage_started = 0.0

    @property
    def failing(self) -> bool:
        """True from a failure until the next answer."""
        return self._failures > 0

    def remaining(self) -> float:
        """Seconds until the next attempt may go (0: now)."""
        return max(0.0, self._until - self.timer()) if self._failures else 0.0

    def attempt(self) -> Attempt:
        """Note an attempt starting now."""
        return Attempt(self._generation, self.timer())

    def failed(self, attempt: Attempt, reason: str) -> None:
        """``attempt`` got no usable answer (``reason`` says how, for the log: never a token)."""
        if attempt.generation != self._generation:
            logger.debug("%s (an attempt already counted)", reason)
            return
        self._generation += 1
        self._failures += 1
        if self._failures == 1:
            self._outage_started = attempt.started
            logger.warning("%s; until it answers, tokens that need it are answered 503", reason)
        else:
            logger.debug("%s (attempt %d)", reason, self._failures)
        # (The exponent is capped before it is computed: a long outage makes no huge number.)
        delay = min(MAX_DELAY, FIRST_DELAY * 2.0 ** min(self._failures - 1, 16))
        self._until = attempt.started + delay * (0.5 + 0.5 * self.jitter())

    def succeeded(self) -> None:
        """The authorization server answered: the outage, if any, is over."""
        if self._failures:
            logger.warning(
                "%s answers again, after %.1f s out of reach (failed attempts: %d)",
                self.what,
                self.timer() - self._outage_started,
                self._failures,
            )
        self._generation += 1
        self._failures = 0
        self._until = 0.0

    def unavailable(self, reason: str) -> VerifierUnavailable:
        """The error for a request that cannot be decided now: retry once the door opens."""
        return VerifierUnavailable(reason, retry_after=self.remaining())
