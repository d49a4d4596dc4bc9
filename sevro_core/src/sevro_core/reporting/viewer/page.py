"""The viewer's page model: runs verified by ``sevro report``'s checks, each trial's view built
where that check read it, case rows with Wilson intervals and experiments' pairs side by side."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_VIEWER_TRIALS
from sevro_core.models import unit_key
from sevro_core.reporting.report import ProjectedRun, build_report_projected, no_cyclic_gc
from sevro_core.reporting.viewer.trials import confined_dir, trial_view, visible

if TYPE_CHECKING:
    from sevro_core.reporting.viewer.intervals import IntervalHelper

_UNSAFE_ANCHOR = re.compile(r"[^A-Za-z0-9_.-]+")
_SUMMARY = ("caseId", "arm", "trial", "execution", "grading", "task")
OPEN_GROUPS_UP_TO_TRIALS = 200
"""A page with at most this many trials shows every case's trial rows at once; a larger one
draws a case's rows when it is opened."""


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


def projected_trial(shown: Mapping[str, Any], unit: str) -> dict[str, Any]:
    """What the page keeps of one trial's view: the fields its row and filters need, and the
    whole view as JSON text, serialised where the trial was read (a large run's workers). The
    text is ASCII (``\\uXXXX`` escapes), so no character of it can fail to encode."""
    return {
        **{key: shown[key] for key in _SUMMARY},
        "unit": unit,
        "checks": [[check["id"], check["status"]] for check in shown["checks"]],
        "detail": json.dumps(shown, separators=(",", ":")),
    }


def _packed(members: Sequence[str]) -> str:
    """A case's trial details as one gzip'd, base64 JSON object: a tenth of the text, so a
    10 000-trial page stays small; the page's script unpacks a case when a trial is opened.
    Base64 holds no ``<``, so nothing in the block can end it."""
    data = ("{" + ",".join(members) + "}").encode("utf-8")
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def lazy_trials(run_index: int, trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A run's trials as the page carries them: a group per case (and arm) with its counts, one
    index of every trial's row (anchor, number, states, check outcomes) the script filters and
    draws a group's rows from when it is opened, and per case a packed block of details."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for trial in trials:
        grouped.setdefault(trial["unit"], []).append(trial)
    groups, index, blocks = [], [], []
    for number, members in enumerate(grouped.values(), 1):
        block = f"data-{run_index}-{number}"
        tasks = [t["task"] for t in members]
        groups.append(
            {
                "unit": members[0]["unit"],
                "caseId": members[0]["caseId"],
                "arm": members[0]["arm"],
                "block": block,
                "trials": len(members),
                "passed": tasks.count("passed"),
                "failed": tasks.count("failed"),
                "notAssessed": len(tasks) - tasks.count("passed") - tasks.count("failed"),
            }
        )
        index.append(
            [
                [t["anchor"], t["trial"], t["task"], t["execution"], t["grading"], t["checks"]]
                for t in members
            ]
        )
        # an anchor is letters, digits, "_", ".", "-" and "~" only (``_anchor``): JSON as it is
        packed = _packed([f'"{t["anchor"]}":{t["detail"]}' for t in members])
        blocks.append({"id": block, "data": packed})
    return {"groups": groups, "index": script_json(index), "blocks": blocks}


def _check_ids(trials: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every check id shown, in first-seen order (the check filter's choices)."""
    seen: dict[str, None] = {}
    for trial in trials:
        for check_id, _ in trial["checks"]:
            seen.setdefault(check_id, None)
    return list(seen)


def _rows(report: Mapping[str, Any], run_id: str) -> list[Mapping[str, Any]]:
    return [row for row in report["rows"] if row["runId"] == run_id]


def _counts(
    rows: Sequence[Mapping[str, Any]], trials: Sequence[Mapping[str, Any]]
) -> list[tuple[int, int]]:
    """Each report row's (passes, decided trials)."""
    verdicts: dict[str, list[str]] = {}
    for trial in trials:
        verdicts.setdefault(trial["unit"], []).append(trial["task"])
    counts = []
    for row in rows:
        unit = verdicts.get(unit_key(row["caseId"], row.get("arm")), [])
        counts.append((unit.count("passed"), unit.count("passed") + unit.count("failed")))
    return counts


def _case_rows(
    rows: Sequence[Mapping[str, Any]],
    counts: Sequence[tuple[int, int]],
    intervals: Sequence[tuple[float, float] | None],
) -> Any:
    """Report rows with pass counts over decided trials and their Wilson interval."""
    shown = []
    for row, (passes, decided), interval in zip(rows, counts, intervals, strict=True):
        shown.append(
            {
                "caseId": visible(row["caseId"], 400),
                "arm": visible(row.get("arm") or "", 200),
                "task": row["task"],
                "trialCount": row["trialCount"],
                "passedTrials": row["passedTrials"],
                "passes": passes,
                "decided": decided,
                "rate": passes / decided if decided else None,
                "interval": None if interval is None else {"low": interval[0], "high": interval[1]},
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
    located: Mapping[tuple[str, int], tuple[str, str]],
    run_dir: Path,
    run: Mapping[str, Any],
) -> Any:
    """Each comparison's pairs: trial r of the control beside trial r of the treatment (each
    side's anchor and details block from ``located``), with the comparator's reasons when it
    judged the pair."""
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
                sides = [
                    (arm, *located.get((unit_key(case["caseId"], arm), number), (None, None)))
                    for arm in (control, treatment)
                ]
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
                        "sides": [
                            {"arm": arm, "anchor": anchor, "block": block}
                            for arm, anchor, block in sides
                        ],
                    }
                )
    return shown


def _project(
    run_dir: Path,
    ref: Mapping[str, Any],
    document: Mapping[str, Any],
    verified: Mapping[str, bytes],
) -> Any:
    """One trial's view, built in the report's worker that verified the file (anchor later)."""
    from sevro_core.experiments.comparison import arm_trial
    from sevro_core.reporting.plots import PLAIN_ARM

    shown = trial_view(run_dir, ref, document, verified)
    projected = projected_trial(shown, unit_key(ref["caseId"], ref.get("arm")))
    projected["measured"] = arm_trial(document, None if ref.get("arm") else PLAIN_ARM)
    return projected


def _figures(
    statistics: Mapping[str, Any] | None,
    trials: Sequence[Mapping[str, Any]],
    arms: Sequence[str],
    index: int,
) -> list[Any]:
    """The run's figures beside its pass-rate chart (``reporting/plots``): each comparison's
    transition grid, and the duration and token distributions per arm. The SVG strings are
    escaped by ``plots`` itself, so they enter the page as markup."""
    from markupsafe import Markup

    from sevro_core.reporting.plots import (
        distribution_svg,
        reduced_distributions,
        transition_counts,
        transitions_svg,
    )

    svgs = [transitions_svg(c) for c in transition_counts(statistics)] if statistics else []
    measured = [trial["measured"] for trial in trials]  # reduced where each was read
    for key, distribution in reduced_distributions(measured, arms).items():
        svgs.append(distribution_svg(distribution, ids=f"run{index}-{key}"))
    return [Markup(svg) for svg in svgs]  # noqa: S704 - escaped by plots


def _pass_rates(cases: Sequence[Mapping[str, Any]], index: int) -> Any:
    """The run's pass rate per case and arm with its interval, drawn by ``reporting/plots``
    (escaped there, so it enters the page as markup)."""
    from markupsafe import Markup

    from sevro_core.reporting.plots import RateBar, pass_rate_svg

    bars = [
        RateBar(
            case_id=row["caseId"],
            arm=row["arm"] or None,
            passes=row["passes"],
            decided=row["decided"],
            rate=row["rate"],
            low=(row["interval"] or {}).get("low"),
            high=(row["interval"] or {}).get("high"),
        )
        for row in cases
    ]
    return Markup(pass_rate_svg(bars, ids=f"run{index}-passRates")) if bars else None  # noqa: S704


def _run_view(
    run_dir: Path,
    report: Mapping[str, Any],
    verified: ProjectedRun,
    intervals: Sequence[tuple[float, float] | None],
    taken: set[str],
    index: int,
) -> dict[str, Any]:
    run = verified.run
    run_id = run["runId"]
    refs = [ref for ref in run["trials"] if ref.get("path") is not None]
    trials = []
    for ref, (_, shown) in zip(refs, verified.trials, strict=True):
        shown["anchor"] = _anchor(run_id, ref, taken)
        trials.append(shown)
    lazy = lazy_trials(index, trials)
    blocks = {group["unit"]: group["block"] for group in lazy["groups"]}
    located = {(t["unit"], t["trial"]): (t["anchor"], blocks[t["unit"]]) for t in trials}
    rows = _rows(report, run_id)
    experiment = next(
        (e for e in report.get("experiments", []) if e["arms"][0]["runId"] == run_id), None
    )
    statistics = experiment["statistics"] if experiment else None
    cases = _case_rows(rows, _counts(rows, trials), intervals)
    arms = [a["id"] for a in run.get("arms") or []]
    return {
        "runId": run_id,
        "source": visible(str(run_dir), 2000),
        "status": run.get("status"),
        "startedAt": run.get("startedAt"),
        "finishedAt": run.get("finishedAt"),
        "result": run["result"],
        "evaluationDigest": (run.get("evaluationIdentity") or {}).get("digest"),
        "arms": arms,
        "cases": cases,
        "passRates": _pass_rates(cases, index),
        "figures": _figures(statistics, trials, arms, index),
        **lazy,
        "trials": trials,
        "trialCount": len(trials),
        "executionStates": {str(t["execution"]) for t in trials},
        "gradingStates": {str(t["grading"]) for t in trials},
        "checks": _check_ids(trials),
        "statistics": statistics,
        "pairs": _pairs(statistics, located, run_dir, run) if statistics else [],
    }


def _prepare() -> None:
    """What the page needs once the trials are verified, made while workers verify them: the
    compiled template."""
    from sevro_core.reporting.viewer.render import page_template

    page_template()


def build_page(inputs: Sequence[Path]) -> dict[str, Any]:
    """Verify the runs (as ``sevro report`` does: schemas, digests) and model the page."""
    from sevro_core.reporting.viewer.intervals import IntervalHelper

    directories = run_directories(inputs)
    confined_dir.cache_clear()
    with no_cyclic_gc(), IntervalHelper() as helper:
        return _page(directories, helper)


def _page(directories: Sequence[Path], helper: IntervalHelper) -> dict[str, Any]:
    report, views = build_report_projected(
        directories, _project, details=True, meanwhile=_prepare, most_trials=MAX_VIEWER_TRIALS
    )
    counts = [
        _counts(_rows(report, views[d].run["runId"]), [shown for _, shown in views[d].trials])
        for d in directories
    ]
    found = iter(helper.intervals([c for each in counts for c in each]))
    taken: set[str] = set()
    runs = [
        _run_view(d, report, views[d], [next(found) for _ in each], taken, index)
        for index, (d, each) in enumerate(zip(directories, counts, strict=True), 1)
    ]
    groups = [group for run in runs for group in run["groups"]]
    return {
        "runs": runs,
        "openGroups": sum(run["trialCount"] for run in runs) <= OPEN_GROUPS_UP_TO_TRIALS,
        "summary": report["summary"],
        "states": ["passed", "failed", "not_assessed"],
        "executionStates": sorted({s for r in runs for s in r["executionStates"]}),
        "gradingStates": sorted({s for r in runs for s in r["gradingStates"]}),
        "cases": sorted({g["caseId"] for g in groups}),
        "arms": sorted({g["arm"] for g in groups if g["arm"]}),
        "checks": sorted({c for r in runs for c in r["checks"]}),
    }
