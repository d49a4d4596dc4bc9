"""Real runs on the scripted host for the viewer's tests, made once per module: a plain run on a
Git fixture whose agent plants hostile text in its reply, a file name and the diff, and a quick
experiment (`--skill ... --baseline none`) whose candidate passes and baseline fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox, require_tool
from tests.e2e.helpers import NOTES_SKILL_PATH, notes_experiment

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2;alert(2)">'
LINK = '<a href="javascript:window.__pwned=3">click me</a>'
HOSTILE_FILE = "<img src=x onerror=alert(1)>.md"


def _project(root: Path) -> SevroProject:
    root.mkdir()
    return SevroProject(root.resolve())


def run_dir(done: Any) -> Path:
    return Path(done.json()["evidencePath"]).parent


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain run of two cases: `hostile` fails one check and passes another, `plain` passes."""
    require_sandbox()
    require_tool("git")
    project = _project(tmp_path_factory.mktemp("hostile") / "project")
    fixture = {
        "kind": "generated",
        "commits": [{"message": "init", "files": {"README.md": "base\n"}}],
    }
    project.case(
        "cases/hostile.json",
        id="hostile",
        fixture=fixture,
        checks=[
            {"id": "wrote-file", "grader": "sevro.shell", "configuration": {"run": "ls *.md"}},
            {
                "id": "has-highlights",
                "grader": "sevro.shell",
                "configuration": {"run": "grep -q Highlights README.md"},
            },
        ],
    )
    project.case(
        "cases/plain.json",
        id="plain",
        checks=[{"id": "said-ok", "grader": "sevro.regex", "configuration": {"pattern": "ok"}}],
    )
    project.script(
        cases={
            "hostile": [
                [
                    {"write": {"path": HOSTILE_FILE, "content": f"{HOSTILE}\n{LINK}\n"}},
                    {"write": {"path": "README.md", "content": f"base\n{LINK}\n"}},
                    {"run": {"command": "echo listing; ls"}},
                    {"reply": {"text": f"done {HOSTILE} {LINK}"}},
                ]
            ],
            "plain": [[{"reply": {"text": "ok"}}]],
        }
    )
    done = project.run("cases", "--host-config", "host.json", "--trials", "2")
    assert done.exit_code == 1, done.stdout + done.stderr
    return run_dir(done)


@pytest.fixture(scope="module")
def experiment_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quick experiment: the candidate arm (with the skill) passes, the baseline fails."""
    require_sandbox()
    project = notes_experiment(_project(tmp_path_factory.mktemp("experiment") / "project"))
    done = project.run(
        "cases",
        "--skill",
        "skills/notes",
        "--host-config",
        "host.json",
        "--baseline",
        "none",
        "--trials",
        "3",
    )
    assert done.exit_code == 1, done.stdout + done.stderr
    return run_dir(done)


def _criteria(winner: str) -> str:
    """A comparator reply deciding one criterion for ``winner``, with hostile text as its reason."""
    names = (
        "functional_correctness",
        "security_reliability",
        "maintainability_extensibility",
        "performance_efficiency",
        "simplicity_scope_discipline",
    )
    return json.dumps(
        {
            "criteria": {
                n: {
                    "winner": winner if n == names[2] else "tie",
                    "reason": f"kept with care {HOSTILE}" if n == names[2] else "same",
                }
                for n in names
            }
        }
    )


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An experiment whose pairs the scripted comparator judged (a tie in both orders)."""
    require_sandbox()
    require_tool("git")
    project = _project(tmp_path_factory.mktemp("judged") / "project")
    skill = project.skill("skills/notes", "notes", "Write notes with care.")
    project.case(
        "cases/out.json",
        id="out",
        prompt="Write out.txt.",
        fixture={"kind": "generated", "commits": [{"message": "i", "files": {"in.txt": "x\n"}}]},
        checks=[
            {"id": "written", "grader": "sevro.shell", "configuration": {"run": "test -s out.txt"}}
        ],
    )
    command = (
        f"if test -f {NOTES_SKILL_PATH}; then echo care > out.txt; else echo plain > out.txt; fi"
    )
    project.script(default=[[{"run": {"command": command}}, {"reply": {"text": "Wrote."}}]])
    judge = project.write_json(
        "judge.json",
        {"judges": {"comparator": [{"reply": _criteria("tie")}]}},
    )
    done = project.run(
        "cases", "--skill", str(skill), "--baseline", "none", "--trials", "2",
        "--host-config", "host.json", "--comparator-host", "scripted",
        "--comparator-host-config", str(judge),
    )  # fmt: skip
    assert done.exit_code == 0, done.stdout + done.stderr
    return run_dir(done)
