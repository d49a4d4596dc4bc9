"""JavaScript string facts the graders must reproduce: whitespace, ``trim`` and UTF-16 units.

Sevro runs on a JavaScript engine, so "whitespace" means ECMAScript WhiteSpace plus
LineTerminator (not Python's ``str.isspace``), and a string without the regex ``u`` flag is a
sequence of UTF-16 code units, not of code points.
"""

from __future__ import annotations

import re

CodeRange = tuple[int, int]
"""An inclusive range of code points."""

JS_WHITESPACE: tuple[CodeRange, ...] = (
    (0x09, 0x0D),  # \t \n \v \f \r
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)
"""What ``\\s`` and ``String.prototype.trim`` treat as whitespace."""

JS_LINE_TERMINATORS: tuple[CodeRange, ...] = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
"""Where multiline ``^``/``$`` match and what ``.`` refuses without the ``s`` flag."""

_WHITESPACE_CHARS = "".join(chr(c) for lo, hi in JS_WHITESPACE for c in range(lo, hi + 1))
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript defines it."""
    return text.strip(_WHITESPACE_CHARS)


def _surrogate_pair(match: re.Match[str]) -> str:
    offset = ord(match.group()) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def to_utf16_units(text: str) -> str:
    """Split every astral character into its surrogate pair, one Python character per unit.

    A JavaScript regex without the ``u`` flag sees ``"😀"`` as two characters; matching the
    translated pattern against this form keeps ``.``, classes and quantifiers faithful.
    """
    return _ASTRAL.sub(_surrogate_pair, text)
