"""Child Agent sessions in a Claude Code stream and the sidecars that confirm them: the shapes
Claude Code 2.1.332 writes (``parent_tool_use_id`` and ``agent_id`` on a child's events;
``projects/*/<session>/subagents/agent-<id>.meta.json``), each way the graph can disagree
leaving ``sevro.claude.nested-skills`` partial. The real-CLI controls are in
``test_nested_skills_real_cli.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import Completeness, MountedSkill
from sevro_hosts_claude.events import Turn, parse_turn
from sevro_hosts_claude.limits import MAX_SUBAGENT_META_BYTES
from sevro_hosts_claude.nested import nested_skills
from tests.hosts_claude.test_events import SID, result, stream

AGENT_ID = "ab457e423e28a1370"
SKILL = ".claude/skills/greet/SKILL.md"
INIT = {"type": "system", "subtype": "init", "session_id": SID, "tools": [], "skills": ["greet"]}


def _event(kind: str, content: list[Any], parent: str | None, **extra: Any) -> dict[str, Any]:
    message = {"content": content}
    return {
        "type": kind,
        "session_id": SID,
        "parent_tool_use_id": parent,
        "message": message,
        **extra,
    }


def _call(call_id: str, name: str, args: dict[str, Any], parent: str | None = None) -> Any:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": args}
    return _event("assistant", [block], parent, **({"agent_id": AGENT_ID} if parent else {}))


def _result(call_id: str, text: str, parent: str | None = None, error: bool = False) -> Any:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}
    return _event("user", [block], parent, **({"agent_id": AGENT_ID} if parent else {}))


def _turn(*children: Any, agent_error: bool = False) -> Turn:
    events = [
        INIT,
        _call("a1", "Agent", {"description": "d", "prompt": "p", "subagent_type": "Explore"}),
        *children,
        _result("a1", "report", error=agent_error),
        result(),
    ]
    return parse_turn(stream(*events))


SKILL_CALLS = (
    _call("c1", "Skill", {"skill": "greet"}, "a1"),
    _result("c1", "Launching skill: greet", "a1"),
    _call("c2", "Read", {"file_path": SKILL}, "a1"),
    _result("c2", "1\t---", "a1"),
)


def _sidecar(root: Path, **meta: Any) -> Path:
    directory = root / "projects" / "-ws" / SID / "subagents"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"agent-{AGENT_ID}.meta.json"
    path.write_text(json.dumps({"toolUseId": "a1", "finished": True, **meta}))
    return path


def _nested(turn: Turn, root: Path) -> tuple[Completeness, dict[str, Any]]:
    skills = [MountedSkill("greet", SKILL, None, None, "---\nname: greet\n---\nbody\n")]
    return nested_skills({1: turn}, skills, root / "ws", root / "projects")


def test_a_childs_calls_are_its_own_and_its_skills_are_nested(tmp_path: Path) -> None:
    turn = _turn(*SKILL_CALLS)
    assert [c.name for c in turn.calls] == ["Agent"]  # none of the child's calls
    (child,) = turn.children
    assert (child.parent_id, child.agent_ids) == ("a1", (AGENT_ID,))
    assert [(c.ordinal, c.name, c.result_text) for c in child.calls] == [
        (1, "Skill", "Launching skill: greet"),
        (2, "Read", "1\t---"),
    ]
    _sidecar(tmp_path)
    state, data = _nested(turn, tmp_path)
    assert state == Completeness.COMPLETE, data
    (agent,) = data["agents"]
    assert agent["agentType"] == "Explore" and agent["skills"] == [
        {"skill": "greet", "tool": "Skill", "ordinal": 1},
        {"skill": "greet", "tool": "Read", "ordinal": 2},
    ]
    assert data["skills"] == ["greet"]


def test_failed_unlisted_and_partial_uses_are_no_skill_use(tmp_path: Path) -> None:
    turn = _turn(
        _call("c1", "Skill", {"skill": "other"}, "a1"),
        _result("c1", "Launching skill: other", "a1"),
        _call("c2", "Skill", {"skill": "greet"}, "a1"),
        _result("c2", "Unknown skill", "a1", error=True),
        _call("c3", "Read", {"file_path": SKILL, "limit": 2}, "a1"),
        _result("c3", "1\t---", "a1"),
    )
    _sidecar(tmp_path)
    state, data = _nested(turn, tmp_path)
    assert state == Completeness.COMPLETE
    assert data["agents"][0]["toolCalls"] == 3 and data["skills"] == []


def test_a_refused_agent_call_without_a_child_is_complete(tmp_path: Path) -> None:
    state, data = _nested(_turn(agent_error=True), tmp_path)
    assert state == Completeness.COMPLETE
    assert data["agents"][0]["status"] == "failed" and data["agents"][0]["toolCalls"] == 0


@pytest.mark.parametrize(
    "broken",
    ["missing", "another call", "unfinished", "link", "oversized", "not json", "no child"],
)
def test_an_inconsistent_graph_is_partial(tmp_path: Path, broken: str) -> None:
    turn = _turn() if broken == "no child" else _turn(*SKILL_CALLS)
    if broken == "another call":
        _sidecar(tmp_path, toolUseId="a2")
    elif broken == "unfinished":
        _sidecar(tmp_path, finished=False)
    elif broken == "link":
        path = _sidecar(tmp_path)
        target = tmp_path / "elsewhere.json"
        path.rename(target)
        path.symlink_to(target)
    elif broken == "oversized":
        _sidecar(tmp_path, pad="x" * MAX_SUBAGENT_META_BYTES)
    elif broken == "not json":
        _sidecar(tmp_path).write_text("{")
    elif broken == "no child":
        _sidecar(tmp_path)
    state, data = _nested(turn, tmp_path)
    assert state == Completeness.PARTIAL and data["reason"], data
    assert data["agents"] == []


def test_child_events_under_no_agent_call_make_the_graph_partial(tmp_path: Path) -> None:
    turn = _turn(_call("c1", "Read", {"file_path": SKILL}, "nowhere"))
    assert turn.nested_problem is not None and not turn.children
    _sidecar(tmp_path)
    state, data = _nested(turn, tmp_path)
    assert state == Completeness.PARTIAL and "no Agent call" in data["reason"]


def test_two_agent_ids_for_one_child_and_an_unparsed_turn_are_partial(tmp_path: Path) -> None:
    other = {**_call("c3", "Read", {"file_path": "x"}, "a1"), "agent_id": "a0000000000000000"}
    _sidecar(tmp_path)
    state, data = _nested(_turn(*SKILL_CALLS, other), tmp_path)
    assert state == Completeness.PARTIAL and "2 agent ids" in data["reason"]
    skills = [MountedSkill("greet", SKILL, None, None, "body\n")]
    state, data = nested_skills({1: None}, skills, tmp_path, tmp_path / "projects")
    assert state == Completeness.PARTIAL and "did not parse" in data["reason"]


GRANDCHILD = "a0123456789abcdef"


def _grandchild_turn() -> Turn:
    """The child's own ``Agent`` call (c3): Claude Code streams none of the grandchild's events."""
    spawn = _call("c3", "Agent", {"description": "d", "prompt": "q"}, "a1")
    return _turn(*SKILL_CALLS, spawn, _result("c3", "report", "a1"))


def _grandchild_files(root: Path, transcript: str | None) -> None:
    directory = _sidecar(root).parent
    meta = {"toolUseId": "c3", "finished": True, "parentAgentId": AGENT_ID, "spawnDepth": 2}
    (directory / f"agent-{GRANDCHILD}.meta.json").write_text(json.dumps(meta))
    if transcript is not None:
        (directory / f"agent-{GRANDCHILD}.jsonl").write_text(transcript)


def _row(block: dict[str, Any], role: str) -> str:
    return json.dumps({"type": role, "isSidechain": True, "message": {"content": [block]}})


TRANSCRIPT = "\n".join(
    [
        json.dumps({"type": "attachment", "attachment": {"type": "date"}}),
        _row(
            {"type": "tool_use", "id": "g1", "name": "Skill", "input": {"skill": "greet"}},
            "assistant",
        ),
        _row(
            {"type": "tool_result", "tool_use_id": "g1", "content": "Launching skill: greet"},
            "user",
        ),
    ]
)


def test_a_grandchild_is_read_from_its_transcript(tmp_path: Path) -> None:
    _grandchild_files(tmp_path, TRANSCRIPT)
    state, data = _nested(_grandchild_turn(), tmp_path)
    assert state == Completeness.COMPLETE, data
    found = [(a["path"], a["toolCalls"], [s["tool"] for s in a["skills"]]) for a in data["agents"]]
    assert found == [([1], 3, ["Skill", "Read"]), ([1, 3], 1, ["Skill"])]


@pytest.mark.parametrize("transcript", [None, "{not json", TRANSCRIPT.replace("greet", "other")])
def test_a_grandchild_without_a_usable_transcript(tmp_path: Path, transcript: str | None) -> None:
    _grandchild_files(tmp_path, transcript)
    state, data = _nested(_grandchild_turn(), tmp_path)
    if transcript is not None and transcript.startswith('{"type"'):  # unlisted skill: no use
        assert state == Completeness.COMPLETE and data["agents"][1]["skills"] == []
        return
    assert state == Completeness.PARTIAL and "1.3" in data["reason"], data
