"""``sevro.regex``: configuration refusals, multiline matching, negate, flags, availability."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus
from sevro_core.vocabulary import FINAL_MESSAGE_OBSERVATION
from sevro_graders.regex_grader import RegexGrader
from tests.graders.helpers import view

GRADER = RegexGrader()


def grade(configuration: dict[str, Any], message: str | None, complete: bool = True) -> Any:
    return GRADER.compile(configuration).grade("check", view(message, complete=complete))


@pytest.mark.parametrize(
    ("configuration", "message", "status"),
    [
        ({"pattern": "^ready$"}, "ready", CheckStatus.PASSED),
        ({"pattern": "^ready$"}, "Thinking...\nready\n", CheckStatus.PASSED),
        ({"pattern": "^ready$"}, "not ready", CheckStatus.FAILED),
        ({"pattern": "ready"}, "already", CheckStatus.PASSED),
        ({"pattern": "error", "negate": True}, "all good", CheckStatus.PASSED),
        ({"pattern": "error", "negate": True}, "an error", CheckStatus.FAILED),
        ({"pattern": "error", "negate": False}, "an error", CheckStatus.PASSED),
        ({"pattern": "READY", "flags": "i"}, "ready", CheckStatus.PASSED),
        ({"pattern": "READY"}, "ready", CheckStatus.FAILED),
        ({"pattern": "a.b", "flags": "s"}, "a\nb", CheckStatus.PASSED),
        ({"pattern": "a.b"}, "a\nb", CheckStatus.FAILED),
        ({"pattern": "^.$", "flags": "u"}, "😀", CheckStatus.PASSED),
        ({"pattern": "^.$"}, "😀", CheckStatus.FAILED),
        ({"pattern": "b", "flags": "y"}, "ab", CheckStatus.FAILED),
        ({"pattern": "a", "flags": "y"}, "ab", CheckStatus.PASSED),
        ({"pattern": "a", "flags": "gd"}, "a", CheckStatus.PASSED),
        ({"pattern": "^$"}, "", CheckStatus.PASSED),
    ],
)
def test_assertions(configuration: dict[str, Any], message: str, status: CheckStatus) -> None:
    outcome = grade(configuration, message)
    assert outcome.status is status
    assert outcome.detail == (None if status is CheckStatus.PASSED else "regex assertion failed")


def test_outcome_shape() -> None:
    outcome = grade({"pattern": "x"}, "x")
    assert outcome.to_json() == {
        "id": "check",
        "grader": "sevro.regex",
        "status": "passed",
        "evidenceRefs": [FINAL_MESSAGE_OBSERVATION],
    }


@pytest.mark.parametrize("negate", [False, True])
def test_missing_final_message_is_unavailable_never_passed(negate: bool) -> None:
    outcome = grade({"pattern": "x", "negate": negate}, None)
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert outcome.detail == "final message unavailable"
    assert outcome.evidence_refs == (FINAL_MESSAGE_OBSERVATION,)


@pytest.mark.parametrize("negate", [False, True])
def test_incomplete_final_message_is_unavailable(negate: bool) -> None:
    outcome = grade({"pattern": "x", "negate": negate}, "x", complete=False)
    assert outcome.status is CheckStatus.UNAVAILABLE
    assert outcome.detail == "final message incomplete"


@pytest.mark.parametrize(
    ("configuration", "pointer", "message"),
    [
        ({}, "", "'pattern' is required"),
        ({"negate": True}, "", "'pattern' is required"),
        ({"pattern": 5}, "/pattern", "must be of type string"),
        ({"pattern": None}, "/pattern", "must be of type string"),
        ({"pattern": "x", "negate": "yes"}, "/negate", "must be of type boolean"),
        ({"pattern": "x", "flags": ["i"]}, "/flags", "must be of type string"),
        ({"pattern": "x", "pointer": ""}, "/pointer", "unknown key 'pointer'"),
        ({"pattern": "x", "Flags": "i"}, "/Flags", "unknown key 'Flags'"),
        ({"pattern": "("}, "/pattern", "unterminated group"),
        ({"pattern": "\\Z"}, "/pattern", "\\Z is Python/PCRE syntax"),
        ({"pattern": "x", "flags": "ii"}, "/flags", "given twice"),
        ({"pattern": "x", "flags": "v"}, "/flags", "'v'"),
        ({"pattern": "x", "flags": "x"}, "/flags", "flag 'x' is not a JavaScript RegExp flag"),
        ({"pattern": "x" * 4097}, "/pattern", "longer than 4096 characters"),
    ],
)
def test_configuration_refusals(configuration: dict[str, Any], pointer: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        GRADER.compile(configuration)
    assert refused.value.pointer == pointer
    assert message in refused.value.message


def test_configuration_may_be_any_mapping() -> None:
    from types import MappingProxyType

    check = GRADER.compile(MappingProxyType({"pattern": "x"}))
    assert check.grade("c", view("x")).status is CheckStatus.PASSED
