"""``sevro.skill-activation``: the target skill was read in full, or was not touched at all.

It reads the host's ``sevro.skills`` observation, whose reads every host derives by one
calibrated rule (:mod:`sevro_core.hosts.reads`; docs/expectations.md, "What counts as a read"):
a completed command or tool call whose output holds the whole file is ``read``; any other touch
is ``partial``. Evidence that is missing or partial is ``unavailable``, never a pass; a touch
sevro cannot classify as a full read makes ``not-read`` unavailable too, because it may have
been one, unless the observation says complete hook evidence settled it (``hookEvidence``: a
host's passive hooks saw every tool call's returned content; docs/expectations.md, "Skill
activation from passive hooks"). Without ``skill`` the check is about the target: the
experiment arm's (stamped in the observation), else the one skill the workspace offers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import frozen

from sevro_core.api import (
    SKILLS_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    ConfigurationError,
    GradingError,
    JsonValue,
    TrialView,
)
from sevro_graders.checks import EvidenceGrader, complete_observation, target_skill
from sevro_graders.configuration import check_shape

GRADER_ID = "sevro.skill-activation"
EVIDENCE_REFS = (SKILLS_OBSERVATION,)
READ = "read"
NOT_READ = "not-read"
READ_BY_TURN = "read-by-turn"
NOT_BEFORE_TURN = "not-before-turn"
READ_ON_TURN = "read-on-turn"
TURN_SCOPED = (READ_BY_TURN, NOT_BEFORE_TURN, READ_ON_TURN)


@frozen
class SkillActivationCheck:
    expect: str
    skill: str | None
    """None: the case's target skill, the only one the workspace offers."""
    turn: int | None = None
    """The turn a turn-scoped expectation refers to."""

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        observation, missing = complete_observation(view, SKILLS_OBSERVATION, "skills")
        if observation is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, missing)
        offered, reads, read = _parse(observation.data)
        name = self._target(offered, observation.data.get("target"))
        touches = [r for r in reads if r.get("skill") == name]
        if observation.data.get("hookEvidence") is True:
            # The host's passive hooks saw what every tool call returned and found no other
            # activation: a partial touch is settled as not a read, never a possible one.
            touches = [r for r in touches if r.get("status") == READ]
        if self.expect in TURN_SCOPED:
            return self._grade_by_turn(check_id, name, touches)
        if self.expect == READ:
            if name in read:
                return self._outcome(check_id, CheckStatus.PASSED)
            partial = len(touches)
            suffix = f" ({partial} partial touch(es) only)" if partial else ""
            return self._outcome(
                check_id, CheckStatus.FAILED, f"skill {name!r} was not read in full{suffix}"
            )
        if name in read:
            first = next((r for r in touches if r.get("status") == READ), {})
            where = f"turn {first.get('turn')}, ordinal {first.get('ordinal')}"
            return self._outcome(check_id, CheckStatus.FAILED, f"skill {name!r} was read ({where})")
        if touches:
            first = touches[0]
            return self._outcome(
                check_id,
                CheckStatus.UNAVAILABLE,
                f"skill {name!r} was touched by a command sevro cannot classify as a full read "
                f"or not (turn {first.get('turn')}, ordinal {first.get('ordinal')})",
            )
        return self._outcome(check_id, CheckStatus.PASSED)

    def _grade_by_turn(
        self, check_id: str, name: str, touches: Sequence[Mapping[str, JsonValue]]
    ) -> CheckOutcome:
        """Turn-scoped expectations, from the ``turn`` every read entry carries.

        ``read-on-turn N`` is skill-eval's ``on-turn``: the first full read happened on turn N
        (a full read on N, and nothing before N that was or may have been one)."""
        assert self.turn is not None
        if not all(isinstance(r.get("turn"), int) for r in touches):
            raise GradingError("malformed sevro.skills observation")
        turn = self.turn
        full = [r for r in touches if r.get("status") == READ]
        if self.expect == READ_BY_TURN:
            if any(_turn(r) <= turn for r in full):
                return self._outcome(check_id, CheckStatus.PASSED)
            later = min((_turn(r) for r in full), default=None)
            suffix = f" (first read on turn {later})" if later is not None else ""
            return self._outcome(
                check_id,
                CheckStatus.FAILED,
                f"skill {name!r} was not read in full by turn {turn}{suffix}",
            )
        if self.expect == READ_ON_TURN and not any(_turn(r) == turn for r in full):
            first_turn = min((_turn(r) for r in full), default=None)
            suffix = f" (first read on turn {first_turn})" if first_turn is not None else ""
            return self._outcome(
                check_id,
                CheckStatus.FAILED,
                f"skill {name!r} was not read in full on turn {turn}{suffix}",
            )
        early = [r for r in touches if _turn(r) < turn]
        early_read = [r for r in early if r.get("status") == READ]
        if early_read:
            first = early_read[0]
            where = f"turn {first.get('turn')}, ordinal {first.get('ordinal')}"
            return self._outcome(
                check_id,
                CheckStatus.FAILED,
                f"skill {name!r} was read before turn {turn} ({where})",
            )
        if early:
            first = early[0]
            return self._outcome(
                check_id,
                CheckStatus.UNAVAILABLE,
                f"skill {name!r} was touched before turn {turn} by a command sevro cannot "
                f"classify as a full read or not (turn {first.get('turn')}, "
                f"ordinal {first.get('ordinal')})",
            )
        return self._outcome(check_id, CheckStatus.PASSED)

    def _target(self, offered: Sequence[str], stamped: JsonValue) -> str:
        return target_skill(offered, self.skill, stamped)

    def _outcome(
        self, check_id: str, status: CheckStatus, detail: str | None = None
    ) -> CheckOutcome:
        return CheckOutcome(check_id, GRADER_ID, status, detail=detail, evidence_refs=EVIDENCE_REFS)


def _turn(entry: Mapping[str, JsonValue]) -> int:
    turn = entry.get("turn")
    assert isinstance(turn, int)
    return turn


def _parse(
    data: Mapping[str, JsonValue],
) -> tuple[list[str], list[Mapping[str, JsonValue]], list[str]]:
    """The observation's three lists; a malformed document is a grading error, never a pass."""
    offered, reads, read = data.get("offered"), data.get("reads"), data.get("read")
    if not (isinstance(offered, list) and isinstance(reads, list) and isinstance(read, list)):
        raise GradingError("malformed sevro.skills observation")
    names = [s.get("name") for s in offered if isinstance(s, dict)]
    entries: list[Mapping[str, JsonValue]] = [r for r in reads if isinstance(r, dict)]
    if (
        len(names) != len(offered)
        or len(entries) != len(reads)
        or not all(isinstance(n, str) for n in [*names, *read])
    ):
        raise GradingError("malformed sevro.skills observation")
    # A skill mounted for several hosts (.agents/skills and .claude/skills) is one skill.
    return list(dict.fromkeys(str(n) for n in names)), entries, [str(n) for n in read]


class SkillActivationGrader(EvidenceGrader):
    """Plugin facts: stage 10 (host evidence, like the output graders); hosts that report
    ``sevro.skills`` only, so a case on another host is refused at planning."""

    id = GRADER_ID
    requires: frozenset[str] = frozenset({SKILLS_OBSERVATION})

    def compile(self, configuration: Mapping[str, JsonValue]) -> SkillActivationCheck:
        config = check_shape("skill-activation.v1", configuration)
        expect, skill, turn = config["expect"], config.get("skill"), config.get("turn")
        assert isinstance(expect, str) and (skill is None or isinstance(skill, str))
        assert turn is None or isinstance(turn, int)
        if expect in TURN_SCOPED and turn is None:
            raise ConfigurationError(f"expect {expect} needs a 'turn'", "/turn")
        if expect not in TURN_SCOPED and turn is not None:
            raise ConfigurationError(f"'turn' does not apply to expect {expect}", "/turn")
        return SkillActivationCheck(expect=expect, skill=skill, turn=turn)
