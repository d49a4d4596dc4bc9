"""``sevro.claude.nested-skills``: the skills child Agent sessions used.

Claude Code runs a child session for each ``Agent`` call; its stream marks the child's events
with the call's ``parent_tool_use_id`` and the child's ``agent_id``, and the private
configuration directory keeps a ``.meta.json`` sidecar per child
(``projects/*/<session>/subagents/agent-<id>.meta.json``) naming the ``toolUseId`` that started
it and whether it ``finished``; a child's own children are not streamed, so their calls come
from their bounded ``agent-<id>.jsonl`` transcripts. A child's calls are its own: they are
never the parent's tool calls, file reads or skill reads. Only skill names, tools and ordinals
are kept (no prompt, no output); the evidence is partial when the stream's graph and the
sidecars disagree or one is missing.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.api import Completeness, JsonValue, MountedSkill, workspace_path
from sevro_hosts_claude.events import AGENT_TOOLS, Child, ToolUse, Turn
from sevro_hosts_claude.limits import (
    MAX_NESTED_AGENTS,
    MAX_SUBAGENT_META_BYTES,
    MAX_SUBAGENT_TRANSCRIPT_BYTES,
)

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
    """(completeness, data): one entry per ``Agent`` call, the session's own and then those
    its children made (``path``: the ordinals from the session's call down to this one), with
    the skills that call's child session used; ``transcripts`` is the private
    ``CLAUDE_CONFIG_DIR/projects``."""
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
        pending = [(call, [call.ordinal]) for call in turn.calls]
        while pending:  # each session's Agent calls, then those of the children they started
            call, path = pending.pop(0)
            if call.name not in AGENT_TOOLS:
                continue
            child = children.get(call.id)
            try:
                if child is None and len(path) > 1 and call.is_error is False:
                    child = transcript_child(transcripts, turn.session_id, call)
                entry, names = _entry(number, call, child, turn, skills, workspace)
                _check_sidecar(transcripts, turn.session_id, child, call)
            except _Partial as exc:
                where = ".".join(map(str, path))
                problem = problem or f"turn {number} Agent call {where}: {exc}"
                continue
            for name in names:
                if name not in used:
                    used.append(name)
            agents.append({**entry, "path": list(path)})
            if child is not None:
                pending += [(c, [*path, c.ordinal]) for c in child.calls]
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
    agent = child.agent_ids[0]
    if not _AGENT_ID.match(agent):
        raise _Partial("an unusable agent id")
    found = [d / f"agent-{agent}.meta.json" for d in _subagent_dirs(transcripts, session)]
    found = [path for path in found if os.path.lexists(path)]
    if len(found) != 1:
        raise _Partial(f"{len(found)} session sidecars for the child")
    meta = json.loads(_bounded(found[0], MAX_SUBAGENT_META_BYTES, "sidecar"))
    if not isinstance(meta, dict):
        raise _Partial("the child's sidecar is not a JSON object")
    if meta.get("toolUseId") != call.id or meta.get("finished") is not True:
        raise _Partial("the child's sidecar names another call or an unfinished session")


def transcript_child(transcripts: Path, session: str, call: ToolUse) -> Child:
    """The child session a child's own ``Agent`` call started, from its transcript: Claude Code
    2.1.332 streams only its parent's direct children, and keeps every child's
    ``agent-<id>.jsonl`` beside the sidecar that names the call. Only tool calls and results
    are taken from it."""
    for directory in _subagent_dirs(transcripts, session):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        sidecars = [n for n in names if n.startswith("agent-") and n.endswith(".meta.json")]
        for name in sidecars[: MAX_NESTED_AGENTS * 4]:
            try:
                meta = json.loads(_bounded(directory / name, MAX_SUBAGENT_META_BYTES, "sidecar"))
            except (_Partial, ValueError):
                continue
            if isinstance(meta, dict) and meta.get("toolUseId") == call.id:
                agent = name.removeprefix("agent-").removesuffix(".meta.json")
                text = _bounded(directory / f"agent-{agent}.jsonl", MAX_SUBAGENT_TRANSCRIPT_BYTES)
                return Child(call.id, (agent,), _transcript_calls(text))
    raise _Partial("no transcript for the child session")


def _transcript_calls(text: bytes) -> tuple[ToolUse, ...]:
    calls: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            raise _Partial("a transcript line is not JSON") from None
        message = row.get("message") if isinstance(row, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                arguments = block.get("input")
                calls[block["id"]] = {
                    "name": str(block.get("name")),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                found = calls[block["tool_use_id"]]
                content_text = block.get("content")
                if isinstance(content_text, list):
                    parts = [b.get("text") for b in content_text if isinstance(b, dict)]
                    content_text = "\n".join(p for p in parts if isinstance(p, str))
                found["result"] = content_text if isinstance(content_text, str) else None
                found["error"] = block.get("is_error", False) is True
    return tuple(
        ToolUse(n, i, c["name"], c["input"], c.get("result"), c.get("error"), None)
        for n, (i, c) in enumerate(calls.items(), start=1)
    )


def _subagent_dirs(transcripts: Path, session: str) -> list[Path]:
    if "/" in session or session in ("", ".", ".."):
        raise _Partial("an unusable session id")
    try:
        projects = sorted(os.listdir(transcripts))[:MAX_NESTED_AGENTS]
    except OSError:
        raise _Partial("no transcripts directory") from None
    return [transcripts / p / session / "subagents" for p in projects]


def _bounded(path: Path, limit: int, what: str = "transcript") -> bytes:
    """A regular file (never through a link) of at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise _Partial(f"the child's {what} is missing, unreadable or a link") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Partial(f"the child's {what} is not a regular file")
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _Partial(f"the child's {what} is over {limit} bytes")
    try:
        json.loads(data) if what == "sidecar" else None
    except (ValueError, RecursionError):
        raise _Partial(f"the child's {what} is not JSON") from None
    return data
