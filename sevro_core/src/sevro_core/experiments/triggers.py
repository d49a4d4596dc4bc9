"""Trigger statistics of a skill-creator trigger eval set: per query and pooled, per arm.

A trial *triggered* when the target skill's ``SKILL.md`` was read in full (the ``sevro.skills``
rules of :mod:`sevro_core.hosts.skills`), did *not trigger* when the skill was offered and no
command touched it, and is left out of every rate, counted apart, when it was only touched
(``partial``: a front-matter read, a grep) or when its evidence is unavailable (execution not
completed, observation missing or partial, skill not offered, trial never ran). skill-creator's
``run_eval.py`` counts a timed-out or failed query as not triggered; sevro does not guess.

Per query: the trigger rate with a Wilson interval (as every rate of an experiment), and
``run_eval.py``'s pass rule at its default threshold 0.5. Pooled per arm: precision, recall and
accuracy over the decided trials, with a Wilson interval at the effective sample size that the
query-clustered variance gives: repetitions of one query are not independent (a query that
triggers tends to trigger every time), so the interval is as wide as the number of *queries*
warrants, not the number of trials. Unknown is ``None``, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from attrs import frozen

from sevro_core.experiments.statistics import CONFIDENCE, Interval, Outcome, wilson_interval
from sevro_core.vocabulary import SKILLS_OBSERVATION

TRIGGERED: Final = "triggered"
NOT_TRIGGERED: Final = "notTriggered"
PARTIAL: Final = "partial"
UNAVAILABLE: Final = "unavailable"
STATES: Final = (TRIGGERED, NOT_TRIGGERED, PARTIAL, UNAVAILABLE)
THRESHOLD: Final = 0.5
"""``run_eval.py``'s default ``--trigger-threshold``: a query passes when its trigger rate is at
least this (should trigger) or below it (should not)."""


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def trigger_state(evidence: Mapping[str, Any], skill: str) -> str:
    """One of :data:`STATES` for a trial's evidence and the target skill's name."""
    if _dict(evidence.get("execution")).get("status") != "completed":
        return UNAVAILABLE
    observations = evidence.get("observations")
    found = [
        o
        for o in (observations if isinstance(observations, list) else [])
        if isinstance(o, Mapping) and o.get("id") == SKILLS_OBSERVATION
    ]
    if len(found) != 1 or found[0].get("completeness") != "complete":
        return UNAVAILABLE
    data = _dict(found[0].get("data"))
    offered, reads, read = data.get("offered"), data.get("reads"), data.get("read")
    if not (isinstance(offered, list) and isinstance(reads, list) and isinstance(read, list)):
        return UNAVAILABLE
    if not any(isinstance(o, Mapping) and o.get("name") == skill for o in offered):
        return UNAVAILABLE
    if skill in read:
        return TRIGGERED
    if any(isinstance(r, Mapping) and r.get("skill") == skill for r in reads):
        return PARTIAL
    return NOT_TRIGGERED


def _states(
    arm: str, skill: str, documents: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, int], str]:
    return {
        (str(d["caseId"]), int(d["trial"])): trigger_state(_dict(d.get("evidence")), skill)
        for d in documents
        if d.get("arm") == arm
    }


def _query_counts(
    states: Mapping[tuple[str, int], str], case_id: str, repetitions: int
) -> dict[str, int]:
    """Counts of each state over repetitions 1 … ``repetitions``; a trial without a document is
    unavailable."""
    counts = dict.fromkeys(STATES, 0)
    for repetition in range(1, repetitions + 1):
        counts[states.get((case_id, repetition), UNAVAILABLE)] += 1
    return counts


def trigger_counts(
    arms: Sequence[str],
    trigger_set: Mapping[str, Any],
    documents: Iterable[Mapping[str, Any]],
    repetitions: int,
) -> list[list[Any]]:
    """Per arm and query the count of each state: what ``sevro report`` recounts."""
    listed = list(documents)
    out: list[list[Any]] = []
    for arm in arms:
        states = _states(arm, str(trigger_set["skill"]), listed)
        rows = []
        for query in trigger_set["queries"]:
            counts = _query_counts(states, query["caseId"], repetitions)
            rows.append([query["caseId"], [counts[s] for s in STATES]])
        out.append([arm, rows])
    return out


def counts_of_statistics(triggers: Mapping[str, Any]) -> list[list[Any]]:
    """:func:`trigger_counts` as a stored ``triggers`` document carries them."""
    return [
        [arm["arm"], [[q["caseId"], [q[s] for s in STATES]] for q in arm["queries"]]]
        for arm in triggers["arms"]
    ]


def _query(query: Mapping[str, Any], counts: Mapping[str, int]) -> dict[str, Any]:
    known = counts[TRIGGERED] + counts[NOT_TRIGGERED]
    interval = wilson_interval(counts[TRIGGERED], known)
    rate = counts[TRIGGERED] / known if known else None
    passed = None
    if rate is not None:
        passed = rate >= THRESHOLD if query["shouldTrigger"] else rate < THRESHOLD
    return {
        "caseId": query["caseId"],
        "query": query["query"],
        "shouldTrigger": query["shouldTrigger"],
        **counts,
        "known": known,
        "rate": rate,
        "interval": None if interval is None else {"low": interval.low, "high": interval.high},
        "thresholdPass": passed,
    }


@frozen
class ClusteredRate:
    """A ratio of trial counts pooled over queries, with its query-clustered interval."""

    value: float | None
    interval: Interval | None
    design_effect: float | None
    """How much the clustering inflates the binomial variance (1: trials as if independent)."""
    effective_trials: float | None
    queries: int
    """The queries (clusters) that contribute trials to the ratio."""

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "interval": None
            if self.interval is None
            else {"low": self.interval.low, "high": self.interval.high},
            "designEffect": self.design_effect,
            "effectiveTrials": self.effective_trials,
            "queries": self.queries,
        }


def clustered_rate(
    clusters: Sequence[tuple[int, int]], confidence: float = CONFIDENCE
) -> ClusteredRate:
    """Σy / Σn over clusters ``(y_i, n_i)`` (a query's hits and trials) with a Wilson interval at
    the effective sample size n / D (Kish's design effect D, estimated as the ratio of the
    cluster-robust variance of the ratio estimator to the binomial variance). D is kept between 1
    and the mean cluster size (each query then counts as one observation); when it cannot be
    estimated (one cluster, or a rate of 0 or 1) the upper bound is taken, so the interval never
    shrinks to a point because the repetitions of a query agree with each other."""
    used = [(y, n) for y, n in clusters if n > 0]
    total = sum(n for _, n in used)
    if not used:
        return ClusteredRate(None, None, None, None, 0)
    hits = sum(y for y, _ in used)
    value = hits / total
    groups = len(used)
    ceiling = total / groups
    binomial = value * (1 - value) / total
    effect = ceiling
    if groups > 1 and binomial > 0:
        robust = groups / (groups - 1) * sum((y - value * n) ** 2 for y, n in used) / total**2
        effect = min(max(robust / binomial, 1.0), ceiling)
    effective = total / effect
    return ClusteredRate(value, _wilson(value, effective, confidence), effect, effective, groups)


def _wilson(rate: float, n: float, confidence: float) -> Interval:
    """Wilson's score interval for a rate observed over a (possibly fractional) sample size:
    statsmodels' Wilson limits, which take a fractional count and size."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(rate * n, n, alpha=1.0 - confidence, method="wilson")
    return Interval(max(0.0, float(low)), min(1.0, float(high)), confidence)


def _pooled(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Precision, recall and accuracy over the decided trials, clustered by query."""
    hits = [(r[TRIGGERED], r["known"], r["shouldTrigger"]) for r in rows if r["known"]]
    tp = sum(t for t, _, should in hits if should)
    fn = sum(k - t for t, k, should in hits if should)
    fp = sum(t for t, _, should in hits if not should)
    tn = sum(k - t for t, k, should in hits if not should)
    decided = [r["thresholdPass"] for r in rows if r["thresholdPass"] is not None]
    return {
        "truePositives": tp,
        "falseNegatives": fn,
        "falsePositives": fp,
        "trueNegatives": tn,
        "partial": sum(r[PARTIAL] for r in rows),
        "unavailable": sum(r[UNAVAILABLE] for r in rows),
        "positiveQueries": sum(1 for _, _, should in hits if should),
        "negativeQueries": sum(1 for _, _, should in hits if not should),
        # precision: of the triggered trials, those of queries that should trigger
        "precision": clustered_rate([(t if should else 0, t) for t, _, should in hits]).to_json(),
        "recall": clustered_rate([(t, k) for t, k, should in hits if should]).to_json(),
        "accuracy": clustered_rate(
            [(t if should else k - t, k) for t, k, should in hits]
        ).to_json(),
        "queriesPassed": sum(1 for p in decided if p),
        "queriesDecided": len(decided),
    }


def _outcome(state: str, should_trigger: bool) -> Outcome:
    """Whether the trigger was right (``pass``), wrong (``fail``), or not known."""
    if state == TRIGGERED:
        return "pass" if should_trigger else "fail"
    if state == NOT_TRIGGERED:
        return "fail" if should_trigger else "pass"
    return "inconclusive"


def _change(
    states: tuple[Mapping[tuple[str, int], str], Mapping[tuple[str, int], str]],
    queries: Sequence[Mapping[str, Any]],
    should_trigger: bool,
    repetitions: int,
) -> dict[str, Any] | None:
    """The paired change of one stratum's correct-trigger rate (recall for the queries that
    should trigger, specificity for the others): the experiment's comparison, pooled over the
    stratum's queries with query-clustered errors. None when the set has no such query."""
    from sevro_core.experiments.statistics import Pair, compare_cases

    control, treatment = states
    cases = {
        q["caseId"]: [
            Pair(
                _outcome(control.get((q["caseId"], r), UNAVAILABLE), should_trigger),
                _outcome(treatment.get((q["caseId"], r), UNAVAILABLE), should_trigger),
            )
            for r in range(1, repetitions + 1)
        ]
        for q in queries
        if q["shouldTrigger"] is should_trigger
    }
    if not cases:
        return None
    compared = compare_cases(cases)
    counts, pooled, test = compared.transitions, compared.difference, compared.mcnemar
    interval = compared.verdict.interval
    return {
        "pairs": sum(len(pairs) for pairs in cases.values()),
        "transitions": {
            "bothPass": counts.both_pass,
            "fixed": counts.fixed,
            "broken": counts.broken,
            "bothFail": counts.both_fail,
            "inconclusive": counts.inconclusive,
        },
        "difference": None
        if pooled is None
        else {
            "estimate": pooled.estimate,
            "interval": None
            if interval is None or not math.isfinite(interval.low + interval.high)
            else {"low": interval.low, "high": interval.high},
        },
        "mcnemar": None
        if test is None
        else {"discordant": test.fixed + test.broken, "pTwoSided": test.p_two_sided},
        "verdict": compared.verdict.word,
        "repetitionsNeeded": compared.repetitions_needed,
    }


def trigger_statistics(
    arms: Sequence[str],
    trigger_set: Mapping[str, Any],
    documents: Iterable[Mapping[str, Any]],
    repetitions: int,
    comparisons: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """The ``triggers`` part of the statistics document of a trigger eval set's run."""
    documents = list(documents)
    counts = trigger_counts(arms, trigger_set, documents, repetitions)
    queries = {q["caseId"]: q for q in trigger_set["queries"]}
    arm_documents = []
    for arm, rows in counts:
        listed = [
            _query(queries[case_id], dict(zip(STATES, c, strict=True))) for case_id, c in rows
        ]
        arm_documents.append({"arm": arm, "queries": listed, "pooled": _pooled(listed)})
    return {
        "skill": trigger_set["skill"],
        "threshold": THRESHOLD,
        "confidence": CONFIDENCE,
        "arms": arm_documents,
        "comparisons": [
            {
                "control": control,
                "treatment": treatment,
                **{
                    name: _change(
                        (
                            _states(control, str(trigger_set["skill"]), documents),
                            _states(treatment, str(trigger_set["skill"]), documents),
                        ),
                        trigger_set["queries"],
                        should,
                        repetitions,
                    )
                    for name, should in (("recall", True), ("specificity", False))
                },
            }
            for control, treatment in comparisons
        ],
    }
