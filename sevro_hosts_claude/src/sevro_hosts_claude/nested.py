"""``sevro.claude.nested-skills``: the skills child Agent sessions used.

Claude Code runs a child session for each ``Agent`` call; its stream marks the child's events
with the call's ``parent_tool_use_id`` and the child's ``agent_id``, and the private
configuration directory keeps a ``.meta.json`` sidecar per child
(``projects/*/<session>/subagents/agent-<id>.meta.json``) naming the ``toolUseId`` that started
it and whether it ``finished``. A child's calls are its own: they are never the parent's tool
calls, file reads or skill reads. Only skill names, tools and ordinals are kept (no prompt,
no output); the evidence is partial when the stream's graph and the sidecars disagree or one
is missing.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from sevro_core.api import Completeness, JsonValue, MountedSkill, workspace_path
from sevro_hosts_claude.events import AGENT_TOOLS, Child, ToolUse, Turn
from sevro_hosts_claude.limits import MAX_NESTED_AGENTS, MAX_SUBAGENT_META_BYTES

NESTED_SKILLS_OBSERVATION = "sevro.claude.nested-skills"
_AGENT_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_AGENT_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


class _Partial(Exception):
    pass


def nested_skills(
    turns: Mapping[int, Turn | None],
    skills: Sequence[MountedSkill],
    workspace: Path,
    transcripts: Path,
) -> tuple[Completeness, dict[str, JsonValue]]:
    """(completeness, data): one entry per ``Agent`` call of the parent sessions, with the
    skills its child session used; ``transcripts`` is the session's directory pattern root
    (the private ``CLAUDE_CONFIG_DIR/projects``)."""
    agents: list[JsonValue] = []
    used: list[JsonValue] = []
    problem: str | None = None
    for number, turn in sorted(turns.items()):
        if turn is None:
            problem = problem or f"turn {number}'s stream did not parse"
            continue
        if not turn.completed:
            problem = problem or f"turn {number} did not complete"
        problem = problem or turn.nested_problem
        children = {child.parent_id: child for child in turn.children}
        for call in turn.calls:
            if call.name not in AGENT_TOOLS:
                continue
            try:
                entry, names = _entry(number, call, children.get(call.id), turn, skills, workspace)
                _check_sidecar(transcripts, turn.session_id, children.get(call.id), call)
            except _Partial as exc:
                problem = problem or f"turn {number} Agent call {call.ordinal}: {exc}"
                continue
            for name in names:
                if name not in used:
                    used.append(name)
            agents.append(entry)
    data: dict[str, JsonValue] = {
        "agents": agents[:MAX_NESTED_AGENTS],
        "skills": used,
        "truncated": len(agents) > MAX_NESTED_AGENTS,
    }
    if problem is not None:
        data["reason"] = problem[:512]
        return Completeness.PARTIAL, data
    return Completeness.COMPLETE, data


def _entry(
    number: int,
    call: ToolUse,
    child: Child | None,
    turn: Turn,
    skills: Sequence[MountedSkill],
    workspace: Path,
) -> tuple[dict[str, JsonValue], list[str]]:
    """The call's entry and the names of the skills its child used."""
    kind = call.input.get("subagent_type", "general-purpose")
    entry: dict[str, JsonValue] = {
        "turn": number,
        "ordinal": call.ordinal,
        "agentType": kind if isinstance(kind, str) and _AGENT_TYPE.match(kind) else None,
        "status": "failed" if call.is_error else "completed",
    }
    if child is None:
        if call.is_error:  # refused before a child started: nothing ran
            return {**entry, "toolCalls": 0, "skills": []}, []
        raise _Partial("no child session in the stream")
    if len(child.agent_ids) != 1:
        raise _Partial(f"{len(child.agent_ids)} agent ids for one child session")
    found = [use for c in child.calls if (use := _skill_use(c, turn, skills, workspace))]
    names = [use[0] for use in found]
    uses: list[JsonValue] = [{"skill": n, "tool": t, "ordinal": o} for n, t, o in found]
    return {**entry, "toolCalls": len(child.calls), "skills": uses}, names


def _skill_use(
    call: ToolUse, turn: Turn, skills: Sequence[MountedSkill], workspace: Path
) -> tuple[str, str, int] | None:
    """A child's successful ``Skill`` call that Claude Code launched for a skill the session
    listed, or its whole ``Read`` of a mounted ``SKILL.md``; anything else is no skill use."""
    if call.is_error is not False:
        return None
    if call.name == "Skill":
        name = call.input.get("skill")
        launched = (call.result_text or "").strip() == f"Launching skill: {name}"
        if isinstance(name, str) and name in turn.skills and launched:
            return name, "Skill", call.ordinal
    if call.name == "Read":
        raw = call.input.get("file_path")
        path = workspace_path(workspace, raw) if isinstance(raw, str) else None
        whole = call.input.get("offset") in (None, 0, 1) and call.input.get("limit") is None
        skill = next((s for s in skills if s.path == path), None)
        if skill is not None and whole and skill.name in turn.skills:
            return skill.name, "Read", call.ordinal
    return None


def _check_sidecar(transcripts: Path, session: str, child: Child | None, call: ToolUse) -> None:
    """The child's ``.meta.json`` exists once, is a small regular file (no link), names the
    ``Agent`` call that started it and says it finished (nothing for a refused call)."""
    if child is None:
        return
    agent, call_id = child.agent_ids[0], call.id
    if not _AGENT_ID.match(agent) or "/" in session or session in (".", ".."):
        raise _Partial("an unusable agent or session id")
    name = f"agent-{agent}.meta.json"
    try:
        projects = sorted(os.listdir(transcripts))[:MAX_NESTED_AGENTS]
    except OSError:
        raise _Partial("no transcripts directory") from None
    found = [
        transcripts / p / session / "subagents" / name
        for p in projects
        if os.path.lexists(transcripts / p / session / "subagents" / name)
    ]
    if len(found) != 1:
        raise _Partial(f"{len(found)} session sidecars for the child")
    try:
        fd = os.open(found[0], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise _Partial("the child's sidecar is unreadable or a link") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Partial("the child's sidecar is not a regular file")
        data = os.read(fd, MAX_SUBAGENT_META_BYTES + 1)
    finally:
        os.close(fd)
    try:
        meta = json.loads(data) if len(data) <= MAX_SUBAGENT_META_BYTES else None
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict):
        raise _Partial("the child's sidecar is not a bounded JSON object")
    if meta.get("toolUseId") != call_id or meta.get("finished") is not True:
        raise _Partial("the child's sidecar names another call or an unfinished session")
