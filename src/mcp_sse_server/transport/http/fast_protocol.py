"""The fast path: requests to the MCP endpoint answered without uvicorn's per-request ASGI cycle.

``McpHttpServer.bind`` (and ``on_socket``, so every worker process) serves
with ``FastHttpToolsProtocol``, a subclass of the limited protocol of
``connections.py`` (itself uvicorn's httptools protocol with our limits).
The rules:

1. Which requests take it: HTTP/1.1, no ``Upgrade``, the method POST, GET or
   DELETE, and a request target that is exactly the endpoint's path (bytes
   equal: no query string, no percent escape). Everything else (OAuth
   metadata, the 2024-11-05 transport, a query string, HEAD, HTTP/1.0) goes
   through uvicorn's own ``RequestResponseCycle``, unchanged. Both paths call
   the same ``McpHttpApp`` (routing, security, transports): only the server's
   side of the ASGI exchange differs.
2. What the fast path does not build per request: uvicorn's scope (a
   per-connection template, made at the connection's first fast request, is
   copied instead: the client, server and scheme are the connection's), its ``asyncio.Event`` (the cycle is its own
   ``message_event``, with a future made only when ``receive`` must wait),
   the done callback of its task (the task leaves the server's task set as
   it ends), the keep-alive timer armed after every
   response (the watchdog of ``connections.py`` enforces the idle timeout for
   every connection), the regular-expression check of every response header
   (one count of CR and LF over the whole head instead: a header that would
   split the response is refused with the same RuntimeError), and a second
   write: a response with a ``Content-Length`` writes its head with its
   first body chunk, in one ``transport.write``; a reply the app hands over
   whole (``asgi.WHOLE_RESPONSE``, which this cycle's ``send`` takes) is one
   message and one write. A streamed response (no length, so chunked)
   writes its head at once.
3. When a request starts: once the read that completed its head has been
   parsed (never inside a parser callback), so the body that came with the
   head is there, with ``engine.protocol.start_eagerly``. On Python 3.12
   and later its first step runs at once: a request answered without
   suspending writes its reply before ``data_received`` returns and keeps
   no task; one that suspends goes on as its task, tracked in the server's
   task set, as on 3.11 (where every request is a task started by the
   loop). Pipelined requests queued behind it start as ordinary tasks.
4. What stays as uvicorn does it, attribute for attribute (``connections.py``
   and uvicorn's ``shutdown`` and ``connection_lost`` read the cycle):
   pipelined requests
   queued and started in order as each response completes, with reading
   paused meanwhile; a request body over 64 KiB unread pauses reading until
   the app's next ``receive``; ``send`` waits while the transport's buffer is
   full; ``Expect: 100-continue`` is answered at the app's first ``receive``
   that waits for body bytes (never, if the app answers first: a 413 for a
   declared length over the limit reads nothing); ``keep_alive`` follows the parser, HTTP/1.1's
   default, and a graceful shutdown clears it so the connection closes after
   the response in flight; a response that fails before it starts is a 500,
   after that the connection is closed.
5. A body that is whole when its request starts (the usual small POST,
   which came in the read that completed its head) is offered to the
   endpoint on the request's view, ``McpRequest.body``: the endpoint takes
   it without a ``receive``, its message dict and its copy. ``receive``
   still returns it first (a middleware reading the body, or a watcher
   waiting for the client to leave, sees the exchange as ASGI describes it),
   and ``Expect: 100-continue`` is moot: the body is here.
6. Turned off with ``HttpSettings(fast_path=False)``: then the limited
   protocol of ``connections.py`` serves every request through uvicorn's cycle.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ...engine.protocol import start_eagerly
from .asgi import WHOLE_RESPONSE
from .connections import LimitedHttpToolsProtocol, protocol_class
from .request import SCOPE_KEY, McpRequest

if TYPE_CHECKING:
    from ...engine.observe import Observer
    from .asgi import ASGIApp, Message
    from .limits import HttpLimits

__all__ = ["FastCycle", "FastHttpToolsProtocol", "fast_protocol_class"]

logger = logging.getLogger("mcp_sse_server.http")

_FAST_METHODS: Final = {b"POST": "POST", b"GET": "GET", b"DELETE": "DELETE"}  # (and the scope's name of each)
_HIGH_WATER: Final = 65536  # unread request body bytes before reading pauses (uvicorn's figure)
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
_LAST_CHUNK: Final = b"0\r\n\r\n"
_CLOSE_LINE: Final = b"connection: close\r\n"
_CHUNKED_LINE: Final = b"transfer-encoding: chunked\r\n"
_ERROR_500: Final = (
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 21\r\nconnection: close\r\n\r\nInternal Server Error"
)


class FastCycle:
    """One request on the fast path: the ``receive`` and ``send`` of its ASGI exchange (rules 2 to 4).

    Its public attributes are those of uvicorn's ``RequestResponseCycle`` that
    the protocols read and write (``connections.py`` says which)."""

    __slots__ = (
        "body",
        "disconnected",
        "expected_length",
        "flow",
        "head",
        "is_set",
        "keep_alive",
        "more_body",
        "on_response",
        "response_complete",
        "response_started",
        "scope",
        "streamed",
        "task",
        "tasks",
        "transport",
        "waiter",
        "waiting_for_100_continue",
    )

    def __init__(self, scope: dict[str, Any], protocol: FastHttpToolsProtocol, keep_alive: bool) -> None:
        self.scope = scope
        self.transport = protocol.transport
        self.flow = protocol.flow
        self.on_response: Any = protocol.on_response_complete
        self.tasks = protocol.tasks
        self.task: asyncio.Task[None] | None = None
        self.is_set = False
        self.waiter: asyncio.Future[None] | None = None
        self.keep_alive = keep_alive
        # Whether Expect: 100-continue is still to be answered: looked up at the first receive that
        # must wait for the body (the protocol does not check every header for it).
        self.waiting_for_100_continue = True
        self.disconnected = False
        self.body: bytes | bytearray = b""  # (the first chunk as it came; later ones join a bytearray)
        self.more_body = True
        self.response_started = False
        self.response_complete = False
        self.head: bytes | None = None  # a Content-Length response's head, written with its first chunk
        self.streamed = False
        self.expected_length = 0

    @property
    def message_event(self) -> FastCycle:
        """The request's message event (``set``, ``is_set``, ``wait``: what uvicorn's ``asyncio.Event``
        is to its cycle) is the cycle itself. A property, not an attribute: an attribute pointing at
        its own object would make every request a reference cycle, freed only by the collector (whose
        pauses then held every request in flight: bench/README.md, "100 sessions")."""
        return self

    async def run_asgi(self, app: ASGIApp) -> None:
        """Run the app for this request (uvicorn's ``_start_asgi_task`` makes it the request's task)."""
        scope = self.scope
        if not self.more_body:
            # The whole body came before the app started: offered on the request's view (rule 5),
            # so the endpoint reads it without a receive. The body stays here for ``receive`` too.
            body = self.body
            scope[SCOPE_KEY] = McpRequest(scope, body if type(body) is bytes else bytes(body))
        try:
            await app(scope, self.receive, self.send)
        except BaseException as error:
            logger.error("the MCP endpoint failed outside its own error handling", exc_info=error)
            if not self.response_started and not self.disconnected:
                self.response_started = True
                self.keep_alive = False
                self.transport.write(_ERROR_500)
                self._complete()
            else:
                self.transport.close()
            if not isinstance(error, Exception):
                raise
        else:
            if not self.response_complete and not self.disconnected:
                logger.error("the MCP endpoint returned without completing its response")
                self.transport.close()
        finally:
            self.on_response = _nothing
            self.tasks.discard(self.task)

    # --- the request's message event ---------------------------------------------------------

    def set(self) -> None:
        """Body bytes arrived, the body is complete, or the request ended: wake ``receive``."""
        self.is_set = True
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self) -> None:
        if not self.is_set:
            waiter = self.waiter = asyncio.get_running_loop().create_future()
            await waiter

    # --- ASGI ---------------------------------------------------------------------------------

    async def receive(self) -> Message:
        if self.waiting_for_100_continue:
            self.waiting_for_100_continue = False
            if not self.is_set and expects_continue(self.scope["headers"]) and not self.transport.is_closing():
                self.transport.write(_CONTINUE)
        if not self.disconnected and not self.response_complete:
            self.flow.resume_reading()
            if not self.is_set:
                await self.wait()
            self.is_set = False
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        body = self.body
        self.body = b""
        if type(body) is not bytes:
            body = bytes(body)
        return {"type": "http.request", "body": body, "more_body": self.more_body}

    async def send(self, message: Message) -> None:
        flow = self.flow
        if flow.write_paused and not self.disconnected:
            await flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            kind = message["type"]
            if kind == WHOLE_RESPONSE:
                self._whole(message["status"], message["headers"], message["body"])
            elif kind != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got {kind!r}")
            else:
                self._start(message["status"], message.get("headers", ()))
        elif not self.response_complete:
            if message["type"] != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got {message['type']!r}")
            self._body(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"Unexpected ASGI message {message['type']!r} after the response completed")

    def _start(self, status: int, headers: Any) -> None:
        self.response_started = True
        self.waiting_for_100_continue = False
        length = -1
        known = _HEADS.get(id(headers))
        if known is not None and known[0] is headers and known[1] == status and known[2] == headers:
            rendered = known[3]  # (a remembered list names no length, encoding or connection)
        else:
            lines = [STATUS_LINE[status]]
            plain = True
            for name, value in headers:
                name = name.lower()
                if name == b"content-length":
                    length = int(value)
                    plain = False
                elif name == b"connection":
                    plain = False
                    if b"close" in value.lower():
                        self.keep_alive = False
                elif name == b"transfer-encoding":
                    plain = False
                    continue  # ours to decide, from the length (every body here is chunked or has a length)
                lines.append(b"%s: %s\r\n" % (name, value))
            rendered = _head(lines)[:-2]
            if plain:
                _remember_head(headers, status, rendered)
        if not self.keep_alive:
            rendered += _CLOSE_LINE
        if length < 0 and status not in (204, 304):
            self.streamed = True
            rendered += _CHUNKED_LINE
        self.head = rendered + b"\r\n"  # written with the first body chunk, in one write
        if self.streamed:
            # A stream's first chunk usually follows in this step (an SSE stream sends its first
            # event with its head); one that does not come gets the head on its own, at the loop's
            # next turn, so a client waiting for the headers of a silent stream sees them.
            asyncio.get_running_loop().call_soon(self._head_alone)
        else:
            self.expected_length = max(length, 0)

    def _head_alone(self) -> None:
        head = self.head
        if head is not None and not self.disconnected:
            self.head = None
            self.transport.write(head)

    def _whole(self, status: int, headers: Any, body: bytes) -> None:
        """A complete response in one write (``WHOLE_RESPONSE``: its headers name no length,
        encoding or connection; the length is added here)."""
        self.response_started = True
        self.waiting_for_100_continue = False
        known = _HEADS.get(id(headers))
        if known is not None and known[0] is headers and known[1] == status and known[2] == headers:
            head = known[3]
        else:
            head = _whole_head(status, headers)
        length = b"content-length: %d\r\n\r\n" % len(body)
        if self.keep_alive:
            self.transport.write(head + length + body)
        else:
            self.transport.write(head + _CLOSE_LINE + length + body)
        self._complete()

    def _body(self, body: bytes, more_body: bool) -> None:
        head = self.head
        if self.streamed:
            data = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
            if not more_body:
                data += _LAST_CHUNK
        else:
            left = self.expected_length - len(body)
            if left < 0:
                raise RuntimeError("Response content longer than Content-Length")
            if not more_body and left:
                raise RuntimeError("Response content shorter than Content-Length")
            self.expected_length = left
            data = body
        if head is not None:
            self.head = None
            data = head + data
        if data:
            self.transport.write(data)
        if not more_body:
            self._complete()

    def _complete(self) -> None:
        self.response_complete = True
        self.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()


# The fast path's send takes a whole response in one message (asgi.py).
setattr(FastCycle.send, WHOLE_RESPONSE, True)


def _head(lines: list[bytes]) -> bytes:
    """A response head from its lines, each ending CRLF (the blank line is added here); RuntimeError
    when a header would split it."""
    lines.append(b"\r\n")
    head = b"".join(lines)
    # Every line ends with the CRLF added here; any other CR or LF came from a header and would split it.
    if head.count(b"\n") != len(lines) or head.count(b"\r") != len(lines):
        raise RuntimeError("Invalid HTTP header: a name or value holds CR or LF")
    return head


# The heads of responses (status line and headers, without the length or a stream's own lines), by
# the identity of their header list: most replies and streams go out with one of a few constant
# lists (sse.py, replies.py), so each head is rendered and checked once, not per response. An
# entry keeps its list (so the id is not reused while it stands) and a copy of its items (so a
# list changed in place is rendered anew).
_HEADS: Final[dict[int, tuple[Any, int, list[tuple[bytes, bytes]], bytes]]] = {}
_HEADS_MAX: Final = 64  # full (lists made per reply, a session id's, come and go): it starts again


def _whole_head(status: int, headers: Any) -> bytes:
    """A whole response's status line and header lines (``_head``'s check), remembered by ``_HEADS``."""
    lines = [STATUS_LINE[status]]
    for name, value in headers:
        lines.append(b"%s: %s\r\n" % (name, value))
    head = _head(lines)[:-2]  # (the length line and the blank line follow it)
    _remember_head(headers, status, head)
    return head


def _remember_head(headers: Any, status: int, rendered: bytes) -> None:
    """Keep the head rendered from a header list that names no length, encoding or connection
    (``_HEADS``): a whole response's, or a stream's (``_start``) before its own lines."""
    if type(headers) is list:
        if len(_HEADS) >= _HEADS_MAX:
            _HEADS.clear()
        _HEADS[id(headers)] = (headers, status, list(headers), rendered)


def expects_continue(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request's headers (names in lower case) ask ``Expect: 100-continue``."""
    return any(name == b"expect" and value.lower() == b"100-continue" for name, value in headers)


def _nothing() -> None:
    pass


class FastHttpToolsProtocol(LimitedHttpToolsProtocol):
    """The limited protocol with the fast path for the endpoint (rules above); ``fast_protocol_class``
    makes one per server. Beyond what ``connections.py`` lists, it relies on uvicorn's
    ``on_message_begin`` (the scope it builds), ``on_headers_complete``, ``on_body``,
    ``on_message_complete``, ``_start_asgi_task`` (which runs a cycle's ``run_asgi`` as a tracked
    task), ``pipeline``, ``tasks`` and ``server_state``: for uvicorn's cycles, called as they are."""

    _endpoint: ASGIApp  # the three: set on the per-server subclass
    _target: bytes
    _template: dict[str, Any] | None = None  # (per connection: _scope_template)
    _ready: FastCycle | None = None  # a request whose head this read completed, to start after the parse

    def _scope_template(self) -> dict[str, Any]:
        """The connection's scope template, made at its first fast request (a connection that never
        sends one, such as an idle flood's, does not hold one: about 0.6 KB each)."""
        template = self._template = {
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
            "root_path": self.root_path,
            "path": self._target.decode("ascii"),
            "raw_path": self._target,
            "query_string": b"",
        }
        return template

    def on_message_begin(self) -> None:
        # uvicorn's scope waits until the head tells which path serves the request (_fall_back).
        self.url = b""
        self.headers = []

    def on_header(self, name: bytes, value: bytes) -> None:
        # uvicorn's without its Expect check on every header: the fast cycle looks for it only when
        # it must wait for a body (FastCycle.receive), _fall_back for uvicorn's cycle.
        self.headers.append((name.lower(), value))

    def _start_cycle(self) -> None:
        parser = self.parser
        method = _FAST_METHODS.get(parser.get_method())
        if method is None or self.url != self._target or parser.get_http_version() != "1.1" or parser.should_upgrade():
            self._fall_back()
            return
        scope = (self._template or self._scope_template()).copy()
        scope["method"] = method
        scope["headers"] = self.headers
        existing = self.cycle
        cycle = FastCycle(scope, self, parser.should_keep_alive())
        self.cycle = cycle  # type: ignore[assignment]
        if existing is None or existing.response_complete:
            self._ready = cycle  # started once this read is parsed (rule 3)
        else:
            # Pipelined: answered in order, each started when the one before it completes.
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, self._endpoint))  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        cycle = self._ready
        if cycle is not None:
            # After the parse, not inside a parser callback: the body that came with the head is
            # there, so a quick request answers in this step (eagerly, where Python can).
            self._ready = None
            if not self.transport.is_closing():
                task = start_eagerly(cycle.run_asgi(self._endpoint))
                if not task.done():
                    cycle.task = task
                    self.tasks.add(task)

    def _fall_back(self) -> None:
        """uvicorn's own cycle for this request: its scope (what its on_message_begin builds, around
        the URL and headers already read), then its on_headers_complete."""
        url, headers = self.url, self.headers
        HttpToolsProtocol.on_message_begin(self)
        self.url, self.headers, self.expect_100_continue = url, headers, expects_continue(headers)
        self.scope["headers"] = headers
        HttpToolsProtocol.on_headers_complete(self)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if cycle.__class__ is not FastCycle:
            HttpToolsProtocol._start_asgi_task(self, cycle, app)
            return
        task = cycle.task = self.loop.create_task(cycle.run_asgi(app))
        self.tasks.add(task)

    def on_body(self, body: bytes) -> None:
        cycle: Any = self.cycle
        if cycle.__class__ is not FastCycle:
            HttpToolsProtocol.on_body(self, body)
        elif not cycle.response_complete:
            held = cycle.body
            if not held:
                cycle.body = held = body  # the usual single chunk, kept as it came
            else:
                if type(held) is bytes:
                    held = cycle.body = bytearray(held)
                held += body
            if len(held) > _HIGH_WATER:
                self.flow.pause_reading()
            if cycle.waiter is None:  # (set() inlined: nothing waits yet for the usual body)
                cycle.is_set = True
            else:
                cycle.set()

    def _end_body(self) -> None:
        cycle: Any = self.cycle
        if cycle.__class__ is not FastCycle:
            HttpToolsProtocol.on_message_complete(self)
        elif not cycle.response_complete:
            cycle.more_body = False
            cycle.set()

    def on_response_complete(self) -> None:
        # uvicorn's, without its keep-alive timer (the watchdog closes idle connections).
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)


def fast_protocol_class(
    limits: HttpLimits, endpoint: ASGIApp, path: str, observer: Observer | None = None
) -> type[asyncio.Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)`` serving ``endpoint`` at ``path`` on the
    fast path, with every limit of ``connections.py`` (and telemetry)."""
    return protocol_class(
        limits,
        observer,
        base=FastHttpToolsProtocol,
        # (a staticmethod: an endpoint that is a plain function must not become a bound method of the class)
        attributes={"_endpoint": staticmethod(endpoint), "_target": path.encode("ascii")},
    )
