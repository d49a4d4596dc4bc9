"""``sevro run EVALS.json --skill DIR`` on the scripted host: a skill-creator trigger eval set runs
as an experiment, its trigger statistics reach run.json, the summary and the report, and a bad
set or a bad combination of flags is refused before anything runs."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, load
from tests.e2e.test_invocation_errors import assert_refused

NAME = "changelog"
SKILL_PATH = f".agents/skills/{NAME}/SKILL.md"
EVALS = [
    {"query": "Add a changelog entry for the --json flag", "should_trigger": True},
    {"query": "Record the timeout fix in the changelog", "should_trigger": True},
    {"query": "Write a haiku about autumn", "should_trigger": False},
    {"query": "What does HTTP 418 mean?", "should_trigger": False},
]
IDS = [
    "q01-add-a-changelog-entry-for-the",
    "q02-record-the-timeout-fix-in-the",
    "q03-write-a-haiku-about-autumn",
    "q04-what-does-http-418-mean",
]
READ = [{"read": {"path": SKILL_PATH}}, {"reply": {"text": "done"}}]
SKIP = [{"reply": {"text": "done"}}]


@pytest.fixture
def project(sevro_project: SevroProject) -> SevroProject:
    require_sandbox()
    sevro_project.skill("skills/changelog", NAME, "Log changes in CHANGELOG.md.", "Steps.\n")
    sevro_project.write_json("evals.json", EVALS)
    return sevro_project


def precise(project: SevroProject) -> Path:
    """A model whose description use is right: it reads the skill for the trigger queries."""
    return project.script(default=[SKIP], cases={IDS[0]: [READ], IDS[1]: [READ]})


def eager(project: SevroProject) -> Path:
    """A description that triggers on everything: the skill is read for every query."""
    return project.script("eager.json", default=[READ])


def run(project: SevroProject, host: Path, *extra: str) -> Any:
    return project.run("evals.json", "--skill", "skills/changelog", "--host-config", host, *extra)


def triggers(done: Any) -> dict[str, Any]:
    run_json = assert_valid_evidence(done.json())
    assert run_json["experiment"]["triggerSet"]["skill"] == NAME
    return dict(run_json["statistics"]["triggers"])


def test_a_precise_description_has_full_precision_and_recall(project: SevroProject) -> None:
    done = run(project, precise(project), "--trials", "2")
    assert done.exit_code == 0, done.stdout + done.stderr
    (arm,) = triggers(done)["arms"]
    assert arm["arm"] == "candidate"
    assert [q["caseId"] for q in arm["queries"]] == IDS
    assert [q["triggered"] for q in arm["queries"]] == [2, 2, 0, 0]
    pooled = arm["pooled"]
    assert pooled["precision"]["value"] == 1.0 and pooled["recall"]["value"] == 1.0
    assert pooled["precision"]["interval"]["low"] < 1.0  # two queries: never a point
    assert (pooled["queriesPassed"], pooled["queriesDecided"]) == (4, 4)


def test_an_eager_description_has_low_precision_and_fails(project: SevroProject) -> None:
    done = project.sevro(
        "run",
        "evals.json",
        "--skill",
        "skills/changelog",
        "--host-config",
        eager(project),
        "--trials",
        "2",
        "--results-root",
        project.results,
    )
    assert done.exit_code == 1, done.stdout + done.stderr
    assert "skill changelog (candidate): recall 100 % (95 % CI" in done.stdout
    assert "precision 50 % (95 % CI" in done.stdout
    assert "2 of 4 queries pass at trigger threshold 0.5." in done.stdout
    (run_json,) = project.results.glob("*/run.json")
    run_dir = run_json.parent
    report = project.sevro("report", run_dir)
    assert report.exit_code == 0, report.stderr
    assert "### Triggers" in report.stdout
    assert (
        "| candidate | q03-write-a-haiku-about-autumn | Write a haiku about autumn | no | 2/2 |"
        in (report.stdout)
    )


def test_a_baseline_copy_is_a_second_arm_with_its_own_rates(project: SevroProject) -> None:
    project.skill("old/changelog", NAME, "Changelog helper.", "Old steps.\n")
    done = run(project, precise(project), "--baseline", "old/changelog", "--trials", "1")
    assert done.exit_code == 0, done.stdout + done.stderr
    stats = triggers(done)
    assert [a["arm"] for a in stats["arms"]] == ["baseline", "candidate"]
    assert all(a["pooled"]["recall"]["value"] == 1.0 for a in stats["arms"])
    run_json = load(done.json()["evidencePath"])
    (comparison,) = run_json["statistics"]["comparisons"]
    assert comparison["pooled"]["transitions"]["bothPass"] == 4
    (change,) = stats["comparisons"]
    assert change["recall"]["transitions"]["bothPass"] == 2
    assert change["specificity"]["transitions"]["bothPass"] == 2
    summary = project.sevro("report", Path(done.json()["evidencePath"]).parent)
    assert "recall: no detectable difference between candidate and baseline" in summary.stdout


def test_partial_reads_are_left_out_and_counted(project: SevroProject) -> None:
    head = [{"run": {"command": f"sed -n '1,2p' {SKILL_PATH}"}}, {"reply": {"text": "done"}}]
    host = project.script(default=[SKIP], cases={IDS[0]: [READ], IDS[1]: [head]})
    done = run(project, host, "--trials", "1")
    assert done.exit_code == 1, done.stdout + done.stderr
    (arm,) = triggers(done)["arms"]
    assert (arm["queries"][1]["partial"], arm["queries"][1]["rate"]) == (1, None)
    assert arm["pooled"]["partial"] == 1 and arm["pooled"]["falseNegatives"] == 0


@pytest.mark.parametrize(
    ("document", "flags", "fragment"),
    [
        (EVALS, [], "a trigger eval set needs --skill DIR"),
        (EVALS, ["--skill", "skills/changelog", "--baseline", "none"], "--baseline none has no"),
        (
            EVALS,
            ["--skill", "skills/changelog", "--baseline", "other"],
            "--baseline does not hold a skill named 'changelog'",
        ),
        ([], ["--skill", "skills/changelog"], "evals.json: the trigger eval set is empty"),
        (
            [*EVALS, EVALS[0]],
            ["--skill", "skills/changelog"],
            "evals.json#/4/query: duplicate query (also /0)",
        ),
        (
            [{"query": "x", "should_trigger": True, "expectations": []}],
            ["--skill", "skills/changelog"],
            "evals.json#/0/expectations: unknown key 'expectations'",
        ),
        (
            [{"query": "x", "should_trigger": "true"}],
            ["--skill", "skills/changelog"],
            "evals.json#/0/should_trigger: should_trigger must be true or false",
        ),
    ],
)
def test_bad_sets_and_flags_are_refused_before_anything_runs(
    project: SevroProject, document: Any, flags: list[str], fragment: str
) -> None:
    project.skill("other", "other-skill", "Something else.")
    (project.root / "evals.json").write_text(json.dumps(document))
    host = project.script(default=[SKIP])
    done = project.run("evals.json", *flags, "--host-config", host)
    assert_refused(done, fragment, project)


def test_validate_checks_a_set_without_running_it(project: SevroProject) -> None:
    done = project.sevro("validate", "evals.json")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("trigger eval set valid: 4 queries (2 should trigger, 2 should")
    (project.root / "evals.json").write_text('[{"query": "x", "should_trigger": 1}]')
    done = project.sevro("validate", "evals.json")
    assert done.exit_code == 64 and not done.stdout
    assert done.stderr.strip().splitlines() == [
        "sevro: error: evals.json#/0/should_trigger: should_trigger must be true or false"
    ]


def test_an_interrupted_trigger_run_resumes_with_its_finished_trials(
    project: SevroProject,
) -> None:
    """Killed (SIGKILL) in its third trial, the run resumes: the two finished trials are reused,
    and the trigger statistics cover all four."""
    from sevro_core.testing import start_sevro
    from tests.e2e.test_run_state import kill_matching, runs

    counter, blocked = project.root / "counter", project.root / "blocked"
    marker = f"sleep 63{os.getpid() % 1000}"
    count = (
        f"c=$(cat {counter} 2>/dev/null || echo 0); c=$((c+1)); echo $c > {counter}; "
        f"if [ $c -eq 3 ]; then touch {blocked}; {marker}; fi"
    )
    step = {"run": {"command": count}}
    host = project.script(default=[[step, *SKIP]], cases={IDS[0]: [[step, *READ]]})
    (project.root / "evals.json").write_text(json.dumps(EVALS[:1] + EVALS[2:3]))
    (project.root / "workspaces").mkdir()
    (project.root / "stable").mkdir()  # the counter must stay out of the project's identity
    argv = [
        *("run", "evals.json", "--skill", "skills/changelog", "--host-config", str(host)),
        *("--trials", "2", "--jobs", "1", "--json", "--results-root", str(project.results)),
        *("--workspace-root", str(project.root / "workspaces")),
        *("--project-root", str(project.root / "stable"), "--sandbox", "none"),
    ]
    process = start_sevro(argv, cwd=project.root)
    process.wait_until(blocked, timeout=30)
    process.send_signal(signal.SIGKILL)
    process.finish(timeout=30)
    kill_matching(marker)
    (row,) = runs(project)
    assert (row["status"], row["trialsDone"], row["resumable"]) == ("interrupted", 2, True)
    done = project.sevro(*argv, "--resume")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert done.json()["runId"] == row["runId"]
    assert counter.read_text().strip() == "5", "only the two unfinished trials ran again"
    (arm,) = triggers(done)["arms"]
    assert [(q["triggered"], q["notTriggered"]) for q in arm["queries"]] == [(2, 0), (0, 2)]
    assert arm["pooled"]["unavailable"] == 0
