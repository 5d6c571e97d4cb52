"""The math server's tools: results, exact integers, domain errors, work bounds, bad input."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import jsonschema_rs
import orjson
import pytest

from fixtures.sessions import initialized_session
from mcp_sse_server.engine.jsonrpc import (
    INVALID_PARAMS,
    McpError,
)
from mcp_sse_server.engine.protocol import Connection
from mcp_sse_server.engine.server import McpServer
from mcp_sse_server.servers import MemoryServerFactory
from mcp_sse_server.servers import math as m
from mcp_sse_server.servers.math import (
    MATH_OUTPUT_SCHEMA,
    MATH_TOOL_SPECS,
    MAX_FACTORIAL,
    MAX_INT_BITS,
    MathError,
    MathServer,
    call_math,
    math_tool_result,
    math_tools,
    result_payload,
)

TOOL_NAMES = [
    "add", "subtract", "multiply", "divide", "power", "sqrt", "cbrt", "abs", "sin", "cos", "tan", "log",
    "max", "min", "round", "ceil", "floor", "mod", "factorial",
]  # fmt: skip


def same(actual: object, expected: object) -> bool:
    """Equal and of the same type, so 1024 and 1024.0 differ."""
    return type(actual) is type(expected) and actual == expected


# -- normal results ----------------------------------------------------------------------------------------

NORMAL: list[tuple[str, dict[str, Any], int | float]] = [
    ("add", {"a": 2, "b": 3}, 5),
    ("add", {"a": -2, "b": 0.5}, -1.5),
    ("add", {"a": 0.1, "b": 0.2}, 0.1 + 0.2),
    ("subtract", {"a": 2, "b": 5}, -3),
    ("subtract", {"a": 2.5, "b": 0.5}, 2.0),
    ("multiply", {"a": 6, "b": -7}, -42),
    ("multiply", {"a": 1.5, "b": 4}, 6.0),
    ("divide", {"a": 6, "b": 3}, 2),
    ("divide", {"a": -6, "b": 4}, -1.5),
    ("divide", {"a": 1, "b": 3}, 1 / 3),
    ("divide", {"a": 7.5, "b": 2.5}, 3.0),
    ("power", {"base": 2, "exponent": 10}, 1024),
    ("power", {"base": -3, "exponent": 3}, -27),
    ("power", {"base": 2, "exponent": -2}, 0.25),
    ("power", {"base": 9, "exponent": 0.5}, 3.0),
    ("power", {"base": 0, "exponent": 0}, 1),
    ("power", {"base": -2, "exponent": 2.0}, 4.0),
    ("power", {"base": 1, "exponent": 10**12}, 1),
    ("power", {"base": -1, "exponent": 10**12 + 1}, -1),
    ("power", {"base": 0, "exponent": 10**12}, 0),
    ("power", {"base": 0.5, "exponent": 10**12}, 0.0),
    ("power", {"base": 2, "exponent": -(10**12)}, 0.0),
    ("sqrt", {"x": 49}, 7),
    ("sqrt", {"x": 0}, 0),
    ("sqrt", {"x": 2}, math.sqrt(2)),
    ("sqrt", {"x": 2.25}, 1.5),
    ("cbrt", {"x": 27}, 3),
    ("cbrt", {"x": -27}, -3),
    ("cbrt", {"x": 0}, 0),
    ("cbrt", {"x": 27.0}, 3.0),
    ("cbrt", {"x": -64.0}, -4.0),
    ("cbrt", {"x": 2}, math.cbrt(2)),
    ("abs", {"x": -3}, 3),
    ("abs", {"x": -2.5}, 2.5),
    ("abs", {"x": 4}, 4),
    ("sin", {"x": 0}, 0.0),
    ("sin", {"x": math.pi / 2}, 1.0),
    ("cos", {"x": 0}, 1.0),
    ("cos", {"x": math.pi}, -1.0),
    ("tan", {"x": 0}, 0.0),
    ("tan", {"x": 1.0}, math.tan(1.0)),
    ("log", {"x": 1}, 0.0),
    ("log", {"x": math.e}, 1.0),
    ("log", {"x": 1000, "base": 10}, 3.0),
    ("log", {"x": 1024, "base": 2}, 10.0),
    ("log", {"x": 125, "base": 5}, 3.0),
    ("log", {"x": 243, "base": 3}, 5.0),
    ("log", {"x": 0.25, "base": 0.5}, 2.0),
    ("max", {"a": 1, "b": 2.5}, 2.5),
    ("max", {"a": -1, "b": -2}, -1),
    ("min", {"a": 1, "b": 2.5}, 1),
    ("min", {"a": -1, "b": -2}, -2),
    ("round", {"x": 2.4}, 2),
    ("round", {"x": 7}, 7),
    ("round", {"x": 3.14159, "digits": 2}, 3.14),
    ("round", {"x": 1234, "digits": 2}, 1234),
    ("ceil", {"x": 1.2}, 2),
    ("ceil", {"x": -1.2}, -1),
    ("ceil", {"x": 5}, 5),
    ("floor", {"x": 1.8}, 1),
    ("floor", {"x": -1.2}, -2),
    ("floor", {"x": 5}, 5),
    ("mod", {"a": 7, "b": 3}, 1),
    ("mod", {"a": 7.5, "b": 2}, 1.5),
    ("factorial", {"n": 0}, 1),
    ("factorial", {"n": 1}, 1),
    ("factorial", {"n": 5}, 120),
    ("factorial", {"n": 5.0}, 120),
]


@pytest.mark.parametrize(("name", "arguments", "expected"), NORMAL)
def test_normal_results(name: str, arguments: dict[str, Any], expected: int | float) -> None:
    actual = call_math(name, arguments)
    if isinstance(expected, float) and not expected.is_integer():
        assert type(actual) is float
        assert actual == pytest.approx(expected, rel=1e-15)
    else:
        assert same(actual, expected), (actual, expected)


def test_every_tool_has_a_normal_case() -> None:
    assert {name for name, _, _ in NORMAL} == set(TOOL_NAMES)


# -- integer exactness -------------------------------------------------------------------------------------


def test_integers_stay_exact_beyond_double_precision() -> None:
    big = 2**60 + 1  # not representable as a double
    assert same(call_math("add", {"a": big, "b": 1}), 2**60 + 2)
    assert same(call_math("subtract", {"a": big, "b": 2**60}), 1)
    assert same(call_math("multiply", {"a": big, "b": big}), big * big)
    assert same(call_math("divide", {"a": big * 3, "b": 3}), big)
    assert same(call_math("power", {"base": 3, "exponent": 100}), 3**100)
    assert same(call_math("mod", {"a": 10**30 + 7, "b": 10**15}), 7)
    assert same(call_math("abs", {"x": -(10**40)}), 10**40)
    assert same(call_math("max", {"a": 2**60, "b": float(2**60)}), 2**60)  # a wins a tie
    assert same(call_math("factorial", {"n": 25}), math.factorial(25))
    assert same(call_math("factorial", {"n": MAX_FACTORIAL}), math.factorial(MAX_FACTORIAL))


@pytest.mark.parametrize("root", [1, 2, 3, 10, 12345, 2**40 + 3, 10**30 + 7, 10**100 + 1, 3**200])
def test_cbrt_and_sqrt_are_exact_on_perfect_powers(root: int) -> None:
    assert same(call_math("cbrt", {"x": root**3}), root)
    assert same(call_math("cbrt", {"x": -(root**3)}), -root)
    assert same(call_math("sqrt", {"x": root**2}), root)


def test_cbrt_of_non_cubes_near_cubes_is_a_float() -> None:
    for n in (26, 28, 10**30 + 1):
        result = call_math("cbrt", {"x": n})
        assert type(result) is float
        assert result == pytest.approx(n ** (1 / 3), rel=1e-12)
    assert call_math("cbrt", {"x": -2}) == pytest.approx(-math.cbrt(2))


def test_cbrt_of_float_cubes_is_exact() -> None:
    for k in range(-50, 51):
        assert same(call_math("cbrt", {"x": float(k**3)}), float(k))


def test_sqrt_of_a_huge_non_square_is_close() -> None:
    n = 10**400 + 1  # beyond the double range as an input
    assert call_math("sqrt", {"x": n}) == pytest.approx(1e200)


def test_log_of_exact_integer_powers_is_exact() -> None:
    for base in range(2, 30):
        for k in range(1, 40):
            assert same(call_math("log", {"x": base**k, "base": base}), float(k)), (base, k)


def test_log_of_huge_integers_works() -> None:
    assert call_math("log", {"x": 10**1000}) == pytest.approx(1000 * math.log(10))
    assert call_math("log", {"x": 10**1000, "base": 10}) == pytest.approx(1000.0)


# -- documented semantics: round, mod, trigonometry --------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"x": 0.5}, 1),
        ({"x": 1.5}, 2),
        ({"x": 2.5}, 3),  # not banker's rounding
        ({"x": -0.5}, -1),
        ({"x": -2.5}, -3),
        ({"x": 2.675, "digits": 2}, 2.68),  # the decimal as written, not the double below it
        ({"x": -2.675, "digits": 2}, -2.68),
        ({"x": 0.125, "digits": 2}, 0.13),
        ({"x": 1.005, "digits": 2}, 1.01),
        ({"x": 1250, "digits": -2}, 1300),
        ({"x": 1249, "digits": -2}, 1200),
        ({"x": -1250, "digits": -2}, -1300),
        ({"x": 1250.0, "digits": -2}, 1300),
        ({"x": 49, "digits": -2}, 0),
        ({"x": 0.1, "digits": 308}, 0.1),
        ({"x": 1e300, "digits": 308}, 1e300),
        ({"x": 5e-301, "digits": 308}, 5e-301),
        ({"x": 1e300, "digits": -300}, 10**300),
        ({"x": 2.5, "digits": 0}, 3),
        ({"x": 2.5, "digits": 0.0}, 3),
    ],
)
def test_round_halves_away_from_zero(arguments: dict[str, Any], expected: int | float) -> None:
    assert same(call_math("round", arguments), expected)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(7, 3, 1), (-7, 3, 2), (7, -3, -2), (-7, -3, -1), (6, 3, 0), (-7.5, 2, 0.5), (7.5, -2, -0.5)],
)
def test_mod_takes_the_sign_of_the_divisor(a: int | float, b: int | float, expected: int | float) -> None:
    assert same(call_math("mod", {"a": a, "b": b}), expected)


def test_trigonometry_is_in_radians() -> None:
    assert call_math("sin", {"x": math.pi / 6}) == pytest.approx(0.5)
    assert call_math("cos", {"x": math.pi / 3}) == pytest.approx(0.5)
    assert call_math("tan", {"x": math.pi / 4}) == pytest.approx(1.0)
    assert call_math("sin", {"x": 90}) == pytest.approx(math.sin(90))  # 90 radians, not degrees


def test_tan_near_but_not_at_a_pole_is_allowed() -> None:
    x = 1.5707963267948  # 13 digits of pi/2
    assert call_math("tan", {"x": x}) == pytest.approx(math.tan(x))
    assert isinstance(call_math("tan", {"x": 1e300}), float)  # doubles too sparse to mean a pole


def test_descriptions_document_the_semantics() -> None:
    by_name = {spec.name: spec.description for spec in MATH_TOOL_SPECS}
    assert "away from zero" in by_name["round"]
    assert "sign of the divisor" in by_name["mod"]
    for name in ("sin", "cos", "tan"):
        assert "radians" in by_name[name]
    assert str(MAX_FACTORIAL) in by_name["factorial"]
    assert "base" in by_name["log"]


# -- domain errors -----------------------------------------------------------------------------------------

DOMAIN_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    ("divide", {"a": 1, "b": 0}, "divide by zero"),
    ("divide", {"a": 1.5, "b": 0.0}, "divide by zero"),
    ("divide", {"a": 0, "b": -0.0}, "divide by zero"),
    ("mod", {"a": 1, "b": 0}, "modulo by zero"),
    ("mod", {"a": 1.5, "b": 0.0}, "modulo by zero"),
    ("sqrt", {"x": -1}, "negative"),
    ("sqrt", {"x": -0.5}, "negative"),
    ("log", {"x": 0}, "x > 0"),
    ("log", {"x": -1}, "x > 0"),
    ("log", {"x": -1, "base": 10}, "x > 0"),
    ("log", {"x": 10, "base": 1}, "must not be 1"),
    ("log", {"x": 10, "base": 1.0}, "must not be 1"),
    ("log", {"x": 10, "base": 0}, "base of a logarithm must be > 0"),
    ("log", {"x": 10, "base": -2}, "base of a logarithm must be > 0"),
    ("factorial", {"n": -1}, "n >= 0"),
    ("factorial", {"n": 5.5}, "whole numbers"),
    ("power", {"base": 0, "exponent": -1}, "negative power"),
    ("power", {"base": 0.0, "exponent": -0.5}, "negative power"),
    ("power", {"base": -8, "exponent": 1 / 3}, "fractional exponent"),
    ("tan", {"x": math.pi / 2}, "undefined"),
    ("tan", {"x": -math.pi / 2}, "undefined"),
    ("tan", {"x": 3 * math.pi / 2}, "undefined"),
    ("tan", {"x": 1001 * math.pi / 2}, "undefined"),
    ("round", {"x": 1.5, "digits": 0.5}, "whole number"),
    ("round", {"x": 1.5, "digits": 309}, "between"),
    ("round", {"x": 1.5, "digits": -309}, "between"),
]


@pytest.mark.parametrize(("name", "arguments", "message"), DOMAIN_ERRORS)
def test_domain_errors(name: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(MathError) as raised:
        call_math(name, arguments)
    text = str(raised.value)
    assert message in text
    assert "\n" not in text


OVERFLOWS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 1.7e308, "b": 1.7e308}),
    ("add", {"a": 10**308 * 2, "b": 0}),  # the int is fine as input, not as a result
    ("subtract", {"a": -1.7e308, "b": 1.7e308}),
    ("multiply", {"a": 1e300, "b": 1e300}),
    ("multiply", {"a": 10**200, "b": 10**200}),
    ("divide", {"a": 1e308, "b": 1e-10}),
    ("divide", {"a": 10**400, "b": 3}),
    ("power", {"base": 10.0, "exponent": 400}),
    ("power", {"base": 1.5, "exponent": 10**12}),
    ("power", {"base": 2, "exponent": 1024}),
    ("power", {"base": 3, "exponent": 1000}),
    ("cbrt", {"x": 10**1200 + 1}),
    ("sqrt", {"x": 10**1200 + 1}),
    ("round", {"x": 1.7976931348623157e308, "digits": -308}),
    ("round", {"x": 10**400, "digits": -2}),
    ("ceil", {"x": 10**400}),
    ("abs", {"x": -(10**400)}),
    ("mod", {"a": 10**400, "b": -1.5}),
    ("sin", {"x": 10**400}),
]


@pytest.mark.parametrize(("name", "arguments"), OVERFLOWS)
def test_results_beyond_the_double_range_are_refused(name: str, arguments: dict[str, Any]) -> None:
    with pytest.raises(MathError, match=r"1\.8e308"):
        call_math(name, arguments)


# -- work bounds: refused before any work, so these return at once -----------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("power", {"base": 10, "exponent": 10**12}),
        ("power", {"base": 2, "exponent": 2**63}),
        ("power", {"base": -(10**1000), "exponent": 10**1000}),
        ("power", {"base": 10.0, "exponent": 10**300}),
        ("factorial", {"n": 10**9}),
        ("factorial", {"n": 10**1000}),
        ("factorial", {"n": 1e300}),
        ("factorial", {"n": MAX_FACTORIAL + 1}),
    ],
)
def test_huge_work_is_refused(name: str, arguments: dict[str, Any]) -> None:
    with pytest.raises(MathError) as raised:
        call_math(name, arguments)
    assert "1.8e308" in str(raised.value)


def test_power_reports_the_size_it_refused() -> None:
    with pytest.raises(MathError, match="about 1000000000001 digits"):
        call_math("power", {"base": 10, "exponent": 10**12})


def test_integer_inputs_are_bounded() -> None:
    at_limit = 2**MAX_INT_BITS - 1
    assert call_math("mod", {"a": at_limit, "b": 10}) == at_limit % 10
    for name, arguments in [
        ("add", {"a": 2**MAX_INT_BITS, "b": 1}),
        ("multiply", {"a": 1, "b": -(2**MAX_INT_BITS)}),
        ("mod", {"a": 10**100_000, "b": 7}),
        ("log", {"x": 10**100_000}),
    ]:
        with pytest.raises(MathError, match=f"limited to {MAX_INT_BITS} bits"):
            call_math(name, arguments)


# -- bad input ---------------------------------------------------------------------------------------------

BAD_VALUES: list[tuple[object, str]] = [
    ("1", "a string"),
    (True, "a boolean"),
    (False, "a boolean"),
    (None, "null"),
    ([1], "an array"),
    ({"v": 1}, "an object"),
    (1 + 2j, "complex"),
    (Decimal("1.5"), "Decimal"),
    (Fraction(1, 2), "Fraction"),
]


@pytest.mark.parametrize(("value", "described"), BAD_VALUES)
@pytest.mark.parametrize("spec", MATH_TOOL_SPECS, ids=lambda spec: spec.name)
def test_every_parameter_refuses_non_numbers(spec: m.MathToolSpec, value: object, described: str) -> None:
    valid = {"base": 2, "exponent": 2, "digits": 1, "n": 3}
    for parameter in spec.parameters:
        arguments: dict[str, object] = {p: valid.get(p, 1) for p in spec.parameters}
        arguments[parameter] = value
        with pytest.raises(MathError) as raised:
            call_math(spec.name, arguments)
        assert f"'{parameter}'" in str(raised.value)
        assert described in str(raised.value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("spec", MATH_TOOL_SPECS, ids=lambda spec: spec.name)
def test_nan_and_infinities_are_refused(spec: m.MathToolSpec, value: float) -> None:
    for parameter in spec.parameters:
        arguments: dict[str, object] = {p: 2 for p in spec.parameters}
        arguments[parameter] = value
        with pytest.raises(MathError, match=f"'{parameter}' must be a finite number"):
            call_math(spec.name, arguments)


def test_missing_extra_and_unknown() -> None:
    with pytest.raises(MathError, match="Missing required argument 'b' for add"):
        call_math("add", {"a": 1})
    with pytest.raises(MathError, match="Missing required argument 'x' for log"):
        call_math("log", {"base": 10})
    with pytest.raises(MathError, match="Unexpected argument 'c' for add"):
        call_math("add", {"a": 1, "b": 2, "c": 3})
    with pytest.raises(MathError, match=r"Unknown math tool 'nope'.*factorial"):
        call_math("nope", {})
    with pytest.raises(MathError, match="Unknown math tool"):
        call_math(None, {})  # type: ignore[arg-type]
    for arguments in (None, [1, 2], "a=1", 3):
        with pytest.raises(MathError, match="must be an object"):
            call_math("add", arguments)


def test_optional_arguments_may_be_left_out() -> None:
    assert call_math("log", {"x": 1}) == 0.0
    assert same(call_math("round", {"x": 1.5}), 2)


def test_direct_function_calls_check_types_too() -> None:
    with pytest.raises(MathError, match="'a' must be a number"):
        m.add("1", 2)  # type: ignore[arg-type]
    with pytest.raises(MathError, match="'n' must be a number"):
        m.factorial(True)
    with pytest.raises(MathError, match="'x' must be a finite number"):
        m.sqrt(math.nan)


def test_int_subclasses_become_plain_ints() -> None:
    class MyInt(int):
        pass

    assert same(call_math("add", {"a": MyInt(2), "b": 3}), 5)
    assert same(call_math("abs", {"x": MyInt(-2)}), 2)


# -- the result payload ------------------------------------------------------------------------------------

_OUTPUT_VALIDATOR = jsonschema_rs.validator_for(MATH_OUTPUT_SCHEMA)


@pytest.mark.parametrize(
    ("value", "payload"),
    [
        (3, {"result": 3}),
        (2.5, {"result": 2.5}),
        (2**53 - 1, {"result": 2**53 - 1}),
        (2**53, {"result": 2**53, "exact": str(2**53)}),
        (-(2**53), {"result": -(2**53), "exact": str(-(2**53))}),
        (2**63 - 1, {"result": 2**63 - 1, "exact": str(2**63 - 1)}),
        (2**63, {"result": float(2**63), "exact": str(2**63)}),
        (-(2**64) - 1, {"result": -float(2**64), "exact": str(-(2**64) - 1)}),
    ],
)
def test_result_payload(value: int | float, payload: dict[str, Any]) -> None:
    actual = result_payload(value)
    assert actual == payload
    assert all(same(actual[key], payload[key]) for key in payload)
    assert _OUTPUT_VALIDATOR.is_valid(actual)
    orjson.dumps(actual)  # writable by the wire encoder


def test_the_largest_results_are_writable_and_exact() -> None:
    for value in (
        call_math("factorial", {"n": MAX_FACTORIAL}),
        call_math("power", {"base": 2, "exponent": 1023}),
        -call_math("power", {"base": 2, "exponent": 1023}),
    ):
        payload = result_payload(value)
        assert int(payload["exact"]) == value
        assert payload["result"] == float(value)
        assert _OUTPUT_VALIDATOR.is_valid(orjson.loads(orjson.dumps(payload)))


# -- the tool table and the core Tools ---------------------------------------------------------------------


def test_the_nineteen_tools() -> None:
    assert [spec.name for spec in MATH_TOOL_SPECS] == TOOL_NAMES
    assert [tool.name for tool in math_tools()] == TOOL_NAMES


@pytest.mark.parametrize("spec", MATH_TOOL_SPECS, ids=lambda spec: spec.name)
def test_input_schemas(spec: m.MathToolSpec) -> None:
    schema = spec.input_schema
    jsonschema_rs.meta.validate(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) <= set(schema["properties"])
    for prop in schema["properties"].values():
        assert prop["type"] in ("number", "integer")
        assert prop["description"]
    validator = jsonschema_rs.validator_for(schema)
    good = {p: 3 for p in spec.required}
    assert validator.is_valid(good)
    for key in spec.required:
        assert not validator.is_valid({**good, key: "3"})
        assert not validator.is_valid({**good, key: True})
        assert not validator.is_valid({k: v for k, v in good.items() if k != key})
    assert not validator.is_valid({**good, "extra": 1})


def test_integer_only_parameters_say_so() -> None:
    by_name = {spec.name: spec.input_schema for spec in MATH_TOOL_SPECS}
    n = by_name["factorial"]["properties"]["n"]
    assert (n["type"], n["minimum"], n["maximum"]) == ("integer", 0, MAX_FACTORIAL)
    assert by_name["round"]["properties"]["digits"]["type"] == "integer"
    assert by_name["log"]["required"] == ["x"]
    assert by_name["round"]["required"] == ["x"]


def test_tools_carry_schemas_and_annotations() -> None:
    for tool in math_tools():
        wire = tool.to_dict()
        assert wire["outputSchema"] == MATH_OUTPUT_SCHEMA
        assert wire["annotations"] == {
            "title": wire["title"],
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }
        assert wire["description"]
        assert wire["inputSchema"]["additionalProperties"] is False


async def test_tool_handlers_answer_with_results_and_errors() -> None:
    tools = {tool.name: tool for tool in math_tools()}
    handler = tools["power"].handler
    assert handler is not None
    result = await handler({"base": 2, "exponent": 10}, None)  # type: ignore[arg-type,misc]
    assert result.to_dict() == {
        "content": [{"type": "text", "text": "1024"}],
        "structuredContent": {"result": 1024},
    }
    divide = tools["divide"].handler
    assert divide is not None
    error = await divide({"a": 1, "b": 0}, None)  # type: ignore[arg-type,misc]
    assert error.to_dict() == {
        "content": [{"type": "text", "text": "Cannot divide by zero: 'b' must not be 0"}],
        "isError": True,
    }


def test_big_results_show_every_digit_in_the_text() -> None:
    result = math_tool_result("factorial", {"n": 30}).to_dict()
    assert result["content"][0]["text"] == str(math.factorial(30))
    assert result["structuredContent"]["exact"] == str(math.factorial(30))


def test_results_that_pass_an_input_through_are_bounded_too() -> None:
    huge = 10**400
    for name, arguments in [
        ("max", {"a": huge, "b": 1}),
        ("min", {"a": -huge, "b": 1}),
        ("cbrt", {"x": (10**320) ** 3}),
        ("sqrt", {"x": (10**320) ** 2}),
        ("floor", {"x": huge}),
        ("round", {"x": huge}),
    ]:
        with pytest.raises(MathError, match=r"1\.8e308"):
            call_math(name, arguments)


# -- through the core: McpServer + MemoryTransport, tools/call as JSON-RPC ----------------------------------


@pytest.fixture
async def session() -> AsyncIterator[Connection]:
    server = MathServer()
    async with initialized_session(server) as (client, init):
        assert init["serverInfo"]["name"] == "math"
        yield client


async def call(client: Connection, name: str, arguments: object) -> dict[str, Any]:
    result = await client.request("tools/call", {"name": name, "arguments": arguments})
    # What an HTTP client would read: the result must survive the wire encoder.
    decoded: dict[str, Any] = orjson.loads(orjson.dumps(result))
    return decoded


async def test_server_lists_the_tools(session: Connection) -> None:
    listed = await session.request("tools/list")
    tools = listed["tools"]
    assert [tool["name"] for tool in tools] == TOOL_NAMES
    for tool in tools:
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["outputSchema"] == MATH_OUTPUT_SCHEMA
        assert tool["annotations"]["readOnlyHint"] is True


@pytest.mark.parametrize(("name", "arguments", "expected"), NORMAL)
async def test_server_answers_every_normal_case(
    session: Connection, name: str, arguments: dict[str, Any], expected: int | float
) -> None:
    result = await call(session, name, arguments)
    assert "isError" not in result
    value = result["structuredContent"]["result"]
    assert value == pytest.approx(expected, rel=1e-15)
    assert result["content"] == [{"type": "text", "text": str(call_math(name, arguments))}]


async def test_server_keeps_integers_exact(session: Connection) -> None:
    result = await call(session, "power", {"base": 2, "exponent": 10})
    assert same(result["structuredContent"]["result"], 1024)
    big = await call(session, "factorial", {"n": MAX_FACTORIAL})
    assert int(big["structuredContent"]["exact"]) == math.factorial(MAX_FACTORIAL)
    assert big["content"][0]["text"] == str(math.factorial(MAX_FACTORIAL))


# The schema itself refuses the bad round digits and factorial n (see test_server_names_the_bad_argument).
@pytest.mark.parametrize(
    ("name", "arguments", "message"), [c for c in DOMAIN_ERRORS if c[0] not in ("round", "factorial")]
)
async def test_server_reports_domain_errors(
    session: Connection, name: str, arguments: dict[str, Any], message: str
) -> None:
    result = await call(session, name, arguments)
    assert result["isError"] is True
    assert message in result["content"][0]["text"]
    assert "structuredContent" not in result


async def test_server_refuses_huge_work(session: Connection) -> None:
    for name, arguments in [
        ("power", {"base": 10, "exponent": 10**12}),
        ("power", {"base": 2, "exponent": 2**62}),
        ("multiply", {"a": 1e300, "b": 1e300}),
    ]:
        result = await call(session, name, arguments)
        assert result["isError"] is True
        assert "1.8e308" in result["content"][0]["text"]
    result = await call(session, "factorial", {"n": 10**9})
    assert result["isError"] is True
    assert '"n"' in result["content"][0]["text"]  # the schema's maximum names the field


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("add", {"a": "1", "b": 2}, '"a"'),
        ("add", {"a": 1, "b": True}, '"b"'),
        ("add", {"a": 1, "b": None}, '"b"'),
        ("add", {"a": 1, "b": [2]}, '"b"'),
        ("add", {"a": 1}, '"b"'),
        ("add", {"a": 1, "b": 2, "c": 3}, '"c"'),
        ("log", {"x": 8, "base": "2"}, '"base"'),
        ("factorial", {"n": 5.5}, '"n"'),
        ("factorial", {"n": -1}, '"n"'),
        ("round", {"x": 1.5, "digits": 0.5}, '"digits"'),
        ("sqrt", {}, '"x"'),
    ],
)
async def test_server_names_the_bad_argument(
    session: Connection, name: str, arguments: dict[str, Any], field: str
) -> None:
    result = await call(session, name, arguments)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert field in text
    assert "\n" not in text


async def test_server_rejects_an_unknown_tool(session: Connection) -> None:
    with pytest.raises(McpError) as raised:
        await call(session, "sum", {"a": 1, "b": 2})
    assert raised.value.code == INVALID_PARAMS


def test_math_tools_work_on_any_server() -> None:
    server = McpServer("calc", "1.0.0")
    for tool in math_tools():
        server.add_tool(tool)
    assert MemoryServerFactory.create_memory_server("math").__class__ is MathServer


def test_no_input_escapes_as_anything_but_a_result_or_a_math_error() -> None:
    """A seeded sweep over awkward values: every call gives a bounded number or a MathError."""
    rng = random.Random(4)
    pool: list[object] = [
        0, -0.0, 1, -1, 2, 0.5, -0.5, 1e-320, -1e-320, 1e308, -1e308, 1.7976931348623157e308, 2**53, 2**63,
        -(2**64), 10**308, 10**400, 2**MAX_INT_BITS - 1, math.pi / 2, 1e16, 170, 171, 1023, 1024, -1023,
        math.nan, math.inf, True, None, "2", [], 3 + 0j,
    ]  # fmt: skip
    for _ in range(3000):
        spec = rng.choice(MATH_TOOL_SPECS)
        arguments = {name: rng.choice(pool) for name in spec.parameters if name in spec.required or rng.random() < 0.5}
        try:
            value = call_math(spec.name, arguments)
        except MathError as error:
            assert "\n" not in str(error)
            continue
        assert type(value) in (int, float)
        assert math.isfinite(value)
        assert abs(value) <= 1.7976931348623157e308
        orjson.dumps(result_payload(value))


def test_messages_abbreviate_huge_numbers() -> None:
    for name, arguments in [
        ("sqrt", {"x": -(2**MAX_INT_BITS - 1)}),
        ("sqrt", {"x": -(10**300)}),
        ("log", {"x": -(10**300)}),
        ("factorial", {"n": -(10**1000)}),
    ]:
        with pytest.raises(MathError) as raised:
            call_math(name, arguments)
        assert len(str(raised.value)) < 120, str(raised.value)
    with pytest.raises(MathError, match=r"-1e\+300"):
        call_math("sqrt", {"x": -(10**300)})
