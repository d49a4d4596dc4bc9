"""The evidence graders declare what they read: a host that cannot produce it is refused first."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.testing import SevroProject


@pytest.mark.parametrize(
    ("grader", "configuration"),
    [
        ("sevro.tool-call", {"tool": "Bash", "expect": "not-made"}),
        ("sevro.changed-paths", {"exclude": ["src/**"]}),
    ],
)
def test_the_scripted_host_is_refused_before_anything_runs(
    grader: str, configuration: dict[str, Any], sevro_project: SevroProject
) -> None:
    case = sevro_project.case(
        prompt="Say done.",
        checks=[{"id": "evidence", "grader": grader, "configuration": configuration}],
    )
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "/checks/0/grader" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("*.json"))
