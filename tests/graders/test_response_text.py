"""``sevro.response-text``: pass / fail / unavailable / bad configuration controls."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus
from sevro_core.testing import grade, trial_view
from sevro_graders.response_text_grader import ResponseTextGrader

grader = ResponseTextGrader()
REPLY = "Released v2.1.0: 3 fixes.\nSee CHANGELOG.md."


@pytest.mark.parametrize(
    ("configuration", "status", "detail"),
    [
        ({"contains": "v2.1.0"}, CheckStatus.PASSED, None),
        ({"contains": ["v2.1.0", "CHANGELOG.md"]}, CheckStatus.PASSED, None),
        ({"contains": ["v2.1.0", "v3"]}, CheckStatus.FAILED, "contains[1] ('v3')"),
        ({"equals": REPLY}, CheckStatus.PASSED, None),
        ({"equals": REPLY + "\n"}, CheckStatus.FAILED, "does not equal"),
        ({"equals": REPLY.lower()}, CheckStatus.FAILED, "does not equal"),
        ({"notContains": "error"}, CheckStatus.PASSED, None),
        ({"notContains": ["error", "fixes"]}, CheckStatus.FAILED, "notContains[1] ('fixes')"),
        ({"matches": r"^See \S+\.md\.$"}, CheckStatus.PASSED, None),  # multiline
        ({"matches": "^see"}, CheckStatus.FAILED, "does not match"),
        ({"matches": "^see", "flags": "i"}, CheckStatus.PASSED, None),
        ({"contains": "v2", "notContains": "3 fixes"}, CheckStatus.FAILED, "notContains[0]"),
    ],
)
def test_controls(configuration: dict[str, Any], status: CheckStatus, detail: str | None) -> None:
    outcome = grade(grader, configuration, trial_view(REPLY))
    assert outcome.status is status, outcome.detail
    assert (outcome.detail is None) if detail is None else (detail in (outcome.detail or ""))


@pytest.mark.parametrize("configuration", [{"contains": "x"}, {"notContains": "x"}])
def test_a_missing_or_partial_reply_is_unavailable_never_passed(
    configuration: dict[str, Any],
) -> None:
    assert grade(grader, configuration, trial_view(None)).status is CheckStatus.UNAVAILABLE
    partial = trial_view("no x here", complete=False)
    assert grade(grader, configuration, partial).status is CheckStatus.UNAVAILABLE


@pytest.mark.parametrize(
    ("configuration", "pointer"),
    [
        ({}, ""),
        ({"contains": ""}, "/contains"),
        ({"contains": []}, "/contains"),
        ({"equals": 3}, "/equals"),
        ({"matches": "("}, "/matches"),
        ({"matches": "a", "flags": "q"}, "/flags"),
        ({"contains": "a", "flags": "i"}, "/flags"),
        ({"contains": "a", "regex": "b"}, "/regex"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    configuration: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        grader.compile(configuration)
    assert raised.value.pointer == pointer, raised.value
