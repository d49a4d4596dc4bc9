"""The comparison document of an experiment: what its trials say, per arm, per case and pooled.

A trial is reduced to an :class:`ArmTrial` (its outcome, whether the target skill was read, its
tokens, cost and duration); :func:`experiment_statistics` pairs the trials of compared arms by
case and repetition and returns a JSON-ready ``sevro.experiment-statistics.v1`` document. Every
number comes from :mod:`sevro_core.experiments.statistics`; this module only pairs, counts and
shapes. Unknown stays unknown (null), never 0: a trial that was not executed or graded is
``inconclusive``, a pair with an inconclusive side (or a missing trial) is never a win or a loss,
and a measure is averaged only over the trials or pairs that know it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from attrs import field, frozen

from sevro_core.experiments.statistics import (
    CONFIDENCE,
    Interval,
    McNemar,
    Outcome,
    Pair,
    PairedComparison,
    PassRate,
    Transitions,
    compare_cases,
    pass_at_k,
    pass_hat_k,
    pass_rate,
    sign_test,
    transitions,
    wilson_interval,
)
from sevro_core.judges.comparator import (
    BOTH_PASSED,
    JUDGE_ERROR,
    POSITION_BIAS,
    PairJudgement,
    eligible,
)
from sevro_core.judges.session import sum_usage
from sevro_core.models import Usage
from sevro_core.vocabulary import SKILLS_OBSERVATION

STATISTICS_FORMAT: Final = "sevro.experiment-statistics.v1"
MAX_K: Final = 10
"""pass@k and pass^k are listed for k = 1 … min(repetitions, MAX_K): beyond ten the curve says
little a reader can use, and a 10 000-repetition run would list 10 000 values per case."""
MEASURES: Final = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("costUsd", "cost_usd"),
    ("durationMs", "duration_ms"),
)


@frozen
class ArmTrial:
    """One trial as a comparison sees it. ``None`` is unknown, never zero."""

    arm: str
    case_id: str
    repetition: int
    outcome: Outcome
    activated: bool | None
    """The target skill was read in full (True), offered but not read (False), or unknown."""
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    duration_ms: float | None
    """The agent's time (``durations.candidateMs``)."""


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def trial_outcome(evidence: Mapping[str, Any]) -> Outcome:
    """``pass``/``fail`` only for an executed, completely graded trial with a verdict."""
    executed = _dict(evidence.get("execution")).get("status") == "completed"
    graded = _dict(evidence.get("grading")).get("status") == "completed"
    verdict = _dict(evidence.get("task")).get("verdict")
    if executed and graded and verdict in ("passed", "failed"):
        return "pass" if verdict == "passed" else "fail"
    return "inconclusive"


def skill_activation(evidence: Mapping[str, Any]) -> bool | None:
    """Whether the target skill was read, from a complete ``sevro.skills`` observation only."""
    observations = evidence.get("observations")
    found = [
        o
        for o in (observations if isinstance(observations, list) else [])
        if isinstance(o, Mapping) and o.get("id") == SKILLS_OBSERVATION
    ]
    if len(found) != 1 or found[0].get("completeness") != "complete":
        return None
    data = _dict(found[0].get("data"))
    target = data.get("target")
    read, offered = data.get("read"), data.get("offered")
    if not isinstance(target, str) or not isinstance(read, list) or not isinstance(offered, list):
        return None
    if target in read:
        return True
    if any(isinstance(o, Mapping) and o.get("name") == target for o in offered):
        return False
    return None  # not even offered: the trial says nothing about using it


def arm_trial(document: Mapping[str, Any], arm: str | None = None) -> ArmTrial:
    """Reduce a ``sevro.trial-evidence.v1`` document; ``arm`` names the arm of a plain run's
    trial (which has no ``arm`` key) and otherwise must be left out."""
    named = document.get("arm") if arm is None else arm
    if not isinstance(named, str):
        raise ValueError("a trial of a plain run needs the name of the arm it stands for")
    evidence = _dict(document.get("evidence"))
    usage = _dict(evidence.get("usage"))
    complete = usage.get("complete") is True
    duration = _number(_dict(evidence.get("durations")).get("candidateMs"))
    return ArmTrial(
        arm=named,
        case_id=str(document["caseId"]),
        repetition=int(document["trial"]),
        outcome=trial_outcome(evidence),
        activated=skill_activation(evidence),
        input_tokens=_count(usage.get("inputTokens")) if complete else None,
        output_tokens=_count(usage.get("outputTokens")) if complete else None,
        cost_usd=_number(usage.get("costUsd")) if complete else None,
        duration_ms=duration if duration is not None and duration >= 0 else None,
    )


# ---- JSON shapes -------------------------------------------------------------------------------


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _interval(interval: Interval | None) -> dict[str, Any] | None:
    if interval is None:
        return None
    low, high = _finite(interval.low), _finite(interval.high)
    return None if low is None or high is None else {"low": low, "high": high}


def _rate(rate: PassRate) -> dict[str, Any]:
    return {
        "passes": rate.passes,
        "decided": rate.decided,
        "inconclusive": rate.inconclusive,
        "rate": rate.rate,
        "interval": _interval(rate.interval),
    }


def _transitions(counts: Transitions) -> dict[str, int]:
    return {
        "bothPass": counts.both_pass,
        "fixed": counts.fixed,
        "broken": counts.broken,
        "bothFail": counts.both_fail,
        "inconclusive": counts.inconclusive,
    }


def _mcnemar(test: McNemar | None) -> dict[str, Any] | None:
    if test is None:
        return None
    return {
        "discordant": test.fixed + test.broken,
        "pTwoSided": test.p_two_sided,
        "pImproved": test.p_improved,
        "pRegressed": test.p_regressed,
    }


def _activation(trials: Sequence[ArmTrial]) -> dict[str, Any]:
    known = [t.activated for t in trials if t.activated is not None]
    activated = sum(1 for value in known if value)
    return {
        "activated": activated,
        "known": len(known),
        "unknown": len(trials) - len(known),
        "rate": activated / len(known) if known else None,
        "interval": _interval(wilson_interval(activated, len(known))),
    }


def _means(trials: Sequence[ArmTrial]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, attribute in MEASURES:
        values = [v for v in (getattr(t, attribute) for t in trials) if v is not None]
        out[key] = {"mean": sum(values) / len(values) if values else None, "known": len(values)}
    return out


def _pass_k(outcomes: Sequence[Outcome], repetitions: int) -> dict[str, Any]:
    """pass@k and pass^k over the decided trials; null for k above their number."""
    n, c = outcomes.count("pass") + outcomes.count("fail"), outcomes.count("pass")
    ks = range(1, min(repetitions, MAX_K) + 1)
    return {
        "passAtK": [{"k": k, "value": pass_at_k(n, c, k)} for k in ks],
        "passHatK": [{"k": k, "value": pass_hat_k(n, c, k)} for k in ks],
    }


def _arm_case(case_id: str, trials: Sequence[ArmTrial], repetitions: int) -> dict[str, Any]:
    outcomes = [t.outcome for t in trials]
    return {
        "caseId": case_id,
        "trials": len(trials),
        "passRate": _rate(pass_rate(outcomes)),
        **_pass_k(outcomes, repetitions),
        "activation": _activation(trials),
        "means": _means(trials),
    }


def _arm(
    arm: str, cases: Sequence[str], trials: Sequence[ArmTrial], repetitions: int
) -> dict[str, Any]:
    mine = [t for t in trials if t.arm == arm]
    by_case: dict[str, list[ArmTrial]] = {case: [] for case in cases}
    for trial in mine:
        by_case.setdefault(trial.case_id, []).append(trial)
    return {
        "id": arm,
        "trials": len(mine),
        "passRate": _rate(pass_rate(t.outcome for t in mine)),
        "activation": _activation(mine),
        "means": _means(mine),
        "cases": [_arm_case(case, by_case[case], repetitions) for case in cases],
    }


# ---- pairing -----------------------------------------------------------------------------------


@frozen
class _Paired:
    control: ArmTrial | None
    treatment: ArmTrial | None

    @property
    def pair(self) -> Pair:
        """A missing trial is unknown: the pair is inconclusive."""
        return Pair(
            control=self.control.outcome if self.control else "inconclusive",
            treatment=self.treatment.outcome if self.treatment else "inconclusive",
        )


def _pairs(
    index: Mapping[tuple[str, str, int], ArmTrial],
    control: str,
    treatment: str,
    case: str,
    repetitions: Sequence[int],
) -> list[_Paired]:
    return [
        _Paired(index.get((control, case, r)), index.get((treatment, case, r))) for r in repetitions
    ]


def _deltas(paired: Sequence[_Paired]) -> dict[str, Any]:
    """Treatment minus control over the pairs where both sides know the measure."""
    out: dict[str, Any] = {}
    for key, attribute in MEASURES:
        differences = [
            getattr(p.treatment, attribute) - getattr(p.control, attribute)
            for p in paired
            if p.control is not None
            and p.treatment is not None
            and getattr(p.control, attribute) is not None
            and getattr(p.treatment, attribute) is not None
        ]
        mean = sum(differences) / len(differences) if differences else None
        out[key] = {"mean": mean, "knownPairs": len(differences), "pairs": len(paired)}
    return out


def _pair_list(paired: Sequence[_Paired], repetitions: Sequence[int]) -> list[dict[str, Any]]:
    """Every pair of the case, repetition by repetition: what the counts rest on, for audit."""
    return [
        {"repetition": r, "control": p.pair.control, "treatment": p.pair.treatment}
        for r, p in zip(repetitions, paired, strict=True)
    ]


def _case_row(
    case_id: str, compared: PairedComparison, pairs: list[dict[str, Any]]
) -> dict[str, Any]:
    difference = compared.difference
    return {
        "caseId": case_id,
        "transitions": _transitions(compared.transitions),
        "pairs": pairs,
        "controlRate": difference.control_rate if difference else None,
        "treatmentRate": difference.treatment_rate if difference else None,
        "difference": None
        if difference is None
        else {"estimate": difference.estimate, "interval": _interval(difference.interval)},
        "mcnemar": _mcnemar(compared.mcnemar),
        "verdict": compared.verdict.word,
        "repetitionsNeeded": compared.verdict.pairs_needed,
    }


def _comparison(
    control: str,
    treatment: str,
    cases: Sequence[str],
    index: Mapping[tuple[str, str, int], ArmTrial],
    repetitions: Sequence[int],
    judging: ComparatorJudging | None = None,
) -> dict[str, Any]:
    paired = {case: _pairs(index, control, treatment, case, repetitions) for case in cases}
    compared = compare_cases({case: [p.pair for p in ps] for case, ps in paired.items()})
    pooled = compared.difference
    every = [p for ps in paired.values() for p in ps]
    judged = {} if judging is None else {"judged": _judged(paired, repetitions, judging)}
    return {
        "control": control,
        "treatment": treatment,
        "pairs": len(every),
        "cases": [
            _case_row(case, compared.per_case[case], _pair_list(paired[case], repetitions))
            for case in cases
        ],
        "pooled": {
            "transitions": _transitions(compared.transitions),
            "casesWithDecidedPairs": pooled.cases if pooled else 0,
            "difference": None
            if pooled is None
            else {
                "estimate": pooled.estimate,
                "standardError": _finite(pooled.standard_error),
                "interval": _interval(compared.verdict.interval),
            },
            "mcnemar": _mcnemar(compared.mcnemar),
            "verdict": compared.verdict.word,
            "repetitionsNeeded": compared.repetitions_needed,
        },
        "activation": {
            "control": _activation([p.control for p in every if p.control]),
            "treatment": _activation([p.treatment for p in every if p.treatment]),
        },
        "deltas": _deltas(every),
        **judged,
    }


@frozen
class ComparatorJudging:
    """How the blinded comparator judged one comparison's pairs: the rubric and judge route
    it used, which pairs were eligible (``when``), whether the judge was calibrated, and each
    judged pair's :class:`PairJudgement` by (case id, repetition)."""

    rubric_id: str
    rubric_version: str
    route: Mapping[str, str]
    """The comparator judge's route (``Route.to_json``)."""
    judgements: Mapping[tuple[str, int], PairJudgement]
    when: str = BOTH_PASSED
    calibration: Mapping[str, Any] | None = None
    """What a calibration of this judge and rubric found; None when it was not calibrated."""
    call_usage: Mapping[tuple[str, int], tuple[Usage, ...]] = field(factory=dict)
    """The usage of each judge call a judged pair made, by (case id, repetition): what the
    comparator cost, which lives with the pair judgements, not in any trial's evidence."""


def _eligible_pairs(
    paired: Mapping[str, Sequence[_Paired]], repetitions: Sequence[int], when: str
) -> list[tuple[str, int]]:
    return [
        (case, r)
        for case, pairs in paired.items()
        for r, p in zip(repetitions, pairs, strict=True)
        if eligible(p.pair.control, p.pair.treatment, when)
    ]


def _judged_tally(
    eligible_pairs: Sequence[tuple[str, int]], judging: ComparatorJudging
) -> dict[str, Any]:
    """The judged block's counts and pairs (judgements of pairs that were not eligible are
    not counted: the objective result decided those)."""
    judged = [(key, judging.judgements[key]) for key in eligible_pairs if key in judging.judgements]
    outcomes = [j.outcome for _, j in judged]
    inconclusive = [j for _, j in judged if j.outcome == "inconclusive"]
    return {
        "eligiblePairs": len(eligible_pairs),
        "judgedPairs": len(judged),
        "wins": outcomes.count("candidate"),
        "losses": outcomes.count("baseline"),
        "ties": outcomes.count("tie"),
        "inconclusive": {
            "total": len(inconclusive),
            "positionBias": sum(1 for j in inconclusive if POSITION_BIAS in j.flags),
            "judgeError": sum(1 for j in inconclusive if JUDGE_ERROR in j.flags),
        },
        "pairs": [
            {"caseId": case, "repetition": r, "outcome": j.outcome, "flags": list(j.flags)}
            for (case, r), j in judged
        ],
        "usage": judge_usage([u for key, _ in judged for u in judging.call_usage.get(key, ())]),
    }


def judge_usage(usages: Sequence[Usage]) -> dict[str, Any]:
    """The comparator's calls of the counted pairs summed (``sum_usage``: a figure unknown
    for any call is unknown, and no call at all is unknown usage, never 0), with their number."""
    return {**sum_usage(list(usages)).to_json(), "calls": len(usages)}


def _judged(
    paired: Mapping[str, Sequence[_Paired]],
    repetitions: Sequence[int],
    judging: ComparatorJudging,
) -> dict[str, Any]:
    """The ``judged`` block of a comparison: the comparator's outcomes, kept apart from the
    objective results, with an exact sign test over the decisive pairs."""
    tally = _judged_tally(_eligible_pairs(paired, repetitions, judging.when), judging)
    wins, losses = tally["wins"], tally["losses"]
    return {
        "rubric": {"id": judging.rubric_id, "version": judging.rubric_version},
        "judge": dict(judging.route),
        "when": judging.when,
        "calibration": None if judging.calibration is None else dict(judging.calibration),
        **tally,
        "signTest": {"decisive": wins + losses, "pTwoSided": sign_test(wins, losses)},
    }


def _judged_counts(judged: Mapping[str, Any]) -> list[Any]:
    """What a ``judged`` block's figures rest on (its counts and pairs), for recounting."""
    inconclusive = judged["inconclusive"]
    numbers = [judged[k] for k in ("eligiblePairs", "judgedPairs", "wins", "losses", "ties")]
    numbers += [inconclusive[k] for k in ("total", "positionBias", "judgeError")]
    return [numbers, [dict(p) for p in judged["pairs"]], judged.get("usage")]


@frozen
class _Design:
    """Trials checked and indexed for pairing."""

    cases: list[str]
    trials: list[ArmTrial]
    index: dict[tuple[str, str, int], ArmTrial]
    repetitions: list[int]


def _design(
    arms: Sequence[str],
    comparisons: Sequence[tuple[str, str]],
    trials: Iterable[ArmTrial],
    repetitions: int,
    cases: Sequence[str] | None,
) -> _Design:
    if repetitions < 1:
        raise ValueError(f"repetitions must be at least 1, not {repetitions}")
    unknown = {arm for pair in comparisons for arm in pair} - set(arms)
    if unknown:
        raise ValueError(f"comparisons name arms that are not listed: {sorted(unknown)}")
    listed = list(trials)
    strays = sorted({t.arm for t in listed} - set(arms))
    if strays:
        raise ValueError(f"trials of arms that are not listed: {strays}")
    index: dict[tuple[str, str, int], ArmTrial] = {}
    for trial in listed:
        key = (trial.arm, trial.case_id, trial.repetition)
        if key in index:
            raise ValueError(f"two trials of arm {key[0]!r}, case {key[1]!r}, repetition {key[2]}")
        index[key] = trial
    return _Design(
        cases=list(dict.fromkeys([*(cases or ()), *(t.case_id for t in listed)])),
        trials=listed,
        index=index,
        repetitions=sorted({*range(1, repetitions + 1), *(t.repetition for t in listed)}),
    )


def experiment_statistics(
    arms: Sequence[str],
    comparisons: Sequence[tuple[str, str]],
    trials: Iterable[ArmTrial],
    repetitions: int,
    cases: Sequence[str] | None = None,
    judging: Mapping[tuple[str, str], ComparatorJudging] | None = None,
) -> dict[str, Any]:
    """The ``sevro.experiment-statistics.v1`` document of these trials.

    ``comparisons`` are (control, treatment) arm ids; ``cases`` orders the cases (a case no
    trial names is listed with unknown numbers; cases only trials name follow, first seen
    first). Trials r = 1 … ``repetitions`` of two arms on a case pair up; a repetition one arm
    lacks is an inconclusive pair. A comparison ``judging`` names (by control, treatment) gets
    a ``judged`` block: the blinded comparator's outcomes, apart from the objective ones."""
    design = _design(arms, comparisons, trials, repetitions, cases)
    judged = judging or {}
    return {
        "format": STATISTICS_FORMAT,
        "confidence": CONFIDENCE,
        "repetitions": repetitions,
        "cases": design.cases,
        "arms": [_arm(arm, design.cases, design.trials, repetitions) for arm in arms],
        "comparisons": [
            _comparison(
                control,
                treatment,
                design.cases,
                design.index,
                design.repetitions,
                judged.get((control, treatment)),
            )
            for control, treatment in comparisons
        ],
    }


def statistics_counts(statistics: Mapping[str, Any]) -> dict[str, Any]:
    """The counts a statistics document rests on: per arm and case the trials, passes, decided
    and inconclusive trials, activations and known activations; per comparison and case the
    transitions. What :func:`trial_counts` recounts from the trials themselves."""
    counts: dict[str, Any] = {
        "repetitions": statistics["repetitions"],
        "cases": list(statistics["cases"]),
        "arms": [
            [
                arm["id"],
                [
                    [
                        case["caseId"],
                        case["trials"],
                        [case["passRate"][key] for key in ("passes", "decided", "inconclusive")],
                        [case["activation"]["activated"], case["activation"]["known"]],
                    ]
                    for case in arm["cases"]
                ],
            ]
            for arm in statistics["arms"]
        ],
        "comparisons": [
            [
                c["control"],
                c["treatment"],
                [[r["caseId"], dict(r["transitions"]), list(r["pairs"])] for r in c["cases"]],
            ]
            for c in statistics["comparisons"]
        ],
    }
    judged = [
        [c["control"], c["treatment"], *_judged_counts(c["judged"])]
        for c in statistics["comparisons"]
        if "judged" in c
    ]
    if judged:
        counts["judged"] = judged
    if "checkTransitions" in statistics:
        counts["checkTransitions"] = statistics["checkTransitions"]
    if "triggers" in statistics:
        from sevro_core.experiments.triggers import counts_of_statistics

        counts["triggers"] = counts_of_statistics(statistics["triggers"])
    return counts


def trial_counts(
    arms: Sequence[str],
    comparisons: Sequence[tuple[str, str]],
    trials: Iterable[ArmTrial],
    repetitions: int,
    cases: Sequence[str] | None = None,
    judging: Mapping[tuple[str, str], ComparatorJudging] | None = None,
) -> dict[str, Any]:
    """:func:`statistics_counts` of the document these trials give, counted without SciPy or
    statsmodels: enough to check a stored document against its verified trials cheaply."""
    design = _design(arms, comparisons, trials, repetitions, cases)

    def arm_case(arm: str, case: str) -> list[Any]:
        mine = [
            design.index[key] for r in design.repetitions if (key := (arm, case, r)) in design.index
        ]
        outcomes = [t.outcome for t in mine]
        known = [t.activated for t in mine if t.activated is not None]
        passes, fails = outcomes.count("pass"), outcomes.count("fail")
        return [
            case,
            len(mine),
            [passes, passes + fails, outcomes.count("inconclusive")],
            [sum(1 for value in known if value), len(known)],
        ]

    def comparison_row(control: str, treatment: str, case: str) -> list[Any]:
        paired = _pairs(design.index, control, treatment, case, design.repetitions)
        return [
            case,
            _transitions(transitions(p.pair for p in paired)),
            _pair_list(paired, design.repetitions),
        ]

    def comparison_rows(control: str, treatment: str) -> list[Any]:
        return [comparison_row(control, treatment, case) for case in design.cases]

    def judged_row(control: str, treatment: str, judged: ComparatorJudging) -> list[Any]:
        paired = {
            case: _pairs(design.index, control, treatment, case, design.repetitions)
            for case in design.cases
        }
        keys = _eligible_pairs(paired, design.repetitions, judged.when)
        tally = _judged_tally(keys, judged)
        return [control, treatment, *_judged_counts(tally)]

    counts: dict[str, Any] = {
        "repetitions": repetitions,
        "cases": design.cases,
        "arms": [[arm, [arm_case(arm, case) for case in design.cases]] for arm in arms],
        "comparisons": [
            [control, treatment, comparison_rows(control, treatment)]
            for control, treatment in comparisons
        ],
    }
    judged_rows = [
        judged_row(control, treatment, (judging or {})[(control, treatment)])
        for control, treatment in comparisons
        if (control, treatment) in (judging or {})
    ]
    if judged_rows:
        counts["judged"] = judged_rows
    return counts


def statistics_of_run(
    run: Mapping[str, Any],
    documents: Iterable[Mapping[str, Any]],
    cases: Sequence[str] | None = None,
    *,
    counts_only: bool = False,
    judging: Mapping[tuple[str, str], ComparatorJudging] | None = None,
) -> dict[str, Any]:
    """The statistics (or, with ``counts_only``, :func:`trial_counts`) of an experiment run
    from its ``run.json``-shaped document (``arms``, ``experiment``) and its trial documents,
    each naming its ``arm``, with the comparator's ``judging`` of its comparisons, if any.
    What ``sevro run`` stores and ``sevro report`` checks; raises ValueError when the trials
    do not fit the arms."""
    experiment = run.get("experiment") or {}
    listed = list(documents)
    repetitions = experiment.get("repetitions")
    if repetitions is None:  # the trials per case of the run, as its identity records them
        repetitions = _dict(_dict(run.get("evaluationIdentity")).get("dimensions")).get(
            "trialCount"
        )
    if not isinstance(repetitions, int):
        raise ValueError("the run records no number of repetitions")
    design = (
        [arm["id"] for arm in run["arms"]],
        [(c["control"], c["treatment"]) for c in experiment.get("comparisons", [])],
        [arm_trial(document) for document in listed],
        repetitions,
        cases,
    )
    document = (
        trial_counts(*design, judging) if counts_only else experiment_statistics(*design, judging)
    )
    trigger_set = experiment.get("triggerSet")
    if trigger_set is not None:  # a skill-creator trigger eval set: its trigger statistics
        from sevro_core.experiments.triggers import trigger_counts, trigger_statistics

        arms = design[0]
        document["triggers"] = (
            trigger_counts(arms, trigger_set, listed, repetitions)
            if counts_only
            else trigger_statistics(arms, trigger_set, listed, repetitions, design[1])
        )
    origin = experiment.get("skillEval")
    if isinstance(origin, Mapping):  # a skill-eval definition's comparisons, as transitions
        from sevro_core.experiments.skillevaltransitions import check_transitions

        document["checkTransitions"] = check_transitions(origin, listed, repetitions)
    return document


def regressed(statistics: Mapping[str, Any]) -> bool:
    """Whether any comparison's pooled verdict is ``regressed`` (``--fail-on-regression``)."""
    return any(c["pooled"]["verdict"] == "regressed" for c in statistics.get("comparisons", []))
