"""Bounded matching: the ``regex`` engine agrees with ``re`` and ends pathological matches."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import regex

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.limits import REGEX_CHECK_TIMEOUT_SECONDS
from sevro_graders import jsregex
from sevro_graders.json_grader import JsonGrader
from sevro_graders.jsregex import compile_js_regex, match_budget
from sevro_graders.jsstrings import to_utf16_units
from sevro_graders.output_grader import OutputGrader
from sevro_graders.regex_grader import RegexGrader
from sevro_graders.schema_grader import SchemaGrader
from sevro_graders.shell_grader import ShellGrader
from tests.graders.helpers import view
from tests.graders.test_jsregex import JAVASCRIPT_ANSWERS

# Backtracks exponentially in both engines (``regex`` defuses ``(a*)*b`` but not this).
PATHOLOGICAL = "^(a|aa)+$"
PATHOLOGICAL_TEXT = "a" * 64 + "b"


def _answer(match: Any) -> tuple[Any, ...] | None:
    return None if match is None else (match.span(), match.groups())


def test_both_engines_agree_on_every_translated_pattern_and_text() -> None:
    """The matcher runs the ``re``-validated translation; spans and groups must be identical."""
    texts = sorted({text for _, _, text, _ in JAVASCRIPT_ANSWERS})
    texts += ["", "\n\n", "aaab", "ab" * 50, "x\u2028y\r\nz", "😀a😀", "K\u212a\u017fs"]
    compared = 0
    for pattern, flags, _, _ in JAVASCRIPT_ANSWERS:
        js = compile_js_regex(pattern, flags)
        for text in texts:
            subject = text if js.unicode else to_utf16_units(text)
            assert _answer(js.matcher.search(subject)) == _answer(js.compiled.search(subject)), (
                pattern,
                flags,
                text,
            )
            assert _answer(js.matcher.match(subject)) == _answer(js.compiled.match(subject))
            compared += 1
    assert compared > 1000


def _cased_characters() -> str:
    return "".join(
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF
        and (chr(c).lower() != chr(c) or chr(c).upper() != chr(c) or chr(c).casefold() != chr(c))
    )


def test_case_folding_differs_from_re_only_at_the_turkish_i() -> None:
    """Under ``i`` the engines fold every cased character alike except i, I, U+0130, U+0131.

    There ``regex`` is closer to JavaScript, which keeps U+0130 (dotted capital I) and U+0131
    (dotless small i) apart from i and I in both modes: ``re`` folds all four together,
    ``regex`` only pairs i with U+0130 and I with U+0131 (their simple case mappings).
    """
    cased = _cased_characters()
    differing = {}
    for char in cased:
        escaped = f"\\U{ord(char):08x}"
        old = set(re.compile(escaped, re.IGNORECASE).findall(cased))
        new = set(regex.compile(escaped, regex.IGNORECASE | regex.V0).findall(cased))
        if old != new:
            differing[char] = "".join(sorted(old - new)), "".join(sorted(new - old))
    assert differing == {
        "i": ("\u0131", ""),
        "I": ("\u0130", ""),
        "\u0130": ("I\u0131", ""),
        "\u0131": ("i\u0130", ""),
    }


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("i", "\u0131", False),  # JavaScript: false (re said true)
        ("I", "\u0130", False),  # JavaScript: false (re said true)
        ("\u0130", "\u0131", False),  # JavaScript: false (re said true)
        ("i", "I", True),
        ("i", "\u0130", True),  # known difference: JavaScript says false
        ("I", "\u0131", True),  # known difference: JavaScript says false
    ],
)
def test_turkish_i_under_ignore_case(pattern: str, text: str, expected: bool) -> None:
    for flags in ("i", "iu"):
        assert compile_js_regex(pattern, flags).test(text) is expected


def test_a_pathological_match_is_a_grading_error_naming_check_and_limit() -> None:
    pathological = compile_js_regex(PATHOLOGICAL)
    with match_budget("slow-check", seconds=0.2), pytest.raises(GradingError) as raised:
        pathological.test(PATHOLOGICAL_TEXT)
    message = str(raised.value)
    assert message.startswith("check 'slow-check': regex /^(a|aa)+$/ did not finish within")
    assert "within the 0.2 s regex time limit of a check (REGEX_CHECK_TIMEOUT_SECONDS" in message


def test_the_same_pattern_answers_on_benign_text() -> None:
    pathological = compile_js_regex(PATHOLOGICAL)
    with match_budget("slow-check", seconds=0.2):
        assert pathological.test("a" * 64)
        assert not pathological.test("b")


def test_one_budget_is_shared_by_every_match_of_a_check() -> None:
    trivial = compile_js_regex("x")
    assert trivial.test("x")
    with match_budget("spent", seconds=0.0), pytest.raises(GradingError, match="'spent'"):
        trivial.test("x")
    assert trivial.test("x")  # the budget ends with its check


def test_without_a_budget_each_match_gets_the_configured_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sevro_core.limits.REGEX_CHECK_TIMEOUT_SECONDS", 0.2)
    with pytest.raises(GradingError, match=r"did not finish within the 0\.2 s") as raised:
        compile_js_regex(PATHOLOGICAL).test(PATHOLOGICAL_TEXT)
    assert str(raised.value).startswith("regex /")


def test_the_default_limit_is_the_documented_constant() -> None:
    with match_budget("c"):
        assert jsregex._budget.seconds == REGEX_CHECK_TIMEOUT_SECONDS
    assert jsregex._budget.seconds is None


@pytest.mark.parametrize(
    ("grader", "configuration"),
    [
        (RegexGrader(), {"pattern": PATHOLOGICAL}),
        (OutputGrader(), {"expectRegex": PATHOLOGICAL}),
        (OutputGrader(), {"notRegex": PATHOLOGICAL}),
    ],
)
def test_graders_turn_a_pathological_match_into_a_grading_error(
    grader: Any, configuration: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sevro_core.limits.REGEX_CHECK_TIMEOUT_SECONDS", 0.2)
    check = grader.compile(configuration)
    with pytest.raises(GradingError, match=r"^check 'c1': regex .* did not finish within"):
        check.grade("c1", view(PATHOLOGICAL_TEXT))
    assert check.grade("c2", view("a" * 200)).status.value in ("passed", "failed")


SLOW_KEY = json.dumps({PATHOLOGICAL_TEXT: 1})
SLOW_VALUE = json.dumps({"x": PATHOLOGICAL_TEXT})


@pytest.mark.parametrize(
    ("grader", "configuration", "message"),
    [
        (SchemaGrader(), {"schema": {"properties": {"x": {"pattern": PATHOLOGICAL}}}}, SLOW_VALUE),
        (SchemaGrader(), {"schema": {"propertyNames": {"pattern": PATHOLOGICAL}}}, SLOW_KEY),
        (SchemaGrader(), {"schema": {"patternProperties": {PATHOLOGICAL: {}}}}, SLOW_KEY),
        (
            SchemaGrader(),
            {"schema": {"patternProperties": {PATHOLOGICAL: {}}, "additionalProperties": False}},
            SLOW_KEY,
        ),
        (OutputGrader(), {"schema": {"properties": {"x": {"pattern": PATHOLOGICAL}}}}, SLOW_VALUE),
        (
            JsonGrader(),
            {"pointer": "/x", "contains": {"$regex": PATHOLOGICAL}},
            json.dumps({"x": [PATHOLOGICAL_TEXT]}),
        ),
    ],
)
def test_schema_and_json_regexes_are_bounded_too(
    grader: Any, configuration: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sevro_core.limits.REGEX_CHECK_TIMEOUT_SECONDS", 0.2)
    check = grader.compile(configuration)
    with pytest.raises(GradingError, match=r"^check 'c1': regex /\^\(a\|aa\)\+\$/ did not finish"):
        check.grade("c1", view(message))


@pytest.mark.parametrize(
    ("schema", "document", "status"),
    [
        ({"properties": {"x": {"pattern": PATHOLOGICAL}}}, {"x": "aaaa"}, "passed"),
        ({"properties": {"x": {"pattern": PATHOLOGICAL}}}, {"x": "aab"}, "failed"),
        ({"patternProperties": {"^a": {"type": "string"}}}, {"ab": 1}, "failed"),
        ({"patternProperties": {"^a": {}}, "additionalProperties": False}, {"ab": 1}, "passed"),
        ({"patternProperties": {"^a": {}}, "additionalProperties": False}, {"b": 1}, "failed"),
        ({"properties": {"b": {}}, "additionalProperties": False}, {"b": 1}, "passed"),
        ({"additionalProperties": {"type": "string"}}, {"b": 1}, "failed"),
    ],
)
def test_the_bounded_schema_keywords_keep_their_meaning(
    schema: dict[str, Any], document: Any, status: str
) -> None:
    check = SchemaGrader().compile({"schema": schema})
    assert check.grade("c", view(json.dumps(document))).status.value == status


def test_unevaluated_properties_with_pattern_properties_is_refused() -> None:
    schema = {"patternProperties": {"^a": {}}, "unevaluatedProperties": False}
    with pytest.raises(ConfigurationError, match="could not be bounded") as raised:
        SchemaGrader().compile({"schema": schema})
    assert raised.value.pointer == "/schema"
    SchemaGrader().compile({"schema": {"unevaluatedProperties": False}})  # alone: accepted


def test_shell_output_regexes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sevro_core.limits.REGEX_CHECK_TIMEOUT_SECONDS", 0.2)
    check = ShellGrader().compile({"run": "true", "expectRegex": PATHOLOGICAL})
    with match_budget("sh"), pytest.raises(GradingError, match=r"^check 'sh': regex"):
        check.assess(0, PATHOLOGICAL_TEXT)
