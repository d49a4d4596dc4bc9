"""One trial as the viewer shows it, from hand-made evidence: check parts, turns, tool calls in
order, judges, advisory findings, control characters and bounds, and paths that leave the run."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_VIEWER_TEXT_CHARS
from sevro_core.reporting.viewer.page import lazy_trials, projected_trial
from sevro_core.reporting.viewer.render import render_page
from sevro_core.reporting.viewer.trials import diff_lines, inside, trial_view, visible
from sevro_core.testing import require_chromium
from sevro_core.vocabulary import NATIVE_TRANSCRIPTS_ARTIFACT, NATIVE_TRANSCRIPTS_OBSERVATION
from tests.viewer.browser import chromium_page


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
    return trial_view(run_dir, ref, document)


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


def one_run_page(shown_trials: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The page model of one plain run holding ``shown_trials`` (anchor, view), as
    ``build_page`` makes it."""
    trials = [
        {**projected_trial(view, view["caseId"]), "anchor": anchor} for anchor, view in shown_trials
    ]
    return {
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
                **lazy_trials(1, trials),
                "checks": ["verify", "verify/title"],
                "passRates": None,
                "figures": [],
                "statistics": None,
                "pairs": [],
            }
        ],
        "openGroups": True,
        "summary": {"cases": 1, "passed": 0, "failed": 1, "notAssessed": 0},
        "states": ["passed", "failed", "not_assessed"],
        "executionStates": sorted({t["execution"] for t in trials}),
        "gradingStates": sorted({t["grading"] for t in trials}),
        "cases": sorted({t["caseId"] for t in trials}),
        "arms": [],
        "checks": ["verify", "verify/title"],
    }


def test_the_rendered_trial_escapes_details_and_marks_parts(tmp_path: Path) -> None:
    """The trial's details are drawn by the page's script, in Chromium, when it is opened."""
    chromium = require_chromium()
    page = one_run_page([("trial-x-c-1", shown(tmp_path))])
    html = render_page(page)
    assert "<b>Title</b>" not in html and "<nothing>" not in html
    page_file = tmp_path / "index.html"
    page_file.write_text(html, encoding="utf-8")
    with chromium_page(chromium) as browser:
        browser.goto(page_file.as_uri())
        trial = browser.locator("details.trial").first
        assert trial.locator(".trial-body.lazy").count() == 1  # nothing drawn before opening
        assert browser.locator("table.checks").count() == 0
        trial.locator("summary").click()
        body = trial.locator(".trial-body")
        assert body.locator(".part-of").inner_text() == "part of verify:"
        part = body.locator("tr.part").first
        assert part.get_attribute("data-check") == "verify/title"
        assert "verify/title" in part.locator("td").first.inner_text()
        text = body.inner_text()
        assert "expected <b>Title</b>" in text and body.locator("b").count() == 0
        assert "judge said <nothing>" in text
        reply = body.locator("pre.judge-reply").inner_text()
        assert reply == '{"verdict": "fail", "why": "<no>"}'
        cells = body.locator("table.usage tr").nth(1).locator("td").all_inner_texts()
        assert cells == ["10", "5", "0.25", "yes", "unknown", "12", "unknown", "unknown"]
        assert "Final messages per turn" in text


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
        trial_view(tmp_path, {"path": "cases/c/trial-1.json"}, document)


def test_execution_and_grading_filters_and_a_deep_link_into_a_filtered_out_trial(
    tmp_path: Path,
) -> None:
    chromium = require_chromium()
    first = shown(tmp_path)
    second = {**first, "caseId": "d", "execution": "failed", "grading": "not_run"}
    second["task"] = "not_assessed"
    page = one_run_page([("trial-x-c-1", first), ("trial-r-d-1", second)])
    page_file = tmp_path / "index.html"
    page_file.write_text(render_page(page), encoding="utf-8")
    with chromium_page(chromium) as browser:
        browser.goto(page_file.as_uri())
        count = browser.locator("#filter-count")
        assert count.inner_text() == "2 of 2 trials shown"
        browser.select_option("#filter-execution", "failed")
        assert count.inner_text() == "1 of 2 trials shown"
        assert browser.locator("#trial-r-d-1").is_visible()
        browser.select_option("#filter-grading", "completed")  # no trial is both
        assert count.inner_text() == "0 of 2 trials shown"
        browser.select_option("#filter-execution", "")
        assert count.inner_text() == "1 of 2 trials shown"
        assert browser.locator("#trial-r-d-1").is_hidden()
        assert browser.locator(".trial-body:not(.lazy)").count() == 0  # none drawn yet
        # a deep link to the filtered-out trial of another case clears the filters, draws it
        browser.goto(f"{page_file.as_uri()}#trial-r-d-1")
        linked = browser.locator("#trial-r-d-1")
        assert linked.evaluate("e => e.open") is True and linked.is_visible()
        assert "execution failed" in linked.locator(".states").inner_text()
        assert count.inner_text() == "2 of 2 trials shown"
        assert browser.locator(".trial-body:not(.lazy)").count() == 1  # only the linked one


def test_packed_details_survive_any_string_and_unpack_to_the_view() -> None:
    """A lone surrogate or any other character in a view (none should reach it, but the page
    must not fail on one) is carried as an escape; the packed block unpacks to the view."""
    import base64
    import gzip
    import json

    view = {"caseId": "c", "arm": "", "trial": 1, "execution": "completed", "grading": "x"}
    view |= {"task": "passed", "checks": [], "reason": "a\ud800b é 漢 </script>"}
    trial = {**projected_trial(view, "c"), "anchor": "trial-r-c-1"}
    (block,) = lazy_trials(1, [trial])["blocks"]
    unpacked = json.loads(gzip.decompress(base64.b64decode(block["data"])))
    assert unpacked == {"trial-r-c-1": view}
    assert "<" not in block["data"]


def test_a_native_transcript_bundle_is_listed_with_its_status(tmp_path: Path) -> None:
    """The bundle is an evidence path like every host artifact, with one line saying what it
    holds; unavailable, the line gives the reason; a trial that asked for none shows none."""
    assert shown(tmp_path)["nativeTranscripts"] is None  # the negative control
    document = {"caseId": "c", "trial": 1, "arm": None, "evidence": evidence(tmp_path)}
    bundle = blob(tmp_path, "cases/c/trial-1-n.bin", b'{"entries":[]}')
    document["evidence"]["artifactRefs"].append({"id": NATIVE_TRANSCRIPTS_ARTIFACT, **bundle})
    data = {"status": "complete", "artifact": NATIVE_TRANSCRIPTS_ARTIFACT, "entries": 2}
    data |= {"rawBytes": 10, "encodedBytes": 14, "sha256": "ab" * 32, "reason": None}
    found = {"id": NATIVE_TRANSCRIPTS_OBSERVATION, "data": data}
    document["evidence"]["observations"].append(found)
    trial = trial_view(tmp_path, {"path": "cases/c/trial-1.json"}, document)
    assert "cases/c/trial-1-n.bin" in trial["paths"]
    assert trial["nativeTranscripts"] == (
        f"complete: 2 files, 10 bytes (bundle 14 bytes, sha256 {'ab' * 32})"
    )
    found["data"] = {"status": "unavailable", "artifact": None, "reason": "too <big>"}
    trial = trial_view(tmp_path, {"path": "cases/c/trial-1.json"}, document)
    assert trial["nativeTranscripts"] == "unavailable: too <big>"
