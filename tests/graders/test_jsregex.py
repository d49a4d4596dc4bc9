"""The JavaScript regex translator: JavaScript's answers, and refusals where it cannot give them."""

from __future__ import annotations

import re

import attrs
import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_graders.jsregex import (
    MAX_GROUP_DEPTH,
    MAX_PATTERN_LENGTH,
    JsFlagsError,
    JsPatternError,
    JsRegex,
    compile_js_regex,
    translate_schema_pattern,
)

# (pattern, flags, text, what JavaScript's new RegExp(pattern, "m" + flags).test(text) returns)
JAVASCRIPT_ANSWERS = [
    # ^ and $ are multiline and know all four line terminators
    ("^ready$", "", "ready", True),
    ("^ready$", "", "x\nready\ny", True),
    ("^ready$", "", "x\r\nready\r\n", True),
    ("^ready$", "", "x\rready\r", True),
    ("^ready$", "", "x\u2028ready\u2029", True),
    ("^ready$", "", "ready\n", True),
    ("^ready$", "", "readyy", False),
    ("^ready$", "", "xready", False),
    ("ready$", "", "ready\u0085", False),
    ("^ready", "", "\u0085ready", False),
    # . stops at line terminators unless s
    ("a.b", "", "axb", True),
    ("a.b", "", "a\nb", False),
    ("a.b", "", "a\rb", False),
    ("a.b", "", "a\u2028b", False),
    ("a.b", "", "a\u2029b", False),
    ("a.b", "", "a\u0085b", True),
    ("a.b", "s", "a\rb", True),
    ("a.b", "s", "a\u2028b", True),
    # \d \w \b are ASCII
    ("^\\d+$", "", "0123456789", True),
    ("\\d", "", "\u0663", False),
    ("\\d", "u", "\u0663", False),
    ("\\D", "", "\u0663", True),
    ("[\\d]", "", "\u0663", False),
    ("^\\w+$", "", "abc_XYZ_09", True),
    ("\\w", "", "é", False),
    ("\\w", "u", "é", False),
    ("\\W", "", "é", True),
    ("[\\W]", "", "é", True),
    ("\\bcafé\\b", "", "un café noir", False),
    ("\\bé", "", " é", False),
    ("x\\B", "", "xé", False),
    ("\\bword\\b", "", "a word here", True),
    ("\\Bor\\B", "", "word", True),
    # under i, \w and \b stay ASCII; with u and i they add U+017F and U+212A
    ("\\w", "i", "\u017f", False),
    ("\\w", "i", "\u212a", False),
    ("[\\w]", "i", "\u212a", False),
    ("[\\w-]", "i", "\u017f", False),
    ("\\w", "iu", "\u017f", True),
    ("\\w", "iu", "\u212a", True),
    ("\\W", "iu", "\u017f", False),
    ("[^\\w]", "iu", "\u212a", False),
    ("a\\b", "iu", "a\u017f", False),
    ("a\\b", "i", "a\u017f", True),
    ("[^\\wé]", "i", "É", False),
    ("[^\\wé]", "i", "!", True),
    ("[\\wé]", "i", "É", True),
    # \s is the ECMAScript whitespace set, in and out of classes
    ("\\s", "", "\u00a0", True),
    ("\\s", "", "\ufeff", True),
    ("\\s", "", "\u1680", True),
    ("\\s", "", "\u2000", True),
    ("\\s", "", "\u200a", True),
    ("\\s", "", "\u202f", True),
    ("\\s", "", "\u205f", True),
    ("\\s", "", "\u3000", True),
    ("\\s", "", "\u2028", True),
    ("\\s", "", "\v", True),
    ("\\s", "", "\u0085", False),
    ("\\s", "", "\x1c", False),
    ("\\s", "", "\u180e", False),
    ("\\s", "", "\u200b", False),
    ("[\\s]", "", "\u00a0", True),
    ("[^\\s]", "", "\u00a0", False),
    ("\\S", "", "\u00a0", False),
    ("\\S", "", "\u0085", True),
    # groups and backreferences
    ("^(?:yes|no)$", "", "no", True),
    ("(?<year>\\d{4})-\\k<year>", "", "2024-2024", True),
    ("(?<year>\\d{4})-\\k<year>", "", "2024-2025", False),
    ("(?<$x>a)\\k<$x>", "", "aa", True),
    ("(?<\\u0061b>x)\\k<ab>", "", "xx", True),
    ("(a)\\1", "", "aa", True),
    ("(a)\\1", "", "ab", False),
    ("(a)?b\\1", "", "b", True),
    ("\\1(a)", "", "a", True),
    ("(a\\1)", "", "a", True),
    ("(a)|b\\1", "", "b", True),
    ("(A)\\1", "i", "Aa", True),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "", "abcdefghijj", True),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "", "abcdefghija0", False),
    ("a(?=b)", "", "ab", True),
    ("a(?!b)", "", "ab", False),
    ("(?<=a)b", "", "ab", True),
    ("(?<!a)b", "", "ab", False),
    ("(?<=^a)b", "", "ab", True),
    # character classes
    ("[^]", "", "\n", True),
    ("^[^]$", "", "", False),
    ("[]", "", "anything", False),
    ("a[]?b", "", "ab", True),
    ("[]a]", "", "a]", False),
    ("[a-c]", "", "b", True),
    ("[^a-c]", "", "b", False),
    ("[\\b]", "", "\b", True),
    ("[-a]", "", "-", True),
    ("[a-]", "", "-", True),
    ("[--/]", "", ".", True),
    ("[\\w-z]", "", "-", True),
    ("[\\-]", "u", "-", True),
    ("[[]", "", "[", True),
    ("[\\c1]", "", "\x11", True),
    ("[\\c_]", "", "\x1f", True),
    ("[\\x41-\\x43]", "", "B", True),
    ("[\\u{1F600}-\\u{1F64F}]", "u", "🙂", True),
    # sticky: only at index 0
    ("a", "y", "ab", True),
    ("b", "y", "ab", False),
    ("^b", "y", "a\nb", False),
    ("a|b", "y", "ba", True),
    # without u, a string is UTF-16 code units
    ("^.$", "", "😀", False),
    ("^..$", "", "😀", True),
    ("^.$", "u", "😀", True),
    ("^😀$", "", "😀", True),
    ("^😀{2}$", "", "😀😀", False),
    ("^😀{2}$", "u", "😀😀", True),
    ("^[😀]$", "", "😀", False),
    ("^[😀]$", "u", "😀", True),
    ("\\u{1F600}", "u", "😀", True),
    ("\\ud83d\\ude00", "u", "😀", True),
    ("\\ud83d", "u", "😀", False),
    ("\\ud83d", "", "😀", True),
    # escapes
    ("\\/", "", "/", True),
    ("\\/", "u", "/", True),
    ("a\\.b", "", "a.b", True),
    ("a\\.b", "", "axb", False),
    ("\\$\\^\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\", "u", "$^*+?()[]{}|\\", True),
    ("\\cJ", "", "\n", True),
    ("\\cj", "", "\n", True),
    ("\\x41", "", "A", True),
    ("\\u0041", "", "A", True),
    ("\\0", "", "\x00", True),
    ("\\t\\n\\v\\f\\r", "", "\t\n\v\f\r", True),
    ("\\-", "", "-", True),
    ("\\@", "", "@", True),
    ("\\é", "", "é", True),
    # braces that are not quantifiers are literal (Annex B)
    ("a{", "", "a{", True),
    ("a{,5}", "", "a{,5}", True),
    ("a{,5}", "", "a", False),
    ("a{1,2", "", "a{1,2", True),
    ("a}", "", "a}", True),
    ("]", "", "]", True),
    ("a{x}", "", "a{x}", True),
    ("x*{", "", "xx{", True),
    # quantifiers
    ("^x{2}$", "", "xx", True),
    ("^x{2}$", "", "x", False),
    ("^x{2,}$", "", "xxx", True),
    ("^x{1,2}$", "", "xxx", False),
    ("^a+?b$", "", "aab", True),
    ("^a??b$", "", "b", True),
    ("^(?:ab)*$", "", "abab", True),
    # flags
    ("READY", "i", "ready", True),
    ("READY", "", "ready", False),
    ("[A-Z]", "i", "q", True),
    ("a.b", "gd", "a\nb", False),
    ("a", "g", "a", True),
    ("a", "m", "a", True),
    ("^b$", "", "a\nb", True),
]


@pytest.mark.parametrize(("pattern", "flags", "text", "expected"), JAVASCRIPT_ANSWERS)
def test_translation_gives_javascripts_answer(
    pattern: str, flags: str, text: str, expected: bool
) -> None:
    assert compile_js_regex(pattern, flags).test(text) is expected


def test_global_flag_keeps_no_state_between_tests() -> None:
    regex = compile_js_regex("a", "g")
    assert regex.test("a") and regex.test("a")


REFUSED_PATTERNS = [
    # JavaScript would throw
    ("a**", "", "nothing to repeat"),
    ("*a", "", "nothing to repeat"),
    ("a|+", "", "nothing to repeat"),
    ("{1}", "", "nothing to repeat"),
    ("a|{1,2}", "", "nothing to repeat"),
    ("^*", "", "nothing to repeat"),
    ("$+", "", "nothing to repeat"),
    ("\\b+", "", "nothing to repeat"),
    ("\\B{2}", "", "nothing to repeat"),
    ("(?<=a)*", "", "nothing to repeat"),
    ("(?=a)*", "u", "nothing to repeat"),
    ("(", "", "unterminated group"),
    ("(?:a", "", "unterminated group"),
    (")", "", "unmatched ')'"),
    ("a)", "", "unmatched ')'"),
    ("[a", "", "unterminated character class"),
    ("a\\", "", "\\ at end of pattern"),
    ("[a\\", "", "\\ at end of pattern"),
    ("[z-a]", "", "range out of order"),
    ("x{2,1}", "", "numbers out of order"),
    ("(?<x>a)(?<x>b)", "", "duplicate group name"),
    ("(?<1x>a)", "", "invalid group name"),
    ("(?<>a)", "", "invalid group name"),
    ("(?<x", "", "unterminated group name"),
    ("\\k<x>", "", "names no group"),
    ("(?<x>a)\\k", "", "\\k must be followed by <name>"),
    ("(?<x>a)\\k<y>", "", "names no group"),
    ("(?", "", "invalid group"),
    ("(?=", "", "unterminated group"),
    ("{", "u", "lone '{'"),
    ("}", "u", "lone '}'"),
    ("]", "u", "lone ']'"),
    ("a{1,2", "u", "lone '{'"),
    ("\\-", "u", "invalid escape \\-"),
    ("\\@", "u", "invalid escape \\@"),
    ("\\q", "u", "invalid escape \\q"),
    ("[\\w-z]", "u", "a class escape cannot bound a range"),
    ("\\u{110000}", "u", "invalid \\u{...} escape"),
    ("\\u{}", "u", "invalid \\u{...} escape"),
    ("\\u{12", "u", "invalid \\u{...} escape"),
    ("\\1", "u", "refers to a group the pattern does not have"),
    ("\\c", "u", "\\c must be followed by a letter"),
    # other dialects' syntax, refused rather than misread
    ("a*+", "", "possessive"),
    ("a++", "", "possessive"),
    ("a?+", "", "possessive"),
    ("a{2}+", "", "possessive"),
    ("a{2,}+", "", "possessive"),
    ("(?P<x>a)", "", "Python-style"),
    ("(?P=x)", "", "Python-style"),
    ("(?>a)", "", "atomic groups"),
    ("(?#note)", "", "comment groups"),
    ("(?i)a", "", "inline modifier"),
    ("(?i:a)", "", "inline modifier"),
    ("(?-i:a)", "", "inline modifier"),
    ("(?s)a", "", "inline modifier"),
    ("\\A", "", "\\A is Python/PCRE syntax"),
    ("\\Z", "", "\\Z is Python/PCRE syntax"),
    ("\\z", "", "\\z is Python/PCRE syntax"),
    ("\\G", "", "\\G is Python/PCRE syntax"),
    ("\\h", "", "\\h is Python/PCRE syntax"),
    ("\\R", "", "\\R is Python/PCRE syntax"),
    ("\\K", "", "\\K is Python/PCRE syntax"),
    ("\\e", "", "\\e is Python/PCRE syntax"),
    ("\\p{L}", "", "Unicode property escapes"),
    ("\\p{L}", "u", "Unicode property escapes"),
    ("\\P{L}", "u", "Unicode property escapes"),
    ("[\\p{L}]", "u", "Unicode property escapes"),
    ("\\q", "", "unknown escape \\q"),
    ("\\i", "", "unknown escape \\i"),
    ("[\\B]", "", "unknown escape \\B"),
    ("[\\q]", "", "unknown escape \\q"),
    # legacy octal and Annex B oddities
    ("\\1", "", "octal escape"),
    ("(a)\\2", "", "refers to a group the pattern does not have (it has 1 capture group)"),
    ("\\8", "", "refers to a group"),
    ("\\01", "", "legacy octal escapes"),
    ("[\\1]", "", "legacy octal escape"),
    ("[\\01]", "", "legacy octal escapes"),
    ("\\c1", "", "\\c must be followed by a letter"),
    ("\\c", "", "\\c must be followed by a letter"),
    ("\\xZZ", "", "\\x must be followed by two hexadecimal digits"),
    ("\\x4", "", "\\x must be followed by two hexadecimal digits"),
    ("\\u12", "", "\\u must be followed by four hexadecimal digits"),
    ("\\u{41}", "", "\\u{...} needs the u flag"),
    ("(?=a)*", "", "a quantifier on a lookahead is not supported"),
    ("(?!a){2}", "", "a quantifier on a lookahead is not supported"),
    # what Python's re cannot do the JavaScript way
    ("(?<=a+)b", "", "fixed width"),
    ("(?<=a|bc)x", "", "fixed width"),
    ("(?<=^|,)x", "", "fixed width"),
    ("(a)(?<=\\1)b", "", "fixed width"),
    ("a{99999999999}", "", "repetition count"),
]


@pytest.mark.parametrize(("pattern", "flags", "message"), REFUSED_PATTERNS)
def test_untranslatable_or_invalid_patterns_are_refused(
    pattern: str, flags: str, message: str
) -> None:
    with pytest.raises(JsPatternError) as refused:
        compile_js_regex(pattern, flags)
    assert message in refused.value.message
    assert isinstance(refused.value, ConfigurationError)


def test_syntax_errors_name_the_index() -> None:
    with pytest.raises(JsPatternError, match=r"nothing to repeat at index 4"):
        compile_js_regex("abc|*")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("v", "flag 'v' (unicodeSets) is not supported"),
        ("ii", "regex flag 'i' is given twice"),
        ("mm", "regex flag 'm' is given twice"),
        ("gug", "regex flag 'g' is given twice"),
        ("x", "flag 'x' is not a JavaScript RegExp flag"),
        ("I", "flag 'I' is not a JavaScript RegExp flag"),
        (" ", "flag ' ' is not a JavaScript RegExp flag"),
    ],
)
def test_bad_flags_are_refused(flags: str, message: str) -> None:
    with pytest.raises(JsFlagsError) as refused:
        compile_js_regex("a", flags)
    assert message in refused.value.message


def test_every_known_flag_is_accepted_once() -> None:
    assert compile_js_regex("a", "dgimsuy").test("A")


def test_pattern_length_is_bounded() -> None:
    assert compile_js_regex("a" * MAX_PATTERN_LENGTH).test("a" * MAX_PATTERN_LENGTH)
    with pytest.raises(JsPatternError, match=f"longer than {MAX_PATTERN_LENGTH} characters"):
        compile_js_regex("a" * (MAX_PATTERN_LENGTH + 1))


def test_group_nesting_is_bounded() -> None:
    deepest = "(" * MAX_GROUP_DEPTH + "a" + ")" * MAX_GROUP_DEPTH
    assert compile_js_regex(deepest).test("a")
    too_deep = "(" * (MAX_GROUP_DEPTH + 1) + "a" + ")" * (MAX_GROUP_DEPTH + 1)
    with pytest.raises(JsPatternError, match="nest deeper"):
        compile_js_regex(too_deep)


def test_compiled_regexes_are_cached_and_frozen() -> None:
    first = compile_js_regex("ca(ch)e", "i")
    assert compile_js_regex("ca(ch)e", "i") is first
    assert (first.source, first.flags) == ("ca(ch)e", "i")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.source = "other"  # type: ignore[misc]


def test_translation_is_explicit_python() -> None:
    compiled = compile_js_regex("^(?<y>\\d)$").compiled
    assert compiled.pattern.startswith("(?<![^")
    assert "(?P<y>[0-9])" in compiled.pattern
    assert compiled.flags & re.IGNORECASE == 0
    assert compile_js_regex("a", "i").compiled.flags & re.IGNORECASE


def test_matcher_exhaustion_is_a_grading_error() -> None:
    class Exhausted:
        def search(self, text: str, timeout: float) -> None:
            raise RecursionError

    regex = JsRegex(
        source="(a*)*b",
        flags="",
        compiled=re.compile("(a*)*b"),
        matcher=Exhausted(),  # type: ignore[arg-type]
        unicode=True,
        sticky=False,
    )
    with pytest.raises(GradingError, match="exhausted the matcher"):
        regex.test("aaaa")


def test_known_case_folding_differences_are_pythons() -> None:
    # Documented in docs/graders.md: JavaScript without u does not fold these; Python does.
    assert compile_js_regex("k", "i").test("\u212a")
    assert compile_js_regex("s", "i").test("\u017f")
    # Folding JavaScript does without u, which Python agrees with.
    assert compile_js_regex("é", "i").test("É")
    assert compile_js_regex("\u03c3", "i").test("\u03a3")  # sigma


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("^ok$", "ok", True),
        ("^ok$", "ok\n", False),
        ("^ok$", "x\nok", False),
        ("^\\d+$", "12", True),
        ("^\\d+$", "\u0661\u0662", False),
        ("^.$", "😀", True),
        ("^[a-z]+$", "abc", True),
    ],
)
def test_schema_patterns_run_as_ajv_runs_them(pattern: str, text: str, expected: bool) -> None:
    """JSON Schema ``pattern``: ``new RegExp(pattern, "u")``: u, and not multiline."""
    assert (re.search(translate_schema_pattern(pattern), text) is not None) is expected


def test_schema_patterns_use_unicode_mode_syntax() -> None:
    with pytest.raises(JsPatternError, match=re.escape("lone '{'")):
        translate_schema_pattern("a{,2}")


def test_known_difference_captures_are_not_reset_between_iterations() -> None:
    # Documented in docs/graders.md: JavaScript answers True (group 1 is reset by the b iteration).
    assert compile_js_regex("^(?:(a)|b)+\\1$").test("ab") is False
