"""``sevro.host.skill-activations`` through the real Codex CLI: its passive ``PostToolUse`` hook
records what each command returned, and prepared skill bodies are matched in that content."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.activation_controls import (
    BODY,
    NEGATIVE,
    POSITIVE,
    REACH,
    SOURCED,
    activations,
    check_negative,
    check_out_of_reach,
    check_positive,
    check_sourced,
    fixture,
)
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow
SKILLS = ".agents/skills"


def _run(project: SevroProject, mock_model: Callable[..., Any], commands: list[str]) -> Any:
    codex = require_codex()
    server = mock_model([*(reply(shell(c)) for c in commands), reply(Message("ready"))])
    case = project.case(fixture=fixture(SKILLS))
    result = run_codex(project, codex, server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    return trial(project)


def test_whole_paged_and_composed_reads_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document = _run(sevro_project, mock_model, POSITIVE(SKILLS))
    check_positive(document)
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]


def test_partial_reads_and_other_files_do_not_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document = _run(sevro_project, mock_model, NEGATIVE(SKILLS))
    check_negative(document)
    assert observation(document, "sevro.skills")["data"]["read"] == []
    assert BODY not in str(activations(document))


def test_a_copy_of_the_body_in_another_file_does_not_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    check_sourced(_run(sevro_project, mock_model, SOURCED(SKILLS)))


def test_a_commands_workdir_decides_which_file_it_read(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """Codex's hook reports the command's ``workdir`` as its ``cwd``: the same relative path
    from a subdirectory holding a copy of the skill is not the prepared file (negative); from
    the skill's own directory, ``cat SKILL.md`` is (positive)."""
    skill = f"{SKILLS}/greet/SKILL.md"
    files = {**fixture(SKILLS)["files"], f"sub/{skill}": BODY}
    calls = [
        ToolCall("exec_command", {"cmd": f"cat {skill}", "workdir": "sub"}),
        ToolCall("exec_command", {"cmd": "cat SKILL.md", "workdir": f"{SKILLS}/greet"}),
    ]
    server = mock_model([*(reply(c) for c in calls), reply(Message("ready"))])
    case = sevro_project.case(fixture={"files": files})
    result = run_codex(sevro_project, require_codex(), server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    data = activations(document)["data"]
    found = [(a["ordinal"], a["kind"]) for a in data["activations"]]
    assert found == [(2, "whole")], found
    # the stream-based reads take the directory from the same hook records
    reads = observation(document, "sevro.file-reads")["data"]
    paths = [r["path"] for r in reads["reads"]]
    assert paths == [f"sub/{skill}", skill], paths
    assert not reads["unresolved"], reads


def test_the_hook_records_are_out_of_the_agents_reach(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """The hook directory is the trial's private ``hooks``, beside the commands' ``HOME``: a
    command cannot list, read or write it (a forged record would spoil the evidence, a read
    would leak other calls' content), while the same commands on the workspace work."""
    root = '"$HOME/.."'  # the private root: only the sandbox's own places are shown in it
    shown = [f"*/home/../{place}*" for place in ("home", "tmp", "bin")]
    shown += ["*/home/../codex-home", "*/home/../codex-home/tmp", "*/codex-home/tmp/arg0-linux*"]
    commands = [
        f"find {root} -mindepth 1 -maxdepth 1 -name home | wc -l | sed 's/^/HOME-SEEN-/'",
        *REACH('"$HOME/../hooks"', root, tuple(shown)),
        f"cat {SKILLS}/greet/SKILL.md",
    ]
    server = mock_model([*(reply(shell(c)) for c in commands), reply(Message("ready"))])
    case = sevro_project.case(fixture=fixture(SKILLS))
    result = run_codex(sevro_project, require_codex(), server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    seen = json.dumps(server.requests[-1].json())
    # the attempts named the real place: HOME is the private root's home, which is listed
    assert re.search(r"HOME=/[^ ]*/sevro-private-[^/ ]+/home", seen), seen[-3000:]
    assert "HOME-SEEN-1" in seen
    document = trial(sevro_project)
    check_out_of_reach(document, seen, len(commands))


def test_pages_across_turns_compose_on_the_turn_that_completes_the_body(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    skill = f"{SKILLS}/greet/SKILL.md"
    server = mock_model(
        [
            reply(shell(f"sed -n '1,7p' {skill}")),
            reply(Message("first")),
            reply(shell(f"sed -n '8,14p' {skill}")),
            reply(Message("ready")),
        ]
    )

    def check(check_id: str, expect: str, turn: int) -> dict[str, Any]:
        configuration = {"expect": expect, "turn": turn}
        return {"id": check_id, "grader": "sevro.skill-activation", "configuration": configuration}

    case = sevro_project.case(
        prompt="One.",
        followUpPrompt="Two.",
        fixture=fixture(SKILLS),
        checks=[check("on-two", "read-on-turn", 2), check("by-one", "read-by-turn", 1)],
        requiredEvidence=["sevro.host.skill-activations"],
    )
    result = run_codex(sevro_project, require_codex(), server, case)
    statuses = {c["id"]: c["status"] for c in result.json()["cases"][0]["trials"][0]["checks"]}
    assert statuses == {"on-two": "passed", "by-one": "failed"}, result.stdout
    data = activations(trial(sevro_project))["data"]
    found = [(a["turn"], a["ordinal"], a["kind"], a["reads"]) for a in data["activations"]]
    assert found == [(2, 1, "composed", 2)]


def test_a_failed_turn_makes_activations_unavailable_never_not_read(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    skill = f"{SKILLS}/greet/SKILL.md"
    server = mock_model([reply(shell(f"cat {skill}")), reply(Message("x"), error="boom")])
    case = sevro_project.case(fixture=fixture(SKILLS))
    result = run_codex(sevro_project, require_codex(), server, case)
    assert result.exit_code == 2, result.stdout
    found = activations(trial(sevro_project))
    assert found["completeness"] == "unavailable" and "did not complete" in found["data"]["reason"]
    assert "activations" not in found["data"]
