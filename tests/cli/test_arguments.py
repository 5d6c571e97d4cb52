"""Reading command-line words as tool arguments, by the tool's input schema."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sse_server.cli import ArgumentError, convert_arguments, convert_value, parse_duration, parse_size

ADD = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("raw", "schema", "expected"),
    [
        ("2", {"type": "number"}, 2),
        ("-2.5", {"type": "number"}, -2.5),
        ("1e3", {"type": "number"}, 1000.0),
        ("12345678901234567890123", {"type": "number"}, 12345678901234567890123),  # exact, not a float
        ("7", {"type": "integer"}, 7),
        ("3.0", {"type": "integer"}, 3),  # JSON Schema counts 3.0 as an integer
        ("true", {"type": "boolean"}, True),
        ("No", {"type": "boolean"}, False),
        ("0", {"type": "boolean"}, False),
        ("007", {"type": "string"}, "007"),
        ("true", {"type": "string"}, "true"),
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ('{"k": [1]}', {"type": "object"}, {"k": [1]}),
        ("null", {"type": ["integer", "null"]}, None),
        ("5", {"type": ["integer", "null"]}, 5),
        ("5", {"type": ["string", "integer"]}, 5),  # a number wins over a string when both fit
        ("five", {"type": ["string", "integer"]}, "five"),
        ("5", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, 5),
        ("svg", {"type": "string", "enum": ["svg", "html"]}, "svg"),
        ("2", {"enum": [1, 2, "x"]}, 2),
        ("x", {"const": "x"}, "x"),
        ("[1]", {}, [1]),  # untyped: JSON when it parses...
        ("hello", {}, "hello"),  # ...the word otherwise
    ],
)
def test_values_follow_the_schema(raw: str, schema: dict[str, Any], expected: Any) -> None:
    value = convert_value("v", raw, schema)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("raw", "schema", "message"),
    [
        ("x", {"type": "number"}, "argument 'v' must be a number, got 'x'"),
        ("nan", {"type": "number"}, "must be a number"),
        ("inf", {"type": "number"}, "must be a number"),
        ("1_000", {"type": "number"}, "must be a number"),
        ("2.5", {"type": "integer"}, "must be an integer"),
        ("maybe", {"type": "boolean"}, "must be a boolean (true or false)"),
        ("1,2", {"type": "array"}, "must be a JSON array"),
        ("[1]", {"type": "object"}, "must be a JSON object"),
        ("x", {"type": ["integer", "null"]}, "must be null or an integer"),
        ("pdf", {"type": "string", "enum": ["svg", "html"]}, "must be one of: svg, html; got 'pdf'"),
        ("true", {"enum": [1, 2]}, "must be one of: 1, 2"),  # True == 1 in Python, not in JSON Schema
    ],
)
def test_unconvertible_values_are_named(raw: str, schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        convert_value("v", raw, schema)


def test_local_refs_are_followed() -> None:
    schema = {
        "type": "object",
        "properties": {"when": {"$ref": "#/$defs/Count"}},
        "$defs": {"Count": {"type": "integer"}},
    }
    assert convert_arguments(schema, ["when=4"]) == {"when": 4}


def test_assignments_build_the_arguments() -> None:
    assert convert_arguments(ADD, ["a=2", "b=3"], tool="add") == {"a": 2, "b": 3}


def test_a_value_may_contain_equals_signs() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert convert_arguments(schema, ["q=a=b"]) == {"q": "a=b"}


def test_json_object_merges_and_words_override() -> None:
    assert convert_arguments(ADD, ["b=3"], '{"a": 1.5, "b": 100}', tool="add") == {"a": 1.5, "b": 3}


@pytest.mark.parametrize(
    ("words", "json_text", "message"),
    [
        (["a"], None, "'a' is not key=value"),
        (["=1"], None, "'=1' is not key=value"),
        (["a=1", "a=2", "b=1"], None, "argument 'a' is given twice"),
        (["a=1", "b=2", "c=3"], None, "unknown argument 'c' for add; it takes: a, b"),
        (["a=1"], None, "missing required argument 'b' for add; it takes: a, b"),
        ([], "[1, 2]", "--json must be a JSON object"),
        ([], "{nope", "--json is not valid JSON"),
        ([], '{"a": 1, "b": 2, "zz": 3}', "unknown argument 'zz'"),
    ],
)
def test_argument_errors_say_what_is_wrong(words: list[str], json_text: str | None, message: str) -> None:
    with pytest.raises(ArgumentError, match=message.replace("[", r"\[")):
        convert_arguments(ADD, words, json_text, tool="add")


def test_unknown_keys_are_refused_when_properties_are_declared() -> None:
    # No additionalProperties: a typo must not be dropped silently.
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    with pytest.raises(ArgumentError, match="unknown argument 'qeury'"):
        convert_arguments(schema, ["qeury=cats"], tool="search")


def test_extra_keys_follow_additional_properties_when_allowed() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}
    assert convert_arguments(schema, ["a=1", "n=2"]) == {"a": "1", "n": 2}
    with pytest.raises(ArgumentError, match="argument 'n' must be an integer"):
        convert_arguments(schema, ["n=x"])


def test_pattern_properties_give_the_type() -> None:
    schema = {"type": "object", "patternProperties": {"^n_": {"type": "number"}}, "additionalProperties": False}
    assert convert_arguments(schema, ["n_x=1.5"]) == {"n_x": 1.5}
    with pytest.raises(ArgumentError, match="unknown argument 'm'"):
        convert_arguments(schema, ["m=1"])


def test_a_schema_without_properties_takes_anything() -> None:
    assert convert_arguments({"type": "object"}, ["n=3", "s=word"]) == {"n": 3, "s": "word"}


def test_no_arguments_for_a_tool_without_parameters() -> None:
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    assert convert_arguments(schema, []) == {}
    with pytest.raises(ArgumentError, match="it takes: no arguments"):
        convert_arguments(schema, ["x=1"], tool="describe")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("12h", 43200.0), ("1d", 86400.0), ("500ms", 0.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "5 weeks", "0", "-5", "9" * 400])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [("100", 100), ("64K", 65536), ("64kb", 64000), ("4MiB", 4194304), ("4MB", 4000000), ("1G", 1 << 30)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "x", "4 parsecs", "0", "9" * 400])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)
