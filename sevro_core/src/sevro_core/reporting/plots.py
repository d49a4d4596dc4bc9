"""Plots of a run as inline SVG strings, drawn on the server: a static report must open without
a network or a JavaScript library, so every figure is plain markup built here.

The figures show numbers other modules computed and never recompute them differently: pass
rates and their Wilson intervals come from the statistics of :mod:`sevro_core.experiments` (the
numbers ``sevro report`` prints), transitions from the same document. Case ids and arm names
are untrusted text: they are bounded and escaped, and characters XML cannot carry are replaced,
so every figure parses. Arms are told apart by a written label and a pattern, never by colour
alone; each figure has a ``<title>`` and an ``aria-label``. Unknown values (a rate without a
decided trial, usage a host did not report) are said so in a caption, never drawn as 0.
"""

from __future__ import annotations

import html
import math
import re
import statistics as stats
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from attrs import frozen

from sevro_core.limits import MAX_PLOT_BARS, MAX_PLOT_LABEL_CHARS, MAX_PLOT_POINTS

if TYPE_CHECKING:
    from sevro_core.experiments.comparison import ArmTrial

SVG_NAMESPACE: Final = "http://www.w3.org/2000/svg"
PLAIN_ARM: Final = "all trials"
"""The label of a plain run's trials, which belong to no arm."""

# Okabe & Ito's palette, distinguishable with the common colour-vision deficiencies.
_COLOURS: Final = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
_PATTERNS: Final = ("solid", "hatch", "dots", "cross")
_INK: Final = "#1a1a1a"
_WIDTH: Final = 720
_LABEL_WIDTH: Final = 300
_PLOT_WIDTH: Final = 360
_ROW: Final = 26
_TOP: Final = 40
_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def text(value: object) -> str:
    """Untrusted text for SVG: characters XML cannot hold replaced, bounded, then escaped."""
    raw = _NOT_XML.sub("\ufffd", str(value))
    if len(raw) > MAX_PLOT_LABEL_CHARS:
        raw = raw[: MAX_PLOT_LABEL_CHARS - 1] + "…"
    return html.escape(raw, quote=True)


def _percent(value: float) -> str:
    return f"{value * 100:.0f} %"


def _number(value: float) -> str:
    return f"{value:.4g}"


def _svg(title: str, height: int, body: Iterable[str], *, defs: str = "") -> str:
    """The root element: ``title`` is already escaped and becomes the accessible name."""
    return (
        f'<svg xmlns="{SVG_NAMESPACE}" role="img" aria-label="{title}" '
        f'width="{_WIDTH}" height="{height}" viewBox="0 0 {_WIDTH} {height}" '
        f'font-family="sans-serif" font-size="12">'
        f"<title>{title}</title>{defs}"
        f'<text x="8" y="20" font-size="14" font-weight="bold" fill="{_INK}">{title}</text>'
        + "".join(body)
        + "</svg>"
    )


def _id_prefix(ids: str) -> str:
    """Element ids are global to an HTML page that inlines several figures: each figure's
    patterns get their own prefix, made of characters an id and a ``url(#...)`` may hold."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", ids)[:MAX_PLOT_LABEL_CHARS] or "sevro"


def _pattern_defs(count: int, ids: str) -> str:
    """One fill per arm: a colour and a pattern, so print and colour-blind readers tell arms
    apart (the arm is also written next to every mark)."""
    parts = []
    for index in range(count):
        colour = _COLOURS[index % len(_COLOURS)]
        kind = _PATTERNS[index % len(_PATTERNS)]
        marks = {
            "solid": "",
            "hatch": '<path d="M0,8 L8,0" stroke="#ffffff" stroke-width="2"/>',
            "dots": '<circle cx="4" cy="4" r="1.6" fill="#ffffff"/>',
            "cross": '<path d="M0,4 H8 M4,0 V8" stroke="#ffffff" stroke-width="1.5"/>',
        }[kind]
        parts.append(
            f'<pattern id="{ids}-arm{index}" width="8" height="8" patternUnits="userSpaceOnUse">'
            f'<rect width="8" height="8" fill="{colour}"/>{marks}</pattern>'
        )
    return "<defs>" + "".join(parts) + "</defs>"


def _caption(y: int, lines: Sequence[str]) -> list[str]:
    """Caption lines (already escaped) under a figure."""
    return [
        f'<text class="caption" x="8" y="{y + 16 * i}" fill="{_INK}">{line}</text>'
        for i, line in enumerate(lines)
    ]


# ---- pass rates --------------------------------------------------------------------------------


@frozen
class RateBar:
    """One arm's pass rate on one case, as the statistics have it (``arm`` None: a plain run)."""

    case_id: str
    arm: str | None
    passes: int
    decided: int
    rate: float | None
    low: float | None
    high: float | None


def _arm_index(arms: list[str | None], arm: str | None) -> int:
    if arm not in arms:
        arms.append(arm)
    return arms.index(arm)


def pass_rate_svg(bars: Sequence[RateBar], *, ids: str = "sevro-pass-rates") -> str:
    """Horizontal bars of the pass rate per case and arm with their 95 % Wilson interval as a
    whisker; at most ``MAX_PLOT_BARS`` bars, the rest counted in the caption. ``ids`` prefixes
    the figure's element ids (unique per figure on one page)."""
    ids = _id_prefix(ids)
    drawn, rest = bars[:MAX_PLOT_BARS], len(bars) - MAX_PLOT_BARS
    arms: list[str | None] = []
    body: list[str] = []
    x0 = _LABEL_WIDTH
    for row, bar in enumerate(drawn):
        index = _arm_index(arms, bar.arm)
        y = _TOP + row * _ROW
        label = text(bar.case_id) if bar.arm is None else f"{text(bar.case_id)} · {text(bar.arm)}"
        attributes = (
            f'data-case="{text(bar.case_id)}" data-arm="{text(bar.arm or "")}" '
            f'data-passes="{bar.passes}" data-decided="{bar.decided}"'
        )
        body.append(f'<text x="8" y="{y + 15}" fill="{_INK}">{label}</text>')
        if bar.rate is None:
            body.append(
                f'<text class="unknown" {attributes} x="{x0 + 4}" y="{y + 15}" fill="{_INK}">'
                "unknown: no decided trial</text>"
            )
            continue
        value = f"{_percent(bar.rate)} ({bar.passes}/{bar.decided})"
        whisker = ""
        if bar.low is not None and bar.high is not None:
            value += f", 95 % CI {_percent(bar.low)} to {_percent(bar.high)}"
            xl, xh = x0 + bar.low * _PLOT_WIDTH, x0 + bar.high * _PLOT_WIDTH
            whisker = (
                f'<path class="interval" {attributes} data-low="{bar.low!r}" '
                f'data-high="{bar.high!r}" d="M{xl:.2f},{y + 4} v12 M{xl:.2f},{y + 10} '
                f'H{xh:.2f} M{xh:.2f},{y + 4} v12" stroke="{_INK}" stroke-width="1.5" '
                'fill="none"/>'
            )
        body.append(
            f'<rect class="bar" {attributes} data-rate="{bar.rate!r}" x="{x0}" y="{y + 3}" '
            f'width="{bar.rate * _PLOT_WIDTH:.2f}" height="{_ROW - 8}" '
            f'fill="url(#{ids}-arm{index})" '
            f'stroke="{_INK}" stroke-width="0.5"><title>{label}: {value}</title></rect>'
        )
        body.append(whisker)
        body.append(
            f'<text x="{x0 + _PLOT_WIDTH + 6}" y="{y + 15}" fill="{_INK}" font-size="10">'
            f"{_percent(bar.rate)}</text>"
        )
    bottom = _TOP + max(1, len(drawn)) * _ROW
    body.append(
        f'<path class="axis" d="M{x0},{bottom} H{x0 + _PLOT_WIDTH}" stroke="{_INK}"/>'
        + "".join(
            f'<text x="{x0 + f * _PLOT_WIDTH}" y="{bottom + 14}" text-anchor="middle" '
            f'fill="{_INK}" font-size="10">{_percent(f)}</text>'
            for f in (0.0, 0.5, 1.0)
        )
    )
    notes = ["Bars: pass rate over decided trials; whiskers: 95 % Wilson interval."]
    if not bars:
        notes.append("No case has trials.")
    if rest > 0:
        notes.append(f"… and {rest} more bar(s) not drawn (all of them: sevro report).")
    body += _caption(bottom + 34, notes)
    height = bottom + 34 + 16 * len(notes)
    return _svg("Pass rate per case and arm", height, body, defs=_pattern_defs(len(arms), ids))


# ---- transitions -------------------------------------------------------------------------------


@frozen
class TransitionCounts:
    """Paired outcomes of one comparison, control → treatment, as the statistics count them."""

    control: str
    treatment: str
    both_pass: int
    fixed: int
    broken: int
    both_fail: int
    inconclusive: int


_CELLS: Final = (
    # (name, control outcome, treatment outcome, row, column)
    ("bothPass", "pass", "pass", 0, 0),
    ("broken", "pass", "fail", 0, 1),
    ("fixed", "fail", "pass", 1, 0),
    ("bothFail", "fail", "fail", 1, 1),
)


def transitions_svg(counts: TransitionCounts) -> str:
    """The 2 by 2 grid of paired outcomes (rows: control, columns: treatment); the shade grows with
    the count, and every cell writes its count and its transition, so no reader needs colour."""
    values = {
        "bothPass": counts.both_pass,
        "broken": counts.broken,
        "fixed": counts.fixed,
        "bothFail": counts.both_fail,
    }
    largest = max(values.values()) or 1
    control, treatment = text(counts.control), text(counts.treatment)
    cell, x0, y0 = 120, 220, 70
    body = [
        f'<text x="{x0 + cell}" y="{y0 - 24}" text-anchor="middle" fill="{_INK}">'
        f"treatment: {treatment}</text>",
        f'<text x="8" y="{y0 + cell}" fill="{_INK}">control: {control}</text>',
    ]
    for column, word in enumerate(("passed", "failed")):
        body.append(
            f'<text x="{x0 + column * cell + cell // 2}" y="{y0 - 6}" text-anchor="middle" '
            f'fill="{_INK}">{word}</text>'
        )
        body.append(
            f'<text x="{x0 - 8}" y="{y0 + column * cell + cell // 2}" text-anchor="end" '
            f'fill="{_INK}">{word}</text>'
        )
    for name, before, after, row, column in _CELLS:
        count = values[name]
        share = count / largest
        ink = "#ffffff" if share > 0.55 else _INK
        x, y = x0 + column * cell, y0 + row * cell
        body.append(
            f'<rect class="cell" data-cell="{name}" data-count="{count}" x="{x}" y="{y}" '
            f'width="{cell}" height="{cell}" fill="#0072B2" '
            f'fill-opacity="{0.08 + 0.82 * share:.3f}" '
            f'stroke="{_INK}"><title>{before} → {after}: {count} pair(s)</title></rect>'
            f'<text x="{x + cell // 2}" y="{y + cell // 2}" text-anchor="middle" '
            f'font-size="22" font-weight="bold" fill="{ink}">{count}</text>'
            f'<text x="{x + cell // 2}" y="{y + cell // 2 + 22}" text-anchor="middle" '
            f'fill="{ink}">{before} → {after}</text>'
        )
    notes = [
        f"Pairs of trials of {control} (control) and {treatment} (treatment) on the same case "
        "and repetition."
    ]
    if counts.inconclusive:
        notes.append(
            f"{counts.inconclusive} inconclusive pair(s) (not executed or not fully graded on a "
            "side) left out."
        )
    bottom = y0 + 2 * cell + 24
    body += _caption(bottom, notes)
    title = f"Transitions from {control} to {treatment}"
    return _svg(title, bottom + 16 * len(notes), body)


# ---- distributions -----------------------------------------------------------------------------


@frozen
class Distribution:
    """One measure of the trials per arm; None is a value the evidence does not know."""

    title: str
    unit: str
    values: Mapping[str, Sequence[float | None]]


def distribution_svg(distribution: Distribution, *, ids: str = "") -> str:
    """A strip plot per arm with its range and median; unknown values (None, or not finite) are
    counted in the caption and never drawn. At most ``MAX_PLOT_POINTS`` points per arm (evenly
    picked from the sorted values, the range and median always over all of them). ``ids``
    prefixes the figure's element ids (by default from its title)."""
    ids = _id_prefix(ids or f"sevro-{distribution.title}")
    arms = list(distribution.values)
    known = {
        arm: sorted(v for v in distribution.values[arm] if v is not None and math.isfinite(v))
        for arm in arms
    }
    low = min(0.0, min((v[0] for v in known.values() if v), default=0.0))
    top = max((v[-1] for v in known.values() if v), default=0.0)
    scale = _PLOT_WIDTH / ((top - low) or 1.0)
    unit = text(distribution.unit)
    x0, row_height = _LABEL_WIDTH - 100, 40
    body: list[str] = []
    notes: list[str] = []
    for row, arm in enumerate(arms):
        y = _TOP + row * row_height + 20
        values = known[arm]
        unknown = len(distribution.values[arm]) - len(values)
        body.append(f'<text x="8" y="{y + 4}" fill="{_INK}">{text(arm)}</text>')
        if unknown:
            notes.append(
                f"{text(arm)}: {unknown} trial(s) with unknown {text(distribution.title)} left "
                "out (not drawn as 0)."
            )
        if not values:
            body.append(
                f'<text class="unknown" data-arm="{text(arm)}" x="{x0}" y="{y + 4}" '
                f'fill="{_INK}">no known value</text>'
            )
            continue
        median = stats.median(values)
        body.append(
            f'<path class="range" data-arm="{text(arm)}" data-min="{values[0]!r}" '
            f'data-max="{values[-1]!r}" data-median="{median!r}" '
            f'd="M{x0 + (values[0] - low) * scale:.2f},{y} '
            f"H{x0 + (values[-1] - low) * scale:.2f} "
            f'M{x0 + (median - low) * scale:.2f},{y - 9} v18" stroke="{_INK}" stroke-width="1.5"/>'
        )
        shown = _spread(values, MAX_PLOT_POINTS)
        if len(shown) < len(values):
            notes.append(
                f"{text(arm)}: {len(values) - len(shown)} more point(s) not drawn "
                "(range and median over all)."
            )
        body += [
            f'<circle class="point" data-arm="{text(arm)}" data-value="{value!r}" '
            f'cx="{x0 + (value - low) * scale:.2f}" cy="{y}" r="4" fill="url(#{ids}-arm{row})" '
            f'stroke="{_INK}" stroke-width="0.5" fill-opacity="0.8"/>'
            for value in shown
        ]
        body.append(
            f'<text x="{x0 + _PLOT_WIDTH + 8}" y="{y + 4}" fill="{_INK}" font-size="10">'
            f"median {_number(median)} {unit} (n={len(values)})</text>"
        )
    bottom = _TOP + max(1, len(arms)) * row_height + 10
    body.append(
        f'<path class="axis" d="M{x0},{bottom} H{x0 + _PLOT_WIDTH}" stroke="{_INK}"/>'
        + "".join(
            f'<text x="{x0 + f * _PLOT_WIDTH}" y="{bottom + 14}" text-anchor="middle" '
            f'fill="{_INK}" font-size="10">{_number(low + f * (top - low))}</text>'
            for f in (0.0, 0.5, 1.0)
        )
        + f'<text x="{x0 - 12}" y="{bottom + 14}" text-anchor="end" fill="{_INK}" '
        f'font-size="10">{unit}</text>'
    )
    notes.insert(0, "Dots: trials; line: range; tick: median.")
    body += _caption(bottom + 34, notes)
    title = f"{text(distribution.title)} per arm"
    return _svg(title, bottom + 34 + 16 * len(notes), body, defs=_pattern_defs(len(arms), ids))


def _spread(values: Sequence[float], limit: int) -> list[float]:
    """At most ``limit`` of the sorted values, evenly spaced, first and last kept."""
    if len(values) <= limit:
        return list(values)
    if limit == 1:
        return [values[0]]
    step = (len(values) - 1) / (limit - 1)
    return [values[round(i * step)] for i in range(limit)]


# ---- from a run --------------------------------------------------------------------------------


def rate_bars(statistics: Mapping[str, Any]) -> list[RateBar]:
    """The bars of a ``sevro.experiment-statistics.v1`` document, case by case with the arms
    side by side (in the document's arm order, so each arm keeps its pattern in every figure)."""
    rows = [(arm["id"], case) for arm in statistics["arms"] for case in arm["cases"]]
    order = {case_id: index for index, case_id in enumerate(statistics["cases"])}
    rows.sort(key=lambda row: order.get(row[1]["caseId"], len(order)))
    bars = []
    for arm_id, case in rows:
        rate = case["passRate"]
        interval = rate["interval"] or {}
        bars.append(
            RateBar(
                case_id=case["caseId"],
                arm=arm_id,
                passes=rate["passes"],
                decided=rate["decided"],
                rate=rate["rate"],
                low=interval.get("low"),
                high=interval.get("high"),
            )
        )
    return bars


def transition_counts(statistics: Mapping[str, Any]) -> list[TransitionCounts]:
    """The pooled transitions of each comparison of a statistics document."""
    out = []
    for comparison in statistics["comparisons"]:
        t = comparison["pooled"]["transitions"]
        out.append(
            TransitionCounts(
                control=comparison["control"],
                treatment=comparison["treatment"],
                both_pass=t["bothPass"],
                fixed=t["fixed"],
                broken=t["broken"],
                both_fail=t["bothFail"],
                inconclusive=t["inconclusive"],
            )
        )
    return out


def plain_rate_bars(
    result: Mapping[str, Any], trials: Mapping[tuple[str, int], Mapping[str, Any]]
) -> list[RateBar]:
    """The bars of a plain run, by the same pass rate and Wilson interval the statistics use."""
    from sevro_core.experiments.comparison import trial_outcome
    from sevro_core.experiments.statistics import pass_rate

    bars = []
    for case in result["cases"]:
        case_id = case["caseId"]
        outcomes = [
            trial_outcome(doc["evidence"]) for (unit, _), doc in trials.items() if unit == case_id
        ]
        rate = pass_rate(outcomes)
        bars.append(
            RateBar(
                case_id=case_id,
                arm=None,
                passes=rate.passes,
                decided=rate.decided,
                rate=rate.rate,
                low=rate.interval.low if rate.interval else None,
                high=rate.interval.high if rate.interval else None,
            )
        )
    return bars


MEASURES: Final = (
    ("durations", "duration", "ms", "duration_ms"),
    ("inputTokens", "input tokens", "tokens", "input_tokens"),
    ("outputTokens", "output tokens", "tokens", "output_tokens"),
)
"""(figure key, title, unit, attribute of the reduced trial)."""


def distributions(
    trials: Iterable[Mapping[str, Any]], arms: Sequence[str] = ()
) -> dict[str, Distribution]:
    """Durations and token counts per arm from trial evidence documents; usage counts only
    when the host reported it complete (``arm_trial``'s rule, as the statistics read it).
    ``arms`` is an experiment's arm order (each arm keeps its pattern in every figure); without
    arms the trials are a plain run's, labelled ``PLAIN_ARM``."""
    from sevro_core.experiments.comparison import arm_trial

    return reduced_distributions(
        [arm_trial(doc, None if arms else PLAIN_ARM) for doc in trials], arms
    )


def reduced_distributions(
    reduced: Sequence[ArmTrial], arms: Sequence[str] = ()
) -> dict[str, Distribution]:
    """``distributions`` of trials already reduced by ``arm_trial`` (where they were read)."""
    named = list(dict.fromkeys([*arms, *(t.arm for t in reduced)]))
    return {
        key: Distribution(
            title=title,
            unit=unit,
            values={arm: [getattr(t, attr) for t in reduced if t.arm == arm] for arm in named},
        )
        for key, title, unit, attr in MEASURES
    }


def figures_for_run(run_dir: Path, ids: str = "sevro") -> dict[str, str]:
    """Every figure of a run directory, verified as ``sevro report`` verifies it: ``passRates``,
    ``transitions:<control>..<treatment>`` per comparison of an experiment, ``durations``,
    ``inputTokens`` and ``outputTokens``. Element ids start with ``ids`` (give each run its
    own when one page shows several runs). Raises ``InvocationError`` on a run it refuses."""
    from sevro_core.reporting.comparing import run_statistics
    from sevro_core.reporting.report import verified_run

    result, run, trials = verified_run(run_dir)
    figures: dict[str, str] = {}
    if run.get("arms"):
        statistics = run_statistics(run, result, trials.values(), run_dir)
        figures["passRates"] = pass_rate_svg(rate_bars(statistics), ids=f"{ids}-passRates")
        for counts in transition_counts(statistics):
            key = f"transitions:{counts.control}..{counts.treatment}"
            figures[key] = transitions_svg(counts)
    else:
        figures["passRates"] = pass_rate_svg(
            plain_rate_bars(result, trials), ids=f"{ids}-passRates"
        )
    arms = [arm["id"] for arm in run.get("arms") or ()]
    for key, distribution in distributions(trials.values(), arms).items():
        figures[key] = distribution_svg(distribution, ids=f"{ids}-{key}")
    return figures
