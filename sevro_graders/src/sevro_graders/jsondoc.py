"""JSON in a final message: finding the document, RFC 6901 pointers, JavaScript equality, subsets.

Sevro parses with ``JSON.parse`` and compares JavaScript values, so this module follows
JavaScript where Python differs: numbers are one type (``1 == 1.0``, and integers compare as
doubles) while ``true`` is not ``1``; ``NaN`` and ``Infinity`` are not JSON; duplicate keys keep
the last value.
"""

from __future__ import annotations

import bisect
import enum
import json
import math
import re
from typing import Any, Literal

from attrs import frozen

from sevro_core.api import ConfigurationError, JsonValue, join_pointer, limits
from sevro_graders.jsregex import JsRegex, JsRegexError, compile_js_regex
from sevro_graders.jsstrings import js_trim

MAX_DOCUMENT_DEPTH = limits.MAX_JSON_DEPTH
"""Deepest nesting accepted in a candidate's JSON document (the case-file bound)."""

REGEX_KEY = "$regex"

FENCE_PATTERN = r"```json[ \t]*\r?\n(.*?)\r?\n[ \t]*```"
"""What a fence is (with DOTALL). Found by :func:`find_fences`, never by a regex engine: on a
message with many unclosed openings, finditer backtracks in quadratic time."""
_CLOSING = re.compile(r"\n[ \t]*```")
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_MAX_INT_DIGITS = 4000


# ---------------------------------------------------------------------------------------------
# Finding the document


@frozen
class Document:
    """The JSON value a message carries; ``exact`` when the trimmed message is nothing else."""

    value: JsonValue
    exact: bool


@frozen
class NoDocument:
    """Why a message carries no usable JSON document (a failed check, not a grading error)."""

    reason: str


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_int(text: str) -> int | float:
    # Python refuses int() of very long digit strings; a JavaScript number is a double anyway.
    return int(text) if len(text) <= _MAX_INT_DIGITS else float(text)


def parse_json(text: str) -> JsonValue:
    """``JSON.parse``: strict JSON, surrounding JSON whitespace allowed; raises ``ValueError``."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_int=_parse_int)
    except RecursionError:
        raise ValueError("nesting is too deep") from None
    if _depth_exceeds(value, MAX_DOCUMENT_DEPTH):
        raise ValueError(f"nesting is deeper than {MAX_DOCUMENT_DEPTH} levels")
    return value


def _depth_exceeds(value: JsonValue, limit: int) -> bool:
    stack: list[tuple[JsonValue, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _describe_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno} column {exc.colno}: {exc.msg}"
    return str(exc)


def find_document(text: str) -> Document | NoDocument:
    """The whole text as JSON; otherwise the content of its one and only ```` ```json ```` fence."""
    try:
        return Document(parse_json(text), exact=True)
    except ValueError:
        pass
    fences = find_fences(text)
    if not fences:
        return NoDocument("the message is not JSON and has no ```json fence")
    if len(fences) > 1:
        return NoDocument(
            f"the message is not JSON and has {len(fences)} ```json fences (expected one)"
        )
    fence = fences[0]
    try:
        value = parse_json(fence.body)
    except ValueError as exc:
        return NoDocument(f"the ```json fence is not valid JSON ({_describe_error(exc)})")
    return Document(value, exact=js_trim(text) == js_trim(text[fence.start : fence.end]))


@frozen
class Fence:
    """One fence: its span in the message and the text between its lines."""

    start: int
    end: int
    body: str


def find_fences(text: str) -> list[Fence]:
    """What ``re.finditer(FENCE_PATTERN, text, re.DOTALL)`` finds, in linear time.

    An opening takes the first closing line after it, so closings are located once; an opening
    with no closing after it means no later opening has one either.
    """
    closings = [(m.start(), m.end()) for m in _CLOSING.finditer(text)]
    fences: list[Fence] = []
    position = 0
    while (start := text.find("```json", position)) >= 0:
        body_start = _after_opening_line(text, start + len("```json"))
        if body_start is None:
            position = start + 1
            continue
        index = bisect.bisect_left(closings, (body_start, -1))
        if index == len(closings):
            break
        newline, end = closings[index]
        body_end = newline - 1 if newline > body_start and text[newline - 1] == "\r" else newline
        fences.append(Fence(start, end, text[body_start:body_end]))
        position = end
    return fences


def _after_opening_line(text: str, index: int) -> int | None:
    """Where the body starts after ``[ \\t]*\\r?\\n`` at ``index``, or None if that is not there."""
    while index < len(text) and text[index] in " \t":
        index += 1
    if text.startswith("\r", index):
        index += 1
    return index + 1 if text.startswith("\n", index) else None


NOT_EXACT = "the trimmed message is not exactly one JSON document or one ```json fence"


# ---------------------------------------------------------------------------------------------
# Pointers


class PointerSyntaxError(ValueError):
    """Not an RFC 6901 JSON pointer."""


class _Missing(enum.Enum):
    MISSING = enum.auto()


MISSING = _Missing.MISSING
"""What :meth:`Pointer.resolve` returns when the pointer selects nothing."""


@frozen
class Pointer:
    """A parsed RFC 6901 pointer; the empty pointer selects the whole document."""

    source: str
    tokens: tuple[str, ...]

    @classmethod
    def parse(cls, source: str) -> Pointer:
        if source == "":
            return cls(source, ())
        if not source.startswith("/"):
            raise PointerSyntaxError(f"JSON pointer {source!r} must be empty or start with '/'")
        tokens = []
        for raw in source[1:].split("/"):
            if re.search(r"~(?![01])", raw):
                raise PointerSyntaxError(
                    f"JSON pointer {source!r} has a '~' not followed by 0 or 1"
                )
            tokens.append(raw.replace("~1", "/").replace("~0", "~"))
        return cls(source, tuple(tokens))

    def resolve(self, document: JsonValue) -> JsonValue | Literal[_Missing.MISSING]:
        """The selected value; array indices have no leading zeros and ``-`` never resolves."""
        current = document
        for token in self.tokens:
            if isinstance(current, dict):
                if token not in current:
                    return MISSING
                current = current[token]
            elif isinstance(current, list):
                if not _ARRAY_INDEX.match(token) or int(token) >= len(current):
                    return MISSING
                current = current[int(token)]
            else:
                return MISSING
        return current

    def subject(self) -> str:
        """How a detail names the selected value."""
        return f"the value at {self.source}" if self.tokens else "the document"


# ---------------------------------------------------------------------------------------------
# Equality and subsets


def _is_number(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_double(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def js_equal(expected: JsonValue, actual: JsonValue) -> bool:
    """Deep strict equality of JSON values as JavaScript sees them (``1 == 1.0``, ``true != 1``)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if _is_number(expected) and _is_number(actual):
        return _as_double(expected) == _as_double(actual)
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, str) and isinstance(actual, str):
        return expected == actual
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            js_equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            js_equal(value, actual[key]) for key, value in expected.items()
        )
    return False


@frozen
class ValueMatcher:
    """A leaf: the actual value must equal the expected one."""

    expected: JsonValue

    def matches(self, actual: JsonValue) -> bool:
        return js_equal(self.expected, actual)


@frozen
class RegexMatcher:
    """``{"$regex": pattern}``: the actual value must be a string the regex finds a match in."""

    regex: JsRegex

    def matches(self, actual: JsonValue) -> bool:
        return isinstance(actual, str) and self.regex.test(actual)


@frozen
class ArrayMatcher:
    """Every expected element is matched by some element of the actual array (in any order)."""

    items: tuple[Matcher, ...]

    def matches(self, actual: JsonValue) -> bool:
        return isinstance(actual, list) and all(
            any(item.matches(candidate) for candidate in actual) for item in self.items
        )


@frozen
class ObjectMatcher:
    """Every expected key is present and its value matches; other keys are ignored."""

    entries: tuple[tuple[str, Matcher], ...]

    def matches(self, actual: JsonValue) -> bool:
        return isinstance(actual, dict) and all(
            key in actual and matcher.matches(actual[key]) for key, matcher in self.entries
        )


Matcher = ValueMatcher | RegexMatcher | ArrayMatcher | ObjectMatcher


def compile_matcher(expected: JsonValue, pointer: str) -> Matcher:
    """Compile a ``contains`` expectation; a bad ``$regex`` is refused at ``pointer``."""
    if isinstance(expected, dict) and list(expected) == [REGEX_KEY]:
        at = join_pointer(pointer, REGEX_KEY)
        pattern = expected[REGEX_KEY]
        if not isinstance(pattern, str):
            raise ConfigurationError(f"{REGEX_KEY} must be a string", at)
        try:
            return RegexMatcher(compile_js_regex(pattern))
        except JsRegexError as exc:
            raise ConfigurationError(exc.message, at) from None
    if isinstance(expected, list):
        items = enumerate(expected)
        return ArrayMatcher(tuple(compile_matcher(v, join_pointer(pointer, i)) for i, v in items))
    if isinstance(expected, dict):
        return ObjectMatcher(
            tuple(
                (key, compile_matcher(value, join_pointer(pointer, key)))
                for key, value in expected.items()
            )
        )
    return ValueMatcher(expected)
