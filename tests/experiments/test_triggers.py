"""Trigger statistics: the state of one trial (controls), the query-clustered rate (known
values), and the per-query and pooled document (edge cases: no positives, all unavailable)."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core.experiments.comparison import statistics_counts, statistics_of_run
from sevro_core.experiments.statistics import wilson_interval
from sevro_core.experiments.triggers import (
    NOT_TRIGGERED,
    PARTIAL,
    TRIGGERED,
    UNAVAILABLE,
    clustered_rate,
    trigger_state,
    trigger_statistics,
)
from sevro_core.formats.schemas import validate_input

SKILL = "changelog"


def skills(read: bool = False, touched: bool = False, offered: bool = True) -> dict[str, Any]:
    reads = [{"skill": SKILL, "status": "read" if read else "partial", "turn": 1}]
    return {
        "id": "sevro.skills",
        "completeness": "complete",
        "data": {
            "offered": [{"name": SKILL}] if offered else [],
            "reads": reads if read or touched else [],
            "read": [SKILL] if read else [],
        },
    }


def evidence(*observations: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {"execution": {"status": status}, "observations": list(observations)}


@pytest.mark.parametrize(
    ("trial", "state"),
    [
        (evidence(skills(read=True)), TRIGGERED),
        (evidence(skills()), NOT_TRIGGERED),
        (evidence(skills(touched=True)), PARTIAL),
        (evidence(skills(read=True), status="failed"), UNAVAILABLE),
        (evidence(), UNAVAILABLE),
        (evidence({**skills(read=True), "completeness": "partial"}), UNAVAILABLE),
        (evidence(skills(read=True), skills(read=True)), UNAVAILABLE),
        (evidence(skills(offered=False)), UNAVAILABLE),
        (evidence({**skills(), "data": {"offered": "x"}}), UNAVAILABLE),
    ],
)
def test_trial_state_controls(trial: dict[str, Any], state: str) -> None:
    assert trigger_state(trial, SKILL) == state


def test_another_skills_read_is_not_a_trigger() -> None:
    other = skills(read=True)
    other["data"]["offered"].append({"name": "other"})
    other["data"]["read"] = ["other"]
    other["data"]["reads"] = [{"skill": "other", "status": "read", "turn": 1}]
    assert trigger_state(evidence(other), SKILL) == NOT_TRIGGERED


def same(interval: Any, low: float, high: float) -> bool:
    return interval.low == pytest.approx(low) and interval.high == pytest.approx(high)


def test_independent_looking_queries_give_the_plain_wilson_interval() -> None:
    rate = clustered_rate([(1, 2), (1, 2), (1, 2), (1, 2)])
    plain = wilson_interval(4, 8)
    assert rate.value == 0.5 and rate.design_effect == 1.0 and rate.effective_trials == 8
    assert plain is not None and same(rate.interval, plain.low, plain.high)


def test_queries_that_always_agree_count_once_each() -> None:
    # recall 4/6, every query all-or-nothing: the robust variance is 3x binomial, capped at the
    # mean query size 2, so 6 trials count as 3 observations
    rate = clustered_rate([(2, 2), (0, 2), (2, 2)])
    assert rate.value == pytest.approx(4 / 6) and rate.design_effect == 2.0
    plain = wilson_interval(2, 3)
    assert plain is not None and same(rate.interval, plain.low, plain.high)
    assert same(rate.interval, 0.2076596, 0.9385081)


def test_a_rate_of_one_does_not_shrink_to_a_point() -> None:
    rate = clustered_rate([(2, 2), (2, 2)])
    plain = wilson_interval(2, 2)
    assert rate.value == 1.0 and rate.design_effect == 2.0
    assert plain is not None and same(rate.interval, plain.low, plain.high)
    assert rate.interval is not None and rate.interval.low < 0.35


def test_one_query_is_one_observation_and_no_query_is_unknown() -> None:
    one = clustered_rate([(3, 5), (0, 0)])
    assert one.queries == 1 and one.effective_trials == 1 and one.interval is not None
    assert same(one.interval, 0.0, 1.0) is False and one.interval.high - one.interval.low > 0.7
    none = clustered_rate([(0, 0)])
    assert (none.value, none.interval, none.design_effect, none.queries) == (None, None, None, 0)


def document(arm: str, case: str, trial: int, *observations: Any, **kw: Any) -> dict[str, Any]:
    return {"arm": arm, "caseId": case, "trial": trial, "evidence": evidence(*observations, **kw)}


QUERIES = {
    "skill": SKILL,
    "source": "evals.json",
    "queries": [
        {"caseId": "q01-log", "query": "log it", "shouldTrigger": True},
        {"caseId": "q02-note", "query": "note it", "shouldTrigger": True},
        {"caseId": "q03-haiku", "query": "haiku", "shouldTrigger": False},
    ],
}


def test_per_query_rates_and_pooled_precision_recall() -> None:
    documents = [
        document("candidate", "q01-log", 1, skills(read=True)),
        document("candidate", "q01-log", 2, skills(read=True)),
        document("candidate", "q02-note", 1, skills()),
        document("candidate", "q02-note", 2, skills(touched=True)),
        document("candidate", "q03-haiku", 1, skills(read=True)),
        # q03 trial 2 never ran: unavailable
    ]
    stats = trigger_statistics(["candidate"], QUERIES, documents, 2)
    (arm,) = stats["arms"]
    q01, q02, q03 = arm["queries"]
    assert (q01["triggered"], q01["known"], q01["rate"], q01["thresholdPass"]) == (2, 2, 1.0, True)
    assert (q02["notTriggered"], q02["partial"], q02["known"], q02["rate"]) == (1, 1, 1, 0.0)
    assert (q03["triggered"], q03["unavailable"], q03["thresholdPass"]) == (1, 1, False)
    pooled = arm["pooled"]
    assert [pooled[k] for k in ("truePositives", "falseNegatives", "falsePositives")] == [2, 1, 1]
    assert (pooled["trueNegatives"], pooled["partial"], pooled["unavailable"]) == (0, 1, 1)
    assert pooled["recall"]["value"] == pytest.approx(2 / 3)
    assert pooled["precision"]["value"] == pytest.approx(2 / 3)
    assert pooled["accuracy"]["value"] == pytest.approx(2 / 4)
    assert (pooled["queriesPassed"], pooled["queriesDecided"]) == (1, 3)


def test_no_positive_query_leaves_recall_unknown_not_zero() -> None:
    only_negative = {**QUERIES, "queries": QUERIES["queries"][2:]}
    documents = [document("candidate", "q03-haiku", 1, skills())]
    pooled = trigger_statistics(["candidate"], only_negative, documents, 1)["arms"][0]["pooled"]
    assert pooled["recall"] == {
        "value": None,
        "interval": None,
        "designEffect": None,
        "effectiveTrials": None,
        "queries": 0,
    }
    assert pooled["precision"]["value"] is None  # nothing triggered
    assert pooled["accuracy"]["value"] == 1.0


def test_all_unavailable_is_unknown_everywhere_and_counted() -> None:
    documents = [
        document("candidate", q["caseId"], 1, skills(read=True), status="failed")
        for q in QUERIES["queries"]
    ]
    arm = trigger_statistics(["candidate"], QUERIES, documents, 1)["arms"][0]
    assert all(q["rate"] is None and q["thresholdPass"] is None for q in arm["queries"])
    pooled = arm["pooled"]
    assert pooled["unavailable"] == 3 and pooled["queriesDecided"] == 0
    assert all(pooled[k]["value"] is None for k in ("precision", "recall", "accuracy"))


def test_the_run_statistics_carry_triggers_that_the_report_recounts() -> None:
    run = {
        "arms": [{"id": "baseline"}, {"id": "candidate"}],
        "experiment": {
            "repetitions": 1,
            "comparisons": [{"control": "baseline", "treatment": "candidate"}],
            "triggerSet": QUERIES,
        },
    }
    documents = [
        document(arm, q["caseId"], 1, skills(read=arm == "candidate"))
        for arm in ("baseline", "candidate")
        for q in QUERIES["queries"]
    ]
    stats = statistics_of_run(run, documents)
    validate_input("experiment-statistics.v1", stats, source="statistics")
    assert [a["pooled"]["truePositives"] for a in stats["triggers"]["arms"]] == [0, 2]
    counted = statistics_of_run(run, documents, counts_only=True)
    assert statistics_counts(stats) == counted
    tampered = [*documents[:-1], document("candidate", "q03-haiku", 1, skills())]
    assert statistics_counts(stats) != statistics_of_run(run, tampered, counts_only=True)


def test_the_sentences_say_unknown_and_what_was_left_out() -> None:
    from sevro_core.reporting.experiment import render_experiment_statistics, trigger_sentences

    documents = [
        document("candidate", "q01-log", 1, skills(read=True)),
        document("candidate", "q02-note", 1, skills(touched=True)),
        document("candidate", "q03-haiku", 1, skills(), status="failed"),
    ]
    triggers = trigger_statistics(["candidate"], QUERIES, documents, 1)
    (sentence,) = trigger_sentences(triggers)
    assert sentence.startswith("skill changelog (candidate): recall 100 % (95 % CI ")
    assert ", precision 100 % (95 % CI 20.7-100 %), accuracy 100 % (95 % CI 20.7-100 %)" in sentence
    assert "over 1 decided trial(s) of 3 queries; left out: 1 partial, 1 unavailable" in sentence
    assert sentence.endswith("1 of 1 queries pass at trigger threshold 0.5.")
    nothing = trigger_statistics(["candidate"], QUERIES, [], 1)
    (sentence,) = trigger_sentences(nothing)
    assert "recall unknown, precision unknown, accuracy unknown over 0 decided" in sentence
    stats = {"repetitions": 1, "comparisons": [], "arms": [], "triggers": triggers}
    markdown = "\n".join(render_experiment_statistics(stats))
    assert "| candidate | q02-note | note it | yes | 0/0 | unknown | 1 | 0 | unknown |" in markdown


def test_with_two_arms_recall_and_specificity_changes_are_compared_in_pairs() -> None:
    from sevro_core.reporting.experiment import trigger_change_sentences

    queries = {
        **QUERIES,
        "queries": [
            *({"caseId": f"p{i}", "query": f"p{i}", "shouldTrigger": True} for i in range(3)),
            {"caseId": "n0", "query": "n0", "shouldTrigger": False},
        ],
    }
    documents = [
        document(arm, q["caseId"], r, skills(read=arm == "candidate" and q["shouldTrigger"]))
        for arm in ("baseline", "candidate")
        for q in queries["queries"]
        for r in range(1, 6)
    ]
    documents[0] = document("baseline", "p0", 1, skills(touched=True))  # a partial: left out
    stats = trigger_statistics(
        ["baseline", "candidate"], queries, documents, 5, [("baseline", "candidate")]
    )
    (change,) = stats["comparisons"]
    recall, specificity = change["recall"], change["specificity"]
    assert recall["transitions"] == {
        "bothPass": 0,
        "fixed": 14,
        "broken": 0,
        "bothFail": 0,
        "inconclusive": 1,
    }
    assert recall["verdict"] == "improved" and recall["difference"]["estimate"] == 1.0
    assert recall["mcnemar"]["pTwoSided"] < 0.001
    assert specificity["transitions"]["bothPass"] == 5
    assert specificity["verdict"] == "no detectable difference"
    sentences = trigger_change_sentences(stats)
    assert sentences[0].startswith("recall: candidate improved on baseline: +100 pp")
    assert "14 fixed / 0 broken over 14 pairs; 1 inconclusive pair(s) left out" in sentences[0]
    assert sentences[1].startswith("specificity: no detectable difference between candidate")
    only_negative = {**queries, "queries": queries["queries"][3:]}
    single = trigger_statistics(
        ["baseline", "candidate"], only_negative, documents, 5, [("baseline", "candidate")]
    )
    assert single["comparisons"][0]["recall"] is None
    validate_input(
        "experiment-statistics.v1",
        {
            "format": "sevro.experiment-statistics.v1",
            "confidence": 0.95,
            "repetitions": 5,
            "cases": [],
            "arms": [],
            "comparisons": [],
            "triggers": stats,
        },
        source="statistics",
    )
