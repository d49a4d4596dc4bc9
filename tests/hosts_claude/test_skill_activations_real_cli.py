"""``sevro.host.skill-activations`` through the real Claude Code CLI: its passive
``PostToolUse``/``PostToolUseFailure`` hooks record what each tool call returned (Bash output,
the ``Read`` tool's file content), and prepared skill bodies are matched in that content."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from tests.core.activation_controls import (
    NEGATIVE,
    POSITIVE,
    REACH,
    SOURCED,
    activations,
    check_agreement,
    check_negative,
    check_out_of_reach,
    check_positive,
    check_sourced,
    fixture,
)
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow
SKILLS = ".claude/skills"
SKILL = f"{SKILLS}/greet/SKILL.md"


_SERVERS: list[Any] = []


def _run(project: SevroProject, mock_model: Callable[..., Any], calls: list[Any]) -> Any:
    server = mock_model([*(reply(c) for c in calls), reply(Message("ready"))], protocols=PROTOCOLS)
    _SERVERS.append(server)
    case = project.case(fixture=fixture(SKILLS))
    result = run_claude(project, require_claude(), server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    return trial(project)


def test_whole_paged_and_composed_bash_reads_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document = _run(sevro_project, mock_model, [bash(c) for c in POSITIVE(SKILLS)])
    check_positive(document)
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]


def test_partial_reads_and_other_files_do_not_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document = _run(sevro_project, mock_model, [bash(c) for c in NEGATIVE(SKILLS)])
    check_negative(document)
    assert observation(document, "sevro.skills")["data"]["read"] == []


def test_a_copy_of_the_body_in_another_file_does_not_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    check_sourced(_run(sevro_project, mock_model, [bash(c) for c in SOURCED(SKILLS)]))


def test_the_hook_records_and_config_dir_are_out_of_the_agents_reach(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """The hook directory is ``sevro-hooks`` in the private config directory, beside the
    commands' ``HOME``: a command cannot list, read or write it, and the config directory
    shows it nothing (Claude Code's sandbox masks it as an empty directory), while the same
    commands on the workspace work."""
    config = '"$HOME/../claude-config"'
    commands = [
        "find \"$HOME/..\" -mindepth 1 -maxdepth 1 -name claude-config | sed 's/^/SEEN-/'",
        *REACH('"$HOME/../claude-config/sevro-hooks"', config),
        f"cat {SKILL}",
    ]
    document = _run(sevro_project, mock_model, [bash(c) for c in commands])
    (server,) = _SERVERS[-1:]
    seen = json.dumps(server.requests[-1].json())
    # the attempts named the real place: the (masked) config directory beside the private HOME
    assert re.search(r"HOME=/[^ ]*/sevro-private-[^/ ]+/home", seen), seen[-3000:]
    assert re.search(r"SEEN-/[^ ]*/sevro-private-[^/ ]+/home/../claude-config", seen)
    check_out_of_reach(document, seen, len(commands))


def test_the_shells_directory_decides_which_file_a_command_read(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """Claude Code's shell keeps its directory between calls and its hook reports it as the
    ``cwd``: after ``cd`` into a directory holding a copy, the skill's relative path is the copy
    (negative); after ``cd`` into the skill's own directory, ``cat SKILL.md`` is the prepared
    file (positive)."""
    calls = [
        bash("mkdir -p sub/.claude/skills/greet && cp copy.md sub/.claude/skills/greet/SKILL.md"),
        bash("cd sub"),
        bash(f"cat {SKILL}"),
        bash(f"cd ../{SKILLS}/greet"),
        bash("cat SKILL.md"),
    ]
    document = _run(sevro_project, mock_model, calls)
    data = activations(document)["data"]
    assert [(a["ordinal"], a["kind"]) for a in data["activations"]] == [(5, "whole")]


def test_read_tool_pages_compose_and_a_short_page_does_not(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    calls = [
        ToolCall("Read", {"file_path": SKILL}),  # 1: whole (line-numbered)
        ToolCall("Read", {"file_path": SKILL, "limit": 4}),  # 2: front matter only
        ToolCall("Read", {"file_path": SKILL, "offset": 5, "limit": 5}),  # 3: lines 5-9
        ToolCall("Read", {"file_path": "notes.md"}),  # 4: another file
        ToolCall("Read", {"file_path": SKILL, "offset": 10}),  # 5: lines 10-14: composed
        ToolCall("Read", {"file_path": SKILL, "offset": 2}),  # 6: misses line 1 (a lone "---")
        ToolCall("Read", {"file_path": "copy.md"}),  # 7: the whole body, from another file
    ]
    document = _run(sevro_project, mock_model, calls)
    data = activations(document)
    assert data["completeness"] == "complete", data
    found = [(a["ordinal"], a["tool"], a["kind"], a["reads"]) for a in data["data"]["activations"]]
    # notes.md and copy.md show body lines, but not from the prepared file: they never count
    assert found == [(1, "Read", "whole", 1), (5, "Read", "composed", 3)], found
    check_agreement(document)
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]


def test_loaded_project_settings_declaring_hooks_are_refused_before_claude_runs(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("ready"))], protocols=PROTOCOLS)
    files = fixture(SKILLS)["files"]
    hooks = {"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    case = sevro_project.case(fixture={"files": {**files, ".claude/settings.json": str(hooks)}})
    result = run_claude(sevro_project, require_claude(), server, case, "--claude-project-settings")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert server.requests == []
    document = trial(sevro_project)
    assert "runs only its own passive skill-activation hook" in json.dumps(document)
    assert activations(document)["completeness"] == "unavailable"


@pytest.mark.parametrize("bundled", [True, False])
def test_a_declared_plugin_bundling_hooks_is_refused_before_claude_runs(
    sevro_project: SevroProject, mock_model: Callable[..., Any], bundled: bool
) -> None:
    """Negative control: the same plugin without its ``hooks`` directory runs."""
    server = mock_model([reply(Message("ready"))], protocols=PROTOCOLS)
    files = {
        **fixture(SKILLS)["files"],
        "plugins/acme/.claude-plugin/plugin.json": json.dumps({"name": "acme"}),
    }
    if bundled:
        hooks = {"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}}
        files["plugins/acme/hooks/hooks.json"] = json.dumps(hooks)
    case = sevro_project.case(fixture={"files": files})
    config = {"pluginDirs": ["plugins/acme"]}
    result = run_claude(sevro_project, require_claude(), server, case, config=config)
    assert result.exit_code == (2 if bundled else 0), result.stdout + result.stderr
    assert (server.requests == []) is bundled
    assert ("bundles hooks" in json.dumps(trial(sevro_project))) is bundled
