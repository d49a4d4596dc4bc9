"""Holdout plans end to end on the scripted host: sealed, run once, every binding recomputed,
tampering, filters and resume refused, near-duplicate cases counted once."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from sevro_core.limits import MIN_HOLDOUT_DISTINCT_TASKS
from sevro_core.testing import SevroProject, require_sandbox, start_sevro
from sevro_core.testing.cliresult import CliResult
from tests.e2e.helpers import assert_valid_evidence, notes_experiment

QUICK = (
    *("--skill", "skills/notes", "--baseline", "none"),
    *("--host-config", "host.json", "--trials", "1"),
)


@pytest.fixture
def project(sevro_project: SevroProject) -> SevroProject:
    """The notes experiment with ``MIN_HOLDOUT_DISTINCT_TASKS`` distinct tasks in ``cases``."""
    require_sandbox()
    notes_experiment(sevro_project)
    for index in range(1, MIN_HOLDOUT_DISTINCT_TASKS):
        sevro_project.case(f"cases/task{index}.json", id=f"task{index}", prompt=f"Task {index}.")
    return sevro_project


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    directory = tmp_path / "plans"
    directory.mkdir()
    return directory


def seal(project: SevroProject, plan: Path, *extra: str) -> CliResult:
    return project.sevro("holdout", "seal", "cases", *QUICK, "--output", plan, *extra)


def sealed(project: SevroProject, plan: Path, *extra: str) -> dict[str, Any]:
    done = seal(project, plan, *extra)
    assert done.exit_code == 0, done.stderr
    document: dict[str, Any] = json.loads(plan.read_text())
    return document


def run(project: SevroProject, plan: Path, *extra: str) -> CliResult:
    return project.run("cases", *QUICK, "--holdout", plan, *extra)


def refused(done: CliResult, *words: str) -> None:
    assert done.exit_code == 64, (done.exit_code, done.stderr)
    line = done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in line, line


def no_runs(project: SevroProject) -> bool:
    return not project.results.exists() or not any(project.results.glob("*/run.json"))


def test_seal_run_once_then_already_consumed(project: SevroProject, plans: Path) -> None:
    plan = plans / "plan.json"
    document = sealed(project, plan, "--seed", "7")
    assert stat.S_IMODE(plan.stat().st_mode) == 0o600
    assert document["seed"] == 7 and document["distinctTasks"] == MIN_HOLDOUT_DISTINCT_TASKS
    assert document["distinctTasksBySkill"] == {"notes": MIN_HOLDOUT_DISTINCT_TASKS}
    assert [a["id"] for a in document["arms"]] == ["baseline", "candidate"]
    assert document["repetitions"] == 1 and document["host"] == "sevro.host.scripted"
    done = run(project, plan)
    assert done.exit_code == 1, done.stderr  # the baseline fails its check: the usual exit
    evidence = assert_valid_evidence(done.json())
    record = plans / "plan.json.consumed.json"
    assert evidence["holdout"]["planId"] == document["planId"]
    assert evidence["holdout"]["seed"] == 7
    assert evidence["holdout"]["consumptionRecord"] == str(record)
    assert json.loads(record.read_text())["planDigest"] == evidence["holdout"]["planDigest"]
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    again = run(project, plan)
    refused(again, "already consumed")
    assert len(list(project.results.glob("*/run.json"))) == 1
    run_dir = Path(done.json()["evidencePath"]).parent
    (entry,) = project.sevro("report", run_dir, "--json").json()["experiments"]
    assert entry["holdout"] == evidence["holdout"]
    markdown = project.sevro("report", run_dir).stdout
    assert f"Holdout: authorised by sealed plan {document['planId']} " in markdown


def test_an_ordinary_run_has_no_holdout_record(project: SevroProject) -> None:
    done = project.run("cases", *QUICK)
    assert "holdout" not in assert_valid_evidence(done.json())
    run_dir = Path(done.json()["evidencePath"]).parent
    (entry,) = project.sevro("report", run_dir, "--json").json()["experiments"]
    assert "holdout" not in entry
    markdown = project.sevro("report", run_dir).stdout
    assert "Holdout: none (no sealed holdout plan authorised this verdict)." in markdown
    assert "authorised by sealed plan" not in markdown


def test_concurrent_runs_on_one_plan_exactly_one_proceeds(
    project: SevroProject, plans: Path
) -> None:
    plan = plans / "plan.json"
    sealed(project, plan)
    argv = ["run", "cases", *QUICK, "--holdout", plan, "--json"]
    starts = [
        start_sevro([*argv, "--results-root", project.results / name], cwd=project.root)
        for name in ("a", "b")
    ]
    with starts[0], starts[1]:
        codes = sorted(p.finish(timeout=300).exit_code for p in starts)
    assert codes == [1, 64], codes
    assert len(list(project.results.glob("*/*/run.json"))) == 1


def _edit_case(project: SevroProject, plans: Path) -> None:
    project.case("cases/task1.json", id="task1", prompt="Task one, changed.")


def _edit_check(project: SevroProject, plans: Path) -> None:
    case = project.root / "cases/task1.json"
    document = json.loads(case.read_text())
    document["checks"] = [{"id": "x", "grader": "sevro.regex", "configuration": {"pattern": "x"}}]
    case.write_text(json.dumps(document))


def _drop_case(project: SevroProject, plans: Path) -> None:
    (project.root / "cases/task1.json").unlink()


def _judge_config(project: SevroProject, plans: Path) -> None:
    judges = {"semantic": [{"reply": "{}"}]}
    project.write_json("judge.json", {"format": "sevro.scripted-host.v1", "judges": judges})


def _edit_skill(project: SevroProject, plans: Path) -> None:
    project.skill("skills/notes", "notes", "Release notes, edited after sealing.")


@pytest.mark.parametrize(
    ("tamper", "extra", "words"),
    [
        (_edit_case, (), ("cases", "task1", "taskFingerprint")),
        (_edit_check, (), ("cases", "task1", "caseDigest")),
        (_drop_case, (), ("cases", "task1", "not in the run")),
        (_edit_skill, (), ("arms", "candidate", "sourceDigest")),
        (None, ("--trials", "2"), ("repetitions",)),
        (None, ("--model", "other-model"), ("model",)),
        (
            _judge_config,
            ("--semantic-host", "scripted", "--semantic-host-config", "judge.json"),
            ("judges", "semantic"),
        ),
    ],
)
def test_a_changed_binding_is_refused_before_anything_runs(
    project: SevroProject, plans: Path, tamper: Any, extra: tuple[str, ...], words: tuple[str]
) -> None:
    plan = plans / "plan.json"
    sealed(project, plan)
    if tamper is not None:
        tamper(project, plans)
    done = run(project, plan, *extra)
    refused(done, "differ from the sealed plan", *words)
    assert not (plans / "plan.json.consumed.json").exists() and no_runs(project)


def test_an_edited_plan_is_refused_by_its_bindings(project: SevroProject, plans: Path) -> None:
    plan = plans / "plan.json"
    document = sealed(project, plan)
    document["cases"] = [c for c in document["cases"] if c["caseId"] != "task2"]
    plan.write_text(json.dumps(document))
    refused(run(project, plan), "case 'task2' is not in the sealed plan")
    document = sealed(project, plans / "second.json")
    document["arms"][1]["sourceDigest"] = "0" * 64
    (plans / "second.json").write_text(json.dumps(document))
    refused(run(project, plans / "second.json"), "arm 'candidate' has a different sourceDigest")
    document["extra"] = 1
    (plans / "second.json").write_text(json.dumps(document))
    refused(run(project, plans / "second.json"), "unknown key 'extra'")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda p: p.chmod(0o640), "group or others"),
        (lambda p: os.link(p, p.with_name("other.json")), "more than one link"),
        (lambda p: p.write_text("{"), "invalid JSON"),
    ],
)
def test_an_unsafe_plan_file_is_refused(
    project: SevroProject, plans: Path, change: Any, words: str
) -> None:
    plan = plans / "plan.json"
    sealed(project, plan)
    change(plan)
    refused(run(project, plan), words)
    assert no_runs(project)


def test_a_symlinked_plan_is_refused(project: SevroProject, plans: Path) -> None:
    sealed(project, plans / "plan.json")
    (plans / "link.json").symlink_to(plans / "plan.json")
    refused(run(project, plans / "link.json"), "not a regular file")
    assert no_runs(project)


@pytest.mark.parametrize(
    ("extra", "run_words", "seal_words"),
    [
        (("--resume",), ("--resume", "--holdout"), ("--resume", "seal")),
        (("--dry",), ("--dry", "--holdout"), ("--dry", "seal")),
        (("--group", "g"), ("--group", "--holdout"), ("--group", "seal")),
        # refused before the holdout is read: an extension's case selector
        (("--case-id", "notes"), ("--case-id",), ("--case-id",)),
    ],
)
def test_filters_resume_and_dry_runs_are_refused(
    project: SevroProject,
    plans: Path,
    extra: tuple[str, ...],
    run_words: tuple[str, ...],
    seal_words: tuple[str, ...],
) -> None:
    plan = plans / "plan.json"
    sealed(project, plan)
    refused(run(project, plan, *extra), *run_words)
    refused(seal(project, plans / "other.json", *extra), *seal_words)
    assert not (plans / "other.json").exists()
    assert not (plans / "plan.json.consumed.json").exists() and no_runs(project)


def test_too_few_distinct_tasks_are_refused(project: SevroProject, plans: Path) -> None:
    (project.root / "cases/task7.json").unlink()
    done = seal(project, plans / "plan.json")
    refused(done, f"at least {MIN_HOLDOUT_DISTINCT_TASKS} distinct", "skill 'notes' has 7")
    assert not (plans / "plan.json").exists()


def test_near_duplicates_collapse_into_one_task(project: SevroProject, plans: Path) -> None:
    """A copy of a case with other checks is the same task: nine cases, eight tasks, sealed;
    with one distinct case removed, the near-duplicate does not make up the number."""
    notes = json.loads((project.root / "cases/notes.json").read_text())
    project.case("cases/twin.json", **{**notes, "id": "twin", "checks": []})
    document = sealed(project, plans / "plan.json")
    assert len(document["cases"]) == MIN_HOLDOUT_DISTINCT_TASKS + 1
    assert document["distinctTasks"] == MIN_HOLDOUT_DISTINCT_TASKS
    fingerprints = {c["caseId"]: c["taskFingerprint"] for c in document["cases"]}
    digests = {c["caseId"]: c["caseDigest"] for c in document["cases"]}
    assert fingerprints["twin"] == fingerprints["notes"] and digests["twin"] != digests["notes"]
    (project.root / "cases/task7.json").unlink()
    refused(seal(project, plans / "other.json"), "skill 'notes' has 7")


def test_the_plan_is_never_written_in_the_project_nor_over_a_file(
    project: SevroProject, plans: Path
) -> None:
    refused(seal(project, project.root / "plan.json"), "outside")
    refused(seal(project, project.root / "cases" / "plan.json"), "outside")
    assert not (project.root / "plan.json").exists()
    suite = plans.parent / "suite"  # a case directory outside the project is a suite too
    (project.root / "cases").rename(suite)
    done = project.sevro("holdout", "seal", suite, *QUICK, "--output", suite / "plan.json")
    refused(done, "outside", str(suite))
    assert not (suite / "plan.json").exists()
    (plans / "taken.json").write_text("{}")
    done = project.sevro("holdout", "seal", suite, *QUICK, "--output", plans / "taken.json")
    refused(done, "already exists")
    assert (plans / "taken.json").read_text() == "{}"


def test_a_plain_run_cannot_be_sealed(project: SevroProject, plans: Path) -> None:
    done = project.sevro(
        "holdout", "seal", "cases", "--host-config", "host.json", "--output", plans / "p.json"
    )
    refused(done, "seals an experiment")
