"""skill-eval comparisons as transitions: per paired trial, what one check did in each variant.

A skill-eval ``comparison`` names one baseline and one candidate expectation (the same check).
For every pair (same case and repetition) the two check results give one transition:
``pass-to-pass``, ``fail-to-pass``, ``pass-to-fail`` or ``fail-to-fail``; a pair where either
side is not a decided pass or fail (the check was unavailable, the trial did not execute, or
never ran) is counted as ``unavailable``. It is a factual count, never a quality verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

TRANSITIONS: Final = ("pass-to-pass", "fail-to-pass", "pass-to-fail", "fail-to-fail")
UNAVAILABLE: Final = "unavailable"


def check_transitions(
    origin: Mapping[str, Any], documents: Iterable[Mapping[str, Any]], repetitions: int
) -> list[dict[str, Any]]:
    """One row per comparison of every group whose two variants both ran."""
    index: dict[tuple[str, str, int], Mapping[str, Any]] = {}
    for document in documents:
        key = (str(document.get("arm")), str(document.get("caseId")), _int(document.get("trial")))
        index[key] = document
    rows = []
    for group in origin.get("groups", []):
        variants = group.get("variants", {})
        if group.get("status") != "selected" or set(variants.values()) != {"selected"}:
            continue
        for comparison in group.get("comparisons", []):
            pairs: list[dict[str, Any]] = [
                {
                    "repetition": r,
                    "baseline": _result(index.get(("baseline", group["id"], r)), comparison),
                    "candidate": _result(index.get(("candidate", group["id"], r)), comparison),
                }
                for r in range(1, repetitions + 1)
            ]
            counts = dict.fromkeys((*TRANSITIONS, UNAVAILABLE), 0)
            for pair in pairs:
                counts[_transition(pair["baseline"], pair["candidate"])] += 1
            rows.append(
                {
                    "comparison": comparison["id"],
                    "caseId": group["id"],
                    "baseline": comparison["baseline"],
                    "candidate": comparison["candidate"],
                    "transitions": counts,
                    "pairs": pairs,
                }
            )
    return rows


def _int(value: object) -> int:
    return value if isinstance(value, int) else -1


def _result(document: Mapping[str, Any] | None, comparison: Mapping[str, str]) -> str:
    """``pass``/``fail`` for a check of an executed trial; anything else is unavailable."""
    if document is None:
        return UNAVAILABLE
    arm = str(document.get("arm"))
    evidence = document.get("evidence")
    if not isinstance(evidence, Mapping):
        return UNAVAILABLE
    execution = evidence.get("execution")
    if not isinstance(execution, Mapping) or execution.get("status") != "completed":
        return UNAVAILABLE
    checks = evidence.get("checks")
    wanted = comparison.get(arm)
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, Mapping) and check.get("id") == wanted:
            return {"passed": "pass", "failed": "fail"}.get(str(check.get("status")), UNAVAILABLE)
    return UNAVAILABLE


def _transition(baseline: str, candidate: str) -> str:
    if UNAVAILABLE in (baseline, candidate):
        return UNAVAILABLE
    return f"{baseline}-to-{candidate}"


def describe(row: Mapping[str, Any]) -> str:
    """One line: ``comparison (case): N pass-to-pass, N fail-to-pass, ...``."""
    counts = row["transitions"]
    parts = ", ".join(f"{counts[name]} {name}" for name in (*TRANSITIONS, UNAVAILABLE))
    return f"{row['comparison']} ({row['caseId']}): {parts}"
