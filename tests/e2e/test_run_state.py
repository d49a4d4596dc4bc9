"""Run ownership, crash recovery and resume, through the real CLI (issue: run state)."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sevro_core.testing import SevroProcess, SevroProject, start_sevro
from sevro_core.testing.background import SEVRO
from tests.e2e.helpers import assert_valid_evidence, load, regex_check


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def processes_matching(marker: str) -> list[int]:
    out = subprocess.run(
        ["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=False
    ).stdout
    return [
        int(line.split()[0]) for line in out.splitlines() if marker in line and "ps -eo" not in line
    ]


def kill_matching(marker: str) -> None:
    for pid in processes_matching(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Scenario:
    """A case whose N-th trial (in admission order, --jobs 1) blocks until killed."""

    def __init__(self, project: SevroProject, block_at: int, trials: int = 4) -> None:
        self.project = project
        self.trials = trials
        self.counter = project.root / "counter"
        self.blocked = project.root / "blocked"
        self.marker = f"sleep 6{block_at}{os.getpid() % 1000}"
        self.workspaces = project.root / "workspaces"
        self.workspaces.mkdir(exist_ok=True)
        # The project's files enter the identity; keep the scenario's moving parts outside it.
        self.project_root = project.root / "stable-project"
        self.project_root.mkdir(exist_ok=True)
        self.case = project.case(checks=[regex_check("r", "^ok$")])
        command = (
            f"c=$(cat {self.counter} 2>/dev/null || echo 0); c=$((c+1)); "
            f"echo $c > {self.counter}; "
            f"if [ $c -eq {block_at} ]; then touch {self.blocked}; {self.marker}; fi"
        )
        self.host = project.script(
            default=[[{"run": {"command": command}}, {"reply": {"text": "ok"}}]]
        )

    def argv(self, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "sevro_core",
            "run",
            str(self.case),
            "--host-config",
            str(self.host),
            "--trials",
            str(self.trials),
            "--jobs",
            "1",
            "--json",
            "--results-root",
            str(self.project.results),
            "--workspace-root",
            str(self.workspaces),
            "--project-root",
            str(self.project_root),
            # The trials coordinate through files outside their workspaces, which the sandbox
            # rightly forbids; isolation itself is tested in test_sandbox_*.py.
            "--sandbox",
            "none",
            *extra,
        ]

    def start(self) -> SevroProcess:
        process = start_sevro(self.argv()[len(SEVRO) :], cwd=self.project.root)
        process.wait_until(self.blocked, timeout=30)
        return process

    def kill_runner(self, process: SevroProcess) -> None:
        process.send_signal(signal.SIGKILL)  # no handler runs, nothing is cleaned up
        process.finish(timeout=30)
        kill_matching(self.marker)  # the orphaned host command (no sandbox to reap it yet)

    def run(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*extra),
            cwd=self.project.root,
            text=True,
            capture_output=True,
            timeout=120,
            check=False,
        )


def runs(project: SevroProject) -> list[dict[str, object]]:
    done = project.sevro("runs", "--json", "--results-root", project.results)
    assert done.exit_code == 0, done.stderr
    return done.json()["runs"]  # type: ignore[no-any-return]


def run_with_file_size_limit(
    argv: list[str], cwd: Path, limit: int, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as if the disk filled up at ``limit`` bytes per file: writes past it fail
    with EFBIG (SIGXFSZ ignored) instead of killing the process."""

    def cap_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        preexec_fn=cap_file_size,
        timeout=timeout,
        check=False,
    )


def test_an_equivalent_live_run_is_refused(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=1, trials=2)
    first = scenario.start()
    try:
        second = scenario.run()
        assert second.returncode == 64, second.stderr
        line = second.stderr.splitlines()[-1]  # after the loud --sandbox none warning
        assert line.startswith("sevro: error: an equivalent sevro run is active: run ")
        assert f"pid {first.pid} on " in line
        assert json.loads(second.stdout)["exitCode"] == 64
        other = scenario.run("--threshold", "0.5")  # another evaluation is not blocked
        assert other.returncode in (0, 1), other.stderr
        assert [r["status"] for r in runs(sevro_project)].count("active") == 1
    finally:
        first.send_signal(signal.SIGINT)
        first.finish(timeout=60)
    assert first.returncode == 130


def test_kill_9_then_resume_reuses_finished_trials(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=3)
    killed = scenario.start()
    scenario.kill_runner(killed)
    (row,) = runs(sevro_project)
    assert (row["status"], row["trialsDone"], row["trialsTotal"], row["resumable"]) == (
        "interrupted",
        2,
        4,
        True,
    )
    run_id = row["runId"]
    done = scenario.run("--resume")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["runId"] == run_id
    assert [t["task"] for t in result["cases"][0]["trials"]] == ["passed"] * 4
    run = assert_valid_evidence(result)
    assert [(t["trial"], t["attempt"]) for t in run["trials"]] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    assert [(a["attempt"], a["status"]) for a in run["attempts"]] == [
        (1, "interrupted"),
        (2, "completed"),
    ]
    assert scenario.counter.read_text().strip() == "5", "only trials 3 and 4 ran again"
    (row,) = runs(sevro_project)
    assert (row["status"], row["attempts"], row["trialsDone"], row["verdict"]) == (
        "completed",
        2,
        4,
        "passed",
    )
    for path in (Path(t["artifactPath"]) for t in result["cases"][0]["trials"]):
        assert load(path)["evidence"]["attempt"] in (1, 2)


def test_without_resume_a_fresh_attempt_keeps_the_old_one(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=2)
    scenario.kill_runner(scenario.start())
    old_files = sorted(p.name for p in sevro_project.results.rglob("trial-*.json"))
    assert old_files == ["trial-1.json"]
    done = scenario.run()
    assert done.returncode == 0, done.stderr
    listed = runs(sevro_project)
    assert sorted(r["status"] for r in listed) == ["completed", "interrupted"]
    fresh = next(r for r in listed if r["status"] == "completed")
    assert fresh["runId"] == json.loads(done.stdout)["runId"] and fresh["trialsDone"] == 4
    old = next(r for r in listed if r["status"] == "interrupted")
    assert (Path(str(old["runDir"])) / "cases" / "example" / "trial-1.json").is_file()


def test_a_corrupted_trial_file_is_rerun_never_trusted(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=3)
    scenario.kill_runner(scenario.start())
    (row,) = runs(sevro_project)
    case_dir = Path(str(row["runDir"])) / "cases" / "example"
    original = (case_dir / "trial-1.json").read_text()
    (case_dir / "trial-1.json").write_text(original[: len(original) // 2])  # half-written
    (case_dir / "trial-2-raw.txt").write_text("forged")  # a referenced blob changed
    done = scenario.run("--resume")
    assert done.returncode == 0, done.stderr
    run = assert_valid_evidence(json.loads(done.stdout))
    assert [t["attempt"] for t in run["trials"]] == [2, 2, 2, 2]
    kept = case_dir / "superseded" / "before-attempt-2"
    assert (kept / "trial-1.json").read_text() == original[: len(original) // 2]
    assert (kept / "trial-2-raw.txt").read_text() == "forged"


def test_resume_with_nothing_to_resume_is_refused(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    first = sevro_project.run(case, "--host-config", host, "--resume")
    assert first.exit_code == 64
    assert first.stderr == (
        f"sevro: error: --resume: no interrupted run of this evaluation in "
        f"{sevro_project.results}; run without --resume to start a new run\n"
    )
    assert sevro_project.run(case, "--host-config", host).exit_code == 0
    again = sevro_project.run(case, "--host-config", host, "--resume")
    assert again.exit_code == 64, "a completed run is not resumed"


def test_resume_after_the_project_changed_names_the_run_and_the_dimension(
    sevro_project: SevroProject,
) -> None:
    scenario = Scenario(sevro_project, block_at=3)
    scenario.kill_runner(scenario.start())
    (row,) = runs(sevro_project)
    assert row["resumable"] is True
    (scenario.project_root / "new-file.txt").write_text("changes the project digest\n")
    (row,) = runs(sevro_project)
    assert row["resumable"] is False
    assert row["notResumable"] == f"project {scenario.project_root} changed since the run"
    table = sevro_project.sevro("runs", "--results-root", sevro_project.results).stdout
    assert "no (project changed)" in table
    done = scenario.run("--resume")
    assert done.returncode == 64, done.stderr
    line = done.stderr.splitlines()[-1]
    assert line.startswith("sevro: error: --resume: no interrupted run of this evaluation in ")
    assert f"{row['runId']} (differs in project)" in line
    assert scenario.counter.read_text().strip() == "3", "nothing ran"


def test_resume_names_every_dimension_that_differs(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=3)
    scenario.kill_runner(scenario.start())
    done = scenario.run("--resume", "--threshold", "0.5")
    assert done.returncode == 64
    assert "(differs in configuration, pass threshold)" in done.stderr


def test_resume_removes_stale_temporary_files(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=3)
    scenario.kill_runner(scenario.start())
    (row,) = runs(sevro_project)
    case_dir = Path(str(row["runDir"])) / "cases" / "example"
    # what a SIGKILL between the temporary file's creation and its rename leaves behind
    stale = case_dir / f".trial-3.json.{'ab' * 16}.tmp"
    stale.write_text('{"half": ')
    unrelated = case_dir / ".notes.tmp"
    unrelated.write_text("not sevro's")
    done = scenario.run("--resume")
    assert done.returncode == 0, done.stderr
    assert not stale.exists()
    assert unrelated.exists(), "only sevro's temporary-file names are removed"
    unrelated.unlink()
    assert_valid_evidence(json.loads(done.stdout))


def test_cancelled_trials_are_not_counted_as_done(sevro_project: SevroProject) -> None:
    scenario = Scenario(sevro_project, block_at=2)
    process = scenario.start()
    process.send_signal(signal.SIGINT)
    assert process.finish(timeout=60).exit_code == 130
    (row,) = runs(sevro_project)
    assert (row["status"], row["trialsDone"], row["trialsTotal"]) == ("interrupted", 1, 4)


def test_persistence_failure_then_resume(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^x+$")])
    host = sevro_project.script(default=[[{"reply": {"text": "x" * 400_000}}]])
    argv = [
        sys.executable,
        "-m",
        "sevro_core",
        "run",
        str(case),
        "--host-config",
        str(host),
        "--json",
        "--results-root",
        str(sevro_project.results),
    ]

    failed = run_with_file_size_limit(argv, sevro_project.root, 200_000, timeout=60)
    assert failed.returncode == 70
    retained = Path(failed.stderr.strip().split("fixture retained at ")[1])
    assert retained.is_dir()
    (row,) = runs(sevro_project)
    assert (row["status"], row["resumable"]) == ("failed", True)
    resumed = subprocess.run(
        [*argv, "--resume"],
        cwd=sevro_project.root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["runId"] == row["runId"]
    import shutil

    shutil.rmtree(retained)


def test_a_host_that_ignores_sigterm_is_killed(sevro_project: SevroProject) -> None:
    started = sevro_project.root / "started"
    marker = f"sleep 7{os.getpid() % 1000}"
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(
        default=[
            [
                {"run": {"command": f"trap '' TERM; touch {started}; {marker}; {marker}"}},
                {"reply": {"text": "ok"}},
            ]
        ]
    )
    args = [case, "--host-config", host, "--json", "--results-root", sevro_project.results]
    with start_sevro(["run", *args, "--sandbox", "none"], cwd=sevro_project.root) as process:
        process.wait_until(started, timeout=30)
        process.send_signal(signal.SIGINT)
        done = process.finish(timeout=60)
    assert done.exit_code == 130, done.stderr
    assert done.json()["cases"][0]["trials"][0]["execution"] == "cancelled"
    assert processes_matching(marker) == []


PLUGIN = """
import time
from pathlib import Path
from sevro_core.plugin.hookspecs import hookimpl
from sevro_core.models import CheckOutcome
from sevro_core.states import CheckStatus

MARKER = Path({marker!r})


class Slow:
    def grade(self, check_id, view):
        MARKER.touch()
        time.sleep(1.0)
        return CheckOutcome(check_id, "acme.slow", CheckStatus.PASSED)


class SlowGrader:
    id = "acme.slow"
    version = "1"
    stage = 10
    capabilities = frozenset()
    requires = frozenset()

    def compile(self, configuration):
        return Slow()


@hookimpl
def sevro_register_graders(register):
    register(SlowGrader())


@hookimpl
def sevro_run_started(run):
    if {at_start!r}:
        MARKER.touch()
        time.sleep(1.0)
"""


@pytest.mark.parametrize("point", ["before-admission", "during-grading", "while-persisting"])
def test_sigint_at_several_points_loses_nothing(sevro_project: SevroProject, point: str) -> None:
    marker = sevro_project.root / "marker"
    plugin = sevro_project.root / "slow.py"
    plugin.write_text(PLUGIN.format(marker=str(marker), at_start=point == "before-admission"))
    checks = [regex_check("r", "ok")]
    if point == "during-grading":
        checks = [{"id": "slow", "grader": "acme.slow", "configuration": {}}, *checks]
    case = sevro_project.case(checks=checks)
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    trials = "40" if point == "while-persisting" else "3"
    args = [case, "--host-config", host, "--plugin", plugin, "--trials", trials, "--jobs", "2"]
    args += ["--json", "--results-root", sevro_project.results]
    with start_sevro(["run", *args], cwd=sevro_project.root) as process:
        if point == "while-persisting":
            process.wait_until(
                lambda: any(sevro_project.results.glob("*/cases/example/trial-*.json")),
                timeout=30,
            )
        else:
            process.wait_until(marker, timeout=30)
        process.send_signal(signal.SIGINT)
        done = process.finish(timeout=60)
    result = done.json()
    assert done.exit_code == 130 or (point == "while-persisting" and done.exit_code == 0), (
        done.stderr
    )
    run = assert_valid_evidence(result)
    trials_seen = result["cases"][0]["trials"]
    persisted = [t for t in trials_seen if t["artifactPath"]]
    assert len(persisted) == len(list(sevro_project.results.glob("*/cases/example/trial-*.json")))
    for trial in persisted:
        assert Path(trial["artifactPath"]).is_file()
    (row,) = runs(sevro_project)
    assert row["trialsDone"] == len([t for t in persisted if t["execution"] != "cancelled"])
    if point == "before-admission":
        assert persisted == [] and run["status"] == "interrupted"
        assert {t["execution"] for t in trials_seen} == {"cancelled"}
    if point == "during-grading":
        first = load(persisted[0]["artifactPath"])["evidence"]
        assert first["execution"]["status"] == "cancelled"
        assert [c["id"] for c in first["checks"]] == ["slow"]


def test_runs_table(sevro_project: SevroProject) -> None:
    missing = sevro_project.sevro("runs", "--results-root", sevro_project.results)
    assert missing.exit_code == 64
    assert missing.stderr == (
        f"sevro: error: {sevro_project.results}: results root does not exist or is not a "
        "directory\n"
    )
    sevro_project.results.mkdir()
    empty = sevro_project.sevro("runs", "--results-root", sevro_project.results)
    assert empty.exit_code == 0 and empty.stdout == "no runs\n"
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    run_id = sevro_project.run(case, "--host-config", host, "--trials", "2").json()["runId"]
    table = sevro_project.sevro("runs", "--results-root", sevro_project.results)
    header, _, row = table.stdout.splitlines()
    assert header.split() == [
        "run",
        "evaluation",
        "status",
        "attempts",
        "trials",
        "verdict",
        "resumable",
        "started",
    ]
    assert row.split()[:7] == [run_id, row.split()[1], "completed", "1", "2/2", "passed", "no"]


def _one_run(project: SevroProject) -> str:
    case = project.case(checks=[regex_check("r", "ok")])
    host = project.script(default=[[{"reply": {"text": "ok"}}]])
    done = project.run(case, "--host-config", host)
    assert done.exit_code == 0, done.stderr
    return str(done.json()["runId"])


def test_runs_on_a_corrupt_state_database(sevro_project: SevroProject) -> None:
    _one_run(sevro_project)
    database = sevro_project.results / ".sevro-state" / "sevro-state.sqlite"
    for extra in database.parent.glob("sevro-state.sqlite-*"):
        extra.unlink()
    database.write_bytes(b"this is not SQLite" * 100)
    before = database.read_bytes()
    done = sevro_project.sevro("runs", "--results-root", sevro_project.results)
    assert done.exit_code == 64
    assert done.stderr.startswith(f"sevro: error: {database}: not a usable sevro run-state ")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    run = sevro_project.run(case, "--host-config", host)
    assert run.exit_code == 64 and "not a usable sevro run-state database" in run.stderr
    assert database.read_bytes() == before, "nothing lost"


def test_runs_recognises_a_copied_results_root(sevro_project: SevroProject) -> None:
    import shutil

    run_id = _one_run(sevro_project)
    copy = sevro_project.root / "copied-results"
    shutil.copytree(sevro_project.results, copy)
    done = sevro_project.sevro("runs", "--json", "--results-root", copy)
    assert done.exit_code == 0, done.stderr
    (row,) = done.json()["runs"]
    assert row["runId"] == run_id and row["recordedResultsRoot"] == str(sevro_project.results)
    assert row["resumable"] is False and row["verdict"] == "passed"
    assert row["runDir"] == str(copy / run_id)


def test_runs_does_not_show_a_verdict_from_a_tampered_run_json(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "no"}}]])
    result = sevro_project.run(case, "--host-config", host).json()
    assert result["task"]["verdict"] == "failed"
    (row,) = runs(sevro_project)
    assert (row["verdict"], row["evidence"]) == ("failed", "verified")
    run_json = Path(result["evidencePath"])
    run_json.write_text(run_json.read_text().replace('"verdict": "failed"', '"verdict": "passed"'))
    (row,) = runs(sevro_project)
    assert (row["verdict"], row["evidence"]) == (None, "unverified")
    table = sevro_project.sevro("runs", "--results-root", sevro_project.results).stdout
    assert "unverified" in table and "passed" not in table


def test_run_state_disk_filling_mid_run_then_resume(sevro_project: SevroProject) -> None:
    """The state database's write-ahead log outgrows a file-size limit after a few trials."""

    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    argv = [
        sys.executable,
        "-m",
        "sevro_core",
        "run",
        str(case),
        "--host-config",
        str(host),
        "--trials",
        "40",
        "--json",
        "--results-root",
        str(sevro_project.results),
    ]

    failed = run_with_file_size_limit(argv, sevro_project.root, 120_000, timeout=120)
    database = sevro_project.results / ".sevro-state" / "sevro-state.sqlite"
    assert failed.returncode == 70, failed.stderr
    line = failed.stderr.splitlines()[-1]
    assert line.startswith(f"sevro: error: run state {database} could not be updated: ")
    assert line.endswith("trials recorded before stay recorded: fix the cause, then use --resume")
    assert "internal error" not in failed.stderr and "Traceback" not in failed.stderr
    (row,) = runs(sevro_project)
    assert row["status"] == "interrupted" and row["resumable"] is True
    kept = int(str(row["trialsDone"]))
    assert 0 < kept < 40
    resumed = subprocess.run(
        [*argv, "--resume"],
        cwd=sevro_project.root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["runId"] == row["runId"]
    run = assert_valid_evidence(result)
    attempts = [t["attempt"] for t in run["trials"]]
    assert attempts.count(1) == kept and attempts.count(2) == 40 - kept, "persisted trials kept"


def test_resume_in_a_copied_results_root_is_refused_and_says_why(
    sevro_project: SevroProject,
) -> None:
    import shutil

    scenario = Scenario(sevro_project, block_at=3)
    scenario.kill_runner(scenario.start())
    copy = sevro_project.root / "copied-results"
    shutil.copytree(sevro_project.results, copy)
    argv = [str(copy) if a == str(sevro_project.results) else a for a in scenario.argv()]
    done = subprocess.run(
        [*argv, "--resume"],
        cwd=sevro_project.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 64, done.stderr
    line = done.stderr.splitlines()[-1]
    assert f"no interrupted run of this evaluation in {copy}; 1 run(s) of this evaluation" in line
    assert "recorded for another results root (this one is a copy, or was moved)" in line
    listed = sevro_project.sevro("runs", "--json", "--results-root", copy).json()["runs"]
    assert [r["resumable"] for r in listed] == [False]
    assert scenario.counter.read_text().strip() == "3", "nothing ran"


def test_an_experiment_resumes_per_trial_and_arm(sevro_project: SevroProject) -> None:
    skill = sevro_project.skill("skills/notes", "notes", "Release notes.")
    scenario = Scenario(sevro_project, block_at=3, trials=2)
    arms = ("--skill", str(skill), "--baseline", "none")
    killed = start_sevro(scenario.argv(*arms)[len(SEVRO) :], cwd=sevro_project.root)
    killed.wait_until(scenario.blocked, timeout=30)
    scenario.kill_runner(killed)
    (row,) = runs(sevro_project)
    assert (row["status"], row["trialsDone"], row["trialsTotal"]) == ("interrupted", 2, 4)
    done = scenario.run(*arms, "--resume")
    assert done.returncode == 0, done.stderr
    run = assert_valid_evidence(json.loads(done.stdout))
    attempts = sorted((t["trial"], t["arm"], t["attempt"]) for t in run["trials"])
    assert attempts == [
        (1, "baseline", 1),
        (1, "candidate", 1),
        (2, "baseline", 2),
        (2, "candidate", 2),
    ], "the first pair was reused, the second ran again"
    assert scenario.counter.read_text().strip() == "5", "only the unfinished pair ran again"


def test_an_interrupted_experiment_keeps_its_arms_and_finished_trials(
    sevro_project: SevroProject,
) -> None:
    skill = sevro_project.skill("skills/notes", "notes", "Release notes.")
    scenario = Scenario(sevro_project, block_at=2, trials=2)
    arms = ("--skill", str(skill), "--baseline", "none")
    running = start_sevro(scenario.argv(*arms)[len(SEVRO) :], cwd=sevro_project.root)
    running.wait_until(scenario.blocked, timeout=30)
    running.send_signal(signal.SIGINT)
    running.finish(timeout=60)
    assert running.returncode == 130
    kill_matching(scenario.marker)
    (run_json,) = sevro_project.results.glob("*/run.json")
    run = load(run_json)
    assert run["status"] == "interrupted"
    assert [a["id"] for a in run["arms"]] == ["baseline", "candidate"]
    done = [(t["trial"], t["arm"]) for t in run["trials"] if t["path"] is not None]
    assert done[:1] == [(1, "baseline")], "the finished trial of the first pair is kept"
    assert all(t["arm"] in ("baseline", "candidate") for t in run["trials"])
