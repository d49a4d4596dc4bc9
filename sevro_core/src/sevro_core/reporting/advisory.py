"""Advisory reviews as reports show them: per trial, escaped and bounded, apart from verdicts.

A review's findings, answers and reasons are a model's text about an agent's text, so every
string goes through :func:`~sevro_core.reporting.failures.escape_text` once, here. Reviews are
shown next to the outcomes, labelled advice: nothing here feeds a verdict or an exit code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sevro_core.limits import MAX_FAILURE_REASON_CHARS
from sevro_core.reporting.failures import escape_text

LABEL = "advisory — does not affect the verdict"


def advisory_trials(evidences: Iterable[tuple[int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Each trial's review (trials without one are skipped), in trial order."""
    out = []
    for trial, evidence in sorted(evidences, key=lambda item: item[0]):
        review = evidence.get("advisoryReview")
        if not isinstance(review, Mapping):
            continue
        row: dict[str, Any] = {
            "trial": trial,
            "status": review["status"],
            "findings": [
                {
                    "severity": f["severity"],
                    "file": escape_text(f["file"]),
                    "lines": list(f["lines"]),
                    "title": escape_text(f["title"]),
                }
                for f in review["findings"]
            ],
            "droppedFindings": review["droppedFindings"],
            "answers": [
                {
                    "question": escape_text(a["question"]),
                    "answer": escape_text(a["answer"], 2 * MAX_FAILURE_REASON_CHARS),
                }
                for a in review["answers"]
            ],
        }
        if review.get("reason"):
            row["reason"] = escape_text(review["reason"])
        if review.get("summary"):
            row["summary"] = escape_text(review["summary"], 2 * MAX_FAILURE_REASON_CHARS)
        out.append(row)
    return out


def advisory_lines(case: str, trials: Iterable[Mapping[str, Any]]) -> list[str]:
    """Plain lines for a terminal summary: one per finding, answer and unfinished review."""
    lines = []
    for row in trials:
        head = f"{case} trial {row['trial']} ({LABEL})"
        if row["status"] != "completed":
            lines.append(f"{head}: review {row['status']}: {row.get('reason', '')}".rstrip(": "))
            continue
        for f in row["findings"]:
            first, last = f["lines"]
            lines.append(f"{head}: {f['severity']} {f['file']}:{first}-{last} {f['title']}")
        if row["droppedFindings"]:
            lines.append(f"{head}: {row['droppedFindings']} finding(s) dropped (no such lines)")
        for a in row["answers"]:
            lines.append(f"{head}: Q: {a['question']} A: {a['answer']}")
    return lines
