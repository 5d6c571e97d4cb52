"""``call`` answers what a tool asks: forms read from ``--answer`` or asked on a terminal (scripted
here through the reader/writer interface, and once through a real pseudo-terminal), URL-mode
elicitations, and sampling refused in one sentence. Servers are real: a file in a tmp dir, run in
process, over stdio and over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.commands import COMMAND_TIMEOUT, Cli
from fixtures.served import Served, default_signals
from mcp_sse_server.cli.answers import MAX_TRIES, AnswerError, Field, ask_form, form_fields, parse_answers
from mcp_sse_server.cli.elicit import Answerer
from mcp_sse_server.cli.errors import BadUsage

ASKER = '''\
import json

from mcp_sse_server import McpServer, RequestContext
from mcp_sse_server.engine.types import CreateMessageRequest, SamplingMessage

server = McpServer("asker")

COLOR = {
    "type": "object",
    "properties": {"color": {"type": "string", "enum": ["red", "green"]}},
    "required": ["color"],
}
BOOKING = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "guests": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
        "vegan": {"type": "boolean"},
        "extras": {
            "type": "array",
            "items": {"anyOf": [{"const": "w", "title": "Wine"}, {"const": "c", "title": "Cake"}]},
        },
    },
    "required": ["name", "guests"],
}


@server.tool
async def ask_color(ctx: RequestContext) -> str:
    """Asks for a color."""
    answer = await ctx.session.elicit("Pick a color", COLOR)
    return json.dumps([answer.action, answer.content])


@server.tool
async def book(ctx: RequestContext) -> str:
    """Asks for a booking."""
    answer = await ctx.session.elicit("Who, and how many?", BOOKING)
    return json.dumps([answer.action, answer.content])


@server.tool
async def sign_in(ctx: RequestContext) -> str:
    """Asks the user to open a page."""
    answer = await ctx.session.elicit_url("Sign in first", "https://login.example/start?id=7")
    return answer.action


@server.tool
async def summarize(ctx: RequestContext) -> str:
    """Asks the client's model."""
    reply = await ctx.session.create_message(CreateMessageRequest([SamplingMessage.user("hi")], 10))
    return str(reply)
'''


@pytest.fixture
def asker(tmp_path: Path) -> str:
    """The target naming ASKER, written into the commands' working directory."""
    (tmp_path / "asker.py").write_text(ASKER)
    return "asker.py:server"


def _result(done: subprocess.CompletedProcess[str]) -> list[object]:
    assert done.returncode == 0, done.stderr
    parsed = json.loads(done.stdout)
    assert isinstance(parsed, list)
    return parsed


# --- reading answers ---------------------------------------------------------------------------


def test_each_kind_of_field_reads_its_answers_and_says_what_fits() -> None:
    integer = Field("n", {"type": "integer", "minimum": 1, "maximum": 5}, True)
    assert integer.read("3") == 3
    for bad, reason in (("6", "at most 5"), ("0", "at least 1"), ("2.5", "an integer"), ("x", "an integer")):
        with pytest.raises(AnswerError, match=reason):
            integer.read(bad)
    assert Field("x", {"type": "number"}, False).read("2.5") == 2.5
    flag = Field("b", {"type": "boolean"}, False)
    assert (flag.read("yes"), flag.read("N"), flag.read("true")) == (True, False, True)
    with pytest.raises(AnswerError, match="yes or no"):
        flag.read("maybe")
    email = Field("e", {"type": "string", "format": "email"}, False)
    assert email.read("ada@example.com") == "ada@example.com"
    with pytest.raises(AnswerError, match="email address"):
        email.read("ada")
    with pytest.raises(AnswerError, match="a date"):
        Field("d", {"type": "string", "format": "date"}, False).read("tomorrow")
    with pytest.raises(AnswerError, match="at most 3 characters"):
        Field("s", {"type": "string", "maxLength": 3}, False).read("abcd")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "enum": ["#f00", "#0f0"]},
        {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}]},
        {"type": "string", "enum": ["#f00", "#0f0"], "enumNames": ["Red", "Green"]},
    ],
)
def test_a_choice_is_picked_by_value_title_or_number(schema: dict[str, object]) -> None:
    field = Field("color", schema, True)
    assert field.read("#0f0") == "#0f0"
    assert field.read("2") == "#0f0"
    if "enum" not in schema or "enumNames" in schema:
        assert field.read("green") == "#0f0"  # titles, whatever their case
        assert "1) Red, 2) Green" in field.describe()
    with pytest.raises(AnswerError, match="must be one of"):
        field.read("blue")


def test_a_multi_select_takes_commas_or_json_within_its_bounds() -> None:
    field = Field(
        "extras",
        {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["a", "b", "c"]}},
        False,
    )
    assert field.read("a, c") == ["a", "c"]
    assert field.read('["b"]') == ["b"]
    assert field.read("a,a") == ["a"]
    with pytest.raises(AnswerError, match="at most 2 choices"):
        field.read("a,b,c")
    with pytest.raises(AnswerError, match="at least 1 choices"):
        field.read(",")


def test_a_default_that_does_not_fit_is_not_offered() -> None:
    [good, bad] = form_fields(
        {
            "type": "object",
            "properties": {"a": {"type": "integer", "default": 4}, "b": {"type": "integer", "default": "x"}},
        }
    )
    assert (good.default, bad.default) == (4, None)
    assert good.describe() == "a: an integer; default 4"


def test_answer_words_are_field_value_once_each() -> None:
    assert parse_answers(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(BadUsage, match="not FIELD=VALUE"):
        parse_answers(["a"])
    with pytest.raises(BadUsage, match="'a' twice"):
        parse_answers(["a=1", "a=2"])


# --- the terminal dialog, scripted ------------------------------------------------------------


def scripted(*lines: str | None) -> tuple[Callable[[str], str | None], list[str], list[str]]:
    """A reader answering ``lines`` in turn (None is Ctrl-D; past the end, Ctrl-D), what it was asked,
    and what was written."""
    answers: Iterator[str | None] = iter(lines)
    prompts: list[str] = []
    shown: list[str] = []

    def read(prompt: str) -> str | None:
        prompts.append(prompt)
        return next(answers, None)

    return read, prompts, shown


BOOKING_FIELDS = form_fields(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "guests": {"type": "integer", "minimum": 1, "default": 2},
            "note": {"type": "string"},
        },
        "required": ["name", "guests"],
    }
)


def test_the_dialog_re_asks_a_bad_answer_takes_defaults_and_skips_optional_fields() -> None:
    read, prompts, shown = scripted("a", "", "Ada", "0", "", "")
    answer = ask_form(BOOKING_FIELDS, read, shown.append, given={}, decided=False)
    assert answer == {"action": "accept", "content": {"name": "Ada", "guests": 2}}
    assert prompts[1:] == ["name: ", "name: ", "guests [2]: ", "guests [2]: ", "note: "]
    assert shown == ["  name is required", "  must be at least 1"]


@pytest.mark.parametrize(
    ("lines", "action"),
    [(["d"], "decline"), (["c"], "cancel"), ([""], "cancel"), ([None], "cancel"), (["a", "Ada", None], "cancel")],
)
def test_the_user_declines_or_cancels(lines: list[str | None], action: str) -> None:
    read, _, shown = scripted(*lines)
    assert ask_form(BOOKING_FIELDS, read, shown.append, given={}, decided=False) == {"action": action}


def test_fields_the_flags_gave_are_not_asked() -> None:
    read, prompts, shown = scripted("5", "")
    answer = ask_form(BOOKING_FIELDS, read, shown.append, given={"name": "Ada"}, decided=True)
    assert answer == {"action": "accept", "content": {"name": "Ada", "guests": 5}}
    assert prompts == ["guests [2]: ", "note: "]


def test_a_reader_that_never_answers_well_ends_in_cancel() -> None:
    read, prompts, shown = scripted("a", *["0"] * (MAX_TRIES + 5))
    fields = form_fields({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}})
    assert ask_form(fields, read, shown.append, given={}, decided=False) == {"action": "cancel"}
    assert len(prompts) == 1 + MAX_TRIES


def test_a_scripted_terminal_answers_a_real_server(tmp_path: Path) -> None:
    """The handler ``call`` installs, asked by a real server through a real client, typing scripted."""
    from mcp_sse_server.cli.serve import resolve_target
    from mcp_sse_server.client.memory import InMemoryClient

    (tmp_path / "asker.py").write_text(ASKER)
    server = resolve_target(f"{tmp_path / 'asker.py'}:server").factory()
    read, prompts, shown = scripted("a", "Bo", "12", "3", "y", "Wine, 2")
    answerer = Answerer("book", given={}, action=None, accept_url=False, read=read, write=shown.append)

    async def go() -> str:
        async with answerer.attach(InMemoryClient(server)) as client:
            result = await client.call_tool("book", {})
        return str(result.content[0].text)  # type: ignore[union-attr]

    assert json.loads(asyncio.run(go())) == ["accept", {"name": "Bo", "guests": 3, "vegan": True, "extras": ["w", "c"]}]
    assert shown[0] == "book asks: Who, and how many?"
    assert "  extras: any of 1) Wine, 2) Cake (separate with commas)" in shown
    assert "  must be at most 10" in shown
    assert prompts[-1] == "extras: "


@pytest.mark.parametrize(("line", "action"), [("", "accept"), ("d", "decline"), (None, "cancel")])
def test_on_a_terminal_a_url_is_accepted_by_enter(line: str | None, action: str) -> None:
    read, prompts, shown = scripted(line)
    answerer = Answerer("sign_in", given={}, action=None, accept_url=False, read=read, write=shown.append)
    params = {"mode": "url", "url": "https://xn--bcher-kva.example/a", "message": "Go", "elicitationId": "1"}
    assert asyncio.run(answerer(params)) == {"action": action}
    assert shown == [
        "sign_in asks you to open a web page: Go",
        "  https://xn--bcher-kva.example/a",
        "  (on xn--bcher-kva.example, which reads bücher.example: check every character)",
    ]
    assert prompts == ["Open it yourself, then press Enter to accept (d declines, Ctrl-D cancels): "]


# --- the command, without a terminal ----------------------------------------------------------


def test_answer_flags_answer_a_form(cli: Cli, asker: str) -> None:
    assert _result(cli("call", asker, "ask_color", "--answer", "color=red")) == ["accept", {"color": "red"}]
    done = cli("call", asker, "book", "--answer", "name=Al", "--answer", "extras=Cake,w", "--answer", "vegan=no")
    assert _result(done) == ["accept", {"name": "Al", "guests": 2, "vegan": False, "extras": ["c", "w"]}]


def test_accept_takes_the_defaults_and_an_unasked_answer_is_noted(cli: Cli, asker: str) -> None:
    done = cli("call", asker, "book", "--accept", "--answer", "name=Al", "--answer", "colour=red")
    assert _result(done) == ["accept", {"name": "Al", "guests": 2}]
    assert done.stderr.splitlines()[-1] == "note: no form asked for --answer colour"


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_flags(cli: Cli, asker: str, action: str) -> None:
    done = cli("call", asker, "ask_color", f"--{action}")
    assert _result(done) == [action, None]
    assert f"answered {action} (--{action})" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["ask_color"],
            'Error: ask_color asks "Pick a color" (color (required)) and there is no terminal to ask on: '
            "answer with --answer color=VALUE, or --decline / --cancel",
        ),
        (
            ["book", "--answer", "vegan=yes"],
            'Error: book asks "Who, and how many?": no value for the required field name: '
            "add --answer name=VALUE (or --decline / --cancel)",
        ),
        (
            ["ask_color", "--answer", "color=blue"],
            "Error: ask_color asks \"Pick a color\": --answer color: must be one of: red, green; got 'blue'",
        ),
    ],
)
def test_a_form_the_flags_leave_open_is_cancelled_and_the_command_says_what_to_give(
    cli: Cli, asker: str, args: list[str], message: str
) -> None:
    done = cli("call", asker, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == message
    assert "answered cancel" in done.stderr  # the tool was told


def test_contradicting_flags_are_a_usage_error(cli: Cli, asker: str) -> None:
    done = cli("call", asker, "ask_color", "--decline", "--answer", "color=red")
    assert done.returncode == 2
    assert "--decline and --answer contradict each other" in done.stderr


def test_a_url_elicitation_is_shown_and_declined_unless_accepted(cli: Cli, asker: str) -> None:
    done = cli("call", asker, "sign_in")
    assert (done.returncode, done.stdout) == (0, "decline\n")
    assert "sign_in asks you to open a web page: Sign in first\n  https://login.example/start?id=7\n" in done.stderr
    assert "(on login.example)" in done.stderr
    done = cli("call", asker, "sign_in", "--accept-url")
    assert (done.returncode, done.stdout) == (0, "accept\n")


def test_sampling_is_refused_in_one_sentence(cli: Cli, asker: str) -> None:
    done = cli("call", asker, "summarize")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[-1] == (
        f"Error: summarize on {asker}: it asked for a model completion (sampling/createMessage), and this "
        "command runs no model: call it from a client that has one (McpClient(sampling_handler=...))"
    )


def test_over_stdio(cli: Cli, asker: str) -> None:
    command = f"{sys.executable} -m mcp_sse_server serve {asker} --stdio"
    assert _result(cli("call", command, "ask_color", "--answer", "color=green")) == ["accept", {"color": "green"}]
    assert _result(cli("call", command, "ask_color", "--mode", "session", "--decline")) == ["decline", None]


def test_over_http(cli: Cli, serve: Callable[[list[str]], Served], asker: str) -> None:
    server = serve([asker, "--port", "0"])
    assert _result(cli("call", server.url, "ask_color", "--answer", "color=red")) == ["accept", {"color": "red"}]
    done = cli("call", server.url, "ask_color", "--mode", "session")
    assert done.returncode == 2
    assert "answer with --answer color=VALUE" in done.stderr


# --- the command on a real terminal -----------------------------------------------------------


class AtThePrompt:
    """``call asker ask_color`` with stdin a pseudo-terminal, stopped at its first prompt: ``seen``
    is stderr up to there, ``controller`` types, ``process`` is the command."""

    def __init__(self, cli_env: dict[str, str], cwd: Path, target: str) -> None:
        import pty

        self.controller, terminal = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_sse_server", "call", target, "ask_color"],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env,
            cwd=cwd,
            preexec_fn=default_signals,  # Ctrl-C as from a terminal
        )
        os.close(terminal)
        assert self.process.stderr is not None
        self.seen = ""
        deadline = time.monotonic() + COMMAND_TIMEOUT  # (only catches a hang)
        while "Answer?" not in self.seen and time.monotonic() < deadline:
            char = self.process.stderr.read(1)  # the prompt has no newline: read it as it comes
            if not char:
                break
            self.seen += char
        assert "Answer?" in self.seen, self.seen

    def close(self) -> None:
        self.process.kill()
        self.process.wait(COMMAND_TIMEOUT)
        os.close(self.controller)


@pytest.fixture
def at_the_prompt(cli_env: dict[str, str], tmp_path: Path, asker: str) -> Iterator[AtThePrompt]:
    if sys.platform == "win32":
        pytest.skip("needs a pseudo-terminal")
    prompt = AtThePrompt(cli_env, tmp_path, asker)
    yield prompt
    prompt.close()


def test_on_a_terminal_the_form_is_asked(at_the_prompt: AtThePrompt) -> None:
    os.write(at_the_prompt.controller, b"a\nblue\n2\n")  # accept, a bad color (asked again), then the second
    out, err = at_the_prompt.process.communicate(timeout=COMMAND_TIMEOUT)
    assert json.loads(out) == ["accept", {"color": "green"}]
    assert at_the_prompt.process.returncode == 0
    assert "must be one of: red, green; got 'blue'" in err


def test_ctrl_c_at_a_prompt_ends_the_command_without_waiting_for_a_line(at_the_prompt: AtThePrompt) -> None:
    at_the_prompt.process.send_signal(signal.SIGINT)
    out, err = at_the_prompt.process.communicate(timeout=COMMAND_TIMEOUT)
    assert (at_the_prompt.process.returncode, out, err.strip()) == (130, "", "Interrupted.")
