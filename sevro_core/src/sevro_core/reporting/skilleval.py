"""What a skill-eval definition's run adds to the summary and the report: the groups and
variants it did not select (``not-selected``, never failed), each comparison's transitions and
the reviewer's questions (shown to the reader, never sent to the agent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sevro_core.reporting.failures import escape_text

_MAX_SHOWN = 4096


def skilleval_lines(origin: Mapping[str, Any], statistics: Mapping[str, Any] | None) -> str:
    """Plain-text lines for the run summary and ``sevro report``."""
    out = f"\nskill-eval {origin.get('kind')} {escape_text(str(origin.get('definition')), 1024)}:\n"
    for group in origin.get("groups", []):
        name = escape_text(str(group.get("id")), 128)
        if group.get("status") != "selected":
            out += f"  group {name}: not-selected\n"
            continue
        skipped = [v for v, state in group.get("variants", {}).items() if state != "selected"]
        for variant in skipped:
            out += f"  group {name}: variant {variant} not-selected\n"
        for question in group.get("reviewQuestions", []):
            out += f"  review ({name}): {escape_text(str(question), _MAX_SHOWN)}\n"
    rows = (statistics or {}).get("checkTransitions")
    if rows:
        from sevro_core.experiments.skillevaltransitions import describe

        out += "  comparisons (transitions per paired trial, not a verdict):\n"
        out += "".join(f"    {escape_text(describe(row), _MAX_SHOWN)}\n" for row in rows)
    return out


def render_skilleval(origin: Mapping[str, Any], statistics: Mapping[str, Any] | None) -> list[str]:
    """Markdown lines for ``sevro report``: the same facts as the summary, as a list."""
    return [
        f"- {line.strip()}"
        for line in skilleval_lines(origin, statistics).splitlines()
        if line.strip()
    ]
