"""A verified ``sevro.report.v1`` document as JUnit XML, the format CI dashboards read.

One ``testsuite`` per run, one ``testcase`` per case (per case and arm in an experiment:
classname is the case id, name the arm). A proven failure is a ``failure`` naming the checks
that failed; execution failures, grading errors and unavailable evidence are ``error``; a case
nothing assessed (a dry run, no checks) is ``skipped`` with why, never a pass. Trial evidence
holds agent text, so every line goes through :func:`escape_text` (no control character reaches
the XML) and each testcase's text is bounded.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.limits import MAX_JUNIT_DETAIL_CHARS
from sevro_core.reporting.failures import escape_text, read_trial_evidence

EvidenceReader = Callable[[Path], Mapping[str, Any] | None]
_PROBLEMS = ("failure", "error", "skipped")


def outcome_kind(row: Mapping[str, Any]) -> str | None:
    """``failure``, ``error``, ``skipped`` or None (passed) for one report row.

    A proven failure stands even when another trial errored (as for the task verdict); a case
    that was not run in a run that exited 0 was a dry run, so it is skipped, not an error.
    """
    if row["task"] == "passed":
        return None
    if row["task"] == "failed":
        return "failure"
    if row["execution"] == "not_run" and row["exitCode"] == 0:
        return "skipped"
    if row["execution"] != "completed" or row["grading"] in ("error", "unavailable"):
        return "error"
    return "skipped"


def trial_lines(evidence: Mapping[str, Any]) -> list[str]:
    """Everything that kept one trial from passing: its execution error, grading error, every
    check that did not pass (id, grader, status, detail) and incomplete required evidence."""
    lines: list[str] = []
    execution = evidence.get("execution") or {}
    if execution.get("status") not in (None, "completed"):
        lines.append(f"execution {execution['status']}: {execution.get('message') or ''}")
    error = (evidence.get("grading") or {}).get("error")
    if error:
        lines.append(f"grading error in check {error.get('checkId')}: {error.get('message')}")
    for check in evidence.get("checks") or []:
        if check.get("status") != "passed":
            head = f"check {check.get('id')} ({check.get('grader')}) {check.get('status')}"
            detail = check.get("detail")
            lines.append(f"{head}: {detail}" if detail else head)
    for required in evidence.get("requiredEvidence") or []:
        if required.get("status") != "complete":
            lines.append(f"required evidence {required.get('id')} is {required.get('status')}")
    return [xml_text(line) for line in lines]


def xml_text(text: str, limit: int | None = None) -> str:
    """``text`` escaped for a person (:func:`escape_text`) and without the two characters XML
    1.0 forbids that escaping keeps (U+FFFE, U+FFFF): ElementTree then writes well-formed XML."""
    escaped = escape_text(text) if limit is None else escape_text(text, limit)
    return escaped.replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def _skip_reason(row: Mapping[str, Any]) -> str:
    if row["execution"] == "not_run":
        return "not run (a dry run): nothing was assessed"
    return "not assessed: the case has no checks or no trial was graded; this is not a pass"


def _details(row: Mapping[str, Any], read: EvidenceReader) -> tuple[str, str]:
    """The message (the first reason) and the text (every reason, by trial) of a testcase."""
    lines: list[str] = []
    first: str | None = None
    used = 0
    for index, path in enumerate(row["trialFiles"]):
        evidence = read(Path(path))
        if evidence is None or evidence.get("task", {}).get("verdict") == "passed":
            continue
        reasons = trial_lines(evidence)
        first = first or (reasons[0] if reasons else None)
        block = [f"trial {evidence.get('trial')}:", *(f"  {r}" for r in reasons)]
        size = sum(len(line) + 1 for line in block)
        if used + size > MAX_JUNIT_DETAIL_CHARS - 80:
            lines.append(f"... {len(row['trialFiles']) - index} more trial file(s) not shown")
            break
        lines += block
        used += size
    summary = f"{row['passedTrials']}/{row['trialCount']} trials passed"
    states = f"execution={row['execution']} grading={row['grading']} task={row['task']}"
    return (
        f"{summary}: {first}" if first else f"{summary} ({states})",
        "\n".join([states, *lines]),
    )


def _seconds(row: Mapping[str, Any]) -> float:
    duration = row.get("candidateDurationMs")
    return 0.0 if duration is None else duration / 1000


def _testcase(suite: ET.Element, row: Mapping[str, Any], read: EvidenceReader) -> str | None:
    name = row.get("arm") or row["caseId"]
    case = ET.SubElement(
        suite,
        "testcase",
        classname=xml_text(row["caseId"]),
        name=xml_text(name),
        time=f"{_seconds(row):.3f}",
    )
    kind = outcome_kind(row)
    if kind == "skipped":
        ET.SubElement(case, "skipped", message=_skip_reason(row))
    elif kind is not None:
        message, text = _details(row, read)
        kind_of = "sevro.task.failed" if kind == "failure" else f"sevro.{row['grading']}"
        problem = ET.SubElement(case, kind, message=message, type=kind_of)
        problem.text = text
    return kind


def junit_document(report: Mapping[str, Any], read: EvidenceReader = read_trial_evidence) -> bytes:
    """The report's runs as a JUnit ``testsuites`` document (UTF-8, with its declaration)."""
    root = ET.Element("testsuites", name="sevro")
    totals = dict.fromkeys(("tests", *_PROBLEMS), 0)
    seconds = 0.0
    for run in report["inputs"]:
        rows: Sequence[Mapping[str, Any]] = [
            r for r in report["rows"] if r["runId"] == run["runId"]
        ]
        suite = ET.SubElement(root, "testsuite", name=f"sevro {run['runId']}")
        counts = dict.fromkeys(("tests", *_PROBLEMS), 0)
        for row in rows:
            kind = _testcase(suite, row, read)
            counts["tests"] += 1
            if kind is not None:
                counts[kind] += 1
        run_seconds = sum(_seconds(r) for r in rows)
        for key, value in {"errors": counts["error"], "failures": counts["failure"]}.items():
            suite.set(key, str(value))
        suite.set("skipped", str(counts["skipped"]))
        suite.set("tests", str(counts["tests"]))
        suite.set("time", f"{run_seconds:.3f}")
        totals = {key: totals[key] + counts[key] for key in totals}
        seconds += run_seconds
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failure"]))
    root.set("errors", str(totals["error"]))
    root.set("skipped", str(totals["skipped"]))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"
