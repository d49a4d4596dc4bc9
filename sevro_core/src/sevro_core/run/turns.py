"""What each settled turn left behind, so a check can grade a past turn.

Hosts call :meth:`TurnRecorder.settle` when a turn settled, before the next one starts. The
recorder keeps every turn's reply and, for the turns some check grades (other than the last,
which the live workspace already shows), a bounded copy of the workspace and its digest. A
check with ``turn: N`` is then graded on a view of the trial as it stood after turn N; when
that turn never settled or its copy is partial the check is ``unavailable``, never graded on
the final state in its place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from attrs import evolve, frozen

from sevro_core.fixtures.changes import Snapshot, changes, snapshot
from sevro_core.fixtures.snapshots import copy_workspace
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_FINAL_MESSAGE_BYTES, MAX_TURN_REPLY_KEPT_CHARS
from sevro_core.models import HostResult, Observation, TrialView
from sevro_core.states import Completeness
from sevro_core.vocabulary import (
    FILES_CHANGED_OBSERVATION,
    FINAL_MESSAGE_OBSERVATION,
    SKILL_ACTIVATIONS_OBSERVATION,
    SKILLS_OBSERVATION,
    TURNS_OBSERVATION,
)

ENGINE_SOURCE = "sevro.engine"


@frozen
class SettledTurn:
    number: int
    reply: str | None
    workspace: Path | None
    """The copy of the workspace after this turn; None when no check grades this turn."""
    digest: Snapshot | None
    complete: bool
    """Whether the copy (and its digest) holds the whole workspace."""


class TurnRecorder:
    """Collects each settled turn's reply and, where a check needs it, its workspace."""

    def __init__(self, turns: int, graded: frozenset[int], workspace: Path, private: Path):
        self.turns = turns
        self.graded = frozenset(t for t in graded if t < turns)
        self.workspace = workspace
        self.private = private
        self.before: Snapshot | None = None
        self.settled: dict[int, SettledTurn] = {}

    def begin(self) -> None:
        """Digest the workspace as the host gets it (what a turn's changed files start from)."""
        if self.graded:
            self.before = snapshot(self.workspace)

    def settle(self, number: int, reply: str | None) -> None:
        """A turn settled; a host that reports a turn twice or out of range is ignored."""
        if number in self.settled or not 1 <= number <= self.turns:
            return
        if reply is not None and len(reply.encode("utf-8", "surrogatepass")) > (
            MAX_FINAL_MESSAGE_BYTES
        ):
            reply = None  # an oversized reply is no reply a check may grade
        if number not in self.graded:
            self.settled[number] = SettledTurn(number, reply, None, None, False)
            return
        target = self.private / f"turn-{number}"
        complete = copy_workspace(self.workspace, target)
        digest = snapshot(target)
        complete = complete and digest.complete
        self.settled[number] = SettledTurn(number, reply, target, digest, complete)

    def observation(self) -> Observation:
        """``sevro.observation.turns``: every settled turn's reply (bounded) and its copy."""
        entries: list[JsonValue] = []
        for number in sorted(self.settled):
            turn = self.settled[number]
            entry: dict[str, JsonValue] = {"turn": number, "reply": None}
            if turn.reply is not None:
                data = turn.reply.encode("utf-8", "surrogatepass")
                entry.update(
                    reply=turn.reply[:MAX_TURN_REPLY_KEPT_CHARS],
                    replyTruncated=len(turn.reply) > MAX_TURN_REPLY_KEPT_CHARS,
                    replySha256=hashlib.sha256(data).hexdigest(),
                    replyByteLength=len(data),
                )
            if turn.workspace is not None:
                entry["workspace"] = "complete" if turn.complete else "partial"
            entries.append(entry)
        return Observation(
            TURNS_OBSERVATION, ENGINE_SOURCE, Completeness.COMPLETE, {"turns": entries}
        )

    def view(self, final: TrialView, result: HostResult, number: int) -> TrialView | str:
        """The trial as it stood after turn ``number``, or why that cannot be shown."""
        if number == self.turns:
            return evolve(final, turn=number)  # the last turn's state is the final state
        turn = self.settled.get(number)
        if turn is None:
            return f"turn {number} never settled (the host completed {result.turns_completed})"
        if turn.workspace is None or turn.digest is None or self.before is None:
            return f"turn {number}'s workspace was not kept"
        if not (turn.complete and self.before.complete):
            return f"turn {number}'s workspace snapshot is partial (beyond its bounds)"
        observations = {o.id: _up_to(o, number) for o in result.observations}
        observations[FINAL_MESSAGE_OBSERVATION] = _reply_observation(turn.reply)
        if FILES_CHANGED_OBSERVATION in observations:
            changed = observations[FILES_CHANGED_OBSERVATION]
            observations[FILES_CHANGED_OBSERVATION] = evolve(
                changed, data=changes(self.before, turn.digest)
            )
        return evolve(
            final,
            workspace=turn.workspace,
            final_message=turn.reply,
            final_message_complete=turn.reply is not None,
            observations=observations,
            isolation=None,  # commands would run in the live workspace, not this turn's
            turn=number,
        )


def _reply_observation(reply: str | None) -> Observation:
    if reply is None:
        return Observation(FINAL_MESSAGE_OBSERVATION, ENGINE_SOURCE, Completeness.UNAVAILABLE, {})
    data = reply.encode("utf-8", "surrogatepass")
    return Observation(
        FINAL_MESSAGE_OBSERVATION,
        ENGINE_SOURCE,
        Completeness.COMPLETE,
        {"sha256": hashlib.sha256(data).hexdigest(), "byteLength": len(data)},
    )


def _up_to(observation: Observation, number: int) -> Observation:
    """The observation without entries of turns after ``number``.

    Every list of turn-stamped entries (commands, reads, tool calls, a host's turn summaries)
    is cut; ``sevro.skills``' list of skills read is recounted from its cut reads, and
    ``sevro.host.skill-activations``' list of skills activated from its cut activations.
    """
    data: dict[str, JsonValue] = {}
    for key, value in observation.data.items():
        data[key] = _entries_up_to(value, number) if _turn_stamped(value) else value
    if observation.id == SKILLS_OBSERVATION and isinstance(data.get("reads"), list):
        data["read"] = _names(data["reads"], "read")
    if observation.id == SKILL_ACTIVATIONS_OBSERVATION and "activations" in data:
        data["activated"] = _names(data["activations"], None)
    return evolve(observation, data=data)


def _names(entries: JsonValue, status: str | None) -> list[JsonValue]:
    """The skills the (cut) entries name, in order; only entries of ``status`` when given."""
    names: list[JsonValue] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or (status and entry.get("status") != status):
            continue
        if entry.get("skill") not in names:
            names.append(entry.get("skill"))
    return names


def _turn_stamped(value: JsonValue) -> bool:
    return isinstance(value, list) and all(
        isinstance(e, Mapping) and isinstance(e.get("turn"), int) for e in value
    )


def _entries_up_to(value: JsonValue, number: int) -> list[JsonValue]:
    assert isinstance(value, list)
    kept: list[JsonValue] = []
    for entry in value:
        assert isinstance(entry, Mapping)
        turn = entry["turn"]
        if isinstance(turn, int) and turn <= number:
            kept.append(entry)
    return kept
