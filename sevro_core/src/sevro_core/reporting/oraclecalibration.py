"""The table ``sevro calibrate`` prints: each variant, the verdict it expects and the one it got.

A row that disagrees names the checks that gave the wrong answer, so a weak (or too strict)
oracle is found before it grades real agents. Check ids and statuses come from sevro's own
evidence; nothing the agent wrote is printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sevro_core.run.oraclecalibration import VariantOutcome

HEADERS = ("case", "variant", "kind", "expected", "got", "result")


def render_calibration(outcomes: Sequence[VariantOutcome], run_dir: Path) -> str:
    """Aligned plain text: one row per variant, then the disagreeing checks, then a summary."""
    rows = [
        (o.case_id, o.variant_id, o.kind, o.expect, o.got, "ok" if o.agrees else "DISAGREES")
        for o in outcomes
    ]
    widths = [max(len(r[i]) for r in [HEADERS, *rows]) for i in range(len(HEADERS))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)).rstrip()]
    for row, outcome in zip(rows, outcomes, strict=True):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        lines.extend(f"    {detail}" for detail in outcome.disagreeing if not outcome.agrees)
    wrong = sum(1 for o in outcomes if not o.agrees)
    if wrong:
        lines.append(
            f"{wrong} of {len(outcomes)} variant(s) disagree: the checks are too weak or too strict"
        )
    else:
        lines.append(f"all {len(outcomes)} variant(s) got the verdict they expect")
    lines.append(f"evidence: {run_dir}")
    return "\n".join(lines) + "\n"
