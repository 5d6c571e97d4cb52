"""What ``call`` answers when the server asks its user something mid-call: elicitation forms (asked
on a terminal or answered by flags), URL-mode elicitations, and sampling requests, which it refuses.

Rules:

1. The client declares elicitation, form and URL mode, always: every question gets the answer the
   user chose, or ``cancel`` and a command that fails saying what to give (rule 4).
2. Flags first: ``--decline`` / ``--cancel`` answer every question so; ``--answer FIELD=VALUE``
   (repeatable) and ``--accept`` accept a form, each value read as the form's schema types its field
   (``answers.py``), the schema's defaults filling the fields not given.
3. On a terminal (stdin is a TTY) the rest is asked (``answers.ask_form``). Prompts go to stderr,
   so stdout holds the result alone; they are read off the event loop, in a daemon thread, so the
   connection is served while the user types and Ctrl-C never waits for a line.
4. Without a terminal, a form the flags do not answer (no flag at all, a required field with neither
   value nor default, a value that does not fit) gets ``cancel``, and once the call is over the
   command fails with exit status 2, naming the form's fields and the flags: the tool is never
   handed a guessed answer, and stdout stays empty.
5. URL mode shows the message, the full URL and its host (warning on a punycode name) and never
   opens it. It is accepted (the user agrees to open it) by Enter on a terminal or by
   ``--accept-url``; without either it is declined.
6. Sampling is not declared: this command runs no model, and a tool that can do without one should
   be free to. A server that asks anyway gets its revision's missing-capability error, which
   :func:`explain_refusal` turns into a sentence; a program with a model gives ``McpClient`` a
   ``sampling_handler``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .answers import AnswerError, Field, Reader, Writer, ask_form, form_fields, printable
from .reach import ServerSpec

if TYPE_CHECKING:
    import asyncio

    from ..client.base import McpClient

T = TypeVar("T")


def terminal() -> tuple[Reader | None, Writer]:
    """The user's terminal: a reader when stdin is one (None otherwise), and a writer to stderr."""

    def write(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    if not sys.stdin.isatty():
        return None, write

    def read(prompt: str) -> str | None:
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.readline()
        return line.rstrip("\r\n") if line else None

    return read, write


async def off_loop(work: Callable[[], T]) -> T:
    """``work()`` in a daemon thread: a prompt blocks, the connection must not, and an interrupted
    command must not wait for a line that never comes (an executor thread would be joined at exit)."""
    import asyncio
    import contextlib
    import threading

    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def run() -> None:
        try:
            value, error = work(), None
        except BaseException as raised:  # (handed to the awaiting task, which raises it)
            value, error = None, raised
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="mcp-sse-server prompt", daemon=True).start()
    return await done


class Answerer:
    """The elicitation handler ``call`` gives its client (rules 1 to 5). ``problem`` is what the
    flags left unanswered without a terminal (rule 4), for the command to fail with afterwards."""

    def __init__(
        self,
        asker: str,
        *,
        given: Mapping[str, str],
        action: str | None,
        accept_url: bool,
        read: Reader | None,
        write: Writer,
        before_asking: Callable[[], None] = lambda: None,
    ) -> None:
        self.asker = asker
        self.given = dict(given)
        self.action = action  # "accept", "decline", "cancel" or None (a flag chose nothing)
        self.accept_url = accept_url
        self.read = read
        self.write = write
        self.before_asking = before_asking
        self.problem: str | None = None
        self.used: set[str] = set()
        self._turn: asyncio.Lock | None = None

    def attach(self, client: McpClient) -> McpClient:
        """``client`` with this handler, declaring form and URL mode (rule 1)."""
        client.elicitation_handler = self
        client.elicitation_url = True
        return client

    def unused(self) -> list[str]:
        """The ``--answer`` fields no form asked for."""
        return [name for name in self.given if name not in self.used]

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:  # one question at a time on the terminal
            self.before_asking()
            if params.get("mode") == "url":
                return await self._url(params)
            return await self._form(params)

    async def _form(self, params: dict[str, Any]) -> dict[str, Any]:
        message = printable(str(params.get("message", "")))
        fields = form_fields(params.get("requestedSchema"))
        self.write(f"{self.asker} asks: {message}")
        for field in fields:
            self.write(f"  {field.describe()}")
        if self.action in ("decline", "cancel"):
            self.write(f"  answered {self.action} (--{self.action})")
            return {"action": self.action}
        content: dict[str, Any] = {}
        for field in fields:
            if field.name not in self.given:
                continue
            self.used.add(field.name)
            try:
                content[field.name] = field.read(self.given[field.name])
            except AnswerError as error:
                return self._cancel(f'{self.asker} asks "{message}": --answer {field.name}: {error}')
        read = self.read
        if read is not None:
            decided = self.action == "accept" or bool(content)
            return await off_loop(lambda: ask_form(fields, read, self.write, given=content, decided=decided))
        missing = [f.name for f in fields if f.required and f.default is None and f.name not in content]
        wanted = " ".join(f"--answer {name}=VALUE" for name in missing)
        if self.action is None and not content:
            return self._cancel(
                f'{self.asker} asks "{message}" ({_listed(fields) or "no fields"}) and there is no terminal '
                f"to ask on: answer with {wanted or '--accept'}, or --decline / --cancel"
            )
        if missing:
            return self._cancel(
                f'{self.asker} asks "{message}": no value for the required '
                f"{'field' if len(missing) == 1 else 'fields'} {', '.join(missing)}: add {wanted} "
                "(or --decline / --cancel)"
            )
        self.write("  answered accept" + (" (--accept)" if not content else " (--answer)"))
        return {"action": "accept", "content": content}

    def _cancel(self, problem: str) -> dict[str, Any]:
        """Rule 4: the tool gets ``cancel``; the first problem is the command's error."""
        if self.problem is None:
            self.problem = problem
        self.write("  answered cancel")
        return {"action": "cancel"}

    async def _url(self, params: dict[str, Any]) -> dict[str, Any]:
        from urllib.parse import urlsplit

        url = str(params.get("url", ""))
        self.write(f"{self.asker} asks you to open a web page: {printable(str(params.get('message', '')))}")
        self.write(f"  {printable(url)}")
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            host = ""
        if host:
            self.write(f"  (on {host}{_punycode_warning(host)})")
        if self.action in ("decline", "cancel"):
            self.write(f"  answered {self.action} (--{self.action})")
            return {"action": self.action}
        if self.accept_url:
            self.write("  answered accept (--accept-url); open it yourself, this command does not")
            return {"action": "accept"}
        read = self.read
        if read is None:
            self.write("  answered decline: there is no terminal to confirm on (--accept-url accepts)")
            return {"action": "decline"}
        line = await off_loop(
            lambda: read("Open it yourself, then press Enter to accept (d declines, Ctrl-D cancels): ")
        )
        if line is None:
            return {"action": "cancel"}
        return {"action": "decline" if line.strip().lower().startswith("d") else "accept"}


def _punycode_warning(host: str) -> str:
    """What an internationalized host name really reads as (a look-alike may hide in it), or nothing."""
    if not any(label.startswith("xn--") for label in host.split(".")):
        return ""
    try:
        shown = host.encode("ascii").decode("idna")
    except UnicodeError:
        shown = "an unreadable name"
    return f", which reads {printable(shown)}: check every character"


def _listed(fields: list[Field]) -> str:
    return ", ".join(field.name + (" (required)" if field.required else "") for field in fields)


def answering(spec: ServerSpec, answerer: Answerer) -> ServerSpec:
    """``spec`` whose clients ask ``answerer`` what their server asks."""
    wrapped = ServerSpec(spec.label, lambda: answerer.attach(spec.make()))
    wrapped.mode = spec.mode
    return wrapped


def explain_refusal(error: BaseException) -> str | None:
    """Rule 6: one sentence for a call that failed because the tool asked for a model, else None."""
    from ..engine.jsonrpc import MISSING_CLIENT_CAPABILITY, McpError

    if isinstance(error, McpError) and error.code == MISSING_CLIENT_CAPABILITY and "sampling" in str(error):
        return (
            "it asked for a model completion (sampling/createMessage), and this command runs no model: "
            "call it from a client that has one (McpClient(sampling_handler=...))"
        )
    return None
