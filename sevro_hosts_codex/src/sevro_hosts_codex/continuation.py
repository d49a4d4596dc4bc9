"""``sevro.codex.continuation``: what held when a later prompt resumed the trial's thread.

Before each resumed turn (``codex exec resume <thread>``) the host records the thread it
resumes, the last validated native-session ordinal before that prompt (later native calls have
larger ordinals, so an extension can tell which turn made them without reading arguments) and
two workspace comparisons (every file but ``.git``, by content): ``unchangedSincePreviousPrompt``
(the turn before left the workspace as it found it; for the second prompt this is Sevro's
``preFollowUpWorktreeUnchanged``) and ``workspaceUnchanged`` (nothing changed it between the end
of the turn before and this prompt, as the Claude host's receipt says). No file name, content,
prompt or session text is kept. A fingerprint beyond the workspace scan bounds, or
a missing or malformed session, leaves its value ``null`` and the observation ``partial``.
"""

from __future__ import annotations

from pathlib import Path

from sevro_core.api import Completeness, JsonValue, Snapshot, snapshot
from sevro_hosts_codex.sessions import read_session

CONTINUATION_OBSERVATION = "sevro.codex.continuation"


class ContinuationRecorder:
    """Fingerprints taken before each prompt of a multi-prompt trial, and the boundaries."""

    def __init__(self, workspace: Path, codex_home: Path) -> None:
        self.workspace = workspace
        self.codex_home = codex_home
        self.previous: Snapshot | None = None
        self.ended: Snapshot | None = None
        self.boundaries: list[dict[str, JsonValue]] = []

    def first_prompt(self) -> None:
        """Fingerprint the workspace as the first prompt is delivered."""
        self.previous = snapshot(self.workspace)

    def turn_ended(self) -> None:
        """Fingerprint the workspace as a turn's process has ended."""
        self.ended = snapshot(self.workspace)

    def resumed_prompt(self, number: int, thread_id: str | None) -> None:
        """Record the boundary before prompt ``number`` resumes ``thread_id``."""
        current = snapshot(self.workspace)
        previous, self.previous = self.previous, current
        ended, self.ended = self.ended, None
        ordinal = read_session(self.codex_home, thread_id).last_ordinal if thread_id else None
        self.boundaries.append(
            {
                "turn": number,
                "threadId": thread_id,
                "nativeAfterOrdinal": ordinal,
                "unchangedSincePreviousPrompt": _same(previous, current),
                "workspaceUnchanged": _same(ended, current),
            }
        )

    def observation(self) -> tuple[Completeness, JsonValue]:
        """The completeness and data: the second prompt's boundary at the top (Sevro's
        fields), every resumed prompt's in ``boundaries``; ``unavailable`` when no later
        prompt was reached."""
        if not self.boundaries:
            data: dict[str, JsonValue] = {
                "method": "same_thread_resume",
                "threadId": None,
                "nativeAfterOrdinal": None,
                "preFollowUpWorktreeUnchanged": None,
                "boundaries": [],
            }
            return Completeness.UNAVAILABLE, data
        first = self.boundaries[0]
        whole = all(
            b["threadId"] is not None
            and b["nativeAfterOrdinal"] is not None
            and b["unchangedSincePreviousPrompt"] is not None
            and b["workspaceUnchanged"] is not None
            for b in self.boundaries
        )
        data = {
            "method": "same_thread_resume",
            "threadId": first["threadId"],
            "nativeAfterOrdinal": first["nativeAfterOrdinal"],
            "preFollowUpWorktreeUnchanged": first["unchangedSincePreviousPrompt"],
            "boundaries": list(self.boundaries),
        }
        return (Completeness.COMPLETE if whole else Completeness.PARTIAL), data


def _same(before: Snapshot | None, after: Snapshot) -> bool | None:
    """Whether two fingerprints match; None when either is missing or incomplete."""
    if before is None or not before.complete or not after.complete:
        return None
    return before.entries == after.entries
