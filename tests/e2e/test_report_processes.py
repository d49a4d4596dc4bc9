"""`sevro report` splits large runs across forked processes: same document, same first error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.reporting import report
from sevro_core.testing import SevroProject
from tests.e2e.test_report import make_run

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="processes are used on Linux only")


def _build(run_dir: Path, *, processes: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setattr(report, "_PARALLEL_FROM_TRIALS", 1 if processes else 10**9)
    monkeypatch.setattr(report, "_verification_processes", lambda n: 3 if processes else 1)
    try:
        return report.build_report([run_dir], details=True)
    except InvocationError as exc:
        return f"error: {exc}"


def test_processes_give_the_sequential_report(
    sevro_project: SevroProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = Path(str(make_run(sevro_project, text="no", trials="7")["evidencePath"])).parent
    sequential = _build(run_dir, processes=False, monkeypatch=monkeypatch)
    assert isinstance(sequential, dict) and sequential["rows"][0]["failures"]["reasons"]
    assert _build(run_dir, processes=True, monkeypatch=monkeypatch) == sequential


def test_processes_name_the_first_bad_trial_as_a_sequential_check_would(
    sevro_project: SevroProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = Path(str(make_run(sevro_project, trials="7")["evidencePath"])).parent
    run = json.loads((run_dir / "run.json").read_text())
    for index in (5, 2):  # trials 6 and 3 land in different slices of three processes
        raw = run_dir / run["trials"][index]["path"]
        raw.write_bytes(raw.read_bytes().replace(b'"trial"', b'"trial" ', 1))
    sequential = _build(run_dir, processes=False, monkeypatch=monkeypatch)
    assert isinstance(sequential, str) and "trial-3.json" in sequential, sequential
    assert "does not match the digest" in sequential
    assert _build(run_dir, processes=True, monkeypatch=monkeypatch) == sequential
