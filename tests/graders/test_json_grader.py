"""``sevro.json``: document detection, pointer selection, equals, contains and exactDocument."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus
from sevro_core.vocabulary import FINAL_MESSAGE_OBSERVATION
from sevro_graders.json_grader import JsonGrader
from tests.graders.helpers import view

GRADER = JsonGrader()
P, F = CheckStatus.PASSED, CheckStatus.FAILED
RESULT = '{"status": "ready", "count": 2, "ok": true, "items": [{"id": 1, "tags": ["a", "b"]}]}'
FENCED = f"Done.\n```json\n{RESULT}\n```\n"


def grade(configuration: dict[str, Any], message: str | None, complete: bool = True) -> Any:
    return GRADER.compile(configuration).grade("check", view(message, complete=complete))


@pytest.mark.parametrize(
    ("configuration", "message", "status", "detail"),
    [
        ({}, RESULT, P, None),
        ({}, FENCED, P, None),
        ({}, "ready", F, "the message is not JSON and has no ```json fence"),
        ({}, f"{FENCED}{FENCED}", F, "the message is not JSON and has 2 ```json fences"),
        ({"pointer": ""}, RESULT, P, None),
        ({"pointer": "/status"}, RESULT, P, None),
        ({"pointer": "/missing"}, RESULT, F, "pointer /missing not found"),
        ({"pointer": "/items/1"}, RESULT, F, "pointer /items/1 not found"),
        ({"pointer": "/status", "equals": "ready"}, RESULT, P, None),
        ({"pointer": "/status", "equals": "done"}, RESULT, F, "the value at /status does not"),
        ({"pointer": "/count", "equals": 2.0}, RESULT, P, None),
        ({"pointer": "/ok", "equals": 1}, RESULT, F, "the value at /ok does not equal"),
        ({"pointer": "/count", "equals": True}, '{"count": 1}', F, "does not equal"),
        ({"equals": {"a": 1}}, '{"a": 1.0}', P, None),
        ({"equals": {"a": 1}}, '{"a": 1, "b": 2}', F, "the document does not equal"),
        ({"equals": None}, "null", P, None),
        ({"pointer": "/a", "equals": None}, '{"a": null}', P, None),
        ({"pointer": "/a", "equals": None}, '{"a": false}', F, "does not equal"),
        ({"pointer": "/items", "contains": {"id": 1}}, RESULT, P, None),
        ({"pointer": "/items", "contains": {"id": 2}}, RESULT, F, "has no item matching"),
        ({"pointer": "/items", "contains": {"tags": ["b"]}}, RESULT, P, None),
        ({"pointer": "/items", "contains": {"tags": ["c"]}}, RESULT, F, "has no item matching"),
        ({"pointer": "/items", "contains": {"tags": [{"$regex": "^a$"}]}}, RESULT, P, None),
        ({"pointer": "/items/0/tags", "contains": {"$regex": "^b"}}, RESULT, P, None),
        ({"pointer": "/items/0/tags", "contains": {"$regex": "^c"}}, RESULT, F, "no item"),
        ({"pointer": "/status", "contains": "ready"}, RESULT, F, "/status is not an array"),
        ({"contains": 1}, "[3, 2, 1.0]", P, None),
        ({"contains": 1}, "[true]", F, "the document has no item matching"),
        ({"contains": [1]}, "[[0, 1], [2]]", P, None),
        ({"contains": 1}, '{"a": 1}', F, "the document is not an array"),
        # equals and contains together: both must hold
        ({"pointer": "/t", "equals": ["a", "b"], "contains": "a"}, '{"t": ["a", "b"]}', P, None),
        ({"pointer": "/t", "equals": ["a"], "contains": "a"}, '{"t": ["a", "b"]}', F, "not equal"),
        ({"pointer": "/t", "equals": ["a", "b"], "contains": "c"}, '{"t": ["a", "b"]}', F, "no"),
        # exactDocument
        ({"exactDocument": True}, RESULT, P, None),
        ({"exactDocument": True}, f"  {RESULT}\n", P, None),
        ({"exactDocument": True}, f"```json\n{RESULT}\n```", P, None),
        ({"exactDocument": True}, f"\n```json\n{RESULT}\n```\n\n", P, None),
        ({"exactDocument": True}, FENCED, F, "not exactly one JSON document or one ```json"),
        ({"exactDocument": False}, FENCED, P, None),
        ({"exactDocument": True, "pointer": "/x"}, FENCED, F, "not exactly one JSON"),
        ({"exactDocument": True}, "ready", F, "the message is not JSON"),
    ],
)
def test_assertions(
    configuration: dict[str, Any], message: str, status: CheckStatus, detail: str | None
) -> None:
    outcome = grade(configuration, message)
    assert outcome.status is status
    assert outcome.grader == "sevro.json"
    assert outcome.evidence_refs == (FINAL_MESSAGE_OBSERVATION,)
    if detail is None:
        assert outcome.detail is None
    else:
        assert detail in outcome.detail


@pytest.mark.parametrize(("message", "complete"), [(None, True), (None, False), (RESULT, False)])
def test_unavailable_final_message(message: str | None, complete: bool) -> None:
    outcome = grade({"pointer": "/status", "equals": "ready"}, message, complete)
    assert outcome.status is CheckStatus.UNAVAILABLE


@pytest.mark.parametrize(
    ("configuration", "pointer", "message"),
    [
        ({"pointer": 1}, "/pointer", "must be of type string"),
        ({"pointer": "status"}, "/pointer", "must be empty or start with '/'"),
        ({"pointer": "/a~2"}, "/pointer", "'~' not followed by 0 or 1"),
        ({"exactDocument": "yes"}, "/exactDocument", "must be of type boolean"),
        ({"equal": 1}, "/equal", "unknown key 'equal'"),
        ({"pattern": "x"}, "/pattern", "unknown key 'pattern'"),
        ({"contains": {"$regex": "("}}, "/contains/$regex", "unterminated group"),
        ({"contains": [{"$regex": 1}]}, "/contains/0/$regex", "$regex must be a string"),
    ],
)
def test_configuration_refusals(configuration: dict[str, Any], pointer: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        GRADER.compile(configuration)
    assert refused.value.pointer == pointer
    assert message in refused.value.message


def test_equals_compares_a_regex_object_literally() -> None:
    check = {"pointer": "/v", "equals": {"$regex": "^a"}}
    assert grade(check, '{"v": "abc"}').status is CheckStatus.FAILED
    assert grade(check, '{"v": {"$regex": "^a"}}').status is CheckStatus.PASSED
