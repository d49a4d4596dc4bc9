"""Built-in report renderers: Markdown (default) and JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sevro_core.api import COMPARATOR_ROLE, Reporter, hookimpl, unit_key


def _cell(value: Any) -> str:
    text = "unknown" if value is None else str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _rate(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.1f}%"


def _seconds(ms: float | None) -> str | None:
    return None if ms is None else f"{ms / 1000:.2f}"


def _cost(usd: float | None) -> str | None:
    return None if usd is None else f"${usd:.4f}"


class MarkdownReporter:
    id = "sevro.report.markdown"
    version = "1.0.0"
    format = "markdown"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def render(self, report: Mapping[str, Any]) -> str:
        summary = report["summary"]
        lines = [
            "# sevro report",
            "",
            "Pass rates describe these trials of these cases on these routes; unknown values "
            "were not measured and are not zero.",
            "",
            f"{summary['cases']} case(s): {summary['passed']} passed, {summary['failed']} failed, "
            f"{summary['notAssessed']} not assessed.",
        ]
        lines += _experiments_section(report.get("experiments", []))
        lines += ["", "## Input runs", ""]
        lines += _table(
            ["input", "run", "execution", "grading", "task", "exit", "cases"],
            [
                [
                    i["source"],
                    i["runId"],
                    i["execution"],
                    i["grading"],
                    i["task"],
                    i["exitCode"],
                    i["caseCount"],
                ]
                for i in report["inputs"]
            ],
        )
        lines += ["", "## Case outcomes", ""]
        lines += _table(
            [
                "case",
                "trials",
                "pass rate",
                "execution",
                "grading",
                "task",
                "seconds",
                "input tokens",
                "output tokens",
                "cost",
                "condition",
                "route",
            ],
            [
                [
                    unit_key(r["caseId"], r.get("arm")),
                    r["trialCount"],
                    _rate(r["taskPassRate"]),
                    r["execution"],
                    r["grading"],
                    r["task"],
                    _seconds(r["candidateDurationMs"]),
                    r["inputTokens"],
                    r["outputTokens"],
                    _cost(r["costUsd"]),
                    f"{r['requestedCondition']} / {r['actualCondition']}",
                    _route(r["candidateRoute"]),
                ]
                for r in report["rows"]
            ],
        )
        lines += _failures_section(report["rows"])
        lines += _advisory_section(report["rows"])
        lines += ["", "## Retained evidence", ""]
        lines += _table(
            ["case", "run", "evaluation", "evidence"],
            [
                [
                    unit_key(r["caseId"], r.get("arm")),
                    r["runId"],
                    r["evaluationDigest"][:16],
                    r["evidencePath"],
                ]
                for r in report["rows"]
            ],
        )
        lines += ["", "## Routes", ""]
        routes = sorted(
            {
                (unit_key(r["caseId"], r.get("arm")), rt["role"], _route(rt))
                for r in report["rows"]
                for rt in r["routes"]
            }
        )
        lines += _table(["case", "role", "route"], [list(r) for r in routes])
        lines += _judge_usage_section(report["rows"], report.get("experiments", []))
        lines += _spend_section(report.get("spend", []))
        lines += _ceilings_section(report["inputs"])
        return "\n".join(lines) + "\n"


def _ceilings_section(inputs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each run's spend ceiling and journal: what was charged, reserved and forfeited, and
    whether the ceiling stopped the run (nothing for runs without a ceiling)."""
    limited = [i for i in inputs if "spendLimits" in i]
    if not limited:
        return []
    rows = []
    for item in limited:
        limits, totals = item["spendLimits"], item["spendLimits"]["totals"]
        stopped = limits.get("stopped")
        rows.append(
            [
                item["runId"] or item["source"],
                _cost(limits["ceilings"].get("run")) or "none",
                _cost(totals.get("chargedUsd")),
                _cost(totals.get("openUsd")),
                totals.get("reservations", 0),
                f"{totals.get('forfeits', 0)} ({_cost(totals.get('forfeitedUsd'))})",
                "no" if stopped is None else f"yes: {stopped['reason']}",
            ]
        )
    lines = [
        "",
        "### Spend ceilings",
        "",
        "Each call reserved its per-call ceiling before it started; a call whose cost is "
        "unknown, or whose process died, is charged its whole reservation (a forfeit).",
        "",
    ]
    headers = ["run", "ceiling", "charged", "still reserved", "reservations", "forfeits"]
    return lines + _table([*headers, "stopped by the ceiling"], rows)


def _spend_section(spend: Sequence[Mapping[str, Any]]) -> list[str]:
    """Spend per arm and role, then per arm and overall: "unknown" wherever any call's cost is
    unknown, so a partial sum is never shown as a total (docs/spend.md)."""
    if not spend:
        return []
    lines = [
        "",
        "## Spend",
        "",
        "Cost is computed from the run's price table (see its `prices` in run.json); reported "
        "cost is the CLI's own figure. Unknown for any call makes the sum unknown.",
        "",
    ]
    return lines + _table(
        ["arm", "role", "trials or pairs", "cost", "reported cost"],
        [
            [
                "run" if e["arm"] is None else e["arm"],
                e["role"],
                e["calls"],
                _cost(e["costUsd"]),
                _cost(e["reportedCostUsd"]),
            ]
            for e in spend
        ],
    )


def _judge_usage_section(
    rows: Sequence[Mapping[str, Any]], experiments: Sequence[Mapping[str, Any]] = ()
) -> list[str]:
    """What the judges cost, apart from the candidate's usage (nothing when no judge ran): the
    judges of each case's trials, then the comparator of each judged comparison, whose calls
    are kept with its pair judgements rather than in any trial."""
    table = [
        [
            unit_key(r["caseId"], r.get("arm")),
            role,
            usage["calls"],
            usage["inputTokens"],
            usage["outputTokens"],
            _cost(usage["costUsd"]),
        ]
        for r in rows
        for role, usage in sorted(r.get("judgeUsage", {}).items())
    ]
    table += [
        [
            f"{c['control']}..{c['treatment']}",
            COMPARATOR_ROLE,
            c["judged"]["judgedPairs"],
            *_known_usage(usage),
        ]
        for experiment in experiments
        for c in experiment["statistics"]["comparisons"]
        if (usage := c.get("judged", {}).get("usage")) is not None
    ]
    if not table:
        return []
    lines = ["", "## Judge usage", "", "Kept apart from the candidate's usage above.", ""]
    return lines + _table(
        ["case or comparison", "judge", "trials or pairs", "input tokens", "output tokens", "cost"],
        table,
    )


def _known_usage(usage: Mapping[str, Any]) -> list[Any]:
    """Input and output tokens and cost, each unknown unless every call reported it in full."""
    known = usage["complete"] is True
    return [
        usage["inputTokens"] if known else None,
        usage["outputTokens"] if known else None,
        _cost(usage["costUsd"]) if known else None,
    ]


def _experiments_section(experiments: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each experiment's (or --compare's) verdict, per-case table, activation and rates."""
    from sevro_core.api import (
        render_experiment_statistics,
        render_judge_calibration,
        render_skilleval,
    )

    lines: list[str] = []
    for experiment in experiments:
        arms = ", ".join(f"{a['id']} = run {a['runId']}" for a in experiment["arms"])
        lines += ["", "## Experiment", "", f"Arms: {_cell(arms)}.", ""]
        lines += _holdout_lines(experiment.get("holdout"))
        if "judgeCalibration" in experiment:
            lines += [*render_judge_calibration(experiment["judgeCalibration"]), ""]
        lines += render_experiment_statistics(experiment["statistics"])
        if "skillEval" in experiment:
            lines += ["", *render_skilleval(experiment["skillEval"], experiment["statistics"])]
    return lines


def _holdout_lines(holdout: Mapping[str, Any] | None) -> list[str]:
    """Whether a sealed holdout plan authorised the verdict (docs/holdouts.md)."""
    if holdout is None:
        return ["Holdout: none (no sealed holdout plan authorised this verdict).", ""]
    return [
        f"Holdout: authorised by sealed plan {_cell(holdout['planId'])} "
        f"(sha256 {holdout['planDigest'][:12]}…, consumed {_cell(holdout['consumedAt'])}).",
        "",
    ]


def _failures_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """With ``--details``: each reason a case did not pass, with its trials."""
    from sevro_core.api import trial_ranges

    table: list[list[Any]] = []
    for row in rows:
        failures = row.get("failures")
        if failures is None:
            continue
        for item in failures["reasons"]:
            table.append(
                [
                    unit_key(row["caseId"], row.get("arm")),
                    row["runId"],
                    trial_ranges(item["trials"]),
                    item["reason"],
                ]
            )
        if failures["omittedReasons"]:
            more = f"… and {failures['omittedReasons']} more reason(s)"
            table.append([unit_key(row["caseId"], row.get("arm")), row["runId"], "…", more])
    if not table:
        return []
    heading = [
        "",
        "## Failures",
        "",
        "First failing check or error of each trial that did not pass.",
    ]
    return [*heading, "", *_table(["case", "run", "trials", "reason"], table)]


def _advisory_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each trial's advisory review: findings, dropped citations, answers. Advice only."""
    findings: list[list[Any]] = []
    answers: list[list[Any]] = []
    for row in rows:
        case = unit_key(row["caseId"], row.get("arm"))
        for trial in row.get("advisoryReviews", []):
            where = [case, row["runId"], trial["trial"]]
            if trial["status"] != "completed":
                findings.append([*where, f"review {trial['status']}", "", trial.get("reason")])
            for f in trial["findings"]:
                first, last = f["lines"]
                findings.append([*where, f["severity"], f"{f['file']}:{first}-{last}", f["title"]])
            if trial["droppedFindings"]:
                dropped = (
                    f"{trial['droppedFindings']} finding(s) dropped: cited lines that do not exist"
                )
                findings.append([*where, "dropped", "", dropped])
            answers += [[*where, a["question"], a["answer"]] for a in trial["answers"]]
    if not findings and not answers:
        return []
    lines = ["", "## Advisory review (advisory — does not affect the verdict)", ""]
    lines += ["A judge's review of each trial's change; verdicts and exit codes ignore it.", ""]
    lines += _table(["case", "run", "trial", "severity", "location", "finding"], findings)
    if answers:
        lines += ["", *_table(["case", "run", "trial", "question", "answer"], answers)]
    return lines


def _route(route: Mapping[str, Any] | None) -> str | None:
    if route is None:
        return None
    return f"{route['host']}/{route['model']}@{route['effort']}"


class JsonReporter:
    id = "sevro.report.json"
    version = "1.0.0"
    format = "json"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def render(self, report: Mapping[str, Any]) -> str:
        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


@hookimpl
def sevro_register_reporters(register: Callable[[Reporter], None]) -> None:
    register(MarkdownReporter())
    register(JsonReporter())
