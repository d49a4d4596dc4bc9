"""Experiment statistics from retained runs: an experiment run's own arms, or two earlier runs
compared as two arms (``sevro report --compare A B``).

An experiment run's stored statistics are used only once every count and pair they rest on has
been recounted from the verified trial files; two compared runs are computed afresh. Two runs
are compared only when they evaluated the same cases the same way: their evaluation identities
may differ in the arm and nothing else, otherwise the comparison is refused with the first
dimension that differs (exit 64).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from sevro_core.errors import InvocationError
from sevro_core.run.identity import PROVENANCE_ONLY

PLAIN_NAMES: Final = ("A", "B")
"""Arm names of the two compared runs when a run is plain or both runs name the same arm."""
ARM_DIMENSIONS: Final = frozenset({"configurationDigest", "routeDigest"})
"""Identity dimensions an arm changes; the configuration behind the first is compared below."""
ROUTE_OVERRIDES: Final = ("host", "model", "effort")


def _case_order(result: Mapping[str, Any]) -> list[str]:
    """The run's case ids in order, whether its cases are keyed by case or by ``case@arm``."""
    return list(dict.fromkeys(case["caseId"].partition("@")[0] for case in result["cases"]))


def _arm_trials(trials: Iterable[Mapping[str, Any]], name: str | None) -> list[Any]:
    """The verified, reduced trials as ``ArmTrial`` values, under ``name`` when given (a run
    compared with another is one arm, whatever its trials call it)."""
    from sevro_core.experiments.comparison import arm_trial

    return [arm_trial(trial, name) for trial in trials]


def run_statistics(
    run: Mapping[str, Any],
    result: Mapping[str, Any],
    trials: Iterable[Mapping[str, Any]],
    run_dir: Path | None = None,
) -> dict[str, Any]:
    """The statistics of an experiment run (one with ``arms``) from its verified trials.

    When ``run.json`` carries the statistics ``sevro run`` computed, every count they rest on
    is recounted from the trials (no SciPy or statsmodels, which take seconds to import), and
    a comparison's ``judged`` block from the pair judgements kept in ``run_dir``; a mismatch is
    refused. Otherwise they are computed here (without judged blocks)."""
    from sevro_core.experiments.comparison import statistics_counts, statistics_of_run

    documents = list(trials)
    try:
        stored = _stored_statistics(run)
        if stored is None:
            return statistics_of_run(run, documents, _case_order(result))
        judging = _stored_judging(stored, run, run_dir)
        counted = statistics_of_run(
            run, documents, _case_order(result), counts_only=True, judging=judging
        )
        if statistics_counts(stored) != counted:
            raise InvocationError(
                f"the statistics in run.json of run {run['runId']} do not match its trial files"
            )
        return stored
    except ValueError as exc:  # a trial without its arm, twice the same trial, unknown arms
        raise InvocationError(f"run {run['runId']} is not a consistent experiment: {exc}") from None


def _stored_judging(
    stored: Mapping[str, Any], run: Mapping[str, Any], run_dir: Path | None
) -> dict[tuple[str, str], Any]:
    """The comparator's judging of each judged comparison, as ``sevro run`` had it: the stored
    block's rubric, judge and eligibility rule with the verified pair judgements on disk."""
    from sevro_core.experiments.comparison import ComparatorJudging
    from sevro_core.experiments.pairjudgements import read_pairs

    judging: dict[tuple[str, str], Any] = {}
    for comparison in stored["comparisons"]:
        judged = comparison.get("judged")
        if judged is None:
            continue
        control, treatment = comparison["control"], comparison["treatment"]
        found = {} if run_dir is None else read_pairs(run_dir, run, control, treatment)
        judging[(control, treatment)] = ComparatorJudging(
            rubric_id=judged["rubric"]["id"],
            rubric_version=judged["rubric"]["version"],
            route=judged["judge"],
            judgements={key: judgement for key, (judgement, _) in found.items()},
            when=judged["when"],
            calibration=judged["calibration"],
            call_usage={key: usage for key, (_, usage) in found.items()},
        )
    return judging


def _stored_statistics(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """``run.json``'s statistics when they are a valid statistics document, else None."""
    from sevro_core.formats.schemas import validator

    stored = run.get("statistics")
    if not isinstance(stored, dict) or not validator("experiment-statistics.v1").is_valid(stored):
        return None
    return stored


def _single_arm(run: Mapping[str, Any], label: str) -> Mapping[str, Any] | None:
    """The run's one arm, None for a plain run; an experiment of several arms is refused."""
    arms = run.get("arms")
    if not arms:
        return None
    if len(arms) != 1:
        raise InvocationError(
            f"run {label} is an experiment with {len(arms)} arms; report it on its own "
            "(--compare takes two plain or one-arm runs)"
        )
    arm: Mapping[str, Any] = arms[0]
    return arm


def _overrides_route(arm: Mapping[str, Any] | None) -> bool:
    return arm is not None and any(arm.get(key) is not None for key in ROUTE_OVERRIDES)


def check_comparable(
    runs: Sequence[Mapping[str, Any]], arms: Sequence[Mapping[str, Any] | None]
) -> None:
    """Refuse (exit 64, naming the dimension) runs whose identities differ in anything but the
    arm. Route and host configuration may differ only when an arm declares host/model/effort."""
    first, second = (run["evaluationIdentity"]["dimensions"] for run in runs)
    route_free = any(_overrides_route(arm) for arm in arms)
    for key in sorted(set(first) | set(second)):
        if key in ARM_DIMENSIONS:
            continue
        if first.get(key) != second.get(key):
            _refuse(key)
    if not route_free and first.get("routeDigest") != second.get("routeDigest"):
        _refuse("routeDigest (the runs use different hosts, models or efforts)")
    redacted = [dict(run["configuration"]["redacted"]) for run in runs]
    for configuration in redacted:
        configuration.pop("arms", None)
        for key in PROVENANCE_ONLY:  # how the values were given, not what they are
            configuration.pop(key, None)
        if route_free:
            configuration.pop("hostConfiguration", None)
    for key in sorted(set(redacted[0]) | set(redacted[1])):
        if redacted[0].get(key) != redacted[1].get(key):
            _refuse(f"configuration {key}")


def _refuse(dimension: str) -> None:
    raise InvocationError(
        f"the runs differ in {dimension}: --compare compares runs of the same cases that differ "
        "only in their arm (skills, context and, when an arm declares them, host, model, effort)"
    )


def arm_names(arms: Sequence[Mapping[str, Any] | None]) -> tuple[str, str]:
    """Each run's arm id; a plain run is named by its place (A, B), and so are both runs when
    their names clash."""
    first, second = (
        arm["id"] if arm is not None else PLAIN_NAMES[index] for index, arm in enumerate(arms)
    )
    return (first, second) if first != second else PLAIN_NAMES


def compare_runs(
    runs: Sequence[Mapping[str, Any]],
    results: Sequence[Mapping[str, Any]],
    trials: Sequence[Iterable[Mapping[str, Any]]],
) -> tuple[tuple[str, str], dict[str, Any]]:
    """The arm names and the statistics of run A (control) against run B (treatment)."""
    from sevro_core.experiments.comparison import experiment_statistics

    arms = [_single_arm(run, label) for run, label in zip(runs, PLAIN_NAMES, strict=True)]
    check_comparable(runs, arms)
    names = arm_names(arms)
    every = [
        trial
        for name, listed in zip(names, trials, strict=True)
        for trial in _arm_trials(listed, name)
    ]
    statistics = experiment_statistics(
        list(names),
        [names],
        every,
        int(runs[0]["evaluationIdentity"]["dimensions"]["trialCount"]),
        _case_order(results[0]),
    )
    return names, statistics
