"""Claude Code's Read and Skill tools as reads: the rules on hand-made tool calls, for the cases
the real CLI cannot be made to produce (a launch without its body, a changed body)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sevro_core.hosts.agentcli import TurnEvidence
from sevro_core.hosts.reads import WorkspaceFiles
from sevro_core.hosts.skills import MountedSkill
from sevro_hosts_claude.events import ToolUse
from sevro_hosts_claude.host import ClaudeTrial

BODY = "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n"
PATH = ".claude/skills/greet/SKILL.md"


def call(name: str, arguments: dict[str, Any], text: str, **extra: Any) -> ToolUse:
    return ToolUse(1, "t1", name, arguments, text, extra.pop("is_error", False), None, **extra)


def skill_read(workspace: Path, tool: ToolUse) -> tuple[str, bool]:
    trial: Any = SimpleNamespace(request=SimpleNamespace(workspace=workspace))
    skill = MountedSkill("greet", PATH, None, None, BODY)
    read = ClaudeTrial._skill_tool(trial, skill, tool)
    return read.path, read.complete


def test_a_launch_with_the_injected_body_is_a_read(tmp_path: Path) -> None:
    injected = f"Base directory for this skill: {tmp_path}/.claude/skills/greet\n\nSay hello.\n"
    tool = call("Skill", {"skill": "greet"}, "Launching skill: greet", injected=(injected,))
    assert skill_read(tmp_path, tool) == (PATH, True)


def test_a_launch_without_the_body_or_with_another_is_partial(tmp_path: Path) -> None:
    base = f"Base directory for this skill: {tmp_path}/.claude/skills/greet\n\n"
    for injected in ((), (base + "Say goodbye.\n",), ("Say hello.\n",)):
        tool = call("Skill", {"skill": "greet"}, "Launching skill: greet", injected=injected)
        assert skill_read(tmp_path, tool) == (PATH, False), injected
    failed = call(
        "Skill", {"skill": "greet"}, "error", is_error=True, injected=(base + "Say hello.",)
    )
    assert skill_read(tmp_path, failed) == (PATH, False)


def read_tool(workspace: Path, arguments: dict[str, Any], text: str) -> tuple[str, bool] | None:
    trial: Any = SimpleNamespace(request=SimpleNamespace(workspace=workspace))
    evidence = TurnEvidence(files=WorkspaceFiles(workspace))
    read = ClaudeTrial._read_tool(trial, call("Read", arguments, text), evidence)
    return None if read is None else (read.path, read.complete)


def test_read_tool_output_must_be_the_whole_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("one\ntwo\n")
    assert read_tool(tmp_path, {"file_path": "a.md"}, "1\tone\n2\ttwo\n3\t") == ("a.md", True)
    numbered = "     1\tone\n     2\ttwo\n     3\t"
    assert read_tool(tmp_path, {"file_path": str(tmp_path / "a.md")}, numbered) == ("a.md", True)
    assert read_tool(tmp_path, {"file_path": "a.md"}, "1\tone") == ("a.md", False)
    assert read_tool(tmp_path, {"file_path": "a.md", "limit": 1}, "1\tone") == ("a.md", False)
    assert read_tool(tmp_path, {"file_path": "a.md"}, "one\ntwo\n") == ("a.md", False)
    assert read_tool(tmp_path, {"file_path": "../outside.md"}, "") is None
