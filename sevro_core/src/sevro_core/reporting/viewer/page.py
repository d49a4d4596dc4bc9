"""The viewer's page model: runs verified by ``sevro report``'s checks, then each trial read in
full, case rows with Wilson intervals and experiments with their pairs side by side."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import read_json_file
from sevro_core.limits import MAX_RESULT_FILE_BYTES, MAX_VIEWER_TRIALS
from sevro_core.models import unit_key
from sevro_core.reporting.viewer.chart import pass_rate_chart
from sevro_core.reporting.viewer.trials import check_ids, read_trial, trial_view, visible

_UNSAFE_ANCHOR = re.compile(r"[^A-Za-z0-9_.-]+")


def run_directories(inputs: Sequence[Path]) -> list[Path]:
    """Each input resolved; one that is not a run directory (holding ``run.json``) is refused."""
    if not inputs:
        raise InvocationError("no input given; pass run directories")
    resolved = []
    for path in inputs:
        directory = path.expanduser().resolve()
        if not (directory / "run.json").is_file():
            raise InvocationError(f"{path} is not a run directory (no run.json in it)")
        resolved.append(directory)
    return resolved


def _anchor(run_id: str, ref: Mapping[str, Any], taken: set[str]) -> str:
    """A stable, URL-safe deep-link id: ``trial-<run8>-<case>-<arm>-<n>``."""
    parts = [run_id[:8], ref["caseId"], ref.get("arm") or "", str(ref["trial"])]
    base = "trial-" + "-".join(_UNSAFE_ANCHOR.sub("_", p) for p in parts if p)
    anchor, number = base, 1
    while anchor in taken:
        number += 1
        anchor = f"{base}~{number}"
    taken.add(anchor)
    return anchor


def _interval(passes: int, decided: int) -> Mapping[str, float] | None:
    from sevro_core.experiments.statistics import wilson_interval

    found = wilson_interval(passes, decided)
    return None if found is None else {"low": found.low, "high": found.high}


def _case_rows(rows: Sequence[Mapping[str, Any]], trials: Sequence[Mapping[str, Any]]) -> Any:
    """Report rows with pass counts over decided trials and their Wilson interval."""
    verdicts: dict[str, list[str]] = {}
    for trial in trials:
        verdicts.setdefault(trial["unit"], []).append(trial["task"])
    shown = []
    for row in rows:
        unit = verdicts.get(unit_key(row["caseId"], row.get("arm")), [])
        passes = unit.count("passed")
        decided = passes + unit.count("failed")
        shown.append(
            {
                "caseId": visible(row["caseId"], 400),
                "arm": visible(row.get("arm") or "", 200),
                "task": row["task"],
                "trialCount": row["trialCount"],
                "passedTrials": row["passedTrials"],
                "decided": decided,
                "rate": passes / decided if decided else None,
                "interval": _interval(passes, decided),
                "reasons": [
                    visible(r["reason"]) for r in (row.get("failures") or {}).get("reasons", [])
                ],
            }
        )
    return shown


def _judged(pair: Mapping[str, Any] | None) -> str | None:
    """What the blinded comparator decided about one pair, with its flags."""
    if pair is None:
        return None
    flags = ", ".join(pair.get("flags") or [])
    return f"{pair['outcome']} ({flags})" if flags else str(pair["outcome"])


def _pairs(statistics: Mapping[str, Any], anchors: Mapping[tuple[str, int], str]) -> Any:
    """Each comparison's pairs: trial r of the control beside trial r of the treatment."""
    shown = []
    for comparison in statistics.get("comparisons") or []:
        control, treatment = comparison["control"], comparison["treatment"]
        judged = {
            (p["caseId"], p["repetition"]): p
            for p in (comparison.get("judged") or {}).get("pairs") or []
        }
        for case in comparison.get("cases") or []:
            for pair in case.get("pairs") or []:
                number = pair["repetition"]
                shown.append(
                    {
                        "caseId": visible(case["caseId"], 400),
                        "control": control,
                        "treatment": treatment,
                        "repetition": number,
                        "judged": _judged(judged.get((case["caseId"], number))),
                        "controlOutcome": pair["control"],
                        "treatmentOutcome": pair["treatment"],
                        "controlAnchor": anchors.get((unit_key(case["caseId"], control), number)),
                        "treatmentAnchor": anchors.get(
                            (unit_key(case["caseId"], treatment), number)
                        ),
                    }
                )
    return shown


def _run_view(
    run_dir: Path, report: Mapping[str, Any], taken: set[str], budget: list[int]
) -> dict[str, Any]:
    run = read_json_file(run_dir / "run.json", MAX_RESULT_FILE_BYTES, what="run evidence")
    run_id = run["runId"]
    trials = []
    for ref in run["trials"]:
        if ref.get("path") is None:
            continue
        budget[0] += 1
        if budget[0] > MAX_VIEWER_TRIALS:
            raise InvocationError(f"more than {MAX_VIEWER_TRIALS} trials to view; view fewer runs")
        shown = trial_view(run_dir, ref, read_trial(run_dir, ref), _anchor(run_id, ref, taken))
        shown["unit"] = unit_key(ref["caseId"], ref.get("arm"))
        trials.append(shown)
    anchors = {(t["unit"], t["trial"]): t["anchor"] for t in trials}
    rows = [r for r in report["rows"] if r["runId"] == run_id]
    experiment = next(
        (e for e in report.get("experiments", []) if e["arms"][0]["runId"] == run_id), None
    )
    statistics = experiment["statistics"] if experiment else None
    cases = _case_rows(rows, trials)
    return {
        "runId": run_id,
        "source": visible(str(run_dir), 2000),
        "status": run.get("status"),
        "startedAt": run.get("startedAt"),
        "finishedAt": run.get("finishedAt"),
        "result": run["result"],
        "evaluationDigest": (run.get("evaluationIdentity") or {}).get("digest"),
        "arms": [a["id"] for a in run.get("arms") or []],
        "cases": cases,
        "chart": pass_rate_chart(cases),
        "trials": trials,
        "checks": check_ids(trials),
        "statistics": statistics,
        "pairs": _pairs(statistics, anchors) if statistics else [],
    }


def build_page(inputs: Sequence[Path]) -> dict[str, Any]:
    """Verify the runs (as ``sevro report`` does: schemas, digests) and model the page."""
    from sevro_core.reporting.report import build_report

    directories = run_directories(inputs)
    report = build_report(directories, details=True)
    taken: set[str] = set()
    budget = [0]
    runs = [_run_view(d, report, taken, budget) for d in directories]
    return {
        "runs": runs,
        "summary": report["summary"],
        "states": ["passed", "failed", "not_assessed"],
        "cases": sorted({t["caseId"] for r in runs for t in r["trials"]}),
        "arms": sorted({t["arm"] for r in runs for t in r["trials"] if t["arm"]}),
        "checks": sorted({c for r in runs for c in r["checks"]}),
    }
