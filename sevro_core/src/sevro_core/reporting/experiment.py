"""Markdown for an experiment's statistics: the verdict first, in a sentence worded from the
numbers, then the per-case table, skill activation, the deltas and each arm's rates.

The input is a ``sevro.experiment-statistics.v1`` document
(:func:`sevro_core.experiments.comparison.experiment_statistics`). Unknown is printed as
``unknown``, never as 0 %, and every cell is escaped so no value can break a table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

UNKNOWN = "unknown"


def _cell(value: Any) -> str:
    text = UNKNOWN if value is None else str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def _points(value: float, signed: bool = True) -> str:
    """A difference of rates in percentage points: ``+35``, ``-2.5``."""
    text = f"{value * 100:+.1f}" if signed else f"{value * 100:.1f}"
    return text.removesuffix(".0")


def _percent(value: float | None) -> str:
    return UNKNOWN if value is None else f"{_points(value, signed=False)} %"


def _p(value: float | None) -> str:
    if value is None:
        return UNKNOWN
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def _p_clause(value: float | None) -> str:
    """``p = 0.004``, ``p < 0.001``, ``p unknown``."""
    if value is None:
        return f"p {UNKNOWN}"
    return "p < 0.001" if value < 0.001 else f"p = {_p(value)}"


def _interval_points(interval: Mapping[str, float] | None) -> str:
    if interval is None:
        return "95 % CI unknown"
    return f"95 % CI {_points(interval['low'])} to {_points(interval['high'])} pp"


def _rate_with_interval(rate: float | None, interval: Mapping[str, float] | None) -> str:
    if rate is None:
        return UNKNOWN
    if interval is None:
        return _percent(rate)
    low, high = _points(interval["low"], False), _points(interval["high"], False)
    return f"{_percent(rate)} ({low}-{high} %)"


def verdict_sentence(comparison: Mapping[str, Any]) -> str:
    """The comparison's pooled verdict in one sentence, with the numbers it rests on."""
    control, treatment = comparison["control"], comparison["treatment"]
    pooled = comparison["pooled"]
    counts = pooled["transitions"]
    decided = counts["bothPass"] + counts["fixed"] + counts["broken"] + counts["bothFail"]
    left_out = (
        f"; {counts['inconclusive']} inconclusive pair(s) left out"
        if counts["inconclusive"]
        else ""
    )
    word = pooled["verdict"]
    if word == "unknown" or pooled["difference"] is None:
        return (
            f"{treatment} against {control}: unknown, no pair was decided on both sides "
            f"({counts['inconclusive']} inconclusive of {comparison['pairs']} pairs)."
        )
    difference = pooled["difference"]
    mcnemar = pooled["mcnemar"]
    numbers = (
        f"{_points(difference['estimate'])} pp ({_interval_points(difference['interval'])}), "
        f"McNemar {_p_clause(mcnemar['pTwoSided'] if mcnemar else None)}, "
        f"{counts['fixed']} fixed / {counts['broken']} broken over {decided} pairs{left_out}"
    )
    if word in ("improved", "regressed"):
        return f"{treatment} {word} on {control}: {numbers}."
    sentence = f"no detectable difference between {treatment} and {control}: {numbers}."
    needed = pooled["repetitionsNeeded"]
    if needed is not None:
        sentence += (
            f" The observed effect would need about {needed} repetitions per case to be "
            "detected (approximate)."
        )
    return sentence


def _needed(verdict: str, repetitions: int | None) -> str | int | None:
    """Repetitions matter only where no difference was detectable; none detect a zero effect."""
    if verdict in ("improved", "regressed"):
        return "-"
    if verdict == "no detectable difference" and repetitions is None:
        return "none (no effect observed)"
    return repetitions


def _case_rows(comparison: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for row in comparison["cases"]:
        t = row["transitions"]
        difference = row["difference"]
        rows.append(
            [
                row["caseId"],
                _percent(row["controlRate"]),
                _percent(row["treatmentRate"]),
                t["bothPass"],
                t["fixed"],
                t["broken"],
                t["bothFail"],
                t["inconclusive"],
                None
                if difference is None
                else f"{_points(difference['estimate'])} pp "
                f"({_interval_points(difference['interval'])})",
                _p(row["mcnemar"]["pTwoSided"] if row["mcnemar"] else None),
                row["verdict"],
                _needed(row["verdict"], row["repetitionsNeeded"]),
            ]
        )
    return rows


def _activation_cell(activation: Mapping[str, Any]) -> list[Any]:
    return [
        activation["activated"],
        activation["known"],
        activation["unknown"],
        _rate_with_interval(activation["rate"], activation["interval"]),
    ]


def _number(value: float | None, unit: str = "") -> str | None:
    if value is None:
        return None
    return f"{value:+.4f}{unit}" if unit == " USD" else f"{value:+.1f}{unit}"


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


def _calibration(calibration: Mapping[str, Any] | None) -> str:
    if calibration is None:
        return "not calibrated"
    passed = calibration.get("passed")
    if isinstance(passed, bool):
        return "calibrated, " + ("passed" if passed else "FAILED")
    return "calibrated"


def judged_sentences(comparison: Mapping[str, Any]) -> list[str]:
    """Who judged a comparison and what the blinded comparator found, in two sentences."""
    judged = comparison["judged"]
    judge, rubric = judged["judge"], judged["rubric"]
    who = (
        f"Judge: {_cell(judge['host'])}, model {_cell(judge['model'])}, effort "
        f"{_cell(judge['effort'])}; rubric {_cell(rubric['id'])} {_cell(rubric['version'])}; "
        f"{_calibration(judged['calibration'])}; pairs judged when "
        f"{'both passed' if judged['when'] == 'both-passed' else 'both completed'}."
    )
    inconclusive = judged["inconclusive"]
    sign = judged["signTest"]
    found = (
        f"{_cell(comparison['treatment'])} against {_cell(comparison['control'])}, judged: "
        f"{_plural(judged['wins'], 'win')}, {_plural(judged['losses'], 'loss', 'losses')}, "
        f"{_plural(judged['ties'], 'tie')}, {inconclusive['total']} inconclusive "
        f"({inconclusive['positionBias']} position bias, {inconclusive['judgeError']} judge error) "
        f"over {judged['judgedPairs']} judged of {judged['eligiblePairs']} eligible pairs; "
        f"exact sign test over {sign['decisive']} decisive pairs {_p_clause(sign['pTwoSided'])}."
    )
    return [who, found]


def _judged_rows(comparison: Mapping[str, Any]) -> list[list[Any]]:
    counts: dict[str, dict[str, int]] = {}
    for pair in comparison["judged"]["pairs"]:
        row = counts.setdefault(
            pair["caseId"], {"candidate": 0, "baseline": 0, "tie": 0, "inconclusive": 0}
        )
        row[pair["outcome"]] += 1
    return [
        [case, row["candidate"], row["baseline"], row["tie"], row["inconclusive"]]
        for case, row in counts.items()
    ]


def judge_cost_sentences(usage: Mapping[str, Any] | None) -> list[str]:
    """What the comparator's calls cost, apart from the trials' usage; a figure is shown only
    when every call reported it in full (unknown is never 0)."""
    if usage is None:
        return []
    calls = _plural(usage["calls"], "judge call")
    if usage["complete"] is not True:
        return [f"Comparator usage: {calls}; tokens and cost unknown."]
    figures = [
        f"{_cell(usage['inputTokens'])} input tokens",
        f"{_cell(usage['outputTokens'])} output tokens",
        "cost unknown" if usage["costUsd"] is None else f"cost ${usage['costUsd']:.4f}",
    ]
    return [f"Comparator usage: {calls}; {', '.join(figures)}."]


def _judged_lines(comparison: Mapping[str, Any]) -> list[str]:
    """The comparator's block, under its own heading: a model's opinion, not a check."""
    lines = [
        "",
        f"#### Blinded pairwise comparison: {comparison['treatment']} against "
        f"{comparison['control']} (model judge)",
        "",
        *judged_sentences(comparison),
        *judge_cost_sentences(comparison["judged"].get("usage")),
        "",
        "Each pair was judged twice with the results labelled A and B in both orders; an outcome "
        "counts only when both orders agree. These outcomes are a model's judgement, kept apart "
        "from the objective results above.",
        "",
    ]
    return lines + _table(
        ["case", "wins", "losses", "ties", "inconclusive"], _judged_rows(comparison)
    )


def _comparison_lines(comparison: Mapping[str, Any]) -> list[str]:
    control, treatment = comparison["control"], comparison["treatment"]
    lines = [f"### {treatment} against {control}", "", verdict_sentence(comparison), ""]
    lines += _table(
        [
            "case",
            f"{control} pass rate",
            f"{treatment} pass rate",
            "both pass",
            "fixed",
            "broken",
            "both fail",
            "inconclusive",
            "difference",
            "McNemar p",
            "verdict",
            "repetitions needed",
        ],
        _case_rows(comparison),
    )
    activation = comparison["activation"]
    lines += ["", "Target skill activation (read in full, among trials where it is known):", ""]
    lines += _table(
        ["arm", "activated", "known", "unknown", "rate (95 % CI)"],
        [
            [control, *_activation_cell(activation["control"])],
            [treatment, *_activation_cell(activation["treatment"])],
        ],
    )
    deltas = comparison["deltas"]
    units = {"inputTokens": "", "outputTokens": "", "costUsd": " USD", "durationMs": " ms"}
    lines += ["", f"Mean per-pair difference ({treatment} minus {control}) where both are known:"]
    lines.append("")
    lines += _table(
        ["measure", "mean difference", "pairs known"],
        [
            [
                key,
                _number(deltas[key]["mean"], unit),
                f"{deltas[key]['knownPairs']} of {deltas[key]['pairs']}",
            ]
            for key, unit in units.items()
        ],
    )
    if "judged" in comparison:
        lines += _judged_lines(comparison)
    return lines


def _arm_rows(arm: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for case in arm["cases"]:
        rate = case["passRate"]
        top = case["passAtK"][-1] if case["passAtK"] else None
        hat = case["passHatK"][-1] if case["passHatK"] else None
        rows.append(
            [
                arm["id"],
                case["caseId"],
                f"{rate['passes']}/{rate['decided']}",
                rate["inconclusive"],
                _rate_with_interval(rate["rate"], rate["interval"]),
                None if top is None else f"k={top['k']}: {_percent(top['value'])}",
                None if hat is None else f"k={hat['k']}: {_percent(hat['value'])}",
                _rate_with_interval(case["activation"]["rate"], case["activation"]["interval"]),
            ]
        )
    return rows


def _measure(name: str, measure: Mapping[str, Any]) -> str:
    """``recall 67 % (95 % CI 21-94 %)``; unknown without decided trials."""
    interval = measure["interval"]
    if measure["value"] is None:
        return f"{name} {UNKNOWN}"
    if interval is None:
        return f"{name} {_percent(measure['value'])}"
    low, high = _points(interval["low"], False), _points(interval["high"], False)
    return f"{name} {_percent(measure['value'])} (95 % CI {low}-{high} %)"


def trigger_sentences(triggers: Mapping[str, Any]) -> list[str]:
    """One sentence per arm of a trigger eval set's run: recall, precision, accuracy, what was
    left out, and how many queries pass ``run_eval.py``'s threshold."""
    lines = []
    for arm in triggers["arms"]:
        pooled = arm["pooled"]
        decided = sum(pooled[k] for k in ("truePositives", "falseNegatives"))
        decided += sum(pooled[k] for k in ("falsePositives", "trueNegatives"))
        measures = ", ".join(
            _measure(name, pooled[name]) for name in ("recall", "precision", "accuracy")
        )
        left_out = ""
        if pooled["partial"] or pooled["unavailable"]:
            left_out = (
                f"; left out: {pooled['partial']} partial, "
                f"{pooled['unavailable']} unavailable trial(s)"
            )
        lines.append(
            f"skill {triggers['skill']} ({arm['arm']}): {measures} over {decided} decided "
            f"trial(s) of {len(arm['queries'])} queries{left_out}; {pooled['queriesPassed']} of "
            f"{pooled['queriesDecided']} queries pass at trigger threshold {triggers['threshold']}."
        )
    return lines


def trigger_change_sentences(triggers: Mapping[str, Any]) -> list[str]:
    """Per comparison the verdict on recall and on specificity, worded like any comparison's."""
    lines = []
    for comparison in triggers.get("comparisons", []):
        for name in ("recall", "specificity"):
            change = comparison[name]
            if change is None:
                continue
            shaped = {
                "control": comparison["control"],
                "treatment": comparison["treatment"],
                "pairs": change["pairs"],
                "pooled": change,
            }
            lines.append(f"{name}: {verdict_sentence(shaped)}")
    return lines


def _trigger_rows(triggers: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for arm in triggers["arms"]:
        for query in arm["queries"]:
            passed = query["thresholdPass"]
            rows.append(
                [
                    arm["arm"],
                    query["caseId"],
                    query["query"][:120],
                    "yes" if query["shouldTrigger"] else "no",
                    f"{query['triggered']}/{query['known']}",
                    _rate_with_interval(query["rate"], query["interval"]),
                    query["partial"],
                    query["unavailable"],
                    None if passed is None else ("pass" if passed else "fail"),
                ]
            )
    return rows


def _trigger_lines(triggers: Mapping[str, Any]) -> list[str]:
    lines = ["### Triggers", "", *trigger_sentences(triggers), ""]
    changes = trigger_change_sentences(triggers)
    lines += [*changes, ""] if changes else []
    lines += [
        "Trigger rate per query (95 % Wilson intervals over decided trials; partial and "
        "unavailable trials left out):",
        "",
    ]
    headers = ["arm", "case", "query", "should trigger", "triggered", "rate (95 % CI)"]
    headers += ["partial", "unavailable", "threshold"]
    return lines + _table(headers, _trigger_rows(triggers)) + [""]


def render_experiment_statistics(statistics: Mapping[str, Any]) -> list[str]:
    """Markdown lines for a statistics document: each comparison, then each arm's rates."""
    lines: list[str] = []
    if "triggers" in statistics:
        lines += _trigger_lines(statistics["triggers"])
    for comparison in statistics["comparisons"]:
        lines += [*_comparison_lines(comparison), ""]
    lines += [
        f"Pass rates per arm and case ({statistics['repetitions']} repetitions; 95 % Wilson "
        "intervals over decided trials):",
        "",
    ]
    lines += _table(
        [
            "arm",
            "case",
            "passes",
            "inconclusive",
            "pass rate (95 % CI)",
            "pass@k",
            "pass^k",
            "activation",
        ],
        [row for arm in statistics["arms"] for row in _arm_rows(arm)],
    )
    return lines
