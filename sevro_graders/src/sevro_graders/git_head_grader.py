"""``sevro.git-head``: the Git fixture's HEAD changed, stayed, or still descends from the base.

The base HEAD is recorded by the fixture before the host's first turn and held in the engine's
memory, so a candidate cannot rewrite what "base" means; after the host the fixture reports
``sevro.observation.git-head`` ``{baseRevision, currentRevision, baseAncestor}``
(:mod:`sevro_core.fixtures.probe`) and this grader only compares. Git state the fixture could not
read is a grading error; the grader needs a fixture that provides ``sevro.fixture.git``, so a
case pairing it with any other fixture is refused at load time.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import (
    GIT_CAPABILITY,
    GIT_HEAD_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    Completeness,
    GradingError,
    JsonValue,
    TrialView,
)
from sevro_graders.configuration import check_shape

GRADER_ID = "sevro.git-head"
EVIDENCE_REFS = (GIT_HEAD_OBSERVATION,)
_FAILURES = {
    "changed": "HEAD is still the base commit",
    "unchanged": "HEAD moved away from the base commit",
    "base-ancestor": "the base commit is not an ancestor of HEAD",
}


@frozen
class GitHeadCheck:
    kind: str

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        observation = view.observations.get(GIT_HEAD_OBSERVATION)
        if observation is None:
            return CheckOutcome(
                check_id,
                GRADER_ID,
                CheckStatus.UNAVAILABLE,
                detail="git-head observation unavailable",
                evidence_refs=EVIDENCE_REFS,
            )
        data = observation.data
        if observation.completeness is not Completeness.COMPLETE:
            raise GradingError(str(data.get("error") or "git state unreadable"))
        held = self.holds(data)
        return CheckOutcome(
            check_id,
            GRADER_ID,
            CheckStatus.PASSED if held else CheckStatus.FAILED,
            detail=None if held else _FAILURES[self.kind],
            evidence_refs=EVIDENCE_REFS,
        )

    def holds(self, data: Mapping[str, JsonValue]) -> bool:
        base, current = data.get("baseRevision"), data.get("currentRevision")
        if self.kind == "changed":
            return current != base
        if self.kind == "unchanged":
            return current == base
        return data.get("baseAncestor") is True


class GitHeadGrader:
    """Plugin facts: stage 30 (after output and shell checks), Git fixtures only."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset({GIT_CAPABILITY})
    stage = 30

    def compile(self, configuration: Mapping[str, JsonValue]) -> GitHeadCheck:
        config = check_shape("git-head.v1", configuration)
        kind = config["kind"]
        assert isinstance(kind, str)
        return GitHeadCheck(kind=kind)
