"""The evidence graders declare what they read: a host that cannot produce it is refused first;
one that can grades it (the scripted host reports sevro.files-changed, not sevro.tool-calls)."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox


def test_the_scripted_host_is_refused_for_tool_calls_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(
        prompt="Say done.",
        checks=[
            {
                "id": "evidence",
                "grader": "sevro.tool-call",
                "configuration": {"tool": "Bash", "expect": "not-made"},
            }
        ],
    )
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "/checks/0/grader" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("*.json"))


@pytest.mark.parametrize(
    ("steps", "status"),
    [
        ([{"write": {"path": "docs/guide.md", "content": "x\n"}}], "passed"),
        ([{"run": {"command": "rm src/app.py"}}], "failed"),
        ([{"write": {"path": "src/new.py", "content": "x\n"}}], "failed"),
        ([], "passed"),
    ],
)
def test_the_scripted_host_reports_changed_files(
    steps: list[dict[str, Any]], status: str, sevro_project: SevroProject
) -> None:
    require_sandbox()
    case = sevro_project.case(
        prompt="Document it; leave src alone.",
        fixture={"files": {"src/app.py": "print(1)\n"}},
        checks=[
            {"id": "src", "grader": "sevro.changed-paths", "configuration": {"exclude": ["src/**"]}}
        ],
    )
    host = sevro_project.script(default=[[*steps, {"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    ((check,),) = [t["checks"] for c in done.json()["cases"] for t in c["trials"]]
    assert check["status"] == status, done.stdout
