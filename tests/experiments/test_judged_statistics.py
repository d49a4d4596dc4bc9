"""The comparator's outcomes in the statistics document: the ``judged`` block of a comparison
(eligible and judged pairs, wins, losses, ties, inconclusive with their reasons, an exact sign
test over the decisive pairs), kept apart from the objective results, recounted like them, and
shown in Markdown under its own heading with the judge and its calibration."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from sevro_core.experiments.comparison import (
    ArmTrial,
    ComparatorJudging,
    experiment_statistics,
    statistics_counts,
    trial_counts,
)
from sevro_core.experiments.statistics import sign_test
from sevro_core.judges.comparator import JUDGE_ERROR, POSITION_BIAS, PairJudgement, unjudged
from sevro_core.models import Usage
from sevro_core.reporting.experiment import judged_sentences, render_experiment_statistics
from tests.experiments.test_comparison import outcome_trials, valid

ROUTE = {"role": "comparator", "host": "scripted", "model": "judge-1", "effort": "high"}


def two_sided_by_hand(wins: int, losses: int) -> float:
    """Twice the smaller tail of Binomial(n, 1/2), capped at 1: the exact sign test."""
    n, k = wins + losses, min(wins, losses)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (8, 1, 0.0390625),  # 2 * (1 + 9) / 512
        (1, 8, 0.0390625),
        (5, 0, 0.0625),  # 2 / 32
        (7, 1, 0.0703125),  # 2 * 9 / 256
        (6, 2, 0.2890625),  # 2 * 37 / 256
        (1, 1, 1.0),
        (3, 3, 1.0),
        (1, 0, 1.0),
    ],
)
def test_the_sign_test_matches_hand_computed_values(
    wins: int, losses: int, expected: float
) -> None:
    assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-12)
    assert two_sided_by_hand(wins, losses) == pytest.approx(expected, rel=1e-12)


def test_without_decisive_pairs_the_sign_test_is_unknown_not_one() -> None:
    assert sign_test(0, 0) is None
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def decided(outcome: str) -> PairJudgement:
    return PairJudgement(outcome, (), ())


BIASED = PairJudgement("inconclusive", (POSITION_BIAS,), ())
FAILED = unjudged("AB: the judge failed: exit 1")


def trials(control: str, treatment: str, case: str = "c") -> list[ArmTrial]:
    return outcome_trials("baseline", case, control) + outcome_trials("candidate", case, treatment)


def judging(
    judgements: dict[tuple[str, int], PairJudgement], when: str = "both-passed", **extra: Any
) -> dict[tuple[str, str], ComparatorJudging]:
    return {
        ("baseline", "candidate"): ComparatorJudging(
            rubric_id="sevro.rubric.software-engineering",
            rubric_version="1.0.0",
            route=ROUTE,
            judgements=judgements,
            when=when,
            **extra,
        )
    }


def document(
    listed: list[ArmTrial],
    repetitions: int,
    judged: dict[tuple[str, str], ComparatorJudging] | None,
) -> dict[str, Any]:
    return valid(
        experiment_statistics(
            ["baseline", "candidate"],
            [("baseline", "candidate")],
            listed,
            repetitions,
            None,
            judged,
        )
    )


# Ten repetitions: 1-8 both pass; 9 only the candidate passes; 10 both fail.
TEN = trials("PPPPPPPPPF", "PPPPPPPPPF")
TEN[8] = outcome_trials("baseline", "c", "PPPPPPPPFF")[8]


def test_the_judged_block_counts_the_eligible_pairs() -> None:
    judgements = {("c", r): decided("candidate") for r in range(1, 6)}
    judgements |= {("c", 6): decided("baseline"), ("c", 7): decided("tie"), ("c", 8): BIASED}
    judgements[("c", 9)] = decided("baseline")  # not eligible (the baseline failed): not counted
    judged = document(TEN, 10, judging(judgements))["comparisons"][0]["judged"]
    assert {
        key: judged[key] for key in ("eligiblePairs", "judgedPairs", "wins", "losses", "ties")
    } == {
        "eligiblePairs": 8,
        "judgedPairs": 8,
        "wins": 5,
        "losses": 1,
        "ties": 1,
    }
    assert judged["inconclusive"] == {"total": 1, "positionBias": 1, "judgeError": 0}
    assert judged["signTest"] == {
        "decisive": 6,
        "pTwoSided": pytest.approx(two_sided_by_hand(5, 1)),
    }
    assert judged["rubric"] == {"id": "sevro.rubric.software-engineering", "version": "1.0.0"}
    assert (judged["judge"], judged["when"], judged["calibration"]) == (ROUTE, "both-passed", None)
    assert judged["pairs"][7] == {
        "caseId": "c",
        "repetition": 8,
        "outcome": "inconclusive",
        "flags": ["position-bias"],
    }
    assert [p["repetition"] for p in judged["pairs"]] == list(range(1, 9))


def test_both_completed_makes_pairs_with_a_failure_eligible_but_never_an_inconclusive_one() -> None:
    listed = [*TEN]
    listed[19] = outcome_trials("candidate", "c", "PPPPPPPPPX")[9]  # candidate r10: failed
    judgements = {("c", r): decided("candidate") for r in range(1, 11)}
    judged = document(listed, 10, judging(judgements, "both-completed"))["comparisons"][0]["judged"]
    assert (judged["eligiblePairs"], judged["judgedPairs"], judged["wins"]) == (9, 9, 9)
    judged = document(listed, 10, judging(judgements))["comparisons"][0]["judged"]
    assert (judged["eligiblePairs"], judged["wins"]) == (8, 8)


def test_eligible_pairs_not_yet_judged_are_counted_apart_and_errors_never_win() -> None:
    judgements = {("c", 1): decided("candidate"), ("c", 2): FAILED, ("c", 3): FAILED}
    judged = document(TEN, 10, judging(judgements))["comparisons"][0]["judged"]
    assert (judged["eligiblePairs"], judged["judgedPairs"]) == (8, 3)
    assert (judged["wins"], judged["losses"], judged["ties"]) == (1, 0, 0)
    assert judged["inconclusive"] == {"total": 2, "positionBias": 0, "judgeError": 2}
    assert judged["pairs"][1]["flags"] == [JUDGE_ERROR]


def test_eight_wins_one_loss() -> None:
    listed = trials("P" * 9, "P" * 9)
    judgements = {("c", r): decided("candidate") for r in range(1, 9)} | {
        ("c", 9): decided("baseline")
    }
    judged = document(listed, 9, judging(judgements))["comparisons"][0]["judged"]
    assert judged["signTest"] == {"decisive": 9, "pTwoSided": pytest.approx(0.0390625, rel=1e-12)}


def test_no_decisive_pair_leaves_p_unknown() -> None:
    listed = trials("PP", "PP")
    judged = document(listed, 2, judging({("c", 1): decided("tie"), ("c", 2): BIASED}))
    assert judged["comparisons"][0]["judged"]["signTest"] == {"decisive": 0, "pTwoSided": None}


def test_the_objective_results_do_not_change_and_without_a_judge_there_is_no_block() -> None:
    judgements = {("c", r): decided("baseline") for r in range(1, 9)}
    with_judge = document(TEN, 10, judging(judgements))
    without = document(TEN, 10, None)
    assert "judged" not in without["comparisons"][0]
    del with_judge["comparisons"][0]["judged"]
    assert with_judge == without


def test_the_judged_counts_are_recounted_like_the_objective_ones() -> None:
    judgements = {("c", r): decided("candidate") for r in range(1, 7)} | {("c", 7): BIASED}
    judged = judging(judgements)
    stats = document(TEN, 10, judged)
    args = (["baseline", "candidate"], [("baseline", "candidate")], TEN, 10, None)
    assert statistics_counts(stats) == trial_counts(*args, judged)
    assert "judged" in statistics_counts(stats)
    tampered = judging({**judgements, ("c", 8): decided("candidate")})
    assert statistics_counts(stats) != trial_counts(*args, tampered)  # control: it can differ
    assert "judged" not in trial_counts(*args)


def test_calibration_is_kept_as_given() -> None:
    found = {"passed": True, "agreement": 0.9}
    judged = document(TEN, 10, judging({}, calibration=found))["comparisons"][0]["judged"]
    assert judged["calibration"] == found


def test_the_markdown_shows_the_judged_block_under_its_own_heading() -> None:
    listed = trials("P" * 10, "P" * 10)
    judgements = {("c", r): decided("candidate") for r in range(1, 9)}
    judgements |= {("c", 9): decided("baseline"), ("c", 10): BIASED}
    stats = document(listed, 10, judging(judgements))
    text = "\n".join(render_experiment_statistics(stats))
    heading = "#### Blinded pairwise comparison: candidate against baseline (model judge)"
    assert heading in text
    assert text.index("Mean per-pair difference") < text.index(heading)  # after the objective
    who, found = judged_sentences(stats["comparisons"][0])
    assert who == (
        "Judge: scripted, model judge-1, effort high; rubric sevro.rubric.software-engineering "
        "1.0.0; not calibrated; pairs judged when both passed."
    )
    assert found == (
        "candidate against baseline, judged: 8 wins, 1 loss, 0 ties, 1 inconclusive "
        "(1 position bias, 0 judge error) over 10 judged of 10 eligible pairs; exact sign test "
        "over 9 decisive pairs p = 0.0391."
    )
    assert "| c | 8 | 1 | 0 | 1 |" in text
    without = "\n".join(render_experiment_statistics(document(listed, 10, None)))
    assert "Blinded pairwise comparison" not in without and "Judge:" not in without


def test_the_markdown_states_a_calibration_and_escapes_the_route() -> None:
    listed = trials("PP", "PP")
    hostile = {**ROUTE, "model": "m|x\n<b>"}
    judged = judging({}, calibration={"passed": False})
    judged = {
        key: ComparatorJudging(
            rubric_id=value.rubric_id,
            rubric_version=value.rubric_version,
            route=hostile,
            judgements={},
            calibration={"passed": False},
        )
        for key, value in judged.items()
    }
    who, found = judged_sentences(document(listed, 2, judged)["comparisons"][0])
    assert "calibrated, FAILED" in who
    assert "model m\\|x &lt;b&gt;" in who and "\n" not in who
    assert "p unknown" in found


def usage(tokens_in: int | None, tokens_out: int, cost: float | None) -> Usage:
    return Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=0,
        reasoning_tokens=0,
        cost_usd=cost,
        complete=tokens_in is not None and cost is not None,
    )


def test_the_judged_block_sums_the_comparators_calls_of_the_counted_pairs() -> None:
    listed = trials("PPP", "PPF")  # repetition 3 is not eligible: its judgement is not counted
    judgements = {("c", r): decided("candidate") for r in (1, 2, 3)}
    calls = {
        ("c", 1): (usage(1000, 200, 0.01), usage(1100, 210, 0.0125)),
        ("c", 2): (usage(900, 190, 0.0075), usage(950, 180, 0.008)),
        ("c", 3): (usage(10**6, 10**6, 99.0),),
    }
    judged = document(listed, 3, judging(judgements, call_usage=calls))["comparisons"][0]
    assert judged["judged"]["usage"] == {
        "inputTokens": 3950,
        "outputTokens": 780,
        "cachedInputTokens": 0,
        "reasoningTokens": 0,
        "costUsd": pytest.approx(0.038),
        "reportedCostUsd": None,  # no CLI reported a cost of its own
        "complete": True,
        "calls": 4,
    }
    text = "\n".join(
        render_experiment_statistics(document(listed, 3, judging(judgements, call_usage=calls)))
    )
    assert (
        "Comparator usage: 4 judge calls; 3950 input tokens, 780 output tokens, cost $0.0380."
        in text
    )


def test_a_figure_unknown_for_any_call_is_unknown_never_zero() -> None:
    listed = trials("PP", "PP")
    judgements = {("c", 1): decided("candidate"), ("c", 2): decided("tie")}
    calls = {("c", 1): (usage(1000, 200, 0.01),), ("c", 2): (usage(None, 180, None),)}
    judged = document(listed, 2, judging(judgements, call_usage=calls))["comparisons"][0]
    summed = judged["judged"]["usage"]
    assert (summed["inputTokens"], summed["costUsd"], summed["complete"]) == (None, None, False)
    assert (summed["outputTokens"], summed["calls"]) == (380, 2)
    text = "\n".join(
        render_experiment_statistics(document(listed, 2, judging(judgements, call_usage=calls)))
    )
    assert "Comparator usage: 2 judge calls; tokens and cost unknown." in text
    nothing = document(listed, 2, judging(judgements))["comparisons"][0]["judged"]["usage"]
    assert nothing["calls"] == 0 and nothing["inputTokens"] is None and nothing["costUsd"] is None


def test_the_comparators_usage_is_recounted_from_the_pair_files() -> None:
    listed = trials("PP", "PP")
    judgements = {("c", r): decided("candidate") for r in (1, 2)}
    calls = {key: (usage(100, 10, 0.001),) for key in judgements}
    judged = judging(judgements, call_usage=calls)
    stats = document(listed, 2, judged)
    args = (["baseline", "candidate"], [("baseline", "candidate")], listed, 2, None)
    assert statistics_counts(stats) == trial_counts(*args, judged)
    cheaper = judging(judgements, call_usage={key: (usage(1, 1, 0.0),) for key in judgements})
    assert statistics_counts(stats) != trial_counts(*args, cheaper)  # control: it can differ


def test_the_judge_usage_section_lists_the_comparator_per_comparison() -> None:
    from sevro_core.builtins.reporters import _judge_usage_section

    listed = trials("PP", "PP")
    judgements = {("c", r): decided("candidate") for r in (1, 2)}
    known = judging(judgements, call_usage={k: (usage(100, 10, 0.001),) * 2 for k in judgements})
    experiments = [{"statistics": document(listed, 2, known)}]
    text = "\n".join(_judge_usage_section([], experiments))
    assert "## Judge usage" in text
    assert "| baseline..candidate | comparator | 2 | 400 | 40 | $0.0040 |" in text
    unknown = [{"statistics": document(listed, 2, judging(judgements))}]
    assert "| baseline..candidate | comparator | 2 | unknown | unknown | unknown |" in "\n".join(
        _judge_usage_section([], unknown)
    )
    assert _judge_usage_section([], [{"statistics": document(listed, 2, None)}]) == []
