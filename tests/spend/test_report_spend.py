"""Reports show spend per arm and role, and "unknown" wherever any call's cost is unknown:
a partial sum is never shown as a total."""

from __future__ import annotations

from typing import Any

from sevro_core.builtins.reporters import MarkdownReporter
from sevro_core.formats.schemas import validator
from sevro_core.reporting.report import spend
from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check


def row(
    arm: str | None, cost: float | None, reported: float | None = None, **judges: Any
) -> dict[str, Any]:
    found = {"caseId": "c", "trialCount": 2, "costUsd": cost, "reportedCostUsd": reported}
    return {**found, **({"arm": arm} if arm else {}), "judgeUsage": judges}


def judge(cost: float | None, calls: int = 2) -> dict[str, Any]:
    return {"inputTokens": 1, "outputTokens": 1, "costUsd": cost, "calls": calls}


def by_key(entries: list[dict[str, Any]]) -> dict[tuple[Any, str], dict[str, Any]]:
    return {(e["arm"], e["role"]): e for e in entries}


def test_spend_is_summed_per_arm_and_role_and_overall() -> None:
    rows = [
        row("baseline", 0.5, 0.6, semantic=judge(0.1)),
        row("baseline", 0.25, 0.3, semantic=judge(0.1)),
        row("candidate", 1.0, 1.1, semantic=judge(0.2)),
    ]
    found = by_key(spend(rows, []))
    assert found[("baseline", "candidate")] == {
        "arm": "baseline", "role": "candidate", "calls": 4, "costUsd": 0.75,
        "reportedCostUsd": 0.9,
    }  # fmt: skip
    assert found[("baseline", "semantic")]["costUsd"] == 0.2
    assert found[("baseline", "all")]["costUsd"] == 0.95
    assert found[("candidate", "all")]["costUsd"] == 1.2
    assert found[("all", "all")]["costUsd"] == 2.15 and found[("all", "all")]["calls"] == 12


def test_one_unknown_call_makes_every_sum_it_enters_unknown() -> None:
    rows = [
        row("baseline", 0.5, semantic=judge(0.1)),
        row("baseline", None, semantic=judge(0.1)),  # one trial's cost unknown
        row("candidate", 1.0, semantic=judge(None)),  # one judge call's cost unknown
    ]
    found = by_key(spend(rows, []))
    assert found[("baseline", "candidate")]["costUsd"] is None  # never 0.5
    assert found[("baseline", "semantic")]["costUsd"] == 0.2  # the known part stays known
    assert found[("baseline", "all")]["costUsd"] is None
    assert found[("candidate", "candidate")]["costUsd"] == 1.0
    assert found[("candidate", "semantic")]["costUsd"] is None
    assert found[("all", "all")]["costUsd"] is None
    assert found[("baseline", "candidate")]["reportedCostUsd"] is None


def test_the_comparator_is_spend_of_its_comparison() -> None:
    usage = {"complete": True, "costUsd": 0.3, "reportedCostUsd": None, "calls": 6}
    comparison = {"control": "baseline", "treatment": "candidate", "judged": {"usage": usage}}
    experiments = [{"statistics": {"comparisons": [comparison]}}]
    found = by_key(spend([row("baseline", 0.5), row("candidate", 0.5)], experiments))
    assert found[("baseline..candidate", "comparator")]["costUsd"] == 0.3
    assert found[("all", "all")]["costUsd"] == 1.3
    incomplete = {**usage, "complete": False}
    comparison["judged"] = {"usage": incomplete}
    found = by_key(spend([row("baseline", 0.5), row("candidate", 0.5)], experiments))
    assert found[("baseline..candidate", "comparator")]["costUsd"] is None
    assert found[("all", "all")]["costUsd"] is None


def test_markdown_shows_unknown_never_a_partial_total() -> None:
    rows = [row("baseline", 0.5), row("baseline", None), row("candidate", 1.0)]
    report = {
        "summary": {"cases": 0, "passed": 0, "failed": 0, "notAssessed": 0},
        "inputs": [], "rows": [], "spend": spend(rows, []),
    }  # fmt: skip
    text = MarkdownReporter().render(report)
    assert "## Spend" in text
    assert "| baseline | candidate | 4 | unknown | unknown |" in text
    assert "| candidate | candidate | 2 | $1.0000 | unknown |" in text
    assert "| all | all | 6 | unknown | unknown |" in text
    assert "$0.5000" not in text and "$1.5000" not in text  # no partial sum anywhere


def test_a_report_of_a_run_with_unknown_usage_shows_unknown_spend(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host, "--trials", "2")
    assert done.exit_code == 0, done.stdout + done.stderr
    run_dir = sevro_project.results / done.json()["runId"]
    report = sevro_project.sevro("report", run_dir, "--json")
    assert report.exit_code == 0, report.stderr
    document = report.json()
    assert not list(validator("report.v1").iter_errors(document))
    assert document["spend"] == [
        {"arm": None, "role": "candidate", "calls": 2, "costUsd": None, "reportedCostUsd": None}
    ]  # the scripted host reports no usage: unknown, never 0
    markdown = sevro_project.sevro("report", run_dir).stdout
    assert "| run | candidate | 2 | unknown | unknown |" in markdown
