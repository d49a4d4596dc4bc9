"""``sevro.output``: one combined contract, parts in Sevro's order, the first failure wins."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus
from sevro_core.vocabulary import FINAL_MESSAGE_OBSERVATION
from sevro_graders.output_grader import OutputGrader
from tests.graders.helpers import view

GRADER = OutputGrader()
P, F = CheckStatus.PASSED, CheckStatus.FAILED
DOC = '{"status": "ready", "items": [{"id": 1, "name": "alpha"}], "n": 1}'
SCHEMA = {"type": "object", "required": ["status"]}


def grade(configuration: dict[str, Any], message: str | None, complete: bool = True) -> Any:
    return GRADER.compile(configuration).grade("check", view(message, complete=complete))


@pytest.mark.parametrize(
    ("configuration", "message", "status", "detail"),
    [
        # validJson: the whole trimmed message is one document or one fence
        ({"validJson": True}, DOC, P, None),
        ({"validJson": True}, f"\n```json\n{DOC}\n```\n", P, None),
        ({"validJson": True}, f"Here:\n```json\n{DOC}\n```", F, "validJson: the trimmed"),
        ({"validJson": True}, "ready", F, "validJson: the message is not JSON"),
        # schema
        ({"schema": SCHEMA}, DOC, P, None),
        ({"schema": SCHEMA}, f"Here:\n```json\n{DOC}\n```", P, None),
        ({"schema": SCHEMA}, "{}", F, "schema: schema violation at the document root"),
        ({"schema": SCHEMA}, "ready", F, "schema: the message is not JSON"),
        # jsonPath alone, with expectJson, with containsJson
        ({"jsonPath": "/status"}, DOC, P, None),
        ({"jsonPath": "/nope"}, DOC, F, "jsonPath: pointer /nope not found"),
        ({"jsonPath": "/nope"}, "ready", F, "jsonPath: the message is not JSON"),
        ({"jsonPath": "/status", "expectJson": "ready"}, DOC, P, None),
        ({"jsonPath": "/n", "expectJson": 1.0}, DOC, P, None),
        ({"jsonPath": "/n", "expectJson": True}, DOC, F, "expectJson: the value at /n does"),
        ({"jsonPath": "", "expectJson": {"a": [1]}}, '{"a": [1.0]}', P, None),
        ({"jsonPath": "/items", "containsJson": {"name": {"$regex": "^al"}}}, DOC, P, None),
        ({"jsonPath": "/items", "containsJson": {"id": 2}}, DOC, F, "containsJson: the value"),
        ({"jsonPath": "/status", "containsJson": "r"}, DOC, F, "containsJson: the value at /st"),
        (
            {"jsonPath": "/items", "expectJson": [{"id": 1}], "containsJson": {"id": 1}},
            DOC,
            F,
            "expectJson:",
        ),
        (
            {
                "jsonPath": "/items",
                "expectJson": [{"id": 1, "name": "alpha"}],
                "containsJson": {"id": 1},
            },
            DOC,
            P,
            None,
        ),
        # expectExact is untrimmed and exact
        ({"expectExact": "ready"}, "ready", P, None),
        ({"expectExact": "ready"}, "ready\n", F, "expectExact: the final message differs"),
        ({"expectExact": "ready"}, "Ready", F, "expectExact:"),
        ({"expectExact": " ready\n"}, " ready\n", P, None),
        ({"expectExact": ""}, "", P, None),
        # regexes: multiline, with shared flags
        ({"expectRegex": "^ready$"}, "x\nready", P, None),
        ({"expectRegex": "^ready$"}, "not ready", F, "expectRegex: regex assertion failed"),
        ({"notRegex": "error"}, "fine", P, None),
        ({"notRegex": "error"}, "an error", F, "notRegex: regex assertion failed"),
        ({"expectRegex": "READY", "flags": "i"}, "ready", P, None),
        ({"notRegex": "ERROR", "flags": "i"}, "error", F, "notRegex:"),
        ({"expectRegex": "ready", "notRegex": "READY", "flags": "i"}, "ready", F, "notRegex:"),
        ({"expectRegex": "ready", "notRegex": "error"}, "ready", P, None),
    ],
)
def test_each_part(
    configuration: dict[str, Any], message: str, status: CheckStatus, detail: str | None
) -> None:
    outcome = grade(configuration, message)
    assert outcome.status is status
    assert outcome.grader == "sevro.output"
    assert outcome.evidence_refs == (FINAL_MESSAGE_OBSERVATION,)
    if detail is None:
        assert outcome.detail is None
    else:
        assert outcome.detail.startswith(detail)


EVERYTHING: dict[str, Any] = {
    "validJson": True,
    "schema": {"type": "object", "required": ["status"]},
    "jsonPath": "/status",
    "expectJson": "ready",
    "expectExact": '{"status": "ready"}',
    "expectRegex": "ready",
    "notRegex": "error",
}


@pytest.mark.parametrize(
    ("message", "first_failure"),
    [
        ('{"status": "ready"}', None),
        ('Sure: ```json\n{"error": 1}\n```', "validJson:"),
        ('{"error": "ready"}', "schema:"),
        ('{"status": "error"}', "expectJson:"),
        ('{"status":"ready"}', "expectExact:"),
    ],
)
def test_the_first_failure_in_sevros_order_wins(message: str, first_failure: str | None) -> None:
    outcome = grade(EVERYTHING, message)
    if first_failure is None:
        assert outcome.status is CheckStatus.PASSED
    else:
        assert outcome.status is CheckStatus.FAILED
        assert outcome.detail.startswith(first_failure)


def test_pointer_failure_precedes_text_checks() -> None:
    config = {"jsonPath": "/x", "expectExact": "nope", "expectRegex": "nope"}
    assert grade(config, '{"y": 1}').detail.startswith("jsonPath:")
    config = {"expectExact": "ready", "expectRegex": "nope", "notRegex": "ready"}
    assert grade(config, "ready").detail.startswith("expectRegex:")


@pytest.mark.parametrize(("message", "complete"), [(None, True), (None, False), ("ready", False)])
def test_unavailable_final_message(message: str | None, complete: bool) -> None:
    outcome = grade({"notRegex": "error"}, message, complete)
    assert outcome.status is CheckStatus.UNAVAILABLE


@pytest.mark.parametrize(
    ("configuration", "pointer", "message"),
    [
        ({}, "", "declares no assertion"),
        ({"validJson": False}, "", "declares no assertion"),
        ({"expectJson": 1}, "/expectJson", "expectJson needs jsonPath"),
        ({"containsJson": 1, "expectRegex": "x"}, "/containsJson", "containsJson needs jsonPath"),
        ({"flags": "i"}, "/flags", "flags needs expectRegex or notRegex"),
        ({"flags": "i", "expectExact": "x"}, "/flags", "flags needs expectRegex or notRegex"),
        ({"validJson": "true"}, "/validJson", "must be of type boolean"),
        ({"schema": "object"}, "/schema", "must be of type object"),
        ({"jsonPath": 0}, "/jsonPath", "must be of type string"),
        ({"expectExact": 1}, "/expectExact", "must be of type string"),
        ({"expectRegex": 1}, "/expectRegex", "must be of type string"),
        ({"notRegex": False}, "/notRegex", "must be of type string"),
        ({"notRegex": "x", "flags": 1}, "/flags", "must be of type string"),
        ({"notRegex": "x", "negate": True}, "/negate", "unknown key 'negate'"),
        ({"pattern": "x"}, "/pattern", "unknown key 'pattern'"),
        ({"jsonPath": "status"}, "/jsonPath", "must be empty or start with '/'"),
        ({"jsonPath": "/~x"}, "/jsonPath", "'~' not followed by 0 or 1"),
        ({"schema": {"type": 1}}, "/schema/type", "invalid JSON Schema"),
        ({"schema": {"$ref": "other.json"}}, "/schema", "does not resolve"),
        ({"jsonPath": "/a", "containsJson": {"$regex": "[a"}}, "/containsJson/$regex", "class"),
        ({"expectRegex": "(?<x"}, "/expectRegex", "unterminated group name"),
        ({"notRegex": "a++"}, "/notRegex", "possessive"),
        ({"expectRegex": "a", "flags": "q"}, "/flags", "flag 'q' is not a JavaScript RegExp flag"),
        ({"notRegex": "a", "flags": "ss"}, "/flags", "given twice"),
    ],
)
def test_configuration_refusals(configuration: dict[str, Any], pointer: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        GRADER.compile(configuration)
    assert refused.value.pointer == pointer
    assert message in refused.value.message
