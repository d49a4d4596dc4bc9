"""`sevro view` builds each trial's view inside `sevro report`'s verification (one read of each
file, in its worker processes for large runs): the page must count what the report counts and
refuse what the report refuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sevro_core.reporting import report as report_module
from sevro_core.reporting.report import build_report
from sevro_core.reporting.viewer.page import build_page
from sevro_core.testing import run_in_process


@pytest.fixture(params=["one process", "worker processes"])
def verification(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both paths of the report's verification: in the parent, and in forked workers."""
    if request.param == "worker processes":
        monkeypatch.setattr(report_module, "_PARALLEL_FROM_TRIALS", 1)
    return str(request.param)


def test_the_page_counts_what_the_report_counts(experiment_run: Path, verification: str) -> None:
    report = build_report([experiment_run], details=True)
    page = build_page([experiment_run])
    assert page["summary"] == report["summary"]
    (run,) = page["runs"]
    run_json = json.loads((experiment_run / "run.json").read_text(encoding="utf-8"))
    listed = [t for t in run_json["trials"] if t["path"] is not None]
    assert len(run["trials"]) == len(listed) > 1
    assert [(t["caseId"], t["trial"]) for t in run["trials"]] == [
        (t["caseId"], t["trial"]) for t in listed
    ]
    shown = {(c["caseId"], c["arm"]): (c["trialCount"], c["passedTrials"]) for c in run["cases"]}
    counted = {
        (r["caseId"], r.get("arm") or ""): (r["trialCount"], r["passedTrials"])
        for r in report["rows"]
    }
    assert shown == counted
    passed = sum(1 for t in run["trials"] if t["task"] == "passed")
    assert passed == sum(r["passedTrials"] for r in report["rows"])
    assert len({t["anchor"] for t in run["trials"]}) == len(listed)


def _tampered_copy(run: Path, tmp_path: Path, tamper: bool) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy, symlinks=True)
    if tamper:
        listed = json.loads((copy / "run.json").read_text(encoding="utf-8"))["trials"]
        trial = copy / next(t["path"] for t in listed if t["path"] is not None)
        document = json.loads(trial.read_text(encoding="utf-8"))
        document["evidence"]["task"]["verdict"] = "passed"
        trial.write_text(json.dumps(document, indent=3), encoding="utf-8")
    return copy


@pytest.mark.parametrize("tamper", [False, True], ids=["untouched", "tampered"])
def test_view_and_report_refuse_the_same_tampered_trial(
    experiment_run: Path, tmp_path: Path, verification: str, tamper: bool
) -> None:
    copy = _tampered_copy(experiment_run, tmp_path, tamper)
    reported = run_in_process(["report", str(copy)])
    viewed = run_in_process(["view", str(copy), "--out", str(tmp_path / "view")])
    if not tamper:
        assert reported.exit_code == 0 and viewed.exit_code == 0, viewed.stderr
        return
    for done in (reported, viewed):
        assert done.exit_code == 64, done.stdout + done.stderr
        assert "does not match the digest recorded in run.json" in done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "view" / "index.html").exists()


def test_more_trials_than_one_page_shows_are_refused_before_any_is_read(
    experiment_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sevro_core.errors import InvocationError
    from sevro_core.reporting.viewer import page as page_module

    listed = json.loads((experiment_run / "run.json").read_text(encoding="utf-8"))["trials"]
    with_files = sum(1 for t in listed if t["path"] is not None)

    def no_read(*_: object) -> None:
        raise AssertionError("a trial was read")

    monkeypatch.setattr(page_module, "MAX_VIEWER_TRIALS", with_files - 1)
    monkeypatch.setattr(report_module, "_check_trial", no_read)
    with pytest.raises(InvocationError, match=f"more than {with_files - 1} trials to view"):
        build_page([experiment_run])
    # control: at the bound the trials are read (and the stand-in reader says so)
    monkeypatch.setattr(page_module, "MAX_VIEWER_TRIALS", with_files)
    with pytest.raises(AssertionError, match="a trial was read"):
        build_page([experiment_run])
