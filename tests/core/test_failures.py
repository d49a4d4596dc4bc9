"""Failure reasons: one escaping helper, a fixed precedence, compact trial ranges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.reporting.failures import (
    case_failures,
    escape_text,
    render_failures,
    result_failures,
    trial_ranges,
    trial_reason,
)


def test_escape_text_neutralises_terminal_controls() -> None:
    raw = "a\x1b[31mb\x9b2Jc\x7fd\u202ee\u200bf\u2028g\r\n\th"
    assert escape_text(raw) == "a\\x1b[31mb\\x9b2Jc\\x7fd\\u202ee\\u200bf\\u2028g\\r\\n\\th"
    assert escape_text("plain é ü 漢字") == "plain é ü 漢字"


def test_escape_text_is_bounded_after_escaping() -> None:
    assert escape_text("abcdef", 4) == "abc…"
    assert escape_text("\x1b" * 10, 8) == "\\x1b\\x1…"
    assert len(escape_text("\x00" * 10_000, 100)) == 100
    assert escape_text("abcd", 4) == "abcd"


def evidence(**parts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "execution": {"status": "completed"},
        "grading": {"status": "completed", "error": None},
        "checks": [],
        "requiredEvidence": [],
    }
    base.update(parts)
    return base


def test_reason_precedence() -> None:
    failed = {"id": "c", "grader": "g", "status": "failed", "detail": "d"}
    assert trial_reason(evidence()) is None
    assert trial_reason(evidence(checks=[failed])) == "check c (g) failed: d"
    missing = [{"id": "sevro.skills", "status": "partial"}]
    assert trial_reason(evidence(requiredEvidence=missing)) == (
        "required evidence sevro.skills is partial"
    )
    assert trial_reason(evidence(checks=[failed], requiredEvidence=missing)) == (
        "check c (g) failed: d"
    )
    error = {"status": "error", "error": {"checkId": "c", "message": "boom"}}
    assert trial_reason(evidence(grading=error, checks=[failed])) == (
        "grading error in check c: boom"
    )
    execution = {"status": "failed", "errorCode": "sevro.host.failed", "message": "Not logged in"}
    assert trial_reason(evidence(execution=execution, grading=error)) == (
        "execution failed (sevro.host.failed): Not logged in"
    )


def test_case_failures_group_trials_by_reason() -> None:
    failed = {"id": "c", "grader": "g", "status": "failed", "detail": "d"}
    case = {
        "caseId": "x",
        "task": "failed",
        "trialCount": 4,
        "trials": [
            {
                "trial": n,
                "task": "passed" if n == 2 else "failed",
                "execution": "completed",
                "checks": [],
            }
            for n in (1, 2, 3, 4)
        ],
    }
    other = evidence(execution={"status": "failed", "message": "m"})
    found = case_failures(
        case, {1: evidence(checks=[failed]), 3: other, 4: evidence(checks=[failed])}
    )
    assert found is not None
    assert found.reasons == (((1, 4), "check c (g) failed: d"), ((3,), "execution failed: m"))
    assert case_failures({**case, "task": "passed"}, {}) is None


def test_trial_ranges() -> None:
    assert trial_ranges([3, 1, 2, 5, 7, 8]) == "1-3, 5, 7-8"
    assert trial_ranges(list(range(1, 100, 2)), max_ranges=2) == "1, 3, …"


def test_summary_reads_a_bounded_number_of_trial_files(tmp_path: Path) -> None:
    failed = {"id": "c", "grader": "g", "status": "failed", "detail": "d"}
    trials = []
    for n in (1, 2, 3):
        path = tmp_path / f"trial-{n}.json"
        path.write_text(json.dumps({"evidence": evidence(checks=[failed])}))
        trials.append(
            {
                "trial": n,
                "task": "failed",
                "execution": "completed",
                "checks": [],
                "artifactPath": path.name,
            }
        )
    case = {
        "caseId": "x",
        "task": "failed",
        "execution": "completed",
        "grading": "completed",
        "trialCount": 3,
        "trials": trials,
    }
    result = {"evidencePath": str(tmp_path / "run.json"), "cases": [case]}
    (found,), more = result_failures(result, max_cases=5, max_files=2)
    assert more == 0
    assert found.reasons == (((1, 2), "check c (g) failed: d"),) and found.unexamined == 1
    assert render_failures([found], max_reasons=3) == [
        "  x (trials 1-2 of 3): check c (g) failed: d",
        "  x: … and 1 more trial(s) not examined here",
    ]
    (everything,), _ = result_failures(result, max_cases=5)
    assert everything.reasons == (((1, 2, 3), "check c (g) failed: d"),)
    assert everything.unexamined == 0


def test_a_cause_is_listed_before_the_trials_it_stopped() -> None:
    trials = [
        {"trial": 1, "task": "not_assessed", "execution": "failed", "checks": []},
        *(
            {"trial": n, "task": "not_assessed", "execution": "not_run", "checks": []}
            for n in (2, 3)
        ),
    ]
    case = {"caseId": "x", "task": "not_assessed", "trialCount": 3, "trials": trials}
    cause = evidence(execution={"status": "failed", "errorCode": "e", "message": "m"})
    found = case_failures(case, {1: cause})
    assert found is not None
    assert found.reasons[0] == ((1,), "execution failed (e): m")
    assert found.reasons[1][0] == (2, 3) and found.reasons[1][1].startswith("not run:")


def test_escape_controls_passes_printable_text_through_and_escapes_every_unsafe_character() -> None:
    """Printable text is returned as it is (the fast path); every other character of the Basic
    Multilingual Plane and beyond decides as the per-character rule does."""
    import sys
    import unicodedata

    from sevro_core.reporting.failures import escape_controls

    unsafe = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    for code in [*range(0x3000), *range(0xFE00, 0x10000), 0x1F600, 0xE0001, sys.maxunicode]:
        char = chr(code)
        if char in named:
            expected = named[char]
        elif unicodedata.category(char) in unsafe:
            expected = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        else:
            expected = char
        assert escape_controls(f"a{char}b") == f"a{expected}b", hex(code)
    text = "plain text, ünïcødé and emoji 😀"
    assert escape_controls(text) is text  # negative control of the slow path: nothing copied
