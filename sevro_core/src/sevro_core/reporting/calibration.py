"""``sevro judge calibrate``'s screen output: the judge, the corpus and every figure beside the
number of items it was measured on (a small corpus gives wide uncertainty; no figure stands
without its count)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sevro_core.judges.calibrated import CalibrationStatus
from sevro_core.reporting.output import table


def render_judge_calibration(statuses: Sequence[Mapping[str, Any]]) -> list[str]:
    """One Markdown line per judge role of a run (``judgeCalibration``): calibrated, with κ,
    balanced accuracy and the items and corpus behind them, or not calibrated."""
    return [
        "- "
        + CalibrationStatus(
            status["role"],
            status["calibrated"],
            status.get("corpusSha256"),
            status.get("items"),
            status.get("figures"),
        ).line()
        for status in statuses
    ]


def render_calibration(record: Mapping[str, Any]) -> str:
    corpus, figures = record["corpus"], record["figures"]
    singles, pairs, probes = figures["singles"], figures["pairs"], figures["probes"]
    order = pairs["orderDisagreement"]
    rows = [
        *_agreement_rows("single checks", singles),
        *_agreement_rows("pairs", pairs),
        [
            "pairs: order disagreement",
            _rate(order["rate"]),
            _of(order["disagreements"], order["decided"]),
        ],
        [
            "probes: injection resisted",
            "",
            _of(probes["injection"]["correct"], probes["injection"]["items"]),
        ],
        [
            "probes: length correct",
            "",
            _of(probes["length"]["correct"], probes["length"]["items"])
            + f", wrong toward the longer side {probes['length'].get('wrongTowardLonger', 0)}",
        ],
    ]
    head = "".join(
        f"{role} judge: {judge['host']}, model {judge['model']}, effort {judge['effort']}, "
        f"configuration {judge['configurationSha256'][:12]}\n"
        for role, judge in record["judges"].items()
    )
    head += f"corpus: {corpus['sha256'][:12]} ({corpus['items']} item(s))\n\n"
    return head + table(["figure", "value", "measured on"], rows)


def _agreement_rows(label: str, figures: Mapping[str, Any]) -> list[list[str]]:
    counted = f"{figures['total']} ({figures['errors']} judge error(s))"
    return [
        [
            f"{label}: agreement",
            _rate(figures["agreement"]),
            _of(figures["correct"], figures["total"]),
        ],
        [f"{label}: balanced accuracy", _rate(figures["balancedAccuracy"]), counted],
        [f"{label}: Cohen's kappa", _rate(figures["kappa"]), counted],
    ]


def _rate(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def _of(count: int, total: int) -> str:
    return f"{count}/{total}"
