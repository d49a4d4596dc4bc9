"""``sevro run SKILL_DIR`` on a skill-creator ``evals/evals.json``: validated and refused before
anything runs; with a scripted candidate and a scripted semantic judge, each eval runs with and
without the skill and each expectation is a ``sevro.semantic`` check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence
from tests.e2e.test_invocation_errors import assert_refused

NAME = "changelog"
EVALS = {
    "skill_name": NAME,
    "evals": [
        {
            "id": 1,
            "prompt": "Record the timeout fix (#52) in CHANGELOG.md",
            "expected_output": "A line under Unreleased / Fixed ending with (#52).",
            "files": ["evals/files/CHANGELOG.md"],
            "expectations": ["The reply names the Fixed section", "The reply mentions 52"],
        },
        {"id": 2, "prompt": "Start a changelog", "expectations": ["The reply says it was created"]},
    ],
}
INPUT = "# Changelog\n\n## [Unreleased]\n"


@pytest.fixture
def project(sevro_project: SevroProject) -> SevroProject:
    require_sandbox()
    sevro_project.skill(NAME, NAME, "Log changes in CHANGELOG.md.", "Steps.\n")
    sevro_project.write_json(f"{NAME}/evals/evals.json", EVALS)
    files = sevro_project.root / NAME / "evals" / "files"
    files.mkdir()
    (files / "CHANGELOG.md").write_text(INPUT)
    return sevro_project


def candidate(project: SevroProject) -> Path:
    """Reads the input file it was given; replies the same with and without the skill."""
    return project.script(
        cases={
            "eval-1": [[{"run": {"command": "cat CHANGELOG.md"}}, reply("Fixed section, #52")]],
            "eval-2": [[reply("Done.")]],
        }
    )


def reply(text: str) -> dict[str, Any]:
    return {"reply": {"text": text}}


def verdicts(*items: tuple[str, str]) -> str:
    return json.dumps({"checks": [{"id": i, "verdict": v, "reason": "seen"} for i, v in items]})


def test_validate_names_what_the_set_holds(project: SevroProject) -> None:
    done = project.sevro("validate", NAME)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith(
        "skill-creator eval set valid: 2 eval(s), 3 expectation(s) (sevro.semantic checks), "
        "1 input file(s)"
    )


def test_without_a_semantic_judge_the_run_is_refused(project: SevroProject) -> None:
    done = project.run(NAME, "--host-config", candidate(project))
    assert_refused(done, "pass --semantic-host HOST", project)
    done = project.run(f"{NAME}/evals/evals.json", "--host-config", candidate(project))
    assert_refused(done, "each expectation is a sevro.semantic check", project)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"evals": [{"id": 1, "prompt": "p", "assertions": ["x"]}]}, "'assertions' is called"),
        ({"evals": [{"id": 1, "prompt": "p", "expectations": []}]}, "expectations must be a"),
        (
            {"evals": [{"id": 1, "prompt": "p", "expectations": ["x"], "files": ["../x"]}]},
            "must stay inside the skill directory",
        ),
        ({"skill_name": "other"}, "skill_name 'other' is not the skill's name 'changelog'"),
    ],
)
def test_a_bad_set_is_refused_before_anything_runs(
    project: SevroProject, change: dict[str, Any], fragment: str
) -> None:
    project.write_json(f"{NAME}/evals/evals.json", {**EVALS, **change})
    done = project.run(NAME, "--host-config", candidate(project))
    assert_refused(done, fragment, project)


def test_each_eval_runs_with_and_without_the_skill_graded_by_the_semantic_judge(
    project: SevroProject,
) -> None:
    judge = project.write_json(
        "judge.json",
        {
            "format": "sevro.scripted-host.v1",
            "judges": {
                "semantic": [
                    {
                        "promptContains": "The reply mentions 52",
                        "reply": verdicts(("expectation-1", "pass"), ("expectation-2", "pass")),
                    },
                    {
                        "promptContains": "The reply says it was created",
                        "reply": verdicts(("expectation-1", "fail")),
                    },
                ]
            },
        },
    )
    done = project.run(
        NAME,
        "--host-config",
        candidate(project),
        "--semantic-host",
        "scripted",
        "--semantic-host-config",
        judge,
        "--trials",
        "1",
    )
    assert done.exit_code == 1, done.stdout + done.stderr  # eval-2's expectation fails
    assert_valid_evidence(done.json())
    seen = {}
    for case in done.json()["cases"]:
        (trial,) = case["trials"]
        evidence = json.loads(Path(trial["artifactPath"]).read_text())["evidence"]
        seen[case["caseId"], case["arm"]] = [(c["id"], c["status"]) for c in evidence["checks"]]
    assert sorted(seen) == [(c, a) for c in ("eval-1", "eval-2") for a in ("baseline", "candidate")]
    for arm in ("baseline", "candidate"):
        assert seen["eval-1", arm] == [("expectation-1", "passed"), ("expectation-2", "passed")]
        assert seen["eval-2", arm] == [("expectation-1", "failed")]
