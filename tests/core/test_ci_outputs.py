"""The CI outputs' rules without a run: which JUnit element a row becomes, the bounds on a
testcase's text and on the step summary, and appending to a summary other steps wrote."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sevro_core.limits import MAX_GITHUB_SUMMARY_BYTES, MAX_JUNIT_DETAIL_CHARS
from sevro_core.reporting.ci import (
    CiOutputs,
    append_github_summary,
    bounded_summary,
    write_ci_outputs,
)
from sevro_core.reporting.junit import junit_document, outcome_kind


def row(**fields: Any) -> dict[str, Any]:
    base = {
        "runId": "r1",
        "caseId": "c",
        "execution": "completed",
        "grading": "completed",
        "task": "passed",
        "exitCode": 0,
        "trialCount": 1,
        "passedTrials": 1,
        "candidateDurationMs": 1500,
        "trialFiles": [],
    }
    return {**base, **fields}


def report(*rows: Mapping[str, Any]) -> dict[str, Any]:
    return {"inputs": [{"runId": "r1"}], "rows": list(rows)}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, None),
        ({"task": "failed", "exitCode": 1}, "failure"),
        ({"task": "failed", "grading": "unavailable", "exitCode": 4}, "failure"),
        ({"task": "not_assessed", "grading": "error", "exitCode": 3}, "error"),
        ({"task": "not_assessed", "grading": "unavailable", "exitCode": 4}, "error"),
        ({"task": "not_assessed", "execution": "failed", "exitCode": 2}, "error"),
        ({"task": "not_assessed", "execution": "cancelled", "exitCode": 130}, "error"),
        ({"task": "not_assessed", "execution": "not_run", "exitCode": 2}, "error"),
        ({"task": "not_assessed", "execution": "not_run", "exitCode": 0}, "skipped"),
        ({"task": "not_assessed", "grading": "not_requested"}, "skipped"),
    ],
)
def test_each_state_becomes_one_junit_outcome(fields: dict[str, Any], expected: str | None) -> None:
    assert outcome_kind(row(**fields)) == expected


def test_not_assessed_is_never_a_pass() -> None:
    document = junit_document(report(row(task="not_assessed", grading="not_requested")))
    root = ET.fromstring(document)
    assert root.attrib["skipped"] == "1" and root.attrib["tests"] == "1"
    assert root.find("testsuite/testcase/skipped") is not None


def test_a_testcase_text_is_bounded_and_says_what_was_left_out() -> None:
    files = [f"/run/cases/c/trial-{n}.json" for n in range(1, 2001)]

    def read(path: Path) -> Mapping[str, Any]:
        n = int(path.stem.removeprefix("trial-"))
        check = {"id": "x", "grader": "g", "status": "failed", "detail": "d" * 200}
        return {"trial": n, "task": {"verdict": "failed"}, "checks": [check]}

    failing = row(task="failed", exitCode=1, trialCount=2000, passedTrials=0, trialFiles=files)
    root = ET.fromstring(junit_document(report(failing), read))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and failure.text is not None
    assert len(failure.text) <= MAX_JUNIT_DETAIL_CHARS
    assert failure.text.rstrip().endswith("more trial file(s) not shown")
    assert "trial 1:" in failure.text and "trial 2000:" not in failure.text
    # negative control: a few trials are all shown
    few = row(task="failed", exitCode=1, trialCount=3, passedTrials=0, trialFiles=files[:3])
    shown = ET.fromstring(junit_document(report(few), read)).find("testsuite/testcase/failure")
    assert shown is not None and "not shown" not in str(shown.text)
    assert "trial 3:" in str(shown.text)


def test_times_and_counts_add_up_across_suites() -> None:
    doc = {
        "inputs": [{"runId": "a"}, {"runId": "b"}],
        "rows": [
            row(runId="a"),
            row(runId="b", task="failed", exitCode=1, passedTrials=0),
            row(runId="b", caseId="d", candidateDurationMs=None),
        ],
    }
    root = ET.fromstring(junit_document(doc, lambda _: None))
    assert [s.attrib["tests"] for s in root.iter("testsuite")] == ["1", "2"]
    assert (root.attrib["tests"], root.attrib["failures"], root.attrib["time"]) == (
        "3",
        "1",
        "3.000",
    )


def test_a_long_summary_is_cut_at_a_line_within_the_room() -> None:
    text = "".join(f"| row {n} |\n" for n in range(1000))
    cut = bounded_summary(text, 2000)
    assert len(cut) <= 2000 and b"Summary cut" in cut
    assert cut.split(b"\n\n*Summary cut")[0].endswith(b"|")  # whole lines only
    assert bounded_summary(text, 10**6) == text.encode()  # negative control: room enough
    assert bounded_summary(text, 10) == b""


def test_the_summary_file_stays_within_githubs_cap(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"x" * (MAX_GITHUB_SUMMARY_BYTES - 500) + b"\n")
    appended = append_github_summary("# report\n" + "| line |\n" * 1000, summary)
    assert 0 < appended <= 500
    assert summary.stat().st_size <= MAX_GITHUB_SUMMARY_BYTES
    assert summary.read_bytes().startswith(b"x" * 100)  # what the step wrote is kept
    assert append_github_summary("# more\n" * 1000, summary) == 0  # full: nothing appended


def test_no_summary_variable_is_a_note_and_no_junit_file_is_written(tmp_path: Path) -> None:
    notes: list[str] = []
    write_ci_outputs(
        CiOutputs(None, github_summary=True), report(row()), lambda _: "md", notes.append, {}
    )
    assert notes == ["--github-summary: $GITHUB_STEP_SUMMARY is not set; no summary written"]
    assert list(tmp_path.iterdir()) == []
    target = tmp_path / "s.md"
    write_ci_outputs(
        CiOutputs(tmp_path / "j.xml", github_summary=True),
        report(row()),
        lambda _: "md",
        notes.append,
        {"GITHUB_STEP_SUMMARY": str(target)},
    )
    assert target.read_text() == "md\n" and (tmp_path / "j.xml").is_file() and len(notes) == 1
