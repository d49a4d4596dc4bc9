"""One trial as the viewer shows it, from hand-made evidence: check parts, turns, tool calls in
order, judges, advisory findings, control characters and bounds, and paths that leave the run."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_VIEWER_TEXT_CHARS
from sevro_core.reporting.viewer.render import render_page
from sevro_core.reporting.viewer.trials import diff_lines, inside, trial_view, visible


def blob(run_dir: Path, relative: str, data: bytes) -> dict[str, Any]:
    path = run_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"path": relative, "sha256": hashlib.sha256(data).hexdigest(), "byteLength": len(data)}


def evidence(run_dir: Path) -> dict[str, Any]:
    diff = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new \x1b[31mred\n ctx\n"
    return {
        "execution": {"status": "completed"},
        "grading": {"status": "completed", "error": None},
        "task": {"verdict": "failed"},
        "checks": [
            {"id": "verify", "grader": "sevro.verifier", "status": "failed", "evidenceRefs": []},
            {
                "id": "verify/title",
                "grader": "sevro.verifier",
                "status": "failed",
                "detail": "expected <b>Title</b>",
                "partOf": "verify",
                "evidenceRefs": [],
            },
        ],
        "requiredEvidence": [],
        "observations": [
            {
                "id": "sevro.observation.turns",
                "data": {"turns": [{"turn": 1, "reply": "first"}, {"turn": 2, "reply": "second"}]},
            },
            {
                "id": "sevro.tool-calls",
                "data": {
                    "calls": [
                        {"turn": 2, "ordinal": 1, "kind": "mcp", "tool": "t2", "text": "later"},
                        {"turn": 1, "ordinal": 3, "kind": "edit", "text": "earlier"},
                    ]
                },
            },
            {
                "id": "sevro.commands",
                "data": {"commands": [{"turn": 1, "ordinal": 1, "command": "ls", "exitCode": 0}]},
            },
        ],
        "usage": {"inputTokens": 10, "outputTokens": 5, "costUsd": 0.25, "complete": True},
        "durations": {"candidateMs": 12.0},
        "judges": {
            "calls": [
                {
                    "number": 1,
                    "role": "semantic",
                    "purpose": "check verify",
                    "complete": False,
                    "error": "judge said <nothing>",
                    "durationMs": 3,
                    "artifacts": ["sevro.judge.semantic.1.prompt", "sevro.judge.semantic.1.reply"],
                }
            ],
            "usage": {},
        },
        "advisoryReview": {
            "status": "completed",
            "summary": "looks fine",
            "findings": [
                {"severity": "minor", "file": "a.py", "lines": [1, 2], "title": "t", "detail": "d"}
            ],
        },
        "rawResult": blob(run_dir, "cases/c/trial-1-raw.txt", b"second"),
        "artifactRefs": [
            {"id": "sevro.git.diff", **blob(run_dir, "cases/c/trial-1-d.bin", diff)},
            {
                "id": "sevro.judge.semantic.1.reply",
                **blob(run_dir, "cases/c/trial-1-r.bin", b'{"verdict": "fail", "why": "<no>"}'),
            },
        ],
    }


def shown(run_dir: Path) -> dict[str, Any]:
    document = {"caseId": "c", "trial": 1, "arm": None, "evidence": evidence(run_dir)}
    ref = {"path": "cases/c/trial-1.json"}
    return trial_view(run_dir, ref, document, "trial-x-c-1")


def test_a_trial_shows_parts_turns_ordered_actions_judges_and_the_diff(tmp_path: Path) -> None:
    trial = shown(tmp_path)
    assert [(c["id"], c["partOf"]) for c in trial["checks"]] == [
        ("verify", None),
        ("verify/title", "verify"),
    ]
    assert [m["text"] for m in trial["messages"]] == ["first", "second"]
    assert [a["text"] for a in trial["actions"]] == ["ls", "earlier", "later"]
    assert trial["judges"][0]["error"] == "judge said <nothing>"
    assert trial["judges"][0]["reply"] == '{"verdict": "fail", "why": "<no>"}'  # the reply only
    assert trial["advisory"]["findings"][0]["file"] == "a.py"
    assert ("add", "+new \\x1b[31mred") in trial["diff"]["lines"]  # ANSI made visible
    assert ("del", "-old") in trial["diff"]["lines"] and ("hunk", "@@ -1 +1 @@") in trial["diff"][
        "lines"
    ]
    assert trial["paths"] == [
        "cases/c/trial-1.json",
        "cases/c/trial-1-raw.txt",
        "cases/c/trial-1-d.bin",
        "cases/c/trial-1-r.bin",
    ]


def test_the_rendered_trial_escapes_details_and_marks_parts(tmp_path: Path) -> None:
    trial = {**shown(tmp_path), "unit": "c"}
    page = {
        "runs": [
            {
                "runId": "r",
                "source": "s",
                "status": "completed",
                "startedAt": "a",
                "finishedAt": "b",
                "result": {
                    "execution": {"status": "completed"},
                    "grading": {"status": "completed"},
                    "task": {"verdict": "failed"},
                    "exitCode": 1,
                },
                "evaluationDigest": "d",
                "arms": [],
                "cases": [],
                "trials": [trial],
                "checks": ["verify", "verify/title"],
                "chart": {"bars": []},
                "statistics": None,
                "pairs": [],
            }
        ],
        "summary": {"cases": 1, "passed": 0, "failed": 1, "notAssessed": 0},
        "states": ["passed", "failed", "not_assessed"],
        "cases": ["c"],
        "arms": [],
        "checks": ["verify", "verify/title"],
    }
    html = render_page(page)
    assert '<span class="part-of">part of verify:</span> verify/title' in html
    assert "expected &lt;b&gt;Title&lt;/b&gt;" in html and "<b>Title</b>" not in html
    assert "judge said &lt;nothing&gt;" in html
    assert (
        '<pre class="judge-reply">{&#34;verdict&#34;: &#34;fail&#34;, '
        "&#34;why&#34;: &#34;&lt;no&gt;&#34;}" in html
    )
    assert "<td>10</td><td>5</td><td>0.25</td><td>yes</td>" in html
    assert "<td>unknown</td><td>12</td><td>unknown</td><td>unknown</td>" in html
    assert "Final messages per turn" in html


def test_visible_keeps_lines_escapes_controls_and_bounds_text() -> None:
    assert visible("a\nb\x1b[0m\u202e") == "a\nb\\x1b[0m\\u202e"
    long = visible("x" * (MAX_VIEWER_TEXT_CHARS + 5))
    assert long.endswith("… (5 more characters not shown)")
    assert visible("x" * MAX_VIEWER_TEXT_CHARS) == "x" * MAX_VIEWER_TEXT_CHARS  # at the bound
    assert visible(None) == ""


def test_diff_lines_classify_every_kind() -> None:
    kinds = [k for k, _ in diff_lines("diff --git a b\n+++ b\n--- a\n@@ x\n+a\n-b\n c")]
    assert kinds == ["file", "file", "file", "hunk", "add", "del", "ctx"]


@pytest.mark.parametrize("relative", ["../outside.txt", "/etc/passwd", "a/../../x", "a\0b"])
def test_evidence_paths_that_leave_the_run_are_refused(tmp_path: Path, relative: str) -> None:
    with pytest.raises(InvocationError, match="leaves the run directory"):
        inside(tmp_path, relative)
    assert inside(tmp_path, "cases/a.json") == tmp_path.resolve() / "cases" / "a.json"


def test_a_changed_artifact_is_refused(tmp_path: Path) -> None:
    trial_evidence = evidence(tmp_path)
    (tmp_path / "cases/c/trial-1-d.bin").write_bytes(b"+tampered\n")
    document = {"caseId": "c", "trial": 1, "arm": None, "evidence": trial_evidence}
    with pytest.raises(InvocationError, match="digest"):
        trial_view(tmp_path, {"path": "cases/c/trial-1.json"}, document, "a")


def test_the_chart_draws_each_rate_and_its_interval_and_no_bar_for_unknown() -> None:
    from sevro_core.reporting.viewer.chart import PLOT_WIDTH, pass_rate_chart

    rows = [
        {"caseId": "a", "arm": "candidate", "rate": 0.75, "interval": {"low": 0.5, "high": 0.9}},
        {"caseId": "b", "arm": "", "rate": None, "interval": None},
    ]
    chart = pass_rate_chart(rows)
    known, unknown = chart["bars"]
    assert (known["label"], known["width"], known["value"]) == (
        "a @ candidate",
        0.75 * PLOT_WIDTH,
        "75%",
    )
    assert (known["low"], known["high"]) == (0.5 * PLOT_WIDTH, 0.9 * PLOT_WIDTH)
    assert (unknown["label"], unknown["width"], unknown["low"], unknown["value"]) == (
        "b",
        None,
        None,
        "unknown",
    )
    assert unknown["y"] > known["y"]
