"""Built-in grader replacement and extension task-verdict policies, as pure rules.

``--replace-builtin-grader`` lets an extension's checks stand in for a built-in grader the case
declares; ``--task-verdict-policy`` lets the extension recommend the task verdict. Neither can
override the execution, grading or evidence-availability rules: the engine still refuses a
``passed`` verdict unless the trial completed, grading completed and required evidence is
complete (:func:`guarded_verdict` states that guard for an extension's recommendation).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from sevro_core.api import CheckDeclaration, Execution, Grading, InvocationError, Verdict
from sevro_extensions.envelope import is_namespaced
from sevro_extensions.errors import ExtensionProtocolError, shown

RECOMMENDATIONS: Final = {
    "passed": Verdict.PASSED,
    "failed": Verdict.FAILED,
    "not_assessed": Verdict.NOT_ASSESSED,
}
"""An ``evaluate`` ``taskVerdictRecommendation`` and the task verdict it recommends."""


def extension_checks(
    case_checks: Sequence[CheckDeclaration], advertised_graders: Collection[str]
) -> dict[str, str]:
    """The case's checks an extension grades (its grader is advertised), id → grader, in order:
    what :func:`sevro_extensions.evaluation.check_evaluation` takes as ``declared``."""
    return {c.id: c.grader for c in case_checks if c.grader in advertised_graders}


def check_replacements(
    replaced: Sequence[str],
    case_checks: Sequence[CheckDeclaration],
    advertised_graders: Collection[str],
) -> tuple[str, ...]:
    """The ids of the case's checks that ``--replace-builtin-grader`` leaves unrun, in case order.

    Each replaced id must be namespaced, given once, a grader the case declares, and not one of
    the extension's own; replacing anything needs at least one declared check of an advertised
    extension grader to take its place. A broken rule is one line, exit 64, before anything runs.
    """
    seen: set[str] = set()
    declared = {check.grader for check in case_checks}
    for grader in replaced:
        flag = f"--replace-builtin-grader {shown(grader)}"
        if not is_namespaced(grader):
            raise InvocationError(f"{flag}: a grader id is namespaced (like sevro.regex)")
        if grader in seen:
            raise InvocationError(f"{flag} is given twice")
        if grader in advertised_graders:
            raise InvocationError(f"{flag} names a grader of the extension, not a built-in one")
        if grader not in declared:
            raise InvocationError(f"{flag}: the case declares no check with this grader")
        seen.add(grader)
    if replaced and not extension_checks(case_checks, advertised_graders):
        raise InvocationError(
            "--replace-builtin-grader needs the case to declare at least one check "
            "of a grader the extension advertises"
        )
    return tuple(check.id for check in case_checks if check.grader in seen)


def recommended_verdict(recommendation: str) -> Verdict:
    """The task verdict an extension's ``taskVerdictRecommendation`` names."""
    try:
        return RECOMMENDATIONS[recommendation]
    except KeyError:
        raise ExtensionProtocolError(
            f"taskVerdictRecommendation {shown(recommendation)} is not passed, failed "
            "or not_assessed"
        ) from None


def guarded_verdict(
    recommendation: str, *, execution: Execution, grading: Grading, evidence_complete: bool
) -> Verdict:
    """The recommendation only for a trial whose execution and grading completed with complete
    required evidence (Sevro); any other trial is ``not_assessed``, whatever was recommended, as
    under the default policy. An extension can never turn a failed run into a pass."""
    verdict = recommended_verdict(recommendation)
    if (
        execution is not Execution.COMPLETED
        or grading is not Grading.COMPLETED
        or not evidence_complete
    ):
        return Verdict.NOT_ASSESSED
    return verdict
