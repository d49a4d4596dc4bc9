"""Why a case did not pass, as one short, safe line per distinct reason.

Reasons come from trial evidence, which holds agent and model text: every reason goes through
:func:`escape_text` once, so control characters, ANSI escapes, bidirectional overrides and
newlines never reach a terminal or a Markdown table raw, and every reason is bounded.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.limits import MAX_FAILURE_REASON_CHARS, MAX_SUMMARY_TRIAL_FILES
from sevro_core.models import unit_key
from sevro_core.store.spendgate import SPEND_STOP_CODE

NOT_RUN_REASON = (
    "not run: the run stopped admitting trials after an execution failure or grading error"
)
CANCELLED_REASON = "cancelled: the run was interrupted before this trial finished"
SPEND_NOT_RUN_REASON = (
    "not run: the run's spend ceiling was reached before this trial could reserve its call"
)
_CONSEQUENCES = frozenset({NOT_RUN_REASON, CANCELLED_REASON, SPEND_NOT_RUN_REASON})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def escape_text(text: str, limit: int = MAX_FAILURE_REASON_CHARS) -> str:
    """``text`` through :func:`escape_controls`, cut to ``limit`` characters (``…`` marks a cut).

    The one helper for untrusted text shown to a person; the result never exceeds ``limit``.
    """
    escaped = escape_controls(text[: limit + 1])
    if len(text) > limit or len(escaped) > limit:
        return escaped[: max(limit - 1, 0)] + "…"
    return escaped


def escape_controls(text: str) -> str:
    """``text`` with every control or format character written as an escape: C0/C1 controls
    (ESC starts ANSI sequences), DEL, zero-width and bidi format characters and line separators
    become ``\\xNN`` / ``\\uNNNN`` / ``\\n``, so a terminal shows the text as it is, on one line."""
    if text.isprintable():  # none of those (nor any other non-printable character): as it is
        return text
    out = []
    for char in text:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif unicodedata.category(char) in _UNSAFE_CATEGORIES:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def trial_reason(evidence: Mapping[str, Any]) -> str | None:
    """The first thing that kept one trial from passing, or None when nothing failed.

    Order: the execution error, then a grader error, then the first failed or unavailable
    check (in declaration order), then the first incomplete required evidence.
    """
    execution = evidence["execution"]
    if execution["status"] != "completed":
        code = execution.get("errorCode")
        head = f"execution {execution['status']}" + (f" ({code})" if code else "")
        message = execution.get("message")
        return escape_text(f"{head}: {message}" if message else head)
    error = evidence["grading"].get("error")
    if error is not None:
        return escape_text(f"grading error in check {error['checkId']}: {error['message']}")
    for check in evidence["checks"]:
        if check["status"] != "passed":
            detail = check.get("detail")
            head = f"check {check['id']} ({check['grader']}) {check['status']}"
            return escape_text(f"{head}: {detail}" if detail else head)
    for required in evidence.get("requiredEvidence", []):
        if required["status"] != "complete":
            return escape_text(f"required evidence {required['id']} is {required['status']}")
    return None


def not_run_reason(result: Mapping[str, Any]) -> str:
    """Why a result's trials that never started did not: its spend ceiling, or a stop in
    admission after a failure."""
    diagnostic = result.get("diagnostic")
    stopped = isinstance(diagnostic, Mapping) and diagnostic.get("code") == SPEND_STOP_CODE
    return SPEND_NOT_RUN_REASON if stopped else NOT_RUN_REASON


def summary_reason(trial: Mapping[str, Any], not_run: str = NOT_RUN_REASON) -> str | None:
    """A reason from a trial's summary alone, for trials that left no evidence file."""
    if trial["execution"] == "not_run":
        return not_run
    if trial["execution"] == "cancelled":
        return CANCELLED_REASON
    for check in trial["checks"]:
        if check["status"] != "passed":
            return escape_text(f"check {check['id']} ({check['grader']}) {check['status']}")
    return None


@frozen
class CaseFailures:
    """One case's distinct reasons, each with the trials it explains, most trials first."""

    case_id: str
    trial_count: int
    reasons: tuple[tuple[tuple[int, ...], str], ...]
    unexamined: int = 0
    """Trials that did not pass but whose evidence was not read (the summary's file budget)."""


def case_failures(
    case: Mapping[str, Any],
    evidences: Mapping[int, Mapping[str, Any]],
    unexamined: Collection[int] = (),
    not_run: str = NOT_RUN_REASON,
) -> CaseFailures | None:
    """Group the case's non-passing trials by reason; None when the case passed or was unasked.

    ``evidences`` maps a trial number to its trial evidence; a trial without one is explained
    from its summary in the result, except those in ``unexamined``, which are only counted.
    """
    if case["task"] == "passed":
        return None
    grouped: dict[str, list[int]] = {}
    for trial in case["trials"]:
        if trial["task"] == "passed" or trial["trial"] in unexamined:
            continue
        evidence = evidences.get(trial["trial"])
        reason = trial_reason(evidence) if evidence is not None else summary_reason(trial, not_run)
        if reason is not None:
            grouped.setdefault(reason, []).append(trial["trial"])
    if not grouped and not unexamined:
        return None
    # a cause before its consequences (trials never started), then the most frequent first
    ordered = sorted(
        grouped.items(),
        key=lambda item: (item[0] in _CONSEQUENCES, -len(item[1]), item[1][0]),
    )
    return CaseFailures(
        unit_key(case["caseId"], case.get("arm")),
        case["trialCount"],
        tuple((tuple(trials), reason) for reason, trials in ordered),
        len(unexamined),
    )


def trial_ranges(trials: Sequence[int], max_ranges: int = 6) -> str:
    """``1-3, 5, 7-9``; beyond ``max_ranges`` ranges, ``, …``."""
    ranges: list[tuple[int, int]] = []
    for number in sorted(trials):
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in ranges[:max_ranges]]
    return ", ".join(parts) + (", …" if len(ranges) > max_ranges else "")


def trials_label(trials: Sequence[int], trial_count: int) -> str:
    """``trial 2 of 3`` / ``trials 1-3 of 3``."""
    noun = "trial" if len(trials) == 1 else "trials"
    return f"{noun} {trial_ranges(trials)} of {trial_count}"


def render_failures(failures: Iterable[CaseFailures], *, max_reasons: int) -> list[str]:
    """Plain-text lines: per case, up to ``max_reasons`` reasons, then how many more."""
    lines: list[str] = []
    for case in failures:
        case_id = escape_text(case.case_id)
        for trials, reason in case.reasons[:max_reasons]:
            lines.append(f"  {case_id} ({trials_label(trials, case.trial_count)}): {reason}")
        hidden = case.reasons[max_reasons:]
        if hidden:
            count = sum(len(trials) for trials, _ in hidden)
            lines.append(f"  {case_id}: … and {len(hidden)} more reason(s) in {count} trial(s)")
        if case.unexamined:
            lines.append(f"  {case_id}: … and {case.unexamined} more trial(s) not examined here")
    return lines


def _has_problem(case: Mapping[str, Any]) -> bool:
    """Whether a case failed or errored (a dry run or a case without checks did neither)."""
    return case["task"] != "passed" and (
        case["task"] == "failed"
        or case["execution"] != "completed"
        or case["grading"] not in ("completed", "not_requested")
    )


def read_trial_evidence(path: Path) -> Mapping[str, Any] | None:
    from sevro_core.errors import SevroError
    from sevro_core.formats.jsonio import read_json_file
    from sevro_core.limits import MAX_RESULT_FILE_BYTES

    try:
        document = read_json_file(path, MAX_RESULT_FILE_BYTES, what="trial evidence")
    except (OSError, SevroError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("evidence"), dict):
        return None
    evidence: Mapping[str, Any] = document["evidence"]
    return evidence


def result_failures(
    result: Mapping[str, Any], max_cases: int, max_files: int = MAX_SUMMARY_TRIAL_FILES
) -> tuple[list[CaseFailures], int]:
    """Failures of the first ``max_cases`` failed cases of a result, and how many more failed.

    Reads at most ``max_files`` trial files, of those cases only; trials beyond that budget are
    counted, not explained, and a file that cannot be read is explained from the result's own
    summary of that trial.
    """
    problem_cases = [c for c in result["cases"] if _has_problem(c)]
    evidence_path = result.get("evidencePath")
    run_dir = Path(evidence_path).parent if evidence_path else None
    out: list[CaseFailures] = []
    budget = max_files
    for case in problem_cases[:max_cases]:
        evidences: dict[int, Mapping[str, Any]] = {}
        unexamined: list[int] = []
        for trial in case["trials"]:
            if trial["task"] == "passed" or not trial.get("artifactPath") or run_dir is None:
                continue
            if budget <= 0:
                unexamined.append(trial["trial"])
                continue
            budget -= 1
            evidence = read_trial_evidence(run_dir / trial["artifactPath"])
            if evidence is not None:
                evidences[trial["trial"]] = evidence
        try:
            found = case_failures(case, evidences, unexamined, not_run_reason(result))
        except (KeyError, TypeError):  # an unreadable file explains nothing; use the summary
            found = case_failures(case, {}, unexamined, not_run_reason(result))
        if found is not None:
            out.append(found)
    return out, max(len(problem_cases) - max_cases, 0)
