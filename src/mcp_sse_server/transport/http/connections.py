"""Connection limits for ``McpHttpServer.bind``: request head size and count, read timeouts, idle timeout, a cap.

uvicorn's httptools protocol enforces none of these (its one timer closes a
keep-alive connection after a response; httptools buffers a header of any
size), so ``bind`` serves with ``protocol_class(limits)``: a small subclass
of uvicorn's ``HttpToolsProtocol``. The rules, with the ``HttpLimits`` field
that sets each:

* Head size (``max_header_bytes``). While a request head (request line and
  headers) is being read, bytes are counted as they arrive, before the parser
  sees them (httptools keeps a header's name and value until they are
  complete, so its callbacks would see a huge header too late). A read that
  would take the head past the limit is fed only up to it; if the head is
  still incomplete there, the answer is 431 and the connection is closed. A
  head that begins in the same read as the end of the previous (pipelined)
  request is counted from the next read, so it can reach twice the limit.
* Header count (``max_header_count``): checked once, when the head is
  complete (the size limit bounds it meanwhile); 431 and close beyond it.
* Timeouts. One watchdog per server looks at every connection every quarter
  of the shortest timeout and compares counters each connection bumps on
  reads and completed heads, so nothing is armed or cancelled per request;
  a timeout fires up to a quarter of the shortest timeout late. Each look
  finds a connection in one of four states:

  - reading a body (headers done, body incomplete): ``body_timeout`` of
    silence, then 408 (unless a response has started) and close; the clock
    stops while uvicorn itself has paused reading (its back-pressure);
  - response in flight (and not reading a body): never timed out, since an
    SSE stream lives as long as its session;
  - reading a head (some of it arrived): the whole head within
    ``header_timeout``, then 408 and close;
  - idle (a new connection, or a keep-alive one after its response):
    ``connection_idle_timeout`` of silence, then close without an answer.

* Connection cap (``max_connections``, lowered to the file-descriptor limit
  minus 64). A connection accepted while that many are open (refused ones
  still lingering count; shed ones not yet closed do not) makes room by
  shedding one idle connection, the first that exists of:

  1. a connection that has not sent a byte since it was accepted, oldest
     first. A flood of silent connections thus sheds its own oldest members,
     and a client that sends its request right after connecting (the one
     just admitted included) is shed only if that many connections arrive
     between its connect and its first byte;
  2. the longest-idle keep-alive connection: a response completed, no byte
     of a next request (and nothing of that response left unsent), idle as
     long as the watchdog has measured, to a tick;
  3. none: the new connection gets 503 and is closed.

  Never shed: a connection reading a head or a body, a request in flight, an
  SSE stream (a response in flight), a refused one lingering. A shed
  connection is closed at once without an answer: it asked nothing, or it
  is between requests, where HTTP/1.1 lets either side close (a client
  reusing it at that very moment sees the close, as with an idle timeout).
  Finding one costs nothing per request: silent connections are kept in
  accept order (added and dropped once per connection; one found to have
  sent bytes is dropped when it reaches the front), and keep-alive ones are
  found, when the cap is hit and no silent one is left, by one pass over the
  open connections that queues every one it finds, longest idle first, for
  the next arrivals (until the watchdog's next look). A pass that finds none
  is not repeated for ``_RESCAN`` seconds (arrivals meanwhile get 503), so a
  cap full of busy connections costs no pass per refusal. Shedding and
  refusals are logged together, at most once a second, with their counts.
* Every refusal (431, 408, 503, and the 400 for an unparseable request) is a
  JSON-RPC error body with ``connection: close``. A request still in flight
  on the connection is abandoned (its app sees a disconnect); if its response
  has already started, the connection is closed without an answer. The
  server then reads and
  discards what the client still sends, for up to ``_LINGER`` seconds and
  ``_DRAIN_BYTES`` bytes, so closing does not reset the connection before the
  client read the answer. At most ``_MAX_LINGERING`` connections linger at
  once; beyond that a refused connection is closed at once.

Per request this costs three extra Python calls (``data_received``,
``on_headers_complete``, ``on_message_complete``) and a few counters; per
connection, an entry in the accept-ordered dict of silent ones.

Every reach into uvicorn internals is in ``LimitedHttpToolsProtocol`` and
the three aliases of uvicorn methods just above it; the uvicorn version range
is pinned in pyproject.toml accordingly.
"""

from __future__ import annotations

import asyncio
import http
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .errors import INVALID_REQUEST, SERVER_BUSY, error_body
from .limits import HttpLimits

if TYPE_CHECKING:
    from ...engine.observe import Observer

__all__ = ["LimitedHttpToolsProtocol", "effective_max_connections", "protocol_class"]

logger = logging.getLogger("mcp_sse_server.http")

_LINGER: Final = 1.0
_DRAIN_BYTES: Final = 256 * 1024
_MAX_LINGERING: Final = 64
_FD_RESERVE: Final = 64
_RESCAN: Final = 0.1  # seconds before a pass for keep-alive connections to shed that found none is repeated
_REPORT: Final = 1.0  # seconds between log lines about the cap

# Watchdog states, the low bits of a connection's progress key.
_IDLE: Final = 0
_HEAD: Final = 1
_BODY: Final = 2


def refusal(status: int, code: int, message: str, extra: bytes = b"") -> bytes:
    """The bytes of a complete HTTP/1.1 answer with a JSON-RPC error body that closes the connection."""
    body = error_body(code, message)
    reason = http.HTTPStatus(status).phrase.encode()
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n%s\r\n%s"
        % (status, reason, len(body), extra, body)
    )


def effective_max_connections(limits: HttpLimits) -> int:
    """``max_connections``, lowered (with a warning) to leave ``_FD_RESERVE`` descriptors under the process limit."""
    wanted = limits.max_connections
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return wanted
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or wanted <= soft - _FD_RESERVE:
        return wanted
    fitted = max(1, soft - _FD_RESERVE)
    logger.warning(
        "max_connections=%d does not fit the process's file-descriptor limit (%d); using %d "
        "(raise the limit with ulimit -n to allow more)",
        wanted,
        soft,
        fitted,
    )
    return fitted


class _Shared:
    """What the connections of one server share: the limits, the prepared refusals and the watchdog."""

    def __init__(self, limits: HttpLimits, observer: Observer | None = None) -> None:
        self.limits = limits
        self.observer = observer  # telemetry: told of each shed or refused connection (engine/observe.py)
        self.max_connections = effective_max_connections(limits)
        self.tick = min(limits.header_timeout, limits.body_timeout, limits.connection_idle_timeout) / 4
        self.lingering = 0
        self.handle: asyncio.TimerHandle | None = None
        self.connections: set[Any] = set()
        # Shedding (the "Connection cap" rule): admitted connections in accept order, until they close or are
        # found to have sent bytes; the last pass's keep-alive ones with their read count then, longest idle last.
        self.silent: OrderedDict[LimitedHttpToolsProtocol, None] = OrderedDict()
        self.kept_alive: list[tuple[LimitedHttpToolsProtocol, int]] = []
        self.pass_after = 0.0
        self.shedding = 0  # shed, connection_lost still to come
        self.shed = 0  # these two: counted for the next log line
        self.refused = 0
        self.report: asyncio.TimerHandle | None = None
        self.head_too_large = refusal(
            431,
            INVALID_REQUEST,
            f"Request header fields too large: the request line and headers may take {limits.max_header_bytes} bytes",
        )
        self.too_many_headers = refusal(
            431, INVALID_REQUEST, f"Too many header fields: at most {limits.max_header_count} are accepted"
        )
        self.head_timeout = refusal(
            408,
            INVALID_REQUEST,
            f"Request timeout: the request headers did not arrive within {limits.header_timeout:g} s",
        )
        self.body_timeout = refusal(
            408, INVALID_REQUEST, f"Request timeout: the request body stopped arriving for {limits.body_timeout:g} s"
        )
        self.busy = refusal(
            503, SERVER_BUSY, "Server busy: too many open connections; try again later", b"retry-after: 1\r\n"
        )
        self.bad_request = refusal(400, INVALID_REQUEST, "Invalid HTTP request")

    def watch(self, connections: set[Any], loop: asyncio.AbstractEventLoop) -> None:
        """Start the watchdog unless it runs (it stops itself once no connection is open)."""
        self.connections = connections
        if self.handle is None:
            self.handle = loop.call_later(self.tick, self.sweep, loop)

    def sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        self.handle = None
        self.kept_alive.clear()  # a tick old: the next pass measures again
        if not self.connections:
            return
        tick = self.tick
        for connection in list(self.connections):
            check = getattr(connection, "watchdog_check", None)
            if check is not None:
                check(tick)
        self.handle = loop.call_later(tick, self.sweep, loop)

    # --- the cap ----------------------------------------------------------------------------------

    def make_room(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Shed one idle connection by the module's rule; False when none may be shed."""
        silent = self.silent
        while silent:
            connection, _ = silent.popitem(last=False)
            if connection.reads == 0 and connection.shed_if_idle():
                self.shed_one(loop)
                return True
        kept = self.kept_alive
        if not kept:
            now = loop.time()
            if now < self.pass_after:
                return False
            kept = self.kept_alive = self.keep_alive_idle()
            if not kept:
                self.pass_after = now + _RESCAN
                return False
        while kept:
            connection, reads = kept.pop()
            if connection.reads == reads and connection.shed_if_idle():
                self.shed_one(loop)
                return True
        return False

    def keep_alive_idle(self) -> list[tuple[LimitedHttpToolsProtocol, int]]:
        """Every open keep-alive connection between requests, with its read count, longest idle last."""
        found = []
        for connection in self.connections:
            idle = getattr(connection, "kept_alive_for", None)
            quiet = -1.0 if idle is None else idle()
            if quiet >= 0:
                found.append((quiet, connection))
        found.sort(key=lambda pair: pair[0])
        return [(connection, connection.reads) for _, connection in found]

    def shed_one(self, loop: asyncio.AbstractEventLoop) -> None:
        self.shed += 1
        if self.observer is not None:
            self.observer.rejected("shed")
        self.tell_later(loop)

    def refused_one(self, loop: asyncio.AbstractEventLoop) -> None:
        self.refused += 1
        if self.observer is not None:
            self.observer.rejected("busy")
        self.tell_later(loop)

    def tell_later(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.report is None:
            self.report = loop.call_later(_REPORT, self.tell)

    def tell(self) -> None:
        """The log line about the cap: what was shed and refused since the previous one (at most a second)."""
        self.report = None
        logger.warning(
            "max_connections (%d) reached: shed %d idle connections, refused %d with 503 in the last second",
            self.max_connections,
            self.shed,
            self.refused,
        )
        self.shed = self.refused = 0


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a refused request (httptools wraps it)."""


# uvicorn's methods on the per-request path, called directly (cheaper than super() on every request).
_feed = HttpToolsProtocol.data_received
_headers_complete = HttpToolsProtocol.on_headers_complete
_message_complete = HttpToolsProtocol.on_message_complete


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with this module's limits; ``protocol_class`` makes one per server.

    uvicorn internals used here, and only here (checked against uvicorn
    0.54, the pinned range): the overridden callbacks ``connection_made``,
    ``connection_lost``, ``data_received``, ``on_headers_complete``,
    ``on_message_complete`` and ``send_400_response`` (which uvicorn's
    ``data_received`` calls on a parser error, including one raised by a
    callback); the attributes ``transport``, ``loop``, ``connections`` (the
    server's open connections), ``headers`` (this request's), ``flow``
    (``read_paused``) and ``cycle`` (the current request: ``response_started``,
    ``response_complete``, ``disconnected``, ``message_event``).
    """

    _shared: _Shared  # set on the per-server subclass

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shared = self._shared
        self.max_head = shared.limits.max_header_bytes
        self.max_header_count = shared.limits.max_header_count
        # Head bytes still allowed; -1 while a body is being read. max_head: no byte of a head yet.
        self.head_left = self.max_head
        self.reads = 0  # data_received calls
        self.heads = 0  # request heads completed
        self.refused = False
        self.pending_refusal: bytes | None = None
        self.drained = 0
        self.linger: asyncio.TimerHandle | None = None
        self.watch_key = -1
        self.quiet = 0.0
        self.was_shed = False

    # --- the connection -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        shared = self._shared
        over = len(self.connections) - shared.shedding >= shared.max_connections  # shed ones are on their way out
        super().connection_made(transport)  # type: ignore[arg-type, unused-ignore]
        loop = self.loop
        shared.watch(self.connections, loop)
        if over and not shared.make_room(loop):
            shared.refused_one(loop)
            self.refuse(shared.busy)
            return
        shared.silent[self] = None

    def connection_lost(self, exc: Exception | None) -> None:
        shared = self._shared
        if self.linger is not None:
            self.linger.cancel()
            self.linger = None
            shared.lingering -= 1
        if self.was_shed:
            self.was_shed = False
            shared.shedding -= 1
        shared.silent.pop(self, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.reads += 1
        left = self.head_left
        if left >= 0:
            if len(data) > left:
                self._over_budget(data)
                return
            self.head_left = left - len(data)
        _feed(self, data)

    def _over_budget(self, data: bytes) -> None:
        """A read that does not fit the head budget (rare): feed it up to the limit, then decide."""
        if self.refused:
            self.drained += len(data)
            if self.drained > _DRAIN_BYTES:
                self.transport.close()
            return
        while True:
            left = self.head_left
            if left < 0 or len(data) <= left:
                if left >= 0:
                    self.head_left = left - len(data)
                super().data_received(data)
                return
            self.head_left = 0
            if left:
                super().data_received(data[:left])  # may complete the head, even the whole request
            if self.refused or self.transport.is_closing():
                return
            if self.head_left == 0:  # the same head, still incomplete at the limit
                self.refuse(self._shared.head_too_large)
                return
            data = data[left:]

    # --- parser callbacks -------------------------------------------------------------------------

    def on_headers_complete(self) -> None:
        self.head_left = -1
        self.heads += 1
        if len(self.headers) > self.max_header_count:
            self.pending_refusal = self._shared.too_many_headers
            raise _Refused
        self._start_cycle()

    # uvicorn's: the request's cycle, started or queued behind the one in flight (fast_protocol.py has another).
    _start_cycle = _headers_complete

    def on_message_complete(self) -> None:
        self.head_left = self.max_head
        self._end_body()

    # uvicorn's: the request's body is complete (fast_protocol.py has another).
    _end_body = _message_complete

    def send_400_response(self, msg: str) -> None:
        # uvicorn's data_received calls this for any parser error, ours (_Refused) included.
        refusal = self.pending_refusal or self._shared.bad_request
        self.pending_refusal = None
        self.refuse(refusal)

    # --- refusing ---------------------------------------------------------------------------------

    def refuse(self, answer: bytes) -> None:
        """Answer ``answer`` (unless a response already started), then close after a short linger.

        A request in flight on this connection is abandoned: its app sees a
        disconnect and can no longer write.
        """
        if self.refused:
            return
        self.refused = True
        self.head_left = 0  # every later read goes to _over_budget, which discards it
        transport = self.transport
        if transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
            if cycle.response_started:
                transport.close()  # an answer now would land in the middle of that response
                return
        transport.write(answer)
        shared = self._shared
        if shared.lingering >= _MAX_LINGERING:
            transport.close()
            return
        shared.lingering += 1
        self.linger = self.loop.call_later(_LINGER, self._end_linger)

    def _end_linger(self) -> None:
        if self.linger is not None:
            self.linger = None
            self._shared.lingering -= 1
        self.transport.close()

    # --- shedding ---------------------------------------------------------------------------------

    def kept_alive_for(self) -> float:
        """How long this keep-alive connection has been idle between requests (as the watchdog measured it,
        0 if it has not looked since); -1 when it is not idle that way: a request or response under way,
        bytes of the next request read, refused, closing, or the last response not all sent yet."""
        cycle = self.cycle
        if (
            self.refused
            or cycle is None
            or not cycle.response_complete
            or self.head_left != self.max_head
            or self.transport.is_closing()
            or self.transport.get_write_buffer_size()
        ):
            return -1.0
        return self.quiet if self.watch_key == self.reads * 4 + _IDLE else 0.0

    def shed_if_idle(self) -> bool:
        """Close this connection to make room, unless it is busy after all (see ``make_room``); True if closed.

        The caller checked its read count, so a request has not begun since it was found idle.
        """
        cycle = self.cycle
        if (
            self.refused
            or (cycle is not None and not cycle.response_complete)
            or self.head_left != self.max_head
            or self.transport.is_closing()
        ):
            return False
        self.was_shed = True
        self._shared.shedding += 1
        # Nothing is left to send, so abort() closes as close() would, but at once over TLS too (no
        # close_notify exchange the peer may never answer, holding the descriptor meanwhile).
        self.transport.abort()
        return True

    # --- the watchdog's look --------------------------------------------------------------------

    def watchdog_check(self, tick: float) -> None:
        """One look by the watchdog: note progress, or close a connection stuck too long in its state."""
        if self.refused:
            return
        limits = self._shared.limits
        left = self.head_left
        cycle = self.cycle
        if left < 0:
            if self.flow is not None and self.flow.read_paused:
                self.watch_key = -1  # uvicorn holds the body back: not the client's silence
                return
            key, timeout = self.reads * 4 + _BODY, limits.body_timeout
        elif cycle is not None and not cycle.response_complete:
            self.watch_key = -1
            return
        elif left < self.max_head:
            key, timeout = self.heads * 4 + _HEAD, limits.header_timeout
        else:
            key, timeout = self.reads * 4 + _IDLE, limits.connection_idle_timeout
        if key != self.watch_key:
            self.watch_key = key
            self.quiet = 0.0
            return
        self.quiet += tick
        if self.quiet < timeout:
            return
        state = key & 3
        if state == _IDLE:
            self.transport.close()
        elif state == _HEAD:
            self.refuse(self._shared.head_timeout)
        else:
            self.refuse(self._shared.body_timeout)


def protocol_class(
    limits: HttpLimits,
    observer: Observer | None = None,
    base: type[LimitedHttpToolsProtocol] | None = None,
    attributes: dict[str, Any] | None = None,
) -> type[asyncio.Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)`` of one server with ``limits`` (and telemetry):
    a subclass of ``base`` (``LimitedHttpToolsProtocol`` unless given) with ``attributes`` besides."""
    base = LimitedHttpToolsProtocol if base is None else base
    shared = _Shared(limits, observer)
    return type(base.__name__, (base,), {**(attributes or {}), "_shared": shared})
