"""``sevro.changed-paths``: the trial changed exactly, at least, or none of the globbed paths.

It reads the host's ``sevro.files-changed`` observation: workspace-relative POSIX paths that were
added, modified or deleted, from digests of the whole workspace before and after the trial
(``.git`` skipped), so it is complete on every fixture kind (inline files, generated and
repository Git fixtures) and sees changes made by any tool, not only edits the CLI reported.
A scan a bound stopped is ``partial``: the grade is then ``unavailable``, never a pass, because
an unlisted path could be the one that matters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import frozen

from sevro_core.api import (
    FILES_CHANGED_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    ConfigurationError,
    GradingError,
    JsonValue,
    TrialView,
)
from sevro_graders.checks import EvidenceGrader, complete_observation
from sevro_graders.configuration import check_shape
from sevro_graders.path_glob import Glob, compile_glob

GRADER_ID = "sevro.changed-paths"
EVIDENCE_REFS = (FILES_CHANGED_OBSERVATION,)
MAX_LISTED = 5
"""Paths named in a failure detail, so a detail stays one readable line."""


@frozen
class ChangedPathsCheck:
    equal: tuple[Glob, ...] | None
    include: tuple[Glob, ...]
    exclude: tuple[Glob, ...]

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        observation, missing = complete_observation(
            view, FILES_CHANGED_OBSERVATION, "files-changed"
        )
        if observation is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, missing)
        paths = _paths(observation.data)
        problems: list[str] = []
        if self.equal is not None:
            extra = [p for p in paths if not any(g.matches(p) for g in self.equal)]
            if extra:
                problems.append(f"changed outside 'equal': {_listed(extra)}")
            problems += _unmatched("equal", self.equal, paths)
        problems += _unmatched("include", self.include, paths)
        hit = [p for p in paths if any(g.matches(p) for g in self.exclude)]
        if hit:
            problems.append(f"changed an excluded path: {_listed(hit)}")
        if problems:
            return self._outcome(check_id, CheckStatus.FAILED, "; ".join(problems))
        return self._outcome(check_id, CheckStatus.PASSED)

    def _outcome(
        self, check_id: str, status: CheckStatus, detail: str | None = None
    ) -> CheckOutcome:
        return CheckOutcome(check_id, GRADER_ID, status, detail=detail, evidence_refs=EVIDENCE_REFS)


def _unmatched(key: str, globs: Sequence[Glob], paths: Sequence[str]) -> list[str]:
    missing = [g.source for g in globs if not any(g.matches(p) for p in paths)]
    return [f"no changed path matches '{key}' glob(s) {_listed(missing)}"] if missing else []


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def _paths(data: Mapping[str, JsonValue]) -> list[str]:
    """The changed paths; a malformed document is a grading error, never a pass."""
    changes = data.get("changes")
    if not isinstance(changes, list) or not all(
        isinstance(c, dict) and isinstance(c.get("path"), str) for c in changes
    ):
        raise GradingError("malformed sevro.files-changed observation")
    return [str(c["path"]) for c in changes if isinstance(c, dict)]


class ChangedPathsGrader(EvidenceGrader):
    """Plugin facts: stage 10 (host evidence); hosts that report ``sevro.files-changed`` only."""

    id = GRADER_ID
    requires: frozenset[str] = frozenset({FILES_CHANGED_OBSERVATION})

    def compile(self, configuration: Mapping[str, JsonValue]) -> ChangedPathsCheck:
        config = check_shape("changed-paths.v1", configuration)
        equal = _globs(config, "equal") if "equal" in config else None
        return ChangedPathsCheck(equal, _globs(config, "include"), _globs(config, "exclude"))


def _globs(config: Mapping[str, JsonValue], key: str) -> tuple[Glob, ...]:
    """The globs under ``key``, by ``sevro.path``'s rules and matcher (linear in the path, so no
    path an agent chose can make matching slow); a bad one is refused at its own pointer."""
    sources = config.get(key) or []
    assert isinstance(sources, list)
    globs = []
    for index, source in enumerate(sources):
        try:
            globs.append(compile_glob({key: source}, key))
        except ConfigurationError as exc:
            raise ConfigurationError(exc.message, f"/{key}/{index}") from None
    return tuple(globs)
