"""Explicit ``$skill`` and ``$plugin:skill`` invocation receipts for the Codex host.

Codex 0.171.0 resolves a ``$name`` mention in a prompt to a skill it knows (a repository skill
in ``.agents/skills/<name>/SKILL.md``, or an installed plugin's skill as ``$plugin:skill``) and
injects that skill's body into the turn as a ``<skill>`` message; its ``exec --json`` stream
carries no event for it. So, as Sevro defines these receipts, a receipt proves verified dispatch:
the named skill exists as a bounded regular file reached through no link (checked before the
first turn, in the workspace or the trial's private plugin cache), the exact token occurs once
across the delivered prompts, and the turn that delivered it completed. It proves no
activation: that is the common skill-activation evidence.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.api import Completeness, JsonValue, Observation
from sevro_hosts_codex.limits import MAX_CODEX_SKILL_FILE_BYTES

REPOSITORY_INVOCATION_OBSERVATION = "sevro.codex.repository-invocation"
EXPLICIT_INVOCATION_OBSERVATION = "sevro.codex.explicit-invocation"
TOKEN_RE = re.compile(r"(?<![\w$])\$([A-Za-z0-9_-]+)(?::([A-Za-z0-9_-]+))?(?![\w:-])")
"""A ``$skill`` or ``$plugin:skill`` mention as Codex reads one."""


@frozen
class Invocation:
    """The first verified explicit mention: its token, names, turn and how often it occurs."""

    token: str
    skill: str
    plugin: str | None
    turn: int
    occurrences: int


def skill_file(root: Path, parts: Sequence[str]) -> bool:
    """``root/<parts>`` is a regular file of at most ``MAX_CODEX_SKILL_FILE_BYTES`` and no part
    of the path below ``root`` is a link."""
    current = root
    for index, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return False
        last = index == len(parts) - 1
        if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)):
            return False
    return os.lstat(current).st_size <= MAX_CODEX_SKILL_FILE_BYTES


def find(
    prompts: Sequence[str], workspace: Path, plugins: Mapping[str, Path] | None
) -> Invocation | None:
    """The first mention naming a verified skill: ``$plugin:skill`` of an installed plugin
    (``plugins`` maps names to installed paths) when ``plugins`` is given, else ``$skill`` of
    the workspace's ``.agents/skills``."""
    for number, prompt in enumerate(prompts, start=1):
        for match in TOKEN_RE.finditer(prompt):
            first, second = match.groups()
            if plugins is None and second is None:
                ok = skill_file(workspace, (".agents", "skills", first, "SKILL.md"))
                plugin, skill = None, first
            elif plugins is not None and second is not None and first in plugins:
                ok = skill_file(plugins[first], ("skills", second, "SKILL.md"))
                plugin, skill = first, second
            else:
                continue
            if ok:
                token = match.group(0)
                count = sum(m.group(0) == token for p in prompts for m in TOKEN_RE.finditer(p))
                return Invocation(token, skill, plugin, number, count)
    return None


def receipt(
    observation: str,
    host: str,
    checked: bool,
    invocation: Invocation | None,
    completed: Mapping[int, bool],
) -> Observation:
    """The receipt: ``{invocation: {token, skill[, plugin], turn, occurrences, dispatched} |
    null}``. ``dispatched`` needs one occurrence and a completed delivering turn. Partial when
    the skill was never checked (set-up failed first) or the delivering turn did not parse."""
    value: JsonValue = None
    complete = checked
    if invocation is not None:
        done = completed.get(invocation.turn)
        complete = complete and done is not None
        entry: dict[str, JsonValue] = {"token": invocation.token, "skill": invocation.skill}
        if invocation.plugin is not None:
            entry["plugin"] = invocation.plugin
        entry.update(
            turn=invocation.turn,
            occurrences=invocation.occurrences,
            dispatched=bool(done) and invocation.occurrences == 1,
        )
        value = entry
    state = Completeness.COMPLETE if complete else Completeness.PARTIAL
    return Observation(observation, host, state, {"invocation": value})
