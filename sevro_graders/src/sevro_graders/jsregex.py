"""JavaScript regular expressions, run with JavaScript's meaning and a time limit.

Case files carry JavaScript RegExp patterns (Sevro tests them with ``new RegExp(pattern,
"m" + flags)``). Python's ``re`` reads much of the same syntax differently: ``$`` also matches
before a final newline, ``\\d`` and ``\\w`` are Unicode-aware, ``{,5}`` is a quantifier, ``\\Z``
is an anchor. A pattern is therefore parsed by a real JavaScript-grammar tokenizer and rewritten
into explicit Python constructs; whatever cannot be rewritten faithfully is refused at load
time, so a check never silently means something else. `docs/graders.md` lists the dialect.

The translation is Python ``re`` syntax and ``re`` validates it (its refusals define the
dialect), but matching runs on the ``regex`` package in its ``re``-compatible V0 mode: agent
output meets the pattern there, and ``regex`` releases the GIL and honours a ``timeout``, so a
catastrophically backtracking pattern becomes a grading error in bounded time instead of
pinning the evaluator (:data:`sevro_core.limits.REGEX_CHECK_TIMEOUT_SECONDS`).
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import regex
from attrs import frozen

from sevro_core.api import ConfigurationError, GradingError, limits
from sevro_graders.jsstrings import JS_LINE_TERMINATORS, JS_WHITESPACE, CodeRange, to_utf16_units

MAX_PATTERN_LENGTH = 4096
"""Longest pattern accepted, in characters (code points of the configuration string)."""

MAX_GROUP_DEPTH = 64
"""Deepest nesting of groups accepted; keeps the translator and ``re`` far from recursion limits."""

_CACHE_SIZE = 512
_MAX_CODE_POINT = 0x10FFFF
_KNOWN_FLAGS = "dgimsuy"
_SYNTAX_CHARACTERS = frozenset("^$\\.*+?()[]{}|/")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_PCRE_ESCAPES = frozenset("AZzGhHRKXQEaeNgo")
_BRACED_QUANTIFIER = re.compile(r"\{([0-9]+)(?:(,)([0-9]*))?\}")
_HEX = frozenset("0123456789abcdefABCDEF")

_DIGITS: tuple[CodeRange, ...] = ((0x30, 0x39),)
_WORD: tuple[CodeRange, ...] = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
# With both ``u`` and ``i``, ECMAScript's WordCharacters add the two characters whose simple
# case folding is an ASCII word character: U+017F LATIN SMALL LETTER LONG S and U+212A KELVIN SIGN.
_WORD_UNICODE_IGNORE_CASE = (*_WORD, (0x17F, 0x17F), (0x212A, 0x212A))

_ANY = "(?s:.)"
_NEVER = "[^\\x00-\\U0010ffff]"


class JsRegexError(ConfigurationError):
    """A pattern or flags that sevro refuses to run; the grader supplies the pointer."""


class JsFlagsError(JsRegexError):
    """The flags string is at fault."""


class JsPatternError(JsRegexError):
    """The pattern is at fault."""


@frozen
class JsFlags:
    """The flags that change what a boolean ``test`` answers (``g`` and ``d`` do not)."""

    ignore_case: bool = False
    dot_all: bool = False
    unicode: bool = False
    sticky: bool = False
    multiline: bool = True


class _MatchBudget(threading.local):
    """The deadline shared by every match of the check graded on this thread, if any."""

    deadline: float | None = None
    seconds: float | None = None
    check_id: str | None = None


_budget = _MatchBudget()


@contextmanager
def match_budget(check_id: str, seconds: float | None = None) -> Iterator[None]:
    """Give all the regex matches of one check one shared time limit (default: the limit).

    A check may hold several patterns (``expectRegex`` and ``notRegex``, many ``$regex``), so a
    per-match limit alone would let one check run for a multiple of it. The clock is the
    process's CPU time, the clock ``regex`` itself measures its ``timeout`` with.
    """
    limit = limits.REGEX_CHECK_TIMEOUT_SECONDS if seconds is None else seconds
    saved = (_budget.deadline, _budget.seconds, _budget.check_id)
    _budget.deadline, _budget.seconds = time.process_time() + limit, limit
    _budget.check_id = check_id
    try:
        yield
    finally:
        _budget.deadline, _budget.seconds, _budget.check_id = saved


@frozen
class JsRegex:
    """A compiled JavaScript regex: the original source and flags, and its Python translation."""

    source: str
    flags: str
    compiled: re.Pattern[str]
    """The translation as ``re`` validated it; matching uses :attr:`matcher`."""
    matcher: regex.Pattern[str]
    """The same translation in the ``regex`` package's V0 (``re``-compatible) mode."""
    unicode: bool
    sticky: bool

    def test(self, text: str) -> bool:
        """``RegExp.prototype.test`` on a fresh regex (``lastIndex`` 0), within the time limit."""
        subject = text if self.unicode else to_utf16_units(text)
        if self.sticky:
            return _bounded(self.source, lambda limit: self.matcher.match(subject, timeout=limit))
        return _bounded(self.source, lambda limit: self.matcher.search(subject, timeout=limit))


def search_schema_pattern(translated: str, text: str, source: str) -> bool:
    """``re.search`` of a :func:`translate_schema_pattern` result, within the time limit."""
    matcher = _schema_matcher(translated)
    return _bounded(source, lambda limit: matcher.search(text, timeout=limit))


def _bounded(source: str, match: Callable[[float], object]) -> bool:
    """Run ``match(timeout)`` within what is left of the check's budget; True if it matched."""
    deadline = _budget.deadline
    remaining = (
        limits.REGEX_CHECK_TIMEOUT_SECONDS if deadline is None else deadline - time.process_time()
    )
    try:
        if remaining <= 0:
            raise TimeoutError
        return match(remaining) is not None
    except TimeoutError:
        check = "" if _budget.check_id is None else f"check {_budget.check_id!r}: "
        limit = limits.REGEX_CHECK_TIMEOUT_SECONDS if _budget.seconds is None else _budget.seconds
        raise GradingError(
            f"{check}regex /{_preview(source)}/ did not finish within the {limit:g} s "
            "regex time limit of a check (REGEX_CHECK_TIMEOUT_SECONDS; catastrophic "
            "backtracking on this text?): rewrite the pattern so it cannot backtrack"
        ) from None
    except (RecursionError, MemoryError) as exc:
        raise GradingError(
            f"regex /{_preview(source)}/ exhausted the matcher: {type(exc).__name__}"
        ) from None


def parse_flags(flags: str) -> JsFlags:
    """Validate a flags string as ``new RegExp`` would, then add the always-on ``m``."""
    seen: set[str] = set()
    for letter in flags:
        if letter == "v":
            raise JsFlagsError("flag 'v' (unicodeSets) is not supported; use 'u'")
        if letter not in _KNOWN_FLAGS:
            raise JsFlagsError(f"flag {letter!r} is not a JavaScript RegExp flag (known: dgimsuy)")
        if letter in seen:
            raise JsFlagsError(f"regex flag {letter!r} is given twice")
        seen.add(letter)
    return JsFlags(
        ignore_case="i" in seen, dot_all="s" in seen, unicode="u" in seen, sticky="y" in seen
    )


def compile_js_regex(pattern: str, flags: str = "") -> JsRegex:
    """Compile ``new RegExp(pattern, "m" + flags)``; refuse what cannot be run faithfully."""
    return _compile(pattern, flags)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile(pattern: str, flags: str) -> JsRegex:
    parsed = parse_flags(flags)
    translated = translate(pattern, parsed)
    python_flags = re.IGNORECASE if parsed.ignore_case else 0
    compiled = _python_compile(translated, python_flags)
    return JsRegex(
        source=pattern,
        flags=flags,
        compiled=compiled,
        matcher=_bounded_compile(translated, python_flags),
        unicode=parsed.unicode,
        sticky=parsed.sticky,
    )


@functools.lru_cache(maxsize=_CACHE_SIZE)
def translate_schema_pattern(pattern: str) -> str:
    """Translate a JSON Schema ``pattern`` as Ajv runs it (``new RegExp(pattern, "u")``).

    The result is a self-contained Python pattern for ``re.search``; sevro matches it with
    :func:`search_schema_pattern`, which bounds the time.
    """
    translated = translate(pattern, JsFlags(unicode=True, multiline=False))
    _python_compile(translated, 0)
    _schema_matcher(translated)
    return translated


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _schema_matcher(translated: str) -> regex.Pattern[str]:
    return _bounded_compile(translated, 0)


def translate(pattern: str, flags: JsFlags) -> str:
    """Rewrite ``pattern`` as Python ``re`` syntax with the same meaning under ``flags``.

    Without the ``u`` flag the pattern is read as UTF-16 code units, like JavaScript does, and
    must be matched against :func:`to_utf16_units` of the subject.
    """
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise JsPatternError(f"regex pattern is longer than {MAX_PATTERN_LENGTH} characters")
    source = pattern if flags.unicode else to_utf16_units(pattern)
    return _Translator(source, flags).translate()


def _python_compile(translated: str, python_flags: int) -> re.Pattern[str]:
    try:
        return re.compile(translated, python_flags)
    except re.error as exc:
        if "look-behind" in str(exc):
            raise JsPatternError(
                "lookbehind must have a fixed width here: variable-width lookbehind, and "
                "backreferences inside lookbehind, are not supported"
            ) from None
        raise JsPatternError(f"regex cannot be translated faithfully ({exc})") from None
    except OverflowError:
        raise JsPatternError("a repetition count in the regex is too large") from None
    except RecursionError:
        raise JsPatternError("regex nests too deeply") from None


def _bounded_compile(translated: str, python_flags: int) -> regex.Pattern[str]:
    """The ``re``-validated translation for the ``regex`` package (V0: ``re``'s semantics)."""
    flags = regex.V0 | (regex.IGNORECASE if python_flags & re.IGNORECASE else 0)
    try:
        return regex.compile(translated, flags)
    except (regex.error, OverflowError, RecursionError) as exc:  # re accepted it: a defect
        raise JsPatternError(f"regex cannot be run with a time limit ({exc})") from None


def _is_decimal_digit(char: str) -> bool:
    return len(char) == 1 and "0" <= char <= "9"


def _preview(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------------------------
# Character sets


def _normalise(ranges: list[CodeRange]) -> list[CodeRange]:
    """Sort and merge overlapping or adjacent ranges."""
    merged: list[CodeRange] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


def _complement(ranges: tuple[CodeRange, ...] | list[CodeRange]) -> list[CodeRange]:
    out: list[CodeRange] = []
    start = 0
    for lo, hi in _normalise(list(ranges)):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX_CODE_POINT:
        out.append((start, _MAX_CODE_POINT))
    return out


def _char(code: int) -> str:
    """One literal character in Python syntax, unambiguous inside and outside classes."""
    if code < 0x80 and (chr(code).isalnum() or code == 0x5F):
        return chr(code)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _render_set(ranges: list[CodeRange] | tuple[CodeRange, ...], negated: bool = False) -> str:
    """A Python class matching the code points in ``ranges`` (or, if ``negated``, the others)."""
    merged = _normalise(list(ranges))
    if not merged:
        return _ANY if negated else _NEVER
    if merged == [(0, _MAX_CODE_POINT)]:
        return _NEVER if negated else _ANY
    body = "".join(_char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in merged)
    return f"[^{body}]" if negated else f"[{body}]"


@frozen
class _ClassEscape:
    """The set a ``\\d \\D \\s \\S \\w \\W`` escape denotes inside a character class."""

    ranges: tuple[CodeRange, ...]


_ClassAtom = int | _ClassEscape


# ---------------------------------------------------------------------------------------------
# The translator


def _scan_groups(source: str) -> list[str | None]:
    """The capture groups of ``source`` in order, with their names (``None`` when unnamed).

    Backreferences may point forward, so the groups must be known before the real parse.
    """
    groups: list[str | None] = []
    index = 0
    in_class = False
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            if not source.startswith("?", index + 1):
                groups.append(None)
            elif source.startswith("?<", index + 1) and not source.startswith(
                ("?<=", "?<!"), index + 1
            ):
                try:
                    name, _ = _read_group_name(source, index + 3)
                except JsPatternError:
                    name = None  # the real parse reports it at the right place
                groups.append(name)
        index += 1
    return groups


def _read_group_name(source: str, start: int) -> tuple[str, int]:
    """Read ``name>`` at ``start`` (``\\u`` escapes allowed); return the name and the end."""
    chars: list[str] = []
    index = start
    while True:
        if index >= len(source):
            raise JsPatternError(f"unterminated group name at index {start}")
        char = source[index]
        if char == ">":
            break
        if char == "\\":
            code, index = _read_name_escape(source, index, start)
            char = chr(code)
        else:
            index += 1
            if 0xD800 <= ord(char) <= 0xDBFF and index < len(source):
                low = ord(source[index])
                if 0xDC00 <= low <= 0xDFFF:  # a UTF-16 pair of an astral identifier character
                    char = chr(0x10000 + ((ord(char) - 0xD800) << 10) + (low - 0xDC00))
                    index += 1
        chars.append(char)
    name = "".join(chars)
    if not _valid_group_name(name):
        raise JsPatternError(f"invalid group name {name!r} at index {start}")
    return name, index + 1


def _read_name_escape(source: str, index: int, start: int) -> tuple[int, int]:
    if source.startswith("\\u{", index):
        close = source.find("}", index + 3)
        digits = source[index + 3 : close] if close > 0 else ""
        if digits and set(digits) <= _HEX and int(digits, 16) <= _MAX_CODE_POINT:
            return int(digits, 16), close + 1
    elif source.startswith("\\u", index):
        digits = source[index + 2 : index + 6]
        if len(digits) == 4 and set(digits) <= _HEX:
            return int(digits, 16), index + 6
    raise JsPatternError(f"invalid escape in group name at index {start}")


def _valid_group_name(name: str) -> bool:
    if not name:
        return False
    first, rest = name[0], name[1:]
    if not (first in "$_" or first.isidentifier()):
        return False
    return all(c in "$\u200c\u200d" or ("a" + c).isidentifier() for c in rest)


class _Translator:
    """A recursive-descent parser of ECMAScript Pattern syntax that emits Python ``re`` text."""

    def __init__(self, source: str, flags: JsFlags) -> None:
        self.source = source
        self.flags = flags
        self.pos = 0
        self.depth = 0
        groups = _scan_groups(source)
        self.group_count = len(groups)
        self.group_index: dict[str, int] = {}
        for number, name in enumerate(groups, start=1):
            if name is not None:
                if name in self.group_index:
                    raise JsPatternError(f"duplicate group name {name!r}")
                self.group_index[name] = number
        self.groups_opened = 0
        self.groups_closed: set[int] = set()
        word = _WORD_UNICODE_IGNORE_CASE if flags.unicode and flags.ignore_case else _WORD
        self.word_ranges: tuple[CodeRange, ...] = word
        terminators = _render_set(JS_LINE_TERMINATORS, negated=True)
        if flags.multiline:
            self.line_start = f"(?<!{terminators})"
            self.line_end = f"(?!{terminators})"
        else:
            self.line_start = "\\A"
            self.line_end = "\\Z"
        self.dot = _ANY if flags.dot_all else terminators

    # -- helpers -------------------------------------------------------------------------------

    def error(self, message: str, at: int | None = None) -> JsPatternError:
        where = self.pos if at is None else at
        return JsPatternError(f"invalid regex: {message} at index {where}")

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.source[index] if index < len(self.source) else ""

    def case_sensitive(self, text: str) -> str:
        """Shield ASCII-defined sets from Python's Unicode case folding under ``i``."""
        return f"(?-i:{text})" if self.flags.ignore_case else text

    def word_class(self, negated: bool = False) -> str:
        return self.case_sensitive(_render_set(self.word_ranges, negated))

    # -- grammar -------------------------------------------------------------------------------

    def translate(self) -> str:
        out = self.disjunction()
        if self.pos < len(self.source):
            raise self.error("unmatched ')'")
        return out

    def disjunction(self) -> str:
        alternatives = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            alternatives.append(self.alternative())
        return "|".join(alternatives)

    def alternative(self) -> str:
        terms: list[str] = []
        while self.pos < len(self.source) and self.source[self.pos] not in "|)":
            terms.append(self.term())
        return "".join(terms)

    def term(self) -> str:
        start = self.pos
        char = self.source[start]
        if char in "^$":
            self.pos += 1
            self.refuse_quantifier()
            return self.line_start if char == "^" else self.line_end
        if char == "\\" and self.peek(1) in ("b", "B"):
            self.pos += 2
            self.refuse_quantifier()
            return self.word_boundary(negated=self.source[start + 1] == "B")
        if char == "(":
            text, kind = self.group()
            if kind == "lookbehind":
                self.refuse_quantifier()
                return text
            if kind == "lookahead":
                if self.quantifier_ahead():
                    raise self.error(
                        "nothing to repeat"
                        if self.flags.unicode
                        else "a quantifier on a lookahead is not supported"
                    )
                return text
            return text + self.quantifier()
        if char in "*+?":
            raise self.error("nothing to repeat")
        if char == "{" and _BRACED_QUANTIFIER.match(self.source, start):
            raise self.error("nothing to repeat")
        if char in "{}]":
            if self.flags.unicode:
                raise self.error(f"lone {char!r} (escape it as '\\{char}')")
            self.pos += 1
            return _char(ord(char)) + self.quantifier()
        if char == "[":
            atom = self.character_class()
        elif char == ".":
            self.pos += 1
            atom = self.dot
        elif char == "\\":
            atom = self.atom_escape()
        else:
            self.pos += 1
            atom = _char(ord(char))
        return atom + self.quantifier()

    def word_boundary(self, negated: bool) -> str:
        word = self.word_class()
        if negated:
            return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
        return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"

    def quantifier_ahead(self) -> bool:
        char = self.peek()
        return char in ("*", "+", "?") or (
            char == "{" and _BRACED_QUANTIFIER.match(self.source, self.pos) is not None
        )

    def refuse_quantifier(self) -> None:
        if self.quantifier_ahead():
            raise self.error("nothing to repeat", at=self.pos)

    def quantifier(self) -> str:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            text = char
        elif char == "{":
            match = _BRACED_QUANTIFIER.match(self.source, self.pos)
            if match is None:
                return ""  # a literal '{' (Annex B) or, with 'u', an error at the next term
            low = int(match.group(1))
            if match.group(2) is None:
                text = f"{{{low}}}"
            elif match.group(3):
                high = int(match.group(3))
                if high < low:
                    raise self.error("numbers out of order in {} quantifier")
                text = f"{{{low},{high}}}"
            else:
                text = f"{{{low},}}"
            self.pos = match.end()
        else:
            return ""
        if self.peek() == "?":
            self.pos += 1
            text += "?"
        if self.quantifier_ahead():
            hint = " (possessive quantifiers are not JavaScript)" if self.peek() == "+" else ""
            raise self.error(f"nothing to repeat{hint}")
        return text

    def group(self) -> tuple[str, str]:
        start = self.pos
        self.depth += 1
        if self.depth > MAX_GROUP_DEPTH:
            raise self.error(f"groups nest deeper than {MAX_GROUP_DEPTH} levels")
        self.pos += 1
        kind = "group"
        number: int | None = None
        if self.peek() != "?":
            self.groups_opened += 1
            number = self.groups_opened
            prefix = "("
        else:
            head = self.source[self.pos : self.pos + 3]
            if head.startswith("?:"):
                prefix, self.pos = "(?:", self.pos + 2
            elif head.startswith(("?=", "?!")):
                kind, prefix, self.pos = "lookahead", "(" + head[:2], self.pos + 2
            elif head in ("?<=", "?<!"):
                kind, prefix, self.pos = "lookbehind", "(" + head, self.pos + 3
            elif head.startswith("?<"):
                name, self.pos = _read_group_name(self.source, self.pos + 2)
                self.groups_opened += 1
                number = self.groups_opened
                prefix = f"(?P<{name}>" if name.isidentifier() else "("
            else:
                raise self.error(self.unsupported_group(head[1:2]), at=start)
        body = self.disjunction()
        if self.peek() != ")":
            raise self.error("unterminated group", at=start)
        self.pos += 1
        self.depth -= 1
        if number is not None:
            self.groups_closed.add(number)
        return f"{prefix}{body})", kind

    @staticmethod
    def unsupported_group(marker: str) -> str:
        if marker == "P":
            return "Python-style (?P...) groups are not JavaScript; write (?<name>...), \\k<name>"
        if marker == ">":
            return "atomic groups (?>...) are not JavaScript"
        if marker == "#":
            return "comment groups (?#...) are not JavaScript"
        if marker == "-" or marker.isalpha():
            return "inline modifier groups such as (?i) or (?i:...) are not supported; use flags"
        return "invalid group"

    def backreference(self, number: int) -> str:
        """JavaScript: a group that has not (yet) captured matches the empty string."""
        if number in self.groups_closed:
            return f"(?({number})\\{number})"
        return "(?:)"  # forward reference, or a reference from inside the group itself

    def atom_escape(self) -> str:
        start = self.pos
        self.pos += 1
        char = self.peek()
        if not char:
            raise self.error("\\ at end of pattern", at=start)
        if char in "dDsSwW":
            self.pos += 1
            negated = char.isupper()
            base = char.lower()
            if base == "w":
                return self.word_class(negated)
            return _render_set(_DIGITS if base == "d" else JS_WHITESPACE, negated)
        if char in "123456789":
            end = self.pos
            while end < len(self.source) and _is_decimal_digit(self.source[end]):
                end += 1
            number = int(self.source[self.pos : end])
            if number > self.group_count:
                octal = "" if self.flags.unicode else "; JavaScript would read an octal escape"
                plural = "" if self.group_count == 1 else "s"
                raise self.error(
                    f"\\{number} refers to a group the pattern does not have "
                    f"(it has {self.group_count} capture group{plural}){octal}",
                    at=start,
                )
            self.pos = end
            return self.backreference(number)
        if char == "k":
            if self.peek(1) == "<":
                name, end = _read_group_name(self.source, self.pos + 2)
                if name not in self.group_index:
                    raise self.error(f"\\k<{name}> names no group", at=start)
                self.pos = end
                return self.backreference(self.group_index[name])
            raise self.error("\\k must be followed by <name>", at=start)
        return _char(self.character_escape(start, in_class=False))

    def character_escape(self, start: int, in_class: bool) -> int:
        """The code point of a CharacterEscape at ``self.pos`` (just after the backslash)."""
        char = self.peek()
        unicode = self.flags.unicode
        if char == "0":
            if _is_decimal_digit(self.peek(1)):
                raise self.error(
                    "legacy octal escapes are not supported; use \\xHH or \\uHHHH", at=start
                )
            self.pos += 1
            return 0
        if char in _CONTROL_ESCAPES:
            self.pos += 1
            return _CONTROL_ESCAPES[char]
        if char == "c":
            letter = self.peek(1)
            if letter.isascii() and (
                letter.isalpha()
                or (in_class and not unicode and (_is_decimal_digit(letter) or letter == "_"))
            ):
                self.pos += 2
                return ord(letter) % 32
            raise self.error("\\c must be followed by a letter", at=start)
        if char == "x":
            digits = self.source[self.pos + 1 : self.pos + 3]
            if len(digits) == 2 and set(digits) <= _HEX:
                self.pos += 3
                return int(digits, 16)
            raise self.error("\\x must be followed by two hexadecimal digits", at=start)
        if char == "u":
            return self.unicode_escape(start)
        if char == "-" and in_class:
            self.pos += 1
            return 0x2D
        if char in ("p", "P"):
            raise self.error(self.letter_escape_message(char), at=start)
        if unicode:
            if char in _SYNTAX_CHARACTERS:
                self.pos += 1
                return ord(char)
            raise self.error(
                f"invalid escape \\{char} (with the u flag only syntax characters may be escaped)",
                at=start,
            )
        if char.isascii() and char.isalpha():
            raise self.error(self.letter_escape_message(char), at=start)
        self.pos += 1  # Annex B identity escape: the character itself
        return ord(char)

    @staticmethod
    def letter_escape_message(letter: str) -> str:
        if letter in "pP":
            return f"Unicode property escapes (\\{letter}{{...}}) are not supported"
        if letter in _PCRE_ESCAPES:
            return (
                f"\\{letter} is Python/PCRE syntax, not JavaScript (JavaScript would match a "
                f"plain {letter!r})"
            )
        return (
            f"unknown escape \\{letter} (JavaScript would match a plain {letter!r}; write it "
            "without the backslash)"
        )

    def unicode_escape(self, start: int) -> int:
        if self.flags.unicode and self.peek(1) == "{":
            close = self.source.find("}", self.pos + 2)
            digits = self.source[self.pos + 2 : close] if close > 0 else ""
            if not digits or not set(digits) <= _HEX or int(digits, 16) > _MAX_CODE_POINT:
                raise self.error("invalid \\u{...} escape", at=start)
            self.pos = close + 1
            return int(digits, 16)
        digits = self.source[self.pos + 1 : self.pos + 5]
        if len(digits) != 4 or not set(digits) <= _HEX:
            if self.peek(1) == "{":
                raise self.error("\\u{...} needs the u flag", at=start)
            raise self.error("\\u must be followed by four hexadecimal digits", at=start)
        self.pos += 5
        value = int(digits, 16)
        if (
            self.flags.unicode
            and 0xD800 <= value <= 0xDBFF
            and self.source.startswith("\\u", self.pos)
        ):
            trail = self.source[self.pos + 2 : self.pos + 6]
            if len(trail) == 4 and set(trail) <= _HEX and 0xDC00 <= int(trail, 16) <= 0xDFFF:
                self.pos += 6
                return 0x10000 + ((value - 0xD800) << 10) + (int(trail, 16) - 0xDC00)
        return value

    def character_class(self) -> str:
        start = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        literal: list[CodeRange] = []
        escapes: list[CodeRange] = []

        def add(atom: _ClassAtom) -> None:
            if isinstance(atom, _ClassEscape):
                escapes.extend(atom.ranges)
            else:
                literal.append((atom, atom))

        while True:
            if self.pos >= len(self.source):
                raise self.error("unterminated character class", at=start)
            if self.source[self.pos] == "]":
                self.pos += 1
                break
            first = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("", "]"):
                dash = self.pos
                self.pos += 1
                second = self.class_atom()
                if isinstance(first, int) and isinstance(second, int):
                    if first > second:
                        raise self.error("range out of order in character class", at=dash)
                    literal.append((first, second))
                elif self.flags.unicode:
                    raise self.error("a class escape cannot bound a range", at=dash)
                else:  # Annex B: [\w-z] is \w, '-' and 'z'
                    add(first)
                    add(0x2D)
                    add(second)
            else:
                add(first)
        return self.render_class(literal, escapes, negated)

    def class_atom(self) -> _ClassAtom:
        start = self.pos
        char = self.source[start]
        if char != "\\":
            self.pos += 1
            return ord(char)
        self.pos += 1
        escape = self.peek()
        if not escape:
            raise self.error("\\ at end of pattern", at=start)
        if escape in "dDsSwW":
            self.pos += 1
            base = {"d": _DIGITS, "s": JS_WHITESPACE, "w": self.word_ranges}[escape.lower()]
            return _ClassEscape(tuple(_complement(base)) if escape.isupper() else base)
        if escape == "b":
            self.pos += 1
            return 0x08
        if escape in "123456789":
            raise self.error(
                "a digit escape inside a character class is a legacy octal escape; use \\xHH",
                at=start,
            )
        return self.character_escape(start, in_class=True)

    def render_class(
        self, literal: list[CodeRange], escapes: list[CodeRange], negated: bool
    ) -> str:
        """Emit a class; under ``i`` the escape sets keep their ASCII, case-sensitive meaning."""
        if not self.flags.ignore_case or not escapes:
            return _render_set(literal + escapes, negated)
        if not literal:
            return self.case_sensitive(_render_set(escapes, negated))
        folded = _render_set(literal)
        if negated:
            return f"(?:(?!{folded}){self.case_sensitive(_render_set(escapes, negated=True))})"
        return f"(?:{folded}|{self.case_sensitive(_render_set(escapes))})"
