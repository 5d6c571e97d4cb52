"""``resources``, ``prompts`` and ``inspect``, for real: against a ``file.py:factory`` in-process, the
built-in servers, and the demo served over HTTP by ``serve --port 0``."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest

from fixtures.commands import Cli, Main
from fixtures.served import Served


def test_resources_lists_resources_and_templates(cli: Cli, shop: Path) -> None:
    done = cli("resources", "shop.py:build")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Resources (2):",
        "  shop://about  about: About the shop (text/plain)",
        "      What the shop is.",
        "  shop://logo.png  logo (image/png)",
        "Resource templates (1):",
        "  shop://items/{item}  item (text/plain)",
        "      One item of the shop.",
    ]
    raw = json.loads(cli("resources", "shop.py:build", "--json").stdout)
    assert [entry["uri"] for entry in raw["resources"]] == ["shop://about", "shop://logo.png"]
    assert raw["resourceTemplates"][0]["uriTemplate"] == "shop://items/{item}"


def test_resources_reads_text_and_says_what_a_blob_is(cli: Cli, shop: Path) -> None:
    done = cli("resources", "shop.py:build", "shop://about")
    assert (done.returncode, done.stdout) == (0, "We sell things.\n"), done.stderr
    done = cli("resources", "shop.py:build", "shop://items/7")  # through the template
    assert (done.returncode, done.stdout) == (0, "item 7\n"), done.stderr
    done = cli("resources", "shop.py:build", "shop://logo.png")
    assert (done.returncode, done.stdout) == (
        0,
        "shop://logo.png is binary (image/png, 16 bytes); --json prints it as base64\n",
    )
    [contents] = json.loads(cli("resources", "shop.py:build", "shop://logo.png", "--json").stdout)["contents"]
    assert base64.b64decode(contents["blob"]) == b"\x89PNG\r\n\x1a\n" + bytes(8)


def test_reading_a_missing_resource_fails_in_one_line(cli: Cli, shop: Path) -> None:
    done = cli("resources", "shop.py:build", "shop://nothing")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("Error: shop.py:build: cannot read shop://nothing: ")
    assert "Traceback" not in done.stderr


def test_prompts_lists_and_gets(cli: Cli, shop: Path) -> None:
    done = cli("prompts", "shop.py:build")
    assert (done.returncode, done.stdout) == (0, "greet(who, tone?)\n    Greet someone.\n"), done.stderr
    done = cli("prompts", "shop.py:build", "greet", "who=Ann", "tone=cold")
    assert (done.returncode, done.stdout) == (0, "[user]\nSay hello to Ann, coldly.\n"), done.stderr
    raw = json.loads(cli("prompts", "shop.py:build", "greet", "who=Bo", "--json").stdout)
    assert raw["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hello to Bo, warmly."}}]
    listed = json.loads(cli("prompts", "shop.py:build", "--json").stdout)
    assert listed[0]["name"] == "greet" and listed[0]["arguments"][0] == {"name": "who", "required": True}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["greet"], "Error: missing required argument 'who' for greet; it takes: who, tone\n"),
        (["greet", "who=a", "mood=b"], "Error: unknown argument 'mood' for greet; it takes: who, tone\n"),
        (["greet", "who"], "Error: 'who' is not key=value\n"),
        (["wave"], "Error: unknown prompt 'wave' on shop.py:build; its prompts are: greet\n"),
    ],
)
def test_prompt_usage_errors(cli: Cli, shop: Path, args: list[str], message: str) -> None:
    done = cli("prompts", "shop.py:build", *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(message)  # after the module's own "importing shop"


def test_arguments_without_a_prompt_name_are_a_usage_error(main: Main) -> None:
    status, _, err = main("prompts", "math", "a=1")  # `a=1` is taken for the NAME, of a prompt math lacks
    assert (status, err) == (2, "Error: unknown prompt 'a=1' on math; its prompts are: none\n")


def test_inspect_summarises_the_server(cli: Cli, shop: Path) -> None:
    done = cli("inspect", "shop.py:build")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Server: shop 2.0.0",
        "Protocol revision: 2026-07-28 (stateless)",
        "Capabilities: logging, prompts (listChanged), resources (listChanged, subscribe), tools (listChanged)",
        "Instructions:",
        "  Sells things.",
        "  Ask nicely.",
        "Tools (3):",
        "  add(a: integer, b?: number) -> {result: integer}",
        "      Add two numbers, rounding down.",
        "  shout(text: string)",
        "      Shout TEXT.",
        "  builds() -> {result: integer}",
        "      How many times this process called the factory.",
        "Resources (2):",
        "  shop://about  about: About the shop (text/plain)",
        "      What the shop is.",
        "  shop://logo.png  logo (image/png)",
        "Resource templates (1):",
        "  shop://items/{item}  item (text/plain)",
        "      One item of the shop.",
        "Prompts (1):",
        "  greet(who, tone?)",
        "      Greet someone.",
    ]
    # The handshake's serverInfo carries the title too.
    legacy = cli("inspect", "shop.py:build", "--mode", "session").stdout.splitlines()
    assert legacy[:2] == ["Server: shop 2.0.0", "Title: The Shop"]
    assert legacy[2].startswith("Protocol revision: 2025-") and legacy[2].endswith(" (session)")


def test_inspect_json_is_the_wire_form(cli: Cli, shop: Path) -> None:
    summary = json.loads(cli("inspect", "shop.py:build", "--json").stdout)
    assert summary["protocolVersion"] == "2026-07-28"
    assert summary["serverInfo"]["name"] == "shop" and summary["instructions"] == "Sells things.\nAsk nicely."
    assert summary["tools"][0]["outputSchema"]["properties"] == {"result": {"type": "integer"}}
    assert [len(summary[key]) for key in ("tools", "resources", "resourceTemplates", "prompts")] == [3, 2, 1, 1]


def test_a_server_without_resources_or_prompts(cli: Cli) -> None:
    assert cli("resources", "math").stdout == "math has no resources.\n"
    assert cli("prompts", "math").stdout == "math has no prompts.\n"
    lines = cli("inspect", "math").stdout.splitlines()
    assert "Resources: none" in lines and "Prompts: none" in lines
    assert "  add(a: number, b: number) -> {result: number, exact?: string}" in lines


def test_the_demo_built_in(cli: Cli) -> None:
    done = cli("resources", "demo")
    assert done.returncode == 0, done.stderr
    assert "  demo://readme  readme: About this demo (text/markdown" in done.stdout
    assert cli("resources", "demo", "demo://swatch.png").stdout.startswith("demo://swatch.png is binary (image/png, ")
    prompts = cli("prompts", "demo").stdout.splitlines()
    assert "calculate(expression)" in prompts
    got = cli("prompts", "demo", "calculate", "expression=2+3")
    assert got.returncode == 0 and got.stdout.startswith("[user]\n") and "2+3" in got.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("mcp_sse_server.transport.http.server") is None, reason="no HTTP transport"
)
def test_the_demo_over_http_reads_as_it_does_in_process(cli: Cli, tmp_path: Path, cli_env: dict[str, str]) -> None:
    server = Served(["demo", "--port", "0"], tmp_path, cli_env)
    try:
        for args in (
            ["inspect"],
            ["resources"],
            ["resources", "--json"],
            ["prompts"],
            ["prompts", "explain_operation", "operation=factorial"],
        ):
            over_http = cli(args[0], server.url, *args[1:])
            in_process = cli(args[0], "demo", *args[1:])
            assert over_http.returncode == in_process.returncode == 0, over_http.stderr + in_process.stderr
            assert over_http.stdout == in_process.stdout, args
        read = cli("resources", server.url, "demo://readme")
        assert read.returncode == 0 and read.stdout == cli("resources", "demo", "demo://readme").stdout
        assert read.stdout.strip()
    finally:
        server.kill()


def test_tools_and_inspect_write_optional_arguments_one_way(cli: Cli, shop: Path) -> None:
    # Before, `tools` printed add(a: integer, [b: number]) and `inspect` add(a: integer, b?: number).
    listed = [line for line in cli("tools", "shop.py:build").stdout.splitlines() if not line.startswith(" ")]
    inspected = cli("inspect", "shop.py:build").stdout.splitlines()
    assert "add(a: integer, b?: number)" in listed
    for signature in listed:
        assert any(line == "  " + signature or line.startswith(f"  {signature} -> ") for line in inspected), signature
