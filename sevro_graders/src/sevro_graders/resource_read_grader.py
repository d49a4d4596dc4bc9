"""``sevro.resource-read``: a file of a skill, of the workspace, or the arm's context was read in
full, or was not touched at all.

It reads the host's ``sevro.file-reads`` observation (:mod:`sevro_core.hosts.reads` owns what
counts: a *complete* entry is a verified whole-file read, anything else a partial touch). A
skill's files are found through ``sevro.skills`` (the skill's directory); the context is the
instructions file the host's CLI reads (``instructionsFile``), where experiments mount it.

``read`` passes only on a complete read; only partial touches fail it, unless a command whose
paths sevro could not resolve (a glob, a variable) may have been the read: then it is
``unavailable``. ``not-read`` fails on any touch, complete or partial, and is ``unavailable``
when such an unresolved command exists. Missing or partial evidence is ``unavailable``, never a
pass. With a check-level ``turn``, only reads of turns up to it count.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from attrs import frozen

from sevro_core.api import (
    FILE_READS_OBSERVATION,
    SKILLS_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    ConfigurationError,
    GradingError,
    JsonValue,
    TrialView,
    check_relative_path,
)
from sevro_graders.checks import EvidenceGrader, complete_observation, target_skill
from sevro_graders.configuration import check_shape

GRADER_ID = "sevro.resource-read"
READ = "read"
SKILL, WORKSPACE, CONTEXT = "skill", "workspace", "context"


@frozen
class ResourceReadCheck:
    resource: str
    expect: str
    path: str | None
    skill: str | None

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        observation, missing = complete_observation(view, FILE_READS_OBSERVATION, "file-reads")
        if observation is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, missing)
        reads, unresolved, instructions = _parse(observation.data)
        if self.resource == CONTEXT:
            if instructions is None:
                detail = "the host reports no instructions file, so no context"
                return self._outcome(check_id, CheckStatus.UNAVAILABLE, detail)
            targets, label = [instructions], f"context ({instructions})"
        elif self.resource == SKILL:
            found = self._skill_targets(check_id, view)
            if isinstance(found, CheckOutcome):
                return found
            targets, label = found
        else:
            assert self.path is not None
            targets, label = [self.path], self.path
        turn = getattr(view, "turn", None)
        if isinstance(turn, int):
            reads = [r for r in reads if _turn(r) <= turn]
            unresolved = [u for u in unresolved if _turn(u) <= turn]
        touches = [r for r in reads if r["path"] in targets]
        return self._decide(check_id, label, touches, unresolved)

    def _decide(
        self,
        check_id: str,
        label: str,
        touches: Sequence[Mapping[str, JsonValue]],
        unresolved: Sequence[Mapping[str, JsonValue]],
    ) -> CheckOutcome:
        full = [r for r in touches if r["complete"] is True]
        if self.expect == READ:
            if full:
                return self._outcome(check_id, CheckStatus.PASSED)
            if unresolved:
                return self._outcome(
                    check_id,
                    CheckStatus.UNAVAILABLE,
                    f"{label} was not read in full by any command sevro could resolve; "
                    f"{_where(unresolved[0])} named paths sevro cannot resolve",
                )
            suffix = f" ({len(touches)} partial touch(es) only)" if touches else ""
            detail = f"{label} was not read in full{suffix}"
            return self._outcome(check_id, CheckStatus.FAILED, detail)
        if touches:
            first = (full or list(touches))[0]
            how = "read" if full else "touched"
            detail = f"{label} was {how} ({_where(first)}, by {first.get('how', 'a read step')})"
            return self._outcome(check_id, CheckStatus.FAILED, detail)
        if unresolved:
            detail = f"{_where(unresolved[0])} named paths sevro cannot resolve"
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, detail)
        return self._outcome(check_id, CheckStatus.PASSED)

    def _skill_targets(
        self, check_id: str, view: TrialView
    ) -> tuple[list[str], str] | CheckOutcome:
        """The skill's file in each place it is mounted (a skill may be mounted for two CLIs)."""
        observation, missing = complete_observation(view, SKILLS_OBSERVATION, "skills")
        if observation is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, missing)
        offered = observation.data.get("offered")
        if not isinstance(offered, list) or not all(
            isinstance(s, dict)
            and isinstance(s.get("name"), str)
            and isinstance(s.get("path"), str)
            for s in offered
        ):
            raise GradingError("malformed sevro.skills observation")
        places: dict[str, list[str]] = {}
        for entry in offered:
            assert isinstance(entry, dict)
            places.setdefault(str(entry["name"]), []).append(str(entry["path"]))
        name = target_skill(list(places), self.skill, observation.data.get("target"))
        relative = self.path or "SKILL.md"
        targets = [posixpath.join(posixpath.dirname(p), relative) for p in places[name]]
        return targets, f"skill {name!r} file {relative}"

    def _outcome(
        self, check_id: str, status: CheckStatus, detail: str | None = None
    ) -> CheckOutcome:
        refs = (FILE_READS_OBSERVATION, SKILLS_OBSERVATION)
        evidence = refs if self.resource == SKILL else refs[:1]
        return CheckOutcome(check_id, GRADER_ID, status, detail=detail, evidence_refs=evidence)


def _turn(entry: Mapping[str, JsonValue]) -> int:
    turn = entry.get("turn")
    assert isinstance(turn, int)
    return turn


def _where(entry: Mapping[str, JsonValue]) -> str:
    return f"turn {entry.get('turn')}, ordinal {entry.get('ordinal')}"


def _parse(
    data: Mapping[str, JsonValue],
) -> tuple[list[Mapping[str, JsonValue]], list[Mapping[str, JsonValue]], str | None]:
    """Entries, unresolved commands and the instructions file; malformed is a grading error."""
    reads, unresolved = data.get("reads"), data.get("unresolved", [])
    instructions = data.get("instructionsFile")
    if not isinstance(reads, list) or not isinstance(unresolved, list):
        raise GradingError("malformed sevro.file-reads observation")
    entries: list[Mapping[str, JsonValue]] = [r for r in reads if isinstance(r, dict)]
    pending: list[Mapping[str, JsonValue]] = [u for u in unresolved if isinstance(u, dict)]
    valid = (
        len(entries) == len(reads)
        and len(pending) == len(unresolved)
        and all(
            isinstance(r.get("path"), str) and isinstance(r.get("complete"), bool) for r in entries
        )
        and all(isinstance(e.get("turn"), int) for e in [*entries, *pending])
        and (instructions is None or isinstance(instructions, str))
    )
    if not valid:
        raise GradingError("malformed sevro.file-reads observation")
    return entries, pending, instructions if isinstance(instructions, str) else None


class ResourceReadGrader(EvidenceGrader):
    """Plugin facts: stage 10 (host evidence); hosts that report ``sevro.file-reads`` only, so
    a case on another host is refused at planning."""

    id = GRADER_ID
    requires: frozenset[str] = frozenset({FILE_READS_OBSERVATION})

    def compile(self, configuration: Mapping[str, JsonValue]) -> ResourceReadCheck:
        config = check_shape("resource-read.v1", configuration)
        resource, expect = config["resource"], config["expect"]
        path, skill = config.get("path"), config.get("skill")
        assert isinstance(resource, str) and isinstance(expect, str)
        assert (path is None or isinstance(path, str)) and (skill is None or isinstance(skill, str))
        if skill is not None and resource != SKILL:
            raise ConfigurationError(f"'skill' does not apply to resource {resource}", "/skill")
        if resource == CONTEXT and path is not None:
            raise ConfigurationError(
                "the context is the host's instructions file: 'path' does not apply", "/path"
            )
        if resource == WORKSPACE and path is None:
            raise ConfigurationError("resource workspace needs a 'path'", "/path")
        if path is not None:
            path = "/".join(check_relative_path(path, "/path"))
        return ResourceReadCheck(resource=resource, expect=expect, path=path, skill=skill)
