"""The pass rate of each case (and arm) as a horizontal bar with its interval as a whisker:
plain SVG geometry computed here and drawn by the template, so the page needs no chart library
and no script to show it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

LABEL_WIDTH = 240
PLOT_WIDTH = 400
ROW_HEIGHT = 22
BAR_HEIGHT = 12
MARGIN = 4


def pass_rate_chart(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One bar per case row: ``x``/``width`` from its rate, the whisker from its interval; a row
    with no decided trial gets no bar and says ``unknown``."""
    bars = []
    for index, row in enumerate(rows):
        top = MARGIN + index * ROW_HEIGHT
        rate, interval = row["rate"], row["interval"]
        label = f"{row['caseId']} @ {row['arm']}" if row["arm"] else row["caseId"]
        bars.append(
            {
                "label": label,
                "y": top,
                "textY": top + BAR_HEIGHT - 1,
                "width": None if rate is None else round(rate * PLOT_WIDTH, 1),
                "low": None if interval is None else round(interval["low"] * PLOT_WIDTH, 1),
                "high": None if interval is None else round(interval["high"] * PLOT_WIDTH, 1),
                "middle": top + BAR_HEIGHT / 2,
                "value": "unknown" if rate is None else f"{100 * rate:.0f}%",
            }
        )
    return {
        "bars": bars,
        "labelWidth": LABEL_WIDTH,
        "plotWidth": PLOT_WIDTH,
        "barHeight": BAR_HEIGHT,
        "width": LABEL_WIDTH + PLOT_WIDTH + 60,
        "height": 2 * MARGIN + len(rows) * ROW_HEIGHT + 14,
        "axisY": MARGIN + len(rows) * ROW_HEIGHT,
    }
