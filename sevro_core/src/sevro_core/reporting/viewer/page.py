"""The viewer's page model: runs verified by ``sevro report``'s checks, each trial's view built
where that check read it, case rows with Wilson intervals and experiments' pairs side by side."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import read_json_file
from sevro_core.limits import MAX_RESULT_FILE_BYTES, MAX_VIEWER_TRIALS
from sevro_core.models import unit_key
from sevro_core.reporting.viewer.chart import pass_rate_chart
from sevro_core.reporting.viewer.trials import check_ids, confined_dir, trial_view, visible

_UNSAFE_ANCHOR = re.compile(r"[^A-Za-z0-9_.-]+")
_SUMMARY = ("anchor", "caseId", "arm", "trial", "execution", "grading", "task", "unit")


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


def script_json(value: object) -> str:
    """JSON for a ``<script type="application/json">`` block: ``<``, ``>`` and ``&`` written as
    escapes, so no ``</script>`` or ``<!--`` in untrusted text can end or bend the block."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def lazy_trials(run_index: int, trials: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Any]:
    """Each trial's summary for the page, and its details grouped per case into data blocks
    the page's script renders only when a trial is opened (so 10 000 trials open fast)."""
    blocks: dict[str, dict[str, Any]] = {}
    summaries = []
    for trial in trials:
        block = blocks.setdefault(trial["unit"], {"id": f"data-{run_index}-{len(blocks) + 1}"})
        block.setdefault("trials", {})[trial["anchor"]] = trial
        summaries.append(
            {
                **{k: trial[k] for k in _SUMMARY},
                "block": block["id"],
                "checks": script_json([[c["id"], c["status"]] for c in trial["checks"]]),
            }
        )
    return summaries, [{"id": b["id"], "json": script_json(b["trials"])} for b in blocks.values()]


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


def _pairs(
    statistics: Mapping[str, Any],
    anchors: Mapping[tuple[str, int], str],
    run_dir: Path,
    run: Mapping[str, Any],
) -> Any:
    """Each comparison's pairs: trial r of the control beside trial r of the treatment, with
    the comparator's reasons when it judged the pair."""
    from sevro_core.reporting.viewer.judgements import pair_reasons

    shown = []
    for comparison in statistics.get("comparisons") or []:
        control, treatment = comparison["control"], comparison["treatment"]
        reasons = pair_reasons(run_dir, run, control, treatment) if comparison.get("judged") else {}
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
                        "reasons": reasons.get((case["caseId"], number)),
                        "controlOutcome": pair["control"],
                        "treatmentOutcome": pair["treatment"],
                        "controlAnchor": anchors.get((unit_key(case["caseId"], control), number)),
                        "treatmentAnchor": anchors.get(
                            (unit_key(case["caseId"], treatment), number)
                        ),
                    }
                )
    return shown


def _project(run_dir: Path, ref: Mapping[str, Any], document: Mapping[str, Any]) -> Any:
    """One trial's view, built in the report's worker that verified the file (anchor later)."""
    shown = trial_view(run_dir, ref, document, "")
    shown["unit"] = unit_key(ref["caseId"], ref.get("arm"))
    return shown


def _figures(
    statistics: Mapping[str, Any] | None,
    documents: Sequence[Mapping[str, Any]],
    arms: Sequence[str],
    index: int,
) -> list[Any]:
    """The run's figures beside its pass-rate chart (``reporting/plots``): each comparison's
    transition grid, and the duration and token distributions per arm. The SVG strings are
    escaped by ``plots`` itself, so they enter the page as markup."""
    from markupsafe import Markup

    from sevro_core.reporting.plots import (
        distribution_svg,
        distributions,
        transition_counts,
        transitions_svg,
    )

    svgs = [transitions_svg(c) for c in transition_counts(statistics)] if statistics else []
    for key, distribution in distributions(documents, arms).items():
        svgs.append(distribution_svg(distribution, ids=f"run{index}-{key}"))
    return [Markup(svg) for svg in svgs]  # noqa: S704 - escaped by plots


def _run_view(
    run_dir: Path,
    report: Mapping[str, Any],
    views: Sequence[tuple[dict[str, Any], Any]],
    taken: set[str],
    index: int,
) -> dict[str, Any]:
    run = read_json_file(run_dir / "run.json", MAX_RESULT_FILE_BYTES, what="run evidence")
    run_id = run["runId"]
    refs = [ref for ref in run["trials"] if ref.get("path") is not None]
    if len(refs) != len(views):
        raise InvocationError(f"{run_dir} changed while it was being viewed")
    trials = []
    documents: list[Mapping[str, Any]] = []
    for ref, (document, shown) in zip(refs, views, strict=True):
        shown["anchor"] = _anchor(run_id, ref, taken)
        documents.append(document)
        trials.append(shown)
    anchors = {(t["unit"], t["trial"]): t["anchor"] for t in trials}
    rows = [r for r in report["rows"] if r["runId"] == run_id]
    experiment = next(
        (e for e in report.get("experiments", []) if e["arms"][0]["runId"] == run_id), None
    )
    statistics = experiment["statistics"] if experiment else None
    cases = _case_rows(rows, trials)
    summaries, blocks = lazy_trials(index, trials)
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
        "figures": _figures(statistics, documents, [a["id"] for a in run.get("arms") or []], index),
        "trials": summaries,
        "blocks": blocks,
        "checks": check_ids(trials),
        "statistics": statistics,
        "pairs": _pairs(statistics, anchors, run_dir, run) if statistics else [],
    }


def _within_budget(directories: Sequence[Path]) -> None:
    """Refused before any trial is read: more trials than one page can show."""
    total = 0
    for directory in directories:
        run = read_json_file(directory / "run.json", MAX_RESULT_FILE_BYTES, what="run evidence")
        trials = run.get("trials") if isinstance(run, dict) else None
        total += sum(1 for r in trials or [] if isinstance(r, dict) and r.get("path") is not None)
    if total > MAX_VIEWER_TRIALS:
        raise InvocationError(f"more than {MAX_VIEWER_TRIALS} trials to view; view fewer runs")


def build_page(inputs: Sequence[Path]) -> dict[str, Any]:
    """Verify the runs (as ``sevro report`` does: schemas, digests) and model the page."""
    from sevro_core.reporting.report import build_report_projected

    directories = run_directories(inputs)
    _within_budget(directories)
    confined_dir.cache_clear()
    report, views = build_report_projected(directories, _project, details=True)
    taken: set[str] = set()
    runs = [
        _run_view(d, report, views.get(d, []), taken, index)
        for index, d in enumerate(directories, 1)
    ]
    return {
        "runs": runs,
        "summary": report["summary"],
        "states": ["passed", "failed", "not_assessed"],
        "executionStates": sorted({str(t["execution"]) for r in runs for t in r["trials"]}),
        "gradingStates": sorted({str(t["grading"]) for r in runs for t in r["trials"]}),
        "cases": sorted({t["caseId"] for r in runs for t in r["trials"]}),
        "arms": sorted({t["arm"] for r in runs for t in r["trials"] if t["arm"]}),
        "checks": sorted({c for r in runs for c in r["checks"]}),
    }
