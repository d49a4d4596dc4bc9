"""Built-in grader replacement and extension task-verdict policies, with their controls."""

from __future__ import annotations

import itertools

import pytest

from sevro_core.api import CheckDeclaration, Execution, Grading, InvocationError, Verdict
from sevro_extensions.errors import ExtensionProtocolError
from sevro_extensions.policy import (
    check_replacements,
    extension_checks,
    guarded_verdict,
    recommended_verdict,
)

ADVERTISED = ("acme.answer", "acme.style")
CHECKS = (
    CheckDeclaration("greeting", "sevro.regex", {"pattern": "hello"}),
    CheckDeclaration("shape", "sevro.output", {"validJson": True}),
    CheckDeclaration("again", "sevro.regex", {"pattern": "bye"}),
    CheckDeclaration("acme.answer", "acme.answer", {}),
)


def test_extension_checks_are_the_declared_checks_of_advertised_graders() -> None:
    assert extension_checks(CHECKS, ADVERTISED) == {"acme.answer": "acme.answer"}
    assert extension_checks(CHECKS[:3], ADVERTISED) == {}


def test_replacing_a_declared_builtin_grader_leaves_its_checks_unrun() -> None:
    assert check_replacements(["sevro.regex"], CHECKS, ADVERTISED) == ("greeting", "again")
    assert check_replacements(["sevro.output", "sevro.regex"], CHECKS, ADVERTISED) == (
        "greeting",
        "shape",
        "again",
    )
    assert check_replacements([], CHECKS[:3], ADVERTISED) == ()


@pytest.mark.parametrize(
    ("replaced", "checks", "message"),
    [
        (["regex"], CHECKS, r"^--replace-builtin-grader \"regex\": a grader id is namespaced"),
        (["sevro.regex", "sevro.regex"], CHECKS, r"\"sevro\.regex\" is given twice$"),
        (["sevro.json"], CHECKS, r"\"sevro\.json\": the case declares no check with this grader$"),
        (["acme.answer"], CHECKS, r"names a grader of the extension, not a built-in one$"),
        (["sevro.regex"], CHECKS[:3], r"at least one check of a grader the extension advertises$"),
    ],
)
def test_a_bad_replacement_is_one_line_exit_64(
    replaced: list[str], checks: tuple[CheckDeclaration, ...], message: str
) -> None:
    with pytest.raises(InvocationError, match=message) as caught:
        check_replacements(replaced, checks, ADVERTISED)
    assert caught.value.exit_code == 64 and "\n" not in str(caught.value)


def test_recommendations_map_onto_verdicts() -> None:
    assert recommended_verdict("passed") is Verdict.PASSED
    assert recommended_verdict("failed") is Verdict.FAILED
    assert recommended_verdict("not_assessed") is Verdict.NOT_ASSESSED
    with pytest.raises(ExtensionProtocolError, match=r"^taskVerdictRecommendation \"pass\" is not"):
        recommended_verdict("pass")


def test_a_recommendation_counts_only_for_a_completed_fully_graded_trial() -> None:
    for recommendation in ("passed", "failed", "not_assessed"):
        assert guarded_verdict(
            recommendation,
            execution=Execution.COMPLETED,
            grading=Grading.COMPLETED,
            evidence_complete=True,
        ) is recommended_verdict(recommendation)


def test_an_extension_can_never_pass_a_failed_ungraded_or_unevidenced_trial() -> None:
    """A lying policy recommends ``passed`` for every trial; only the clean one passes."""
    for execution, grading, evidence in itertools.product(Execution, Grading, (True, False)):
        verdict = guarded_verdict(
            "passed", execution=execution, grading=grading, evidence_complete=evidence
        )
        clean = execution is Execution.COMPLETED and grading is Grading.COMPLETED and evidence
        assert verdict is (Verdict.PASSED if clean else Verdict.NOT_ASSESSED), (
            execution,
            grading,
            evidence,
        )
