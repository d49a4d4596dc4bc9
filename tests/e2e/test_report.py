"""`sevro report` verifies retained evidence and renders Markdown or JSON."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import validator
from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check


def make_run(project: SevroProject, text: str = "ok", trials: str = "2") -> dict[str, object]:
    case = project.case(checks=[regex_check("r", "^ok$")])
    host = project.script(default=[[{"reply": {"text": text}}]])
    done = project.run(case, "--host-config", host, "--trials", trials)
    return done.json()  # type: ignore[no-any-return]


def test_json_report_from_result_file_and_run_dir(sevro_project: SevroProject) -> None:
    passed = make_run(sevro_project)
    failed = make_run(sevro_project, text="no", trials="1")
    result_file = sevro_project.write_json("result.json", passed)
    run_dir = Path(str(failed["evidencePath"])).parent
    done = sevro_project.sevro("report", result_file, run_dir, "--json")
    assert done.exit_code == 0, done.stderr
    report = done.json()
    assert not list(validator("report.v1").iter_errors(report))
    assert report["summary"] == {"cases": 2, "passed": 1, "failed": 1, "notAssessed": 0}
    first, second = report["rows"]
    assert first["taskPassRate"] == 1.0 and first["trialCount"] == 2
    assert first["inputTokens"] is None and first["costUsd"] is None
    assert first["candidateDurationMs"] is not None
    assert first["candidateRoute"] == {
        "host": "sevro.host.scripted",
        "model": "scripted",
        "effort": "none",
    }
    assert second["task"] == "failed" and second["taskPassRate"] == 0.0


def test_markdown_report(sevro_project: SevroProject) -> None:
    result = make_run(sevro_project)
    done = sevro_project.sevro("report", Path(str(result["evidencePath"])).parent)
    assert done.exit_code == 0
    text = done.stdout
    assert text.startswith("# sevro report\n")
    for section in ("## Input runs", "## Case outcomes", "## Retained evidence", "## Routes"):
        assert section in text
    assert "| example | 2 | 100.0% | completed | completed | passed |" in text
    assert "| unknown | unknown | unknown |" in text
    assert "sevro.host.scripted/scripted@none" in text


def test_tampered_evidence_is_refused(sevro_project: SevroProject) -> None:
    result = make_run(sevro_project)
    run_dir = Path(str(result["evidencePath"])).parent
    raw = next(run_dir.rglob("trial-1-raw.txt"))
    raw.write_text("forged")
    done = sevro_project.sevro("report", run_dir)
    assert done.exit_code == 64
    assert f"{raw}: retained evidence does not match its recorded digest" in done.stderr


def test_result_that_differs_from_its_evidence_is_refused(sevro_project: SevroProject) -> None:
    result = make_run(sevro_project)
    forged = json.loads(json.dumps(result))
    forged["cases"][0]["passedTrials"] = 1
    path = sevro_project.write_json("forged.json", forged)
    done = sevro_project.sevro("report", path)
    assert done.exit_code == 64 and "differs from the one retained" in done.stderr


def test_pre_run_failure_result_is_reported_without_rows(sevro_project: SevroProject) -> None:
    refused = sevro_project.run(sevro_project.case(prompt=" "))
    path = sevro_project.write_json("refused.json", refused.json())
    done = sevro_project.sevro("report", path, "--json")
    assert done.exit_code == 0
    assert done.json()["rows"] == [] and done.json()["inputs"][0]["exitCode"] == 64


def test_bad_inputs(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("report", sevro_project.root / "nothing.json")
    assert done.exit_code == 64 and "does not exist" in done.stderr
    junk = sevro_project.write_json("junk.json", {"format": "x"})
    done = sevro_project.sevro("report", junk)
    assert done.exit_code == 64 and "junk.json#" in done.stderr
    done = sevro_project.sevro("report", junk, "--format", "html")
    assert done.exit_code == 64 and "no reporter for format 'html'" in done.stderr


def _forge_trial(run_dir: Path, change: Any, *, record_digest: bool | None) -> Path:
    """Rewrite trial 1 with ``change``; update (True), drop (None) or keep run.json's digest."""
    run = json.loads((run_dir / "run.json").read_text())
    ref = run["trials"][0]
    path = run_dir / ref["path"]
    document = json.loads(path.read_text())
    change(document)
    data = json.dumps(document, indent=2).encode()
    path.write_bytes(data)
    if record_digest is True:
        ref["sha256"] = hashlib.sha256(data).hexdigest()
    elif record_digest is None:
        for item in run["trials"]:
            item.pop("sha256", None)
    if record_digest is not False:
        (run_dir / "run.json").write_text(json.dumps(run, indent=2))
    return path


def test_schema_valid_edit_of_a_trial_file_is_refused_by_its_digest(
    sevro_project: SevroProject,
) -> None:
    run_dir = Path(str(make_run(sevro_project)["evidencePath"])).parent

    def slower(document: dict[str, Any]) -> None:
        document["evidence"]["durations"]["candidateMs"] = 1.0e6

    path = _forge_trial(run_dir, slower, record_digest=False)
    done = sevro_project.sevro("report", run_dir)
    assert done.exit_code == 64
    assert f"{path}: trial evidence does not match the digest recorded in run.json" in (done.stderr)


@pytest.mark.parametrize("record_digest", [True, None], ids=["digest-forged", "no-digest"])
def test_malformed_trial_file_is_refused_whatever_run_json_records(
    sevro_project: SevroProject, record_digest: bool | None
) -> None:
    run_dir = Path(str(make_run(sevro_project)["evidencePath"])).parent

    def malformed(document: dict[str, Any]) -> None:
        document["evidence"]["usage"]["inputTokens"] = "lots"

    path = _forge_trial(run_dir, malformed, record_digest=record_digest)
    done = sevro_project.sevro("report", run_dir)
    assert done.exit_code == 64, done.stderr
    assert f"{path}#/evidence/usage/inputTokens" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_retained_result_paths_are_relative_to_the_run_directory(
    sevro_project: SevroProject,
) -> None:
    result = make_run(sevro_project)
    run_json = Path(str(result["evidencePath"]))
    assert run_json.is_absolute() and run_json.is_file()
    trial_file = Path(result["cases"][0]["trials"][0]["artifactPath"])
    assert trial_file.is_absolute() and trial_file.is_file()
    run = json.loads(run_json.read_text())
    assert run["result"]["evidencePath"] == "run.json"
    assert run["result"]["cases"][0]["trials"][0]["artifactPath"] == "cases/example/trial-1.json"
    trial = json.loads(trial_file.read_text())
    assert trial["result"]["artifactPath"] == "cases/example/trial-1.json"
    moved = sevro_project.root / "archive" / "run"
    moved.parent.mkdir()
    run_json.parent.rename(moved)
    done = sevro_project.sevro("report", moved, "--json")
    assert done.exit_code == 0, done.stderr
    row = done.json()["rows"][0]
    assert row["evidencePath"] == str(moved / "run.json")
    assert row["trialFiles"][0] == str(moved / "cases/example/trial-1.json")


def test_non_finite_number_in_a_digest_forged_trial_file_is_refused(
    sevro_project: SevroProject,
) -> None:
    run_dir = Path(str(make_run(sevro_project)["evidencePath"])).parent

    def not_a_number(document: dict[str, Any]) -> None:
        document["evidence"]["durations"]["candidateMs"] = float("nan")

    path = _forge_trial(run_dir, not_a_number, record_digest=True)
    done = sevro_project.sevro("report", run_dir)
    assert done.exit_code == 64
    assert done.stderr == (
        f"sevro: error: {path}#/evidence/durations/candidateMs: number NaN is not finite "
        "(not JSON)\n"
    )


def test_a_fifo_in_place_of_run_json_does_not_block(sevro_project: SevroProject) -> None:
    import os

    run_dir = Path(str(make_run(sevro_project)["evidencePath"])).parent
    (run_dir / "run.json").unlink()
    os.mkfifo(run_dir / "run.json")
    done = sevro_project.sevro("report", run_dir)
    assert done.exit_code == 64
    assert (
        done.stderr
        == f"sevro: error: {run_dir / 'run.json'}: report input is not a regular file (a FIFO)\n"
    )
    listed = sevro_project.sevro("runs", "--json", "--results-root", sevro_project.results)
    assert listed.exit_code == 0 and listed.json()["runs"][0]["evidence"] == "missing"
