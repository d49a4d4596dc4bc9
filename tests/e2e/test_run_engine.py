"""Engine behaviour through the real CLI: thresholds, jobs, prompts, follow-ups."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, load, regex_check, trial_evidence


def test_threshold_counts_passed_trials(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("odd", "^trial [13]$")])
    host = sevro_project.script(default=[[{"reply": {"text": "trial {{sevro.trial}}"}}]])
    passing = sevro_project.run(case, "--host-config", host, "--trials", "3", "--threshold", "0.66")
    assert passing.exit_code == 0
    summary = passing.json()["cases"][0]
    assert summary["passedTrials"] == 2 and summary["task"] == "passed"
    assert [t["task"] for t in summary["trials"]] == ["passed", "failed", "passed"]
    strict = sevro_project.run(case, "--host-config", host, "--trials", "3", "--threshold", "0.67")
    assert strict.exit_code == 1 and strict.json()["cases"][0]["task"] == "failed"


def test_jobs_run_trials_in_parallel_and_keep_trial_order(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"sleep": {"ms": 400}}, {"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host, "--trials", "4", "--jobs", "2")
    assert done.exit_code == 0
    result = done.json()
    assert [t["trial"] for t in result["cases"][0]["trials"]] == [1, 2, 3, 4]
    spans = []
    for index in range(4):
        evidence = trial_evidence(result, trial=index)
        spans.append(
            (
                datetime.datetime.fromisoformat(evidence["startedAt"]),
                datetime.datetime.fromisoformat(evidence["finishedAt"]),
            )
        )
    overlapping = sum(1 for a in spans for b in spans if a < b and b[0] < a[1])
    assert overlapping >= 1, spans
    at_once = max(sum(1 for s in spans if s[0] <= t[0] < s[1]) for t in spans)
    assert at_once <= 2


def test_workspace_token_is_rendered_per_trial(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        prompt="Work in {{sevro.workspace}} please.",
        checks=[regex_check("path", "^Work in /\\S+sevro-case-\\S+ please\\.$")],
    )
    host = sevro_project.script(default=[[{"reply": {"text": "{{sevro.prompt}}"}}]])
    done = sevro_project.run(case, "--host-config", host, "--trials", "2")
    assert done.exit_code == 0, done.stdout
    raws = [
        Path(done.json()["evidencePath"]).parent
        / trial_evidence(done.json(), trial=i)["rawResult"]["path"]
        for i in range(2)
    ]
    texts = [r.read_text() for r in raws]
    assert texts[0] != texts[1]
    assert "{{sevro.workspace}}" not in texts[0]
    for text, index in zip(texts, range(2), strict=True):
        assert text.split()[2] == trial_evidence(done.json(), trial=index)["workspace"]


def test_follow_up_turn_is_graded_on_the_last_reply(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        prompt="First.",
        followUpPrompt="Second.",
        fixture={"files": {"a.txt": "1"}},
        checks=[regex_check("second", "^after Second\\.$")],
    )
    host = sevro_project.script(
        default=[
            [
                {"write": {"path": "b.txt", "content": "2"}},
                {"reply": {"text": "after {{sevro.prompt}}"}},
            ],
            [{"read": {"path": "b.txt"}}, {"reply": {"text": "after {{sevro.prompt}}"}}],
        ]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 0, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["turnsCompleted"] == 2
    reads = next(o for o in evidence["observations"] if o["id"] == "sevro.file-reads")
    assert reads["data"]["reads"][0]["turn"] == 2 and reads["data"]["reads"][0]["complete"]


def test_commands_run_in_the_workspace_with_a_private_home(sevro_project: SevroProject) -> None:
    require_sandbox()
    case = sevro_project.case(
        fixture={"files": {"in.txt": "hello"}},
        checks=[regex_check("r", "ok")],
        requiredEvidence=["sevro.commands"],
    )
    host = sevro_project.script(
        default=[
            [
                {
                    "run": {
                        "command": "cat in.txt > out.txt; "
                        'case "$HOME" in */sevro-private-*) ;; *) exit 9;; esac'
                    }
                },
                {"run": {"command": "exit 7"}},
                {"read": {"path": "out.txt"}},
                {"reply": {"text": "ok"}},
            ]
        ]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 0, done.stderr
    evidence = trial_evidence(done.json())
    commands = next(o for o in evidence["observations"] if o["id"] == "sevro.commands")
    first, second = commands["data"]["commands"]
    assert first["exitCode"] == 0 and second["exitCode"] == 7
    assert not first["timedOut"] and not second["timedOut"]
    reads = next(o for o in evidence["observations"] if o["id"] == "sevro.file-reads")
    # `cat in.txt > out.txt` read in.txt, but its output went to a file: only a partial read
    entries = [(r["path"], r["complete"], r.get("byteLength")) for r in reads["data"]["reads"]]
    assert entries == [("in.txt", False, None), ("out.txt", True, 5)]


def test_multiple_case_files_and_directories_in_one_run(sevro_project: SevroProject) -> None:
    folder = sevro_project.root / "cases"
    sevro_project.case("cases/a.json", id="a", checks=[regex_check("r", "ok")])
    sevro_project.case("cases/b.json", id="b", checks=[regex_check("r", "nope")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.run(folder, "--host-config", host)
    assert done.exit_code == 1
    result = done.json()
    assert [(c["caseId"], c["task"]) for c in result["cases"]] == [("a", "passed"), ("b", "failed")]
    run = assert_valid_evidence(result)
    assert [c["caseId"] for c in run["cases"]] == ["a", "b"]
    assert load(Path(result["evidencePath"]).parent / run["trials"][1]["path"])["caseId"] == "b"


def test_human_output_has_a_summary_table(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.sevro(
        "run", case, "--host-config", host, "--results-root", sevro_project.results
    )
    assert done.exit_code == 0
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["case", "trials", "passed", "rate", "execution", "grading", "task"]
    assert lines[2].split() == ["example", "1", "1/1", "100%", "completed", "completed", "passed"]
    assert "execution=completed grading=completed task=passed" in done.stdout
    assert lines[-1].startswith("evidence=") and lines[-1].endswith("run.json")


def test_prompt_only_case_warns_that_exit_0_is_not_a_pass(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.sevro(
        "run", case, "--host-config", host, "--results-root", sevro_project.results
    )
    assert done.exit_code == 0
    assert "nothing was assessed" in done.stdout


def test_json_logs_go_to_stderr(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host, "--log-format", "json", "-vv")
    assert done.exit_code == 0
    events = [json.loads(line) for line in done.stderr.splitlines()]
    names = [e["event"] for e in events]
    assert "run started" in names and "trial finished" in names and "run finished" in names
    assert all(e["level"] in ("debug", "info") for e in events)
    assert done.json()["exitCode"] == 0  # stdout stays one document
    quiet = sevro_project.run(case, "--host-config", host)
    assert quiet.stderr == ""
