"""The built-in ``math`` server: 19 calculator tools with exact integers and bounded work.

The arithmetic is a set of pure functions (``add``, ``power``, ``factorial``, ...)
plus a table of tool definitions, ``MATH_TOOL_SPECS``; ``call_math`` checks and
dispatches one call, and ``math_tools`` turns the table into core ``Tool``s.

Semantics, in one place:

- Numbers are Python ``int`` or ``float``. ``bool`` is not a number, and NaN
  and infinities are refused (JSON cannot carry them; a Python caller can).
- Integer inputs give exact integer results wherever the operation allows it
  (``power(2, 10)`` is ``1024``, ``divide(6, 3)`` is ``2``, ``sqrt(49)`` is
  ``7``, ``cbrt(-27)`` is ``-3``); otherwise the result is a float.
- Every result is a finite number whose magnitude is at most the largest
  double (about 1.8e308); anything larger is refused with a message, and a
  huge ``power`` or ``factorial`` is refused before it is computed. Integer
  inputs are limited to ``MAX_INT_BITS`` bits.
- ``round`` rounds halves away from zero, on the decimal value as written
  (``round(2.675, 2)`` is ``2.68``). ``mod`` is floored: the result has the
  sign of the divisor, as Python's ``%``. Trigonometry works in radians.

Results travel as ``{"result": number}``. JSON consumers that read numbers as
doubles lose digits beyond 2**53, and orjson cannot write integers beyond 64
bits, so an integer result outside +-(2**53 - 1) also carries its exact
decimal digits in ``"exact"``, and one outside the 64-bit range is sent in
``"result"`` as the nearest double.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, ClassVar, Final, TypeAlias

from ..engine.context import RequestContext
from ..engine.jsonrpc import json_type
from ..engine.types import CallToolResult, Tool, ToolAnnotations
from .memory_server import MemoryServer

__all__ = [
    "MATH_OUTPUT_SCHEMA",
    "MATH_TOOL_SPECS",
    "MAX_FACTORIAL",
    "MAX_INT_BITS",
    "MathError",
    "MathServer",
    "MathToolSpec",
    "Number",
    "call_math",
    "math_tool_result",
    "math_tools",
    "result_payload",
]

Number: TypeAlias = int | float

MAX_INT_BITS: Final = 4096
"""Integer inputs may have at most this many bits (about 1233 decimal digits)."""

MAX_FACTORIAL: Final = 170
"""The largest n whose factorial stays below the largest double (171! is about 1.2e309)."""

MAX_DIGITS: Final = 308
"""``round`` accepts ``digits`` in [-MAX_DIGITS, MAX_DIGITS]."""

_MAX_RESULT_INT: Final = int(sys.float_info.max)
_SAFE_INT: Final = 2**53 - 1
_INT64_MAX: Final = 2**63 - 1
_LIMIT_TEXT: Final = "results must stay within about +-1.8e308 (the largest double)"


class MathError(ValueError):
    """A math tool cannot give a result; ``str(error)`` is one line a model can act on."""


# -- argument checks ---------------------------------------------------------------------------------------


def _number(name: str, value: object) -> Number:
    # bool is an int subclass, but true/false are never meant as numbers.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MathError(f"'{name}' must be a number, got {_describe(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MathError(f"'{name}' must be a finite number, got {value!r}")
        return value
    if value.bit_length() > MAX_INT_BITS:
        raise MathError(f"'{name}' is too large: integers are limited to {MAX_INT_BITS} bits (about 1233 digits)")
    return int(value)  # an int subclass becomes a plain int


def _whole(name: str, value: object) -> int:
    number = _number(name, value)
    if isinstance(number, float):
        if not number.is_integer():
            raise MathError(f"'{name}' must be a whole number, got {_show(number)}")
        return int(number)
    return number


def _show(value: Number) -> str:
    """A number for a message: huge integers abbreviated so a message stays one short line."""
    if isinstance(value, int) and abs(value) >= 10**20:
        return f"{float(value):.6g}" if value.bit_length() <= 1024 else f"an integer of {value.bit_length()} bits"
    return repr(value)


_ARTICLED: Final = {
    "null": "null",
    "boolean": "a boolean",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def _describe(value: object) -> str:
    """What ``value`` is, for a message: ``an array``, ``null``, ``a value of type bytes``."""
    kind = json_type(value)
    return _ARTICLED.get(kind, f"a value of type {kind}")


def _checked(op: str, value: Number) -> Number:
    """Refuse results that are not finite or do not fit in a double."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MathError(f"The result of {op} overflows: {_LIMIT_TEXT}")
        return value
    if abs(value) > _MAX_RESULT_INT:
        digits = int(value.bit_length() * math.log10(2)) + 1
        raise MathError(f"The result of {op} would have about {digits} digits: {_LIMIT_TEXT}")
    return value


def _too_large(op: str) -> MathError:
    return MathError(f"The result of {op} is too large: {_LIMIT_TEXT}")


# -- the operations ----------------------------------------------------------------------------------------


def add(a: Number, b: Number) -> Number:
    """a + b."""
    return _checked("add", _number("a", a) + _number("b", b))


def subtract(a: Number, b: Number) -> Number:
    """a - b."""
    return _checked("subtract", _number("a", a) - _number("b", b))


def multiply(a: Number, b: Number) -> Number:
    """a * b."""
    return _checked("multiply", _number("a", a) * _number("b", b))


def divide(a: Number, b: Number) -> Number:
    """a / b; an exact int when both are ints and b divides a."""
    x, y = _number("a", a), _number("b", b)
    if y == 0:
        raise MathError("Cannot divide by zero: 'b' must not be 0")
    if isinstance(x, int) and isinstance(y, int) and x % y == 0:
        return _checked("divide", x // y)
    try:
        return _checked("divide", x / y)
    except OverflowError:
        raise _too_large("divide") from None


def power(base: Number, exponent: Number) -> Number:
    """base ** exponent; exact for an int base and a non-negative int exponent."""
    b, e = _number("base", base), _number("exponent", exponent)
    if b == 0 and e < 0:
        raise MathError("0 cannot be raised to a negative power (division by zero)")
    if b < 0 and isinstance(e, float) and not e.is_integer():
        raise MathError("A negative base with a fractional exponent has no real result; use cbrt for cube roots")
    # Each factor adds at least bit_length - 1 bits: refuse before computing anything huge.
    if (
        isinstance(b, int)
        and isinstance(e, int)
        and abs(b) >= 2
        and e * (abs(b).bit_length() - 1) > sys.float_info.max_exp
    ):
        digits = math.floor(e * math.log10(abs(b))) + 1
        raise MathError(f"The result of power would have about {digits} digits: {_LIMIT_TEXT}")
    try:
        result = b**e
    except OverflowError:
        raise _too_large("power") from None
    if isinstance(result, complex):  # defensive: Python returns complex for (-x) ** fraction
        raise MathError("The result of power is not a real number")
    return _checked("power", result)


def sqrt(x: Number) -> Number:
    """The square root; an exact int for a perfect square."""
    v = _number("x", x)
    if v < 0:
        raise MathError(f"Cannot take the square root of a negative number ({_show(v)}); 'x' must be >= 0")
    if isinstance(v, int):
        root = math.isqrt(v)
        if root * root == v:
            return _checked("sqrt", root)
        try:
            return math.sqrt(v)
        except OverflowError:
            # Beyond the double range the fractional part is far below a double's precision.
            return _checked("sqrt", float(root))
    return math.sqrt(v)


def _icbrt(n: int) -> int:
    """floor(n ** (1/3)) for n >= 0, by integer Newton iteration."""
    if n < 2:
        return n
    x = 1 << -(-n.bit_length() // 3)  # a power of two above the root
    while True:
        y = (2 * x + n // (x * x)) // 3
        if y >= x:
            return x
        x = y


def cbrt(x: Number) -> Number:
    """The real cube root (negative for a negative x); an exact int for a perfect cube."""
    v = _number("x", x)
    if isinstance(v, int):
        root = _icbrt(abs(v))
        if root**3 == abs(v):
            return _checked("cbrt", root if v >= 0 else -root)
        try:
            return math.cbrt(v)
        except OverflowError:
            return _checked("cbrt", math.copysign(float(root), v))
    result = math.cbrt(v)
    # libm may be one ulp off on exact cubes (cbrt(27.0) gives 3.0000000000000004).
    nearest = round(result)
    if abs(nearest) < 2**17 and float(nearest) ** 3 == v:
        return float(nearest)
    return result


def abs_(x: Number) -> Number:
    """|x|."""
    return _checked("abs", abs(_number("x", x)))


def _to_float(name: str, value: Number, op: str) -> float:
    try:
        return float(value)
    except OverflowError:
        raise MathError(f"'{name}' is too large for {op}: it must be within about +-1.8e308") from None


def sin(x: Number) -> float:
    """The sine of x radians."""
    return math.sin(_to_float("x", _number("x", x), "sin"))


def cos(x: Number) -> float:
    """The cosine of x radians."""
    return math.cos(_to_float("x", _number("x", x), "cos"))


def tan(x: Number) -> float:
    """The tangent of x radians; refused where the tangent is undefined."""
    v = _to_float("x", _number("x", x), "tan")
    # No double is exactly an odd multiple of pi/2; the nearest ones have a cosine no larger
    # than their own spacing (ulp), and tan there is rounding noise of about 1e16. Past 2**43
    # doubles are too sparse for "nearest to an odd multiple" to mean anything.
    spacing = math.ulp(v)
    if spacing < 1e-3 and abs(math.cos(v)) <= spacing:
        raise MathError(f"tan is undefined at odd multiples of pi/2, and {_show(v)} is one (up to rounding)")
    return math.tan(v)


def log(x: Number, base: Number | None = None) -> float:
    """The logarithm of x, natural unless ``base`` is given."""
    v = _number("x", x)
    if v <= 0:
        raise MathError(f"The logarithm is only defined for x > 0, got {_show(v)}")
    if base is None:
        return math.log(v)
    b = _number("base", base)
    if b <= 0:
        raise MathError(f"The base of a logarithm must be > 0, got {_show(b)}")
    if b == 1:
        raise MathError("The base of a logarithm must not be 1")
    if b == 2:
        return math.log2(v)
    if b == 10:
        return math.log10(v)
    result = math.log(v) / math.log(b)
    if isinstance(v, int) and isinstance(b, int) and v > 1 and b > 1:
        # Make exact powers exact: log(125, 5) is 3.0, not 3.0000000000000004.
        k = round(result)
        if 0 < k <= MAX_INT_BITS and b**k == v:
            return float(k)
    return result


def max_(a: Number, b: Number) -> Number:
    """The larger of a and b (a when they are equal)."""
    x, y = _number("a", a), _number("b", b)
    return _checked("max", y if y > x else x)


def min_(a: Number, b: Number) -> Number:
    """The smaller of a and b (a when they are equal)."""
    x, y = _number("a", a), _number("b", b)
    return _checked("min", y if y < x else x)


_ROUND_CONTEXT: Final = Context(prec=2 * MAX_DIGITS + 40, Emax=999_999, Emin=-999_999)


def round_(x: Number, digits: int = 0) -> Number:
    """x rounded to ``digits`` decimals, halves away from zero.

    The decimal value as written is rounded (``round_(2.675, 2)`` is 2.68,
    although the double 2.675 is slightly below it). The result is an int
    when ``digits`` <= 0 and a float otherwise.
    """
    v = _number("x", x)
    d = _whole("digits", digits)
    if not -MAX_DIGITS <= d <= MAX_DIGITS:
        raise MathError(f"'digits' must be between {-MAX_DIGITS} and {MAX_DIGITS}, got {_show(d)}")
    if isinstance(v, int):
        if d >= 0:
            return v
        step = 10**-d
        quotient, remainder = divmod(abs(v), step)
        if 2 * remainder >= step:
            quotient += 1
        return _checked("round", quotient * step if v >= 0 else -quotient * step)
    exact = Decimal(repr(v))
    rounded = exact.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP, context=_ROUND_CONTEXT)
    if d <= 0:
        return _checked("round", int(rounded))
    return _checked("round", float(rounded))


def ceil(x: Number) -> int:
    """The smallest integer >= x."""
    return int(_checked("ceil", math.ceil(_number("x", x))))


def floor(x: Number) -> int:
    """The largest integer <= x."""
    return int(_checked("floor", math.floor(_number("x", x))))


def mod(a: Number, b: Number) -> Number:
    """a modulo b, floored: the result has the sign of b (as Python's %)."""
    x, y = _number("a", a), _number("b", b)
    if y == 0:
        raise MathError("Cannot take a modulo by zero: 'b' must not be 0")
    try:
        return _checked("mod", x % y)
    except OverflowError:
        raise _too_large("mod") from None


def factorial(n: int) -> int:
    """n! for a whole number 0 <= n <= MAX_FACTORIAL."""
    value = _number("n", n)
    if isinstance(value, float) and not value.is_integer():
        raise MathError(f"factorial is only defined for whole numbers, got {_show(value)}")
    k = int(value)
    if k < 0:
        raise MathError(f"factorial is only defined for n >= 0, got {_show(k)}")
    if k > MAX_FACTORIAL:
        raise MathError(f"factorial is limited to n <= {MAX_FACTORIAL}: {MAX_FACTORIAL + 1}! exceeds 1.8e308")
    return math.factorial(k)


# -- the tool table ----------------------------------------------------------------------------------------

_NUMBER: Final = {"type": "number"}


def _num(description: str) -> dict[str, Any]:
    return {**_NUMBER, "description": description}


MATH_OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "result": {"type": "number", "description": "The result."},
        "exact": {
            "type": "string",
            "pattern": "^-?[0-9]+$",
            "description": (
                "The exact decimal digits of an integer result beyond +-(2**53 - 1), which JSON "
                "readers using doubles would round; 'result' then holds the nearest double when it "
                "is outside the 64-bit range."
            ),
        },
    },
    "required": ["result"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class MathToolSpec:
    """One math tool: its name, what a model reads, its parameters and its function."""

    name: str
    title: str
    description: str
    function: Callable[..., Number]
    parameters: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]
    input_schema: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        schema = {
            "type": "object",
            "properties": {name: dict(prop) for name, prop in self.parameters.items()},
            "required": list(self.required),
            "additionalProperties": False,
        }
        object.__setattr__(self, "input_schema", schema)


_EXACT = "Integers stay exact."
_RADIANS = "The angle is in radians (pi radians = 180 degrees)."

MATH_TOOL_SPECS: Final[tuple[MathToolSpec, ...]] = (
    MathToolSpec(
        "add",
        "Add",
        f"Add two numbers: a + b. {_EXACT}",
        add,
        {"a": _num("The first addend."), "b": _num("The second addend.")},
        ("a", "b"),
    ),
    MathToolSpec(
        "subtract",
        "Subtract",
        f"Subtract b from a: a - b. {_EXACT}",
        subtract,
        {"a": _num("The minuend."), "b": _num("The subtrahend.")},
        ("a", "b"),
    ),
    MathToolSpec(
        "multiply",
        "Multiply",
        f"Multiply two numbers: a * b. {_EXACT}",
        multiply,
        {"a": _num("The first factor."), "b": _num("The second factor.")},
        ("a", "b"),
    ),
    MathToolSpec(
        "divide",
        "Divide",
        "Divide a by b: a / b. Two integers that divide evenly give an exact integer; otherwise "
        "the result is a decimal. b must not be 0.",
        divide,
        {"a": _num("The dividend."), "b": _num("The divisor (not 0).")},
        ("a", "b"),
    ),
    MathToolSpec(
        "power",
        "Power",
        "Raise base to exponent: base ** exponent. An integer base with a non-negative integer "
        "exponent gives an exact integer. 0 cannot take a negative exponent, and a negative base "
        "needs an integer exponent. Results beyond about 1.8e308 are refused.",
        power,
        {"base": _num("The base."), "exponent": _num("The exponent.")},
        ("base", "exponent"),
    ),
    MathToolSpec(
        "sqrt",
        "Square root",
        "The square root of x (x >= 0). A perfect square integer gives an exact integer.",
        sqrt,
        {"x": _num("The number, >= 0.")},
        ("x",),
    ),
    MathToolSpec(
        "cbrt",
        "Cube root",
        "The real cube root of x; negative for a negative x. A perfect cube integer gives an exact integer.",
        cbrt,
        {"x": _num("The number.")},
        ("x",),
    ),
    MathToolSpec(
        "abs",
        "Absolute value",
        f"The absolute value of x, |x|. {_EXACT}",
        abs_,
        {"x": _num("The number.")},
        ("x",),
    ),
    MathToolSpec("sin", "Sine", f"The sine of x. {_RADIANS}", sin, {"x": _num("The angle in radians.")}, ("x",)),
    MathToolSpec(
        "cos",
        "Cosine",
        f"The cosine of x. {_RADIANS}",
        cos,
        {"x": _num("The angle in radians.")},
        ("x",),
    ),
    MathToolSpec(
        "tan",
        "Tangent",
        f"The tangent of x. {_RADIANS} Undefined (refused) at odd multiples of pi/2.",
        tan,
        {"x": _num("The angle in radians.")},
        ("x",),
    ),
    MathToolSpec(
        "log",
        "Logarithm",
        "The logarithm of x (x > 0): natural (base e) unless base is given. The base must be > 0 "
        "and not 1; use 10 for the common and 2 for the binary logarithm.",
        log,
        {"x": _num("The number, > 0."), "base": _num("The base, > 0 and not 1. Default: e.")},
        ("x",),
    ),
    MathToolSpec(
        "max",
        "Maximum",
        "The larger of a and b.",
        max_,
        {"a": _num("The first number."), "b": _num("The second number.")},
        ("a", "b"),
    ),
    MathToolSpec(
        "min",
        "Minimum",
        "The smaller of a and b.",
        min_,
        {"a": _num("The first number."), "b": _num("The second number.")},
        ("a", "b"),
    ),
    MathToolSpec(
        "round",
        "Round",
        "Round x to digits decimal places (default 0), rounding halves away from zero: 2.5 -> 3, "
        "-2.5 -> -3, 2.675 with digits 2 -> 2.68 (the decimal value as written is rounded). A "
        "negative digits rounds to tens, hundreds, ...: 1250 with digits -2 -> 1300. The result is "
        "an integer when digits <= 0.",
        round_,
        {
            "x": _num("The number to round."),
            "digits": {
                "type": "integer",
                "minimum": -MAX_DIGITS,
                "maximum": MAX_DIGITS,
                "default": 0,
                "description": "Decimal places to keep; negative rounds left of the decimal point.",
            },
        },
        ("x",),
    ),
    MathToolSpec(
        "ceil",
        "Ceiling",
        "The smallest integer greater than or equal to x (rounds toward +infinity).",
        ceil,
        {"x": _num("The number.")},
        ("x",),
    ),
    MathToolSpec(
        "floor",
        "Floor",
        "The largest integer less than or equal to x (rounds toward -infinity).",
        floor,
        {"x": _num("The number.")},
        ("x",),
    ),
    MathToolSpec(
        "mod",
        "Modulo",
        "The remainder of a divided by b, floored: the result has the sign of the divisor b, like "
        "Python's %: mod(7, 3) = 1, mod(-7, 3) = 2, mod(7, -3) = -2. b must not be 0.",
        mod,
        {"a": _num("The dividend."), "b": _num("The divisor (not 0).")},
        ("a", "b"),
    ),
    MathToolSpec(
        "factorial",
        "Factorial",
        f"n! = 1 * 2 * ... * n for a whole number n from 0 to {MAX_FACTORIAL} (0! = 1), exact. "
        f"Larger n would exceed 1.8e308 and is refused.",
        factorial,
        {
            "n": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_FACTORIAL,
                "description": f"A whole number from 0 to {MAX_FACTORIAL}.",
            }
        },
        ("n",),
    ),
)

_SPECS_BY_NAME: Final = {spec.name: spec for spec in MATH_TOOL_SPECS}


def call_math(name: str, arguments: object) -> Number:
    """Run the math tool ``name`` on ``arguments`` (a mapping); raise MathError if it cannot.

    Unknown tools, non-object arguments, missing and unexpected arguments are
    MathErrors too, so this is safe to call with anything.
    """
    spec = _SPECS_BY_NAME.get(name) if isinstance(name, str) else None
    if spec is None:
        raise MathError(f"Unknown math tool {name!r}; the tools are: {', '.join(_SPECS_BY_NAME)}")
    if not isinstance(arguments, Mapping):
        raise MathError(f"The arguments of {spec.name} must be an object, got {_describe(arguments)}")
    unexpected = [key for key in arguments if key not in spec.parameters]
    if unexpected:
        raise MathError(
            f"Unexpected argument {unexpected[0]!r} for {spec.name}; it takes: {', '.join(spec.parameters)}"
        )
    missing = [key for key in spec.required if key not in arguments]
    if missing:
        raise MathError(f"Missing required argument {missing[0]!r} for {spec.name}")
    for key, value in arguments.items():
        if value is None:  # the Python functions read None as "left out"; the tools do not
            raise MathError(f"'{key}' must be a number, got null")
    try:
        # _checked again: a function that forgot to bound its result must not break the encoder.
        return _checked(spec.name, spec.function(**arguments))
    except ZeroDivisionError:
        raise MathError(f"{spec.name}: division by zero") from None
    except OverflowError:
        raise _too_large(spec.name) from None


def result_payload(value: Number) -> dict[str, Any]:
    """The ``structuredContent`` for a result (see the module docs for ``exact``)."""
    if isinstance(value, int) and abs(value) > _SAFE_INT:
        shown: Number = value if abs(value) <= _INT64_MAX else float(value)
        return {"result": shown, "exact": str(value)}
    return {"result": value}


def math_tools(*, handlers: bool = True) -> list[Tool]:
    """The 19 math tools as core ``Tool``s, to register on any ``McpServer``.

    Each handler answers with a result or an isError result. With
    ``handlers=False`` the tools have none, for a ``MemoryServer`` that answers
    in ``on_tool_call``.
    """
    return [
        Tool(
            spec.name,
            copy.deepcopy(spec.input_schema),
            _handler(spec.name) if handlers else None,
            title=spec.title,
            description=spec.description,
            output_schema=copy.deepcopy(MATH_OUTPUT_SCHEMA),
            annotations=ToolAnnotations(
                title=spec.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
        for spec in MATH_TOOL_SPECS
    ]


def math_tool_result(name: str, arguments: object) -> CallToolResult:
    """Run a math tool and wrap the outcome as a ``CallToolResult`` (isError for a MathError)."""
    try:
        value = call_math(name, arguments)
    except MathError as error:
        return CallToolResult.error(str(error))
    return CallToolResult.structured(result_payload(value), text=str(value))


def _handler(name: str) -> Callable[[dict[str, Any], RequestContext], Awaitable[CallToolResult]]:
    # Async although the work is tiny: a sync handler would cost a worker-thread hop per call.
    async def handler(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return math_tool_result(name, arguments)

    return handler


class MathServer(MemoryServer):
    """The built-in ``math`` server: the 19 calculator tools of this module."""

    server_name: ClassVar[str] = "math"
    server_title: ClassVar[str | None] = "Math"
    server_instructions: ClassVar[str | None] = (
        "Calculator tools. Integers stay exact; trigonometry is in radians; round rounds halves away "
        "from zero; mod takes the sign of the divisor. Results beyond about 1.8e308 are refused."
    )
    tools: ClassVar[list[Tool]] = math_tools(handlers=False)

    async def on_tool_call(self, name: str, arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        return math_tool_result(name, arguments)
