"""`sevro report --details` explains failures; `sevro report RESULTS_ROOT` reads its runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sevro_core.formats.schemas import validator
from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check


def make_runs(project: SevroProject) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run whose check fails, one whose host fails with hostile text (--jobs 1)."""
    case = project.case(checks=[regex_check("said-ok", "^ok$")])
    checked = project.run(
        case, "--host-config", project.script(default=[[{"reply": {"text": "no"}}]])
    )
    hostile = project.script("hostile.json", default=[[{"fail": {"message": "x\x1b[2J|<b>\nY"}}]])
    failed = project.run(case, "--host-config", hostile, "--trials", "2", "--jobs", "1")
    assert checked.exit_code == 1 and failed.exit_code == 2, (checked.stderr, failed.stderr)
    return checked.json(), failed.json()


def run_dir(result: dict[str, Any]) -> Path:
    return Path(result["evidencePath"]).parent


def test_json_report_with_details(sevro_project: SevroProject) -> None:
    checked, failed = make_runs(sevro_project)
    done = sevro_project.sevro("report", run_dir(checked), run_dir(failed), "--json", "--details")
    assert done.exit_code == 0, done.stderr
    report = done.json()
    assert not list(validator("report.v1").iter_errors(report))
    first, second = report["rows"]
    assert first["failures"] == {
        "reasons": [
            {"trials": [1], "reason": "check said-ok (sevro.regex) failed: regex assertion failed"}
        ],
        "omittedReasons": 0,
    }
    reasons = second["failures"]["reasons"]
    assert reasons[0] == {
        "trials": [1],
        "reason": "execution failed (sevro.host.failed): scripted failure: x\\x1b[2J|<b>\\nY",
    }
    assert reasons[1]["trials"] == [2] and reasons[1]["reason"].startswith("not run:")
    plain = sevro_project.sevro("report", run_dir(checked), "--json")
    assert "failures" not in plain.json()["rows"][0], "details only when asked"


def test_markdown_report_with_details(sevro_project: SevroProject) -> None:
    checked, failed = make_runs(sevro_project)
    done = sevro_project.sevro("report", run_dir(checked), run_dir(failed), "--details")
    assert done.exit_code == 0, done.stderr
    text = done.stdout
    assert "## Failures" in text
    assert (
        f"| example | {checked['runId']} | 1 | check said-ok (sevro.regex) failed: "
        "regex assertion failed |" in text
    )
    assert (
        f"| example | {failed['runId']} | 1 | execution failed (sevro.host.failed): "
        "scripted failure: x\\\\x1b[2J\\|&lt;b&gt;\\\\nY |" in text
    )
    assert "\x1b" not in text
    without = sevro_project.sevro("report", run_dir(checked))
    assert "## Failures" not in without.stdout


def test_report_of_a_results_root_reads_every_finished_run(sevro_project: SevroProject) -> None:
    checked, failed = make_runs(sevro_project)
    (sevro_project.results / "interrupted-run").mkdir()
    done = sevro_project.sevro("report", sevro_project.results, "--json")
    assert done.exit_code == 0, done.stderr
    report = done.json()
    assert [i["runId"] for i in report["inputs"]] == [checked["runId"], failed["runId"]]
    assert report["summary"]["cases"] == 2
    assert "skipped 1 run director(ies) without run.json" in done.stderr
    twice = sevro_project.sevro("report", sevro_project.results, run_dir(checked))
    assert twice.exit_code == 64 and "the same input is given twice" in twice.stderr


def test_report_of_a_directory_without_runs_is_refused(sevro_project: SevroProject) -> None:
    empty = sevro_project.root / "empty"
    empty.mkdir()
    done = sevro_project.sevro("report", empty)
    assert done.exit_code == 64
    assert done.stderr.strip().endswith(
        "neither a run directory (no run.json) nor a results root (no finished run in it)"
    )
    assert len(done.stderr.strip().splitlines()) == 1
