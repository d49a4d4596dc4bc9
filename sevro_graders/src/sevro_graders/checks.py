"""What every output grader shares: its plugin facts and the final-message grading rule.

An output check only ever looks at the final message. A missing or incomplete message makes it
``unavailable`` (it never passes); otherwise the check's assertion decides ``passed`` or
``failed``, and a failure carries a short detail naming what did not hold. All the regex
matching of one check shares one time limit (:func:`sevro_graders.jsregex.match_budget`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sevro_core.api import (
    FINAL_MESSAGE_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    Completeness,
    GradingError,
    JsonValue,
    Observation,
    TrialView,
)
from sevro_graders.jsregex import match_budget

EVIDENCE_REFS = (FINAL_MESSAGE_OBSERVATION,)
MESSAGE_MISSING = "final message unavailable"
MESSAGE_INCOMPLETE = "final message incomplete"

Assertion = Callable[[str], str | None]
"""Assess a complete final message: ``None`` when it holds, else the failure detail."""


class FinalMessageGrader:
    """Plugin facts common to the four output graders (stage 10: graded first)."""

    id: str
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset({FINAL_MESSAGE_OBSERVATION})
    stage = 10


def grade_final_message(
    check_id: str, grader: str, view: TrialView, assertion: Assertion
) -> CheckOutcome:
    """Apply ``assertion`` to the trial's final message, or report it unavailable."""
    detail: str | None
    if view.final_message is None:
        status, detail = CheckStatus.UNAVAILABLE, MESSAGE_MISSING
    elif not view.final_message_complete:
        status, detail = CheckStatus.UNAVAILABLE, MESSAGE_INCOMPLETE
    else:
        with match_budget(check_id):
            failure = assertion(view.final_message)
        status = CheckStatus.PASSED if failure is None else CheckStatus.FAILED
        detail = failure
    return CheckOutcome(
        id=check_id, grader=grader, status=status, detail=detail, evidence_refs=EVIDENCE_REFS
    )


def complete_observation(
    view: TrialView, observation_id: str, label: str
) -> tuple[Observation | None, str]:
    """The host observation an evidence grader reads, only when it is complete; otherwise None
    and the detail of the ``unavailable`` outcome (``<label> observation partial``): missing or
    partial evidence never decides a check."""
    observation = view.observations.get(observation_id)
    if observation is None or observation.completeness is not Completeness.COMPLETE:
        state = "unavailable" if observation is None else observation.completeness.value
        return None, f"{label} observation {state}"
    return observation, ""


def target_skill(offered: Sequence[str], named: str | None, stamped: JsonValue) -> str:
    """The skill a skill check is about: the one it names, else the experiment arm's target
    (stamped in ``sevro.skills``), else the one skill the workspace offers. A grading error
    when that skill was not offered or there is no single candidate: never a guess."""
    name = named if named is not None else stamped if isinstance(stamped, str) else None
    listed = ", ".join(offered) or "none"
    if name is None:
        if len(offered) != 1:
            raise GradingError(
                f"no target skill: the workspace offers {len(offered)} skills ({listed}); "
                "name one with 'skill'"
            )
        return offered[0]
    if name not in offered:
        which = "skill" if named is not None else "target skill"
        raise GradingError(f"{which} {name!r} was not offered (offered: {listed})")
    return name


class EvidenceGrader:
    """Plugin facts common to the graders of host evidence: stage 10 (graded first, like the
    output graders), no capability of their own; each names in ``requires`` the observation it
    reads, so a case on a host that cannot produce it is refused at planning."""

    id: str
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str]
    stage = 10
