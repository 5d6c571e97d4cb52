"""The answer to an elicitation form, read from words: ``--answer`` values, or lines typed on a
terminal (the dialog of ``call``; ``elicit.py`` decides when each is used).

Rules:

1. A form is its ``requestedSchema``'s properties, in order (:class:`Field`): string (length,
   ``format`` email/uri/date/date-time, ``pattern``), number and integer (minimum, maximum),
   boolean, single-select enums (untitled, titled ``oneOf``, legacy ``enumNames``) and
   multi-select arrays (``minItems``/``maxItems``). A ``default`` that does not fit is not offered.
2. Each answer is read as its field's type: a choice by its value, its title or its number; several
   choices by commas or a JSON array; booleans as yes/no/true/false. An answer that does not fit is
   an :class:`AnswerError` saying what would.
3. The terminal dialog (:func:`ask_form`): "accept, decline or cancel" first (unless a flag chose;
   Enter or Ctrl-D there cancels), then each field no flag gave; Enter takes the default or skips an
   optional field. A bad answer is shown and asked again, at most ``MAX_TRIES`` times; Ctrl-D at
   any field cancels the form.

The terminal is reached only through a :data:`Reader` and a :data:`Writer`, so tests script it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .errors import BadUsage
from .values import split_pair

Reader = Callable[[str], "str | None"]
"""Shows a prompt and returns the line typed (without its newline), or None at end of input (Ctrl-D)."""
Writer = Callable[[str], None]
"""Shows one line to the user."""

MAX_TRIES: Final = 20  # bad answers to one prompt before the form is cancelled (a reader cannot loop forever)
ACTIONS: Final = ("accept", "decline", "cancel")
_TRUE: Final = frozenset({"true", "yes", "y", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "n", "off", "0"})
_FORMATS: Final = {
    "email": (r"[^@\s]+@[^@\s]+\.[^@\s]+", "an email address such as ada@example.com"),
    "uri": (r"[A-Za-z][A-Za-z0-9+.-]*:\S+", "a URI such as https://example.com/"),
    "date": (r"\d{4}-\d{2}-\d{2}", "a date such as 2025-11-25"),
    "date-time": (
        r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?",
        "a date and time such as 2025-11-25T14:30:00Z",
    ),
}


class AnswerError(ValueError):
    """An answer that does not fit its field; the message says what would."""


def printable(text: str) -> str:
    """``text`` with control characters spelled out, so a server cannot drive the terminal."""
    return "".join(char if char.isprintable() or char == "\n" else repr(char)[1:-1] for char in text)


class Field:
    """One property of a form's ``requestedSchema``: how to show it and read an answer for it."""

    def __init__(self, name: str, schema: Mapping[str, Any], required: bool) -> None:
        self.name = name
        self.schema = schema
        self.required = required
        self.kind = str(schema.get("type", "string"))
        self.choices = _choices(
            schema["items"] if self.kind == "array" and isinstance(schema.get("items"), Mapping) else schema
        )
        default = schema.get("default")
        # A default that does not fit is not offered (the client would not fill it in either).
        self.default: Any = None
        if default is not None:
            try:
                self.read(_as_text(default))
                self.default = default
            except AnswerError:
                pass

    def describe(self) -> str:
        """One line: ``color (required): one of 1) Red, 2) Green; default red``."""
        title = self.schema.get("title")
        shown = title and str(title).casefold() != self.name.casefold()
        head = self.name + (f" ({printable(str(title))})" if shown else "")
        head += " (required)" if self.required else ""
        parts = [self.hint()]
        description = self.schema.get("description")
        if description:
            parts.insert(0, printable(str(description)))
        if self.default is not None:
            parts.append(f"default {_as_text(self.default)}")
        return f"{head}: " + "; ".join(part for part in parts if part)

    def hint(self) -> str:
        """What an answer looks like: the choices, the type with its bounds, the format."""
        schema = self.schema
        if self.choices is not None:
            listed = ", ".join(f"{number}) {title}" for number, (_, title) in enumerate(self.choices, 1))
            if self.kind == "array":
                return f"any of {listed} (separate with commas){_bounds(schema, 'minItems', 'maxItems', ' choices')}"
            return f"one of {listed}"
        if self.kind == "boolean":
            return "yes or no"
        if self.kind in ("integer", "number"):
            return ("an integer" if self.kind == "integer" else "a number") + _bounds(schema, "minimum", "maximum")
        format_ = _FORMATS.get(str(schema.get("format")))
        text = format_[1] if format_ is not None else "text"
        return text + _bounds(schema, "minLength", "maxLength", " characters")

    def read(self, raw: str) -> Any:
        """The value ``raw`` gives this field; AnswerError saying what would fit instead."""
        schema = self.schema
        if self.kind == "array":
            words = _list_words(raw)
            values = [self._choose(word) for word in words]
            values = list(dict.fromkeys(values))  # (a choice given twice counts once)
            _check_bounds(len(values), schema, "minItems", "maxItems", "choices")
            return values
        if self.choices is not None:
            return self._choose(raw)
        if self.kind == "boolean":
            word = raw.strip().lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
            raise AnswerError("must be yes or no (true or false)")
        if self.kind in ("integer", "number"):
            number = _number(raw, integer=self.kind == "integer")
            _check_bounds(number, schema, "minimum", "maximum", None)
            return number
        _check_bounds(len(raw), schema, "minLength", "maxLength", "characters")
        format_ = _FORMATS.get(str(schema.get("format")))
        if format_ is not None and not re.fullmatch(format_[0], raw.strip()):
            raise AnswerError(f"must be {format_[1]}")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                matched = re.search(pattern, raw) is not None
            except re.error:
                matched = True  # a pattern this client cannot read is the server's to check
            if not matched:
                raise AnswerError(f"must match the pattern {pattern}")
        return raw

    def _choose(self, raw: str) -> Any:
        assert self.choices is not None
        word = raw.strip()
        for value, _ in self.choices:
            if word == str(value):
                return value
        for value, title in self.choices:
            if word.casefold() == title.casefold():
                return value
        if word.isdigit() and 1 <= int(word) <= len(self.choices):
            return self.choices[int(word) - 1][0]
        shown = ", ".join(str(value) if str(value) == title else f"{value} ({title})" for value, title in self.choices)
        raise AnswerError(f"must be one of: {shown}; got {raw!r}")


def form_fields(schema: Any) -> list[Field]:
    """The fields of a form's ``requestedSchema``, in its order."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    needed = set(required) if isinstance(required, list) else set()
    if not isinstance(properties, Mapping):
        return []
    return [Field(str(name), sub, name in needed) for name, sub in properties.items() if isinstance(sub, Mapping)]


def _choices(schema: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    """``(value, title)`` for each option of an enum shape (untitled, titled, legacy enumNames), or None."""
    if isinstance(schema.get("enum"), list):
        values = schema["enum"]
        names = schema.get("enumNames")
        if isinstance(names, list) and len(names) == len(values):
            return [(value, printable(str(name))) for value, name in zip(values, names, strict=True)]
        return [(value, printable(str(value))) for value in values]
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [
                (option["const"], printable(str(option.get("title", option["const"]))))
                for option in options
                if isinstance(option, Mapping) and "const" in option
            ]
    return None


def _as_text(value: Any) -> str:
    """A value as the user would type it: ``red``, ``3``, ``yes``, ``red,green``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def _list_words(raw: str) -> list[str]:
    """A multi-select answer: a JSON array, or comma-separated words (blank ones left out)."""
    if raw.strip().startswith("["):
        import json

        try:
            loaded = json.loads(raw)
        except ValueError:
            raise AnswerError('must be a JSON array such as ["a", "b"], or words separated by commas') from None
        if isinstance(loaded, list):
            return [str(item) for item in loaded]
    return [word.strip() for word in raw.split(",") if word.strip()]


def _number(raw: str, *, integer: bool) -> int | float:
    import math

    text = raw.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (integer and not value.is_integer()):
        raise AnswerError(f"must be {'an integer' if integer else 'a number'}; got {raw!r}")
    return int(value) if integer else value


def _bounds(schema: Mapping[str, Any], low: str, high: str, unit: str = "") -> str:
    """`` from 1 to 10 characters``, `` at least 1``, or nothing."""
    least, most = schema.get(low), schema.get(high)
    if least is not None and most is not None:
        return f", from {least:g} to {most:g}{unit}" if _is_number(least) and _is_number(most) else ""
    if _is_number(least):
        return f", at least {least:g}{unit}"
    if _is_number(most):
        return f", at most {most:g}{unit}"
    return ""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_bounds(amount: float, schema: Mapping[str, Any], low: str, high: str, unit: str | None) -> None:
    least, most = schema.get(low), schema.get(high)
    counted = f" {unit}" if unit else ""
    if isinstance(least, int | float) and amount < least:
        raise AnswerError(f"must be at least {least:g}{counted}")
    if isinstance(most, int | float) and amount > most:
        raise AnswerError(f"must be at most {most:g}{counted}")


def parse_answers(words: Sequence[str]) -> dict[str, str]:
    """``--answer FIELD=VALUE`` words as a dict; a usage error for a word without ``=`` or a field given twice."""
    given: dict[str, str] = {}
    for word in words:
        pair = split_pair(word)
        if pair is None:
            raise BadUsage(f"--answer {word!r} is not FIELD=VALUE")
        if pair[0] in given:
            raise BadUsage(f"--answer gives {pair[0]!r} twice")
        given[pair[0]] = pair[1]
    return given


class Cancelled(Exception):
    """The user ended the form (Ctrl-D, or too many unreadable answers)."""


def _ask(read: Reader, write: Writer, prompt: str, check: Callable[[str], Any]) -> Any:
    """``check(line)`` of the first line it accepts; each refusal (AnswerError) is shown and asked again."""
    for _ in range(MAX_TRIES):
        line = read(prompt)
        if line is None:
            raise Cancelled
        try:
            return check(line)
        except AnswerError as error:
            write(f"  {error}")
    write(f"  no answer after {MAX_TRIES} tries")
    raise Cancelled


def _action(line: str) -> str:
    word = line.strip().lower()
    if not word:
        return "cancel"
    for action in ACTIONS:
        if action.startswith(word):
            return action
    raise AnswerError("type a (accept), d (decline) or c (cancel)")


def ask_form(
    fields: Sequence[Field], read: Reader, write: Writer, *, given: Mapping[str, Any], decided: bool
) -> dict[str, Any]:
    """A form's answer asked on a terminal (rule 3): ``given`` holds the fields the flags answered,
    ``decided`` says a flag already chose to accept (the accept/decline/cancel question is skipped)."""
    if not decided:
        try:
            action = _ask(read, write, "Answer? [a]ccept, [d]ecline, [c]ancel (Enter cancels): ", _action)
        except Cancelled:
            action = "cancel"
        if action != "accept":
            return {"action": action}
    content = dict(given)

    for field in fields:
        if field.name in content:
            continue
        shown = f" [{_as_text(field.default)}]" if field.default is not None else ""

        def check(line: str, field: Field = field) -> Any:
            if line.strip():
                return field.read(line)
            if field.default is not None:
                return field.default
            if field.required:
                raise AnswerError(f"{field.name} is required")
            return None

        try:
            value = _ask(read, write, f"{field.name}{shown}: ", check)
        except Cancelled:
            return {"action": "cancel"}
        if value is not None:
            content[field.name] = value
    return {"action": "accept", "content": content}
