"""A case with a sevro.semantic check is refused before anything runs when the run has no
semantic judge: the grader requires ``sevro.judge.semantic``."""

from __future__ import annotations

from sevro_core.testing import SevroProject


def test_a_run_without_a_semantic_judge_is_refused_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(
        prompt="Explain why the test failed.",
        checks=[
            {"id": "says-done", "grader": "sevro.regex", "configuration": {"pattern": "done"}},
            {
                "id": "explains",
                "grader": "sevro.semantic",
                "configuration": {"proposition": "The reply explains why the test failed."},
            },
        ],
    )
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "/checks/1/grader" in done.stderr
    assert "needs a semantic judge" in done.stderr and "--semantic-host" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("*.json"))


def test_a_bad_proposition_is_refused_before_anything_runs(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        prompt="Say done.",
        checks=[
            {
                "id": "notes",
                "grader": "sevro.semantic",
                "configuration": {"proposition": "Kind notes.", "artifactPath": "../notes.md"},
            },
        ],
    )
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "/checks/0/configuration/artifactPath" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
