"""Where each of a turn's commands ran, from the passive hook's records.

Codex's ``--json`` stream reports a command as ``/bin/bash -c '<cmd>'`` and not the
``workdir`` the model gave ``exec_command``, so ``cat .agents/skills/x/SKILL.md`` run in ``sub``
reads ``sub/.agents/skills/x/SKILL.md``, not the prepared skill. The hook input of the same call
carries the command as the model wrote it and its absolute ``cwd``. A command's directory is
taken from the one hook record of its turn with the same command text; when there is none, the
log is unavailable, or records with that text disagree about the directory, it is unknown
(``None``), so a relative path in it is unresolved rather than guessed to be the workspace's.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from sevro_core.api import HookLog, workspace_path

_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


def model_command(streamed: str) -> str:
    """The command as the model wrote it: Codex's ``<shell> -c|-lc '<cmd>'`` wrapper removed."""
    try:
        words = shlex.split(streamed)
    except ValueError:
        return streamed
    if len(words) == 3 and os.path.basename(words[0]) in _SHELLS and words[1] in ("-c", "-lc"):
        return words[2]
    return streamed


def command_workdirs(
    log: HookLog | None, turn: int, commands: Iterable[tuple[int, str]], workspace: Path
) -> Mapping[int, str | None]:
    """Each command's workspace-relative directory by ordinal (``None`` when unknown or
    outside the workspace), pairing ``(ordinal, streamed command)`` with the turn's records."""
    if log is None or log.problem is not None:
        return {ordinal: None for ordinal, _ in commands}
    pending = [r for r in log.records if r.turn == turn and r.tool == "Bash"]
    found: dict[int, str | None] = {}
    for ordinal, streamed in commands:
        text = model_command(streamed)
        same = [r for r in pending if r.target == text]
        found[ordinal] = None
        if not same:
            continue
        pending.remove(same[0])
        if len({r.cwd for r in same}) == 1 and same[0].cwd is not None:
            found[ordinal] = workspace_path(workspace, same[0].cwd)
    return found
