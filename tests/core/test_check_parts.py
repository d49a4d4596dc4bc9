"""A check's parts (a verifier's assertions) recorded as check outcomes of their own,
``<check>/<id>``: checked for consistency and bounds, counted by the verdict policy, never
counted as declared checks, and shown in evidence, ``sevro run --json`` and ``sevro report``.
The end-to-end tests run the real CLI with the scripted host and a real ``sevro.verifier``
inside the sandbox; only the verifier's stdout differs between them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.limits import MAX_CHECK_PART_DETAIL_CHARS, MAX_CHECK_PARTS
from sevro_core.models import CheckOutcome, CheckPart
from sevro_core.run.checkparts import declared, parts_problem, with_parts
from sevro_core.run.records import TrialRecord
from sevro_core.states import CheckStatus
from sevro_core.testing import SevroProject, require_sandbox

PASSED, FAILED, UNAVAILABLE = CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.UNAVAILABLE


def outcome(status: CheckStatus, *parts: tuple[str, bool]) -> CheckOutcome:
    return CheckOutcome(
        "v",
        "sevro.verifier",
        status,
        evidence_refs=("obs",),
        parts=tuple(CheckPart(*p) for p in parts),
    )


# ---- the rules, unit by unit -----------------------------------------------------------------


@pytest.mark.parametrize(
    "good",
    [
        outcome(PASSED),
        outcome(UNAVAILABLE),
        outcome(PASSED, ("a", True), ("b", True)),
        outcome(FAILED, ("a", True), ("b", False)),
        outcome(FAILED, ("a", True)),  # the check may fail for more than its parts
    ],
)
def test_consistent_parts_are_kept(good: CheckOutcome) -> None:
    assert parts_problem(good) is None


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (outcome(PASSED, ("a", True), ("b", False)), "passed beside failed part(s): b"),
        (outcome(UNAVAILABLE, ("a", True)), "unavailable check cannot have parts"),
        (outcome(FAILED, ("a", False), ("a", True)), "part id 'a' appears twice"),
        (outcome(FAILED, (" ", False)), "blank"),
        (outcome(FAILED, ("x" * 129, False)), "longer than 128"),
        (outcome(FAILED, ("a\nb", False)), "not printable"),
        (outcome(FAILED, *[(str(i), False) for i in range(MAX_CHECK_PARTS + 1)]), "more than"),
    ],
)
def test_parts_that_contradict_or_overflow_their_check_are_a_problem(
    bad: CheckOutcome, message: str
) -> None:
    problem = parts_problem(bad)
    assert problem is not None and message in problem


def test_each_part_becomes_an_outcome_after_its_check() -> None:
    long = CheckPart("b", False, "x" * (MAX_CHECK_PART_DETAIL_CHARS + 10))
    check = outcome(FAILED, ("a", True))
    check = CheckOutcome(check.id, check.grader, FAILED, "why", ("obs",), (), (*check.parts, long))
    head, first, second = with_parts(check)
    assert (head.id, head.status, head.parts, head.part_of) == ("v", FAILED, (), None)
    assert (first.id, first.status, first.part_of, first.evidence_refs) == (
        "v/a",
        PASSED,
        "v",
        ("obs",),
    )
    assert (second.id, second.status) == ("v/b", FAILED)
    assert second.detail is not None and len(second.detail) == MAX_CHECK_PART_DETAIL_CHARS
    assert second.to_json()["partOf"] == "v" and "partOf" not in head.to_json()
    assert declared([head, first, second]) == [head]
    assert with_parts(outcome(PASSED)) == [outcome(PASSED)], "no parts: the check alone"


# ---- through the engine ----------------------------------------------------------------------


def _run(project: SevroProject, printed: Any, critical: list[str]) -> tuple[Any, dict[str, Any]]:
    """A case whose verifier prints ``printed`` (the host leaves it in the workspace), beside a
    plain regex check on the reply."""
    case = project.case(
        id="parts",
        checks=[
            {
                "id": "verified",
                "grader": "sevro.verifier",
                "configuration": {"run": ["/bin/cat", "verdict.json"], "critical": critical},
            },
            {"id": "replied", "grader": "sevro.regex", "configuration": {"pattern": "^done$"}},
        ],
    )
    write = {"write": {"path": "verdict.json", "content": json.dumps(printed)}}
    host = project.script(default=[[write, {"reply": {"text": "done"}}]])
    done = project.run(case, "--host-config", host)
    (trial,) = done.json()["cases"][0]["trials"]
    return done, json.loads(Path(trial["artifactPath"]).read_text())


def _statuses(document: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(c["id"], c["status"], c.get("partOf")) for c in document["evidence"]["checks"]]


def test_every_assertion_passing_passes_and_each_is_its_own_outcome(
    sevro_project: SevroProject,
) -> None:
    require_sandbox()
    printed = [{"id": "builds", "passed": True}, {"id": "tests", "passed": True, "detail": "9/9"}]
    done, document = _run(sevro_project, printed, ["builds"])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert _statuses(document) == [
        ("verified", "passed", None),
        ("verified/builds", "passed", "verified"),
        ("verified/tests", "passed", "verified"),
        ("replied", "passed", None),
    ]
    checks = {c["id"]: c for c in document["evidence"]["checks"]}
    assert checks["verified/tests"]["detail"] == "9/9"
    assert checks["verified/builds"]["detail"] == "critical"
    assert document["evidence"]["grading"]["status"] == "completed"
    summary = [(c["id"], c.get("partOf")) for c in done.json()["cases"][0]["trials"][0]["checks"]]
    assert summary == [
        ("verified", None),
        ("verified/builds", "verified"),
        ("verified/tests", "verified"),
        ("replied", None),
    ]
    resumed = TrialRecord.from_document(document, Path("trial-1.json"), "0" * 64)
    assert [c.part_of for c in resumed.checks] == [None, "verified", "verified", None]


def test_a_failed_non_critical_assertion_fails_its_check_and_the_task(
    sevro_project: SevroProject,
) -> None:
    require_sandbox()
    printed = [
        {"id": "builds", "passed": True},
        {"id": "tests", "passed": False, "detail": "2 of 9 failed"},
    ]
    done, document = _run(sevro_project, printed, ["builds"])
    assert done.exit_code == 1, done.stdout + done.stderr
    assert _statuses(document) == [
        ("verified", "failed", None),
        ("verified/builds", "passed", "verified"),
        ("verified/tests", "failed", "verified"),
        ("replied", "passed", None),
    ]
    assert document["evidence"]["task"]["verdict"] == "failed"
    report = sevro_project.sevro("report", "--details", sevro_project.results)
    assert report.exit_code == 0, report.stderr
    assert "check verified (sevro.verifier) failed: assertion(s) failed: tests" in report.stdout


def test_a_missing_critical_assertion_is_a_grading_error_without_parts(
    sevro_project: SevroProject,
) -> None:
    require_sandbox()
    done, document = _run(sevro_project, [{"id": "tests", "passed": True}], ["builds"])
    assert done.exit_code not in (0, 1), done.stdout + done.stderr
    assert _statuses(document) == [("verified", "unavailable", None), ("replied", "passed", None)]
    error = document["evidence"]["grading"]["error"]
    assert error["checkId"] == "verified"
    assert "critical assertion(s) missing: builds" in error["message"]
    assert document["evidence"]["task"]["verdict"] == "not_assessed"
