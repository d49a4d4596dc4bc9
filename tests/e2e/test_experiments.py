"""Experiments end to end on the scripted host: arms mounted per trial, pairs interleaved,
sources fingerprinted and re-verified, bad experiments refused before anything runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox, require_tool
from tests.e2e.helpers import (
    NOTES_HELPED,
    NOTES_SKILL_PATH,
    assert_valid_evidence,
    load,
    notes_experiment,
)

SKILL_PATH = NOTES_SKILL_PATH


@pytest.fixture
def project(sevro_project: SevroProject) -> SevroProject:
    require_sandbox()
    return notes_experiment(sevro_project)


def quick(project: SevroProject, *extra: str) -> Any:
    return project.run("cases", "--skill", "skills/notes", "--host-config", "host.json", *extra)


def trials_by_start(run_json: Path) -> list[dict[str, Any]]:
    run = load(run_json)
    documents = [load(run_json.parent / t["path"]) for t in run["trials"]]
    return sorted(documents, key=lambda d: d["evidence"]["startedAt"])


def skills_data(document: dict[str, Any]) -> dict[str, Any]:
    found = next(o for o in document["evidence"]["observations"] if o["id"] == "sevro.skills")
    data: dict[str, Any] = found["data"]
    return data


def test_quick_form_mounts_the_skill_in_the_candidate_arm_only(project: SevroProject) -> None:
    done = quick(project, "--baseline", "none", "--trials", "3")
    assert done.exit_code == 1, done.stderr  # the baseline's trials fail: exit rules unchanged
    result = done.json()
    run = assert_valid_evidence(result)
    assert [(c["caseId"], c["arm"], c["passedTrials"]) for c in result["cases"]] == [
        ("notes", "baseline", 0),
        ("notes", "candidate", 3),
    ]
    arms = {arm["id"]: arm for arm in run["arms"]}
    assert arms["baseline"]["skills"] == [] and arms["baseline"]["target"] is None
    (skill,) = arms["candidate"]["skills"]
    assert (skill["name"], arms["candidate"]["target"]) == ("notes", "notes")
    assert run["experiment"] == {
        "source": None,
        "repetitions": 3,
        "comparisons": [{"control": "baseline", "treatment": "candidate"}],
    }
    assert set(run["configuration"]["redacted"]["arms"]) == {"baseline", "candidate"}
    for document in trials_by_start(Path(result["evidencePath"])):
        data = skills_data(document)
        assert (data["arm"], document["arm"]) == (document["arm"], document["arm"])
        if document["arm"] == "candidate":
            assert data["target"] == "notes" and data["read"] == ["notes"]
            assert [s["path"] for s in data["offered"]] == [SKILL_PATH]
        else:
            assert data["target"] is None and data["offered"] == [] and data["read"] == []


def test_pairs_run_back_to_back_and_no_arm_always_goes_first(project: SevroProject) -> None:
    project.case("cases/other.json", id="other")
    done = quick(project, "--baseline", "none", "--trials", "4", "--jobs", "1")
    order = [
        (d["trial"], d["caseId"], d["arm"])
        for d in trials_by_start(Path(done.json()["evidencePath"]))
    ]
    pairs = [order[i : i + 2] for i in range(0, len(order), 2)]
    for first, second in pairs:  # each pair: same case and repetition, both arms
        assert first[:2] == second[:2] and {first[2], second[2]} == {"baseline", "candidate"}
    assert [p[0][0] for p in pairs] == [1, 1, 2, 2, 3, 3, 4, 4], "repetition by repetition"
    leaders = [p[0][2] for p in pairs]
    assert leaders.count("baseline") == leaders.count("candidate") == 4


def test_experiment_file_with_inline_cases_three_arms_and_repetitions(
    project: SevroProject,
) -> None:
    project.skill("skills/terse", "terse", "Be terse.")
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "none": {"skills": [], "target": None, "context": []},
                "notes": {"skills": ["skills/notes"], "target": "notes", "context": []},
                "both": {
                    "skills": ["skills/notes", "skills/terse"],
                    "target": "notes",
                    "context": [],
                },
            },
            "cases": [
                "cases/notes.json",
                {
                    "id": "inline",
                    "prompt": "p",
                    "fixture": {"files": {}},
                    "checks": [],
                    "requiredEvidence": [],
                },
            ],
            "repetitions": 2,
            "comparisons": [
                {"control": "none", "treatment": "notes"},
                {"control": "notes", "treatment": "both"},
            ],
        },
    )
    done = project.run("experiment.json", "--host-config", "host.json")
    result = done.json()
    run = assert_valid_evidence(result)
    assert [a["id"] for a in run["arms"]] == ["both", "none", "notes"]
    assert run["experiment"]["repetitions"] == 2 and len(run["experiment"]["comparisons"]) == 2
    assert [c["caseId"] for c in run["cases"]] == ["notes", "inline"]
    assert len(run["trials"]) == 2 * 3 * 2
    by_arm = {(c["caseId"], c["arm"]): c["passedTrials"] for c in result["cases"]}
    assert by_arm[("notes", "none")] == 0 and by_arm[("notes", "notes")] == 2
    assert by_arm[("notes", "both")] == 2


def test_context_files_become_the_hosts_instructions_file(project: SevroProject) -> None:
    (project.root / "context").mkdir()
    (project.root / "context" / "house.md").write_text("Always write NOTES.md.\n")
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": [], "target": None, "context": []},
                "candidate": {"skills": [], "target": None, "context": ["context"]},
            },
            "cases": ["cases/notes.json"],
            "repetitions": 1,
        },
    )
    project.script(default=[[{"read": {"path": "AGENTS.md"}}, {"reply": {"text": "ok"}}]])
    done = project.run("experiment.json", "--host-config", "host.json")
    assert done.exit_code == 1, done.stderr  # the notes check fails in both arms
    documents = {d["arm"]: d for d in trials_by_start(Path(done.json()["evidencePath"]))}
    reads = {
        arm: next(o for o in d["evidence"]["observations"] if o["id"] == "sevro.file-reads")["data"]
        for arm, d in documents.items()
    }
    assert json.dumps(reads["candidate"]).count('"complete": true') == 1
    assert "missing" in json.dumps(reads["baseline"])


def test_a_source_edited_mid_run_fails_the_run_instead_of_mixing_versions(
    project: SevroProject,
) -> None:
    skill = project.root / "skills" / "notes" / "SKILL.md"
    # unsandboxed, the scripted agent edits the working-tree source during trial 1
    project.script(
        default=[[{"run": {"command": f"echo edited >> {skill}"}}, {"reply": {"text": "ok"}}]]
    )
    done = quick(project, "--baseline", "none", "--trials", "3", "--sandbox", "none", "--jobs", "1")
    assert done.exit_code == 64, done.stdout + done.stderr
    line = done.json()["diagnostic"]["message"] if done.stdout.strip() else done.stderr
    assert "changed since it was fingerprinted" in line and "refusing to mix versions" in line
    assert "Traceback" not in done.stderr


def test_byte_identical_arms_are_refused_before_anything_runs(project: SevroProject) -> None:
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": ["skills/notes"], "target": "notes", "context": []},
                "candidate": {"skills": ["skills/notes"], "target": "notes", "context": []},
            },
            "cases": ["cases/notes.json"],
        },
    )
    done = project.sevro(
        "run", "experiment.json", "--host-config", "host.json", "--results-root", project.results
    )
    assert done.exit_code == 64
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "byte-identical" in done.stderr
    assert not project.results.exists(), "nothing may be written"


def test_git_ref_baseline_reads_the_committed_skill_without_checking_out(
    project: SevroProject,
) -> None:
    require_tool("git")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=project.root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    git("add", "skills")
    git("commit", "-qm", "v1")
    head = git("rev-parse", "HEAD")
    unchanged = quick(project, "--baseline", "git:HEAD", "--trials", "1")
    assert unchanged.exit_code == 64 and "byte-identical" in unchanged.stderr
    (project.root / "skills" / "notes" / "SKILL.md").write_text(
        "---\nname: notes\ndescription: v2 of the notes skill.\n---\nv2\n"
    )
    done = quick(project, "--baseline", "git:HEAD", "--trials", "1")
    run = assert_valid_evidence(done.json())
    arms = {arm["id"]: arm for arm in run["arms"]}
    assert arms["baseline"]["skills"][0]["revision"] == head
    assert arms["baseline"]["skills"][0]["source"] == "git:HEAD:skills/notes"
    assert arms["candidate"]["skills"][0]["revision"] is None
    assert arms["baseline"]["target"] == arms["candidate"]["target"] == "notes"
    status = git("status", "--porcelain", "--", "skills")
    assert status == "M skills/notes/SKILL.md", "nothing checked out"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "none"], "--baseline needs --skill"),
        (["--skill", "skills/missing"], "skills/missing"),
        (["--skill", "cases"], "no SKILL.md"),
        (["--fail-on-regression"], "--fail-on-regression needs an experiment"),
    ],
)
def test_bad_quick_forms_are_one_line_and_exit_64(
    project: SevroProject, args: list[str], message: str
) -> None:
    done = project.sevro(
        "run", "cases", "--host-config", "host.json", "--results-root", project.results, *args
    )
    assert done.exit_code == 64, done.stdout + done.stderr
    assert message in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    assert not project.results.exists()


def test_an_experiment_file_refuses_skill_flags(project: SevroProject) -> None:
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": [], "target": None, "context": []},
                "candidate": {"skills": ["skills/notes"], "target": "notes", "context": []},
            },
            "cases": ["cases/notes.json"],
        },
    )
    done = project.sevro(
        "run", "experiment.json", "--skill", "skills/notes", "--results-root", project.results
    )
    assert done.exit_code == 64 and "already declares its arms" in done.stderr


def test_a_bad_experiment_file_names_file_and_pointer_and_writes_nothing(
    project: SevroProject,
) -> None:
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": [], "target": None, "context": []},
                "candidate": {"skills": ["skills/nope"], "target": "notes", "context": []},
            },
            "cases": ["cases/notes.json"],
        },
    )
    done = project.sevro(
        "run", "experiment.json", "--host-config", "host.json", "--results-root", project.results
    )
    assert done.exit_code == 64, done.stderr
    assert "skills/nope" in done.stderr and done.stderr.strip().count("\n") == 0
    assert not project.results.exists()


def regression_inputs(project: SevroProject) -> None:
    """Three cases where the candidate (no skill) passes only repetition 1 and the baseline
    (with the skill) always passes: a regression, yet every case passes at --threshold 0.2."""
    for name in ("b", "c"):
        project.case(
            f"cases/{name}.json",
            id=name,
            checks=load(project.root / "cases" / "notes.json")["checks"],
        )
    helped = NOTES_HELPED.replace(
        f"if test -f {SKILL_PATH};", f'if test -f {SKILL_PATH} || [ "$SEVRO_TRIAL" = 1 ];'
    )
    project.script(default=[[{"run": {"command": helped}}, {"reply": {"text": "done"}}]])
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": ["skills/notes"], "target": "notes", "context": []},
                "candidate": {"skills": [], "target": None, "context": []},
            },
            "cases": ["cases"],
            "repetitions": 5,
        },
    )


def test_run_json_keeps_the_statistics_and_the_summary_says_the_verdict(
    project: SevroProject,
) -> None:
    done = project.sevro(
        "run",
        "cases",
        "--skill",
        "skills/notes",
        "--baseline",
        "none",
        "--host-config",
        "host.json",
        "--results-root",
        project.results,
    )
    assert done.exit_code == 1, done.stderr
    assert "5 fixed / 0 broken over 5 pairs" in done.stdout
    assert "no detectable difference between candidate and baseline" in done.stdout
    assert "would need about" in done.stdout, "too few pairs: the summary says how many"
    (run_json,) = project.results.glob("*/run.json")
    statistics = load(run_json)["statistics"]
    (comparison,) = statistics["comparisons"]
    assert comparison["pooled"]["transitions"]["fixed"] == 5
    (row,) = comparison["cases"]
    assert row["pairs"] == [
        {"repetition": r, "control": "fail", "treatment": "pass"} for r in range(1, 6)
    ], "every pair is kept, for audit"
    assert comparison["pooled"]["verdict"] == "no detectable difference"


def test_fail_on_regression_turns_a_passing_run_that_regressed_into_exit_1(
    project: SevroProject,
) -> None:
    regression_inputs(project)
    args = ("experiment.json", "--host-config", "host.json", "--threshold", "0.2")
    plain = project.run(*args)
    assert plain.exit_code == 0, plain.stdout + plain.stderr
    failing = project.run(*args, "--fail-on-regression")
    assert failing.exit_code == 1, failing.stdout + failing.stderr
    result = failing.json()
    assert result["exitCode"] == 1
    assert result["diagnostic"]["code"] == "sevro.experiment.regressed"
    assert load(result["evidencePath"])["result"]["exitCode"] == 1, "the retained result agrees"
    human = project.sevro(
        "run", *args, "--fail-on-regression", "--results-root", project.root / "other"
    )
    assert human.exit_code == 1
    assert "candidate regressed on baseline" in human.stdout
    assert "exit 1: a comparison regressed (--fail-on-regression)" in human.stdout


def test_validate_checks_an_experiment_file_without_running_it(project: SevroProject) -> None:
    arms = {
        "baseline": {"skills": [], "target": None, "context": []},
        "candidate": {"skills": ["skills/notes"], "target": "notes", "context": []},
    }
    project.write_json(
        "experiment.json", {"format": "sevro.experiment.v1", "arms": arms, "cases": ["cases"]}
    )
    done = project.sevro("validate", "experiment.json")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines() == [
        "experiment valid: 2 arm(s), 1 comparison(s), 5 repetition(s)",
        "1 case(s) valid",
    ]
    (project.root / "skills" / "notes" / "SKILL.md").write_text("no front matter\n")
    refused = project.sevro("validate", "experiment.json")
    assert refused.exit_code == 64 and refused.stderr.count("\n") == 1, refused.stderr
    assert "skills/notes" in refused.stderr
    assert not project.results.exists()


def test_arms_may_compare_models_on_the_same_cases(project: SevroProject) -> None:
    """No skills at all: two arms that differ only in the model run on their own routes."""
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "small": {"skills": [], "target": None, "context": [], "model": "model-s"},
                "large": {"skills": [], "target": None, "context": [], "model": "model-l"},
            },
            "cases": ["cases"],
            "repetitions": 1,
            "comparisons": [{"control": "small", "treatment": "large"}],
        },
    )
    done = project.run("experiment.json", "--host-config", "host.json")
    run = assert_valid_evidence(done.json())
    assert {a["id"]: a["route"]["model"] for a in run["arms"]} == {
        "large": "model-l",
        "small": "model-s",
    }
    assert sorted(r["model"] for r in run["routes"]) == ["model-l", "model-s"]
    for document in trials_by_start(Path(done.json()["evidencePath"])):
        (route,) = document["evidence"]["routes"]
        assert route["model"] == {"small": "model-s", "large": "model-l"}[document["arm"]]


def test_the_quick_form_with_several_skills_and_another_skill_as_baseline(
    project: SevroProject,
) -> None:
    """The first --skill is the target, also at a git:REF baseline holding the same skills; a
    baseline directory holding a differently named skill is its own target."""
    require_tool("git")
    project.skill("skills/terse", "terse", "Be terse.")
    project.skill("older/plain-notes", "plain-notes", "Plain release notes.")
    for argv in (["init", "-q"], ["add", "skills"], ["commit", "-qm", "skills"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
            cwd=project.root,
            check=True,
            capture_output=True,
        )
    with (project.root / "skills" / "notes" / "SKILL.md").open("a") as handle:
        handle.write("v2\n")
    done = quick(project, "--skill", "skills/terse", "--trials", "1", "--baseline", "git:HEAD")
    run = assert_valid_evidence(done.json())
    targets = {arm["id"]: (arm["target"], len(arm["skills"])) for arm in run["arms"]}
    assert targets == {"baseline": ("notes", 2), "candidate": ("notes", 2)}
    other = quick(project, "--baseline", "older/plain-notes", "--trials", "1")
    arms = {arm["id"]: arm["target"] for arm in assert_valid_evidence(other.json())["arms"]}
    assert arms == {"baseline": "plain-notes", "candidate": "notes"}


def test_a_check_naming_an_arm_grades_only_that_arms_trials(project: SevroProject) -> None:
    """skill-eval's per-variant expectations: each arm's trials carry only their own checks (a
    skill-activation check on the baseline, which offers no skill, would be a grading error)."""
    project.case(
        "cases/notes.json",
        id="notes",
        checks=[
            {
                "id": "reads",
                "grader": "sevro.skill-activation",
                "arm": "candidate",
                "configuration": {"expect": "read"},
            },
            {
                "id": "baseline-replies",
                "grader": "sevro.response-text",
                "arm": "baseline",
                "configuration": {"contains": "done"},
            },
            {"id": "replies", "grader": "sevro.response-text", "configuration": {"equals": "done"}},
        ],
    )
    done = quick(project, "--baseline", "none", "--trials", "1")
    assert done.exit_code == 0, done.stdout + done.stderr
    documents = trials_by_start(Path(done.json()["evidencePath"]))
    checks = {d["arm"]: [c["id"] for c in d["evidence"]["checks"]] for d in documents}
    assert checks == {
        "candidate": ["reads", "replies"],
        "baseline": ["baseline-replies", "replies"],
    }
    bad = project.case(
        "cases/notes.json",
        id="notes",
        checks=[
            {
                "id": "x",
                "grader": "sevro.response-text",
                "arm": "treatment",
                "configuration": {"equals": "done"},
            }
        ],
    )
    refused = quick(project, "--baseline", "none", "--trials", "1")
    assert refused.exit_code == 64 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert (
        f"{bad.name}#/checks/0/arm: check 'x' names arm 'treatment', which the experiment "
        "does not have (arms: baseline, candidate)" in refused.stderr
    )
