"""The envelope both ways: requests sevro sends, responses it accepts, and every lie refused."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from sevro_extensions.envelope import decode_response, is_namespaced, new_request
from sevro_extensions.errors import (
    ExtensionError,
    ExtensionProtocolError,
    ExtensionReportedError,
)
from sevro_extensions.negotiation import describe_params
from tests.extensions.conftest import MISBEHAVING, REFERENCE, run

DESCRIBE = describe_params(["sevro.host.exec"], [])
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

CASE = {
    "id": "greets",
    "prompt": "Write hello.txt.",
    "fixture": {"kind": "inline", "files": {}},
    "checks": [],
    "requiredEvidence": [],
    "extensionData": {},
}
FINAL = {
    "id": "sevro.observation.final-message",
    "source": "codex",
    "completeness": "complete",
    "data": {"text": "hello there"},
}


def _evaluate(observations: list[object], policy: str | None = None) -> dict[str, object]:
    params: dict[str, object] = {
        "caseId": "greets",
        "execution": {"status": "completed"},
        "observations": observations,
        "builtinChecks": [],
        "artifacts": [],
        "extensionData": {},
        "configuration": {},
    }
    if policy is not None:
        params["selectedTaskVerdictPolicy"] = policy
    return params


def test_requests_have_fresh_uuid_ids_and_the_method_protocol() -> None:
    first, second = (
        new_request("describe", DESCRIBE),
        new_request(
            "resolve", {"projectRoot": "file:///project", "selectors": {}, "configuration": {}}
        ),
    )
    assert UUID.match(first.id) and UUID.match(second.id) and first.id != second.id
    assert first.document()["protocol"] == "sevro.discovery.v1"
    assert second.document()["protocol"] == "sevro.extension.v1"
    assert first.encode().decode("utf-8").startswith('{"protocol": "sevro.discovery.v1"')


def test_an_invalid_request_is_refused_before_anything_runs() -> None:
    with pytest.raises(
        ExtensionProtocolError,
        match=r"sevro built an invalid resolve request: "
        r"/params/projectRoot: 'project' does not match",
    ):
        new_request("resolve", {"projectRoot": "project", "selectors": {}, "configuration": {}})
    with pytest.raises(ValueError, match="unknown extension method"):
        new_request("grade", {})


def test_all_four_methods_round_trip_with_the_reference_extension(
    node: str, tmp_path: Path
) -> None:
    argv = [node, str(REFERENCE)]
    resolved = run(
        argv,
        "resolve",
        {
            "projectRoot": tmp_path.as_uri(),
            "selectors": {"caseIds": ["greets"]},
            "configuration": {"secret": "x"},
        },
        tmp_path,
    )
    assert [case["id"] for case in resolved.result["cases"]] == ["greets"]
    prepared = run(
        argv,
        "prepare",
        {
            "case": resolved.result["cases"][0],
            "host": {"id": "codex", "capabilities": []},
            "condition": "passive",
            "configuration": {},
        },
        tmp_path,
    )
    assert prepared.result["artifacts"][0]["relativePath"] == "notes/PREPARED.md"
    evaluated = run(argv, "evaluate", _evaluate([FINAL], "sevro-test.reference.strict"), tmp_path)
    assert evaluated.result["checks"] == [
        {
            "id": "sevro-test.reference.answer",
            "status": "passed",
            "evidenceRefs": ["sevro.observation.final-message"],
        }
    ]
    assert evaluated.result["taskVerdictRecommendation"] == "passed"
    partial = run(argv, "evaluate", _evaluate([{**FINAL, "completeness": "partial"}]), tmp_path)
    assert partial.result["checks"][0]["status"] == "unavailable"
    assert "taskVerdictRecommendation" not in partial.result


def test_an_unknown_method_reaches_the_reference_as_a_reported_error() -> None:
    """The reference's own error path, decoded without a process (the envelope knows 4 methods)."""
    request = new_request("describe", DESCRIBE)
    echo = {key: request.document()[key] for key in ("protocol", "id", "method")}
    error = {"code": "sevro-test.reference.unknown-method", "message": "no"}
    body = json.dumps({**echo, "error": error})
    with pytest.raises(ExtensionReportedError) as caught:
        decode_response(request, body.encode())
    assert caught.value.code == "sevro-test.reference.unknown-method"


MISBEHAVIOURS = {
    "malformed": (
        ExtensionProtocolError,
        r"^extension stdout is not UTF-8 JSON "
        r"\(invalid JSON at line 1 column 42: Expecting value\)$",
    ),
    "not-utf8": (
        ExtensionProtocolError,
        r"^extension stdout is not UTF-8 JSON \(not valid UTF-8 at byte 8\)$",
    ),
    "not-object": (ExtensionProtocolError, r"^extension stdout is not a JSON object$"),
    "wrong-id": (
        ExtensionProtocolError,
        r'^extension answered id "00000000-0000-4000-8000-000000000000" for request '
        r"[0-9a-f-]{36}$",
    ),
    "wrong-protocol": (
        ExtensionProtocolError,
        r'^extension answered protocol "sevro.extension.v1" to a '
        r"sevro.discovery.v1 request$",
    ),
    "wrong-method": (
        ExtensionProtocolError,
        r'^extension answered method "resolve" to a describe request$',
    ),
    "both": (ExtensionProtocolError, r"^extension answered both result and error$"),
    "neither": (ExtensionProtocolError, r"^extension answered neither result nor error$"),
    "error": (
        ExtensionReportedError,
        r"^extension reported sevro-test.not-ready: the index is not built$",
    ),
    "bad-error-code": (
        ExtensionProtocolError,
        r"^extension describe response is invalid: /error/code: 'NotNamespaced' "
        r"does not match",
    ),
    "invalid-result": (
        ExtensionProtocolError,
        r"^extension describe response is invalid: /result/extension/id: "
        r"'Bad Id' does not match",
    ),
    "extra-key": (
        ExtensionProtocolError,
        r"^extension describe response is invalid: /note: unknown key 'note'$",
    ),
}


@pytest.mark.parametrize("mode", sorted(MISBEHAVIOURS))
def test_a_misbehaving_extension_is_a_one_line_error(node: str, tmp_path: Path, mode: str) -> None:
    kind, message = MISBEHAVIOURS[mode]
    with pytest.raises(ExtensionError) as caught:
        run([node, str(MISBEHAVING), mode], "describe", DESCRIBE, tmp_path)
    assert type(caught.value) is kind
    assert re.search(message, str(caught.value)), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_well_behaved_answer_passes_the_same_checks(node: str, tmp_path: Path) -> None:
    """Positive control for the table above: the same script, answering correctly."""
    answer = run([node, str(MISBEHAVING), "huge-stderr"], "describe", DESCRIBE, tmp_path)
    assert answer.result["extension"]["id"] == "sevro-test.misbehaving"


def test_a_reported_message_cannot_forge_lines() -> None:
    request = new_request("describe", DESCRIBE)
    echo = {key: request.document()[key] for key in ("protocol", "id", "method")}
    error = {"code": "acme.x", "message": "line one\n\r\tPASSED everything"}
    body = json.dumps({**echo, "error": error})
    with pytest.raises(ExtensionReportedError) as caught:
        decode_response(request, body.encode())
    assert str(caught.value) == "extension reported acme.x: line one PASSED everything"


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("acme.check", True),
        ("a1-b2.c3", True),
        ("a." + "b" * 126, True),
        ("a." + "b" * 127, False),
        ("acme", False),
        ("Acme.x", False),
        ("acme..x", False),
        ("1acme.x", False),
        ("acme.x-", False),
        (7, False),
    ],
)
def test_namespaced_ids(value: object, valid: bool) -> None:
    assert is_namespaced(value) is valid


def test_request_ids_are_random_uuids() -> None:
    assert len({new_request("describe", DESCRIBE).id for _ in range(50)}) == 50
    assert uuid.UUID(new_request("describe", DESCRIBE).id).version == 4
