"""The comparison document of an experiment on hand-built trial documents: every number checked
against values computed independently here (closed forms with the standard library, brute-force
enumeration), inconclusive and missing trials kept out of every test, unknown kept unknown."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations
from statistics import NormalDist
from typing import Any

import pytest

from sevro_core.experiments.comparison import (
    ArmTrial,
    arm_trial,
    experiment_statistics,
    regressed,
)
from sevro_core.formats.schemas import validator

Z95 = NormalDist().inv_cdf(0.975)


def wilson_by_hand(x: int, n: int) -> tuple[float, float]:
    p, z = x / n, Z95
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


def binomial_at_most(k: int, n: int) -> float:
    return float(Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n))


def skills(target: str | None, read: bool, completeness: str = "complete") -> dict[str, Any]:
    offered = [] if target is None else [{"name": target, "path": f"x/{target}/SKILL.md"}]
    return {
        "id": "sevro.skills",
        "source": "sevro.host.scripted",
        "completeness": completeness,
        "data": {
            "arm": "a",
            "target": target,
            "offered": offered,
            "reads": [],
            "read": [target] if read and target else [],
        },
    }


def trial_document(
    arm: str | None,
    case: str,
    r: int,
    verdict: str = "passed",
    *,
    execution: str = "completed",
    grading: str = "completed",
    observation: dict[str, Any] | None = None,
    tokens: tuple[int, int] | None = None,
    cost: float | None = None,
    duration: float | None = 100.0,
) -> dict[str, Any]:
    """The parts of a ``sevro.trial-evidence.v1`` document a comparison reads."""
    document: dict[str, Any] = {
        "format": "sevro.trial-evidence.v1",
        "runId": "run",
        "caseId": case,
        "trial": r,
        "evidence": {
            "execution": {"status": execution},
            "grading": {"status": grading, "error": None},
            "task": {"verdict": verdict},
            "observations": [] if observation is None else [observation],
            "usage": {
                "inputTokens": tokens[0] if tokens else None,
                "outputTokens": tokens[1] if tokens else None,
                "costUsd": cost,
                "complete": tokens is not None,
            },
            "durations": {"candidateMs": duration},
        },
    }
    if arm is not None:
        document["arm"] = arm
    return document


def outcome_trials(arm: str, case: str, outcomes: str) -> list[ArmTrial]:
    """``outcomes`` is one letter per repetition: P pass, F fail, X execution failed."""
    verdicts = {"P": "passed", "F": "failed", "X": "not_assessed"}
    return [
        arm_trial(
            trial_document(
                arm, case, r, verdicts[o], execution="failed" if o == "X" else "completed"
            )
        )
        for r, o in enumerate(outcomes, start=1)
    ]


def valid(document: dict[str, Any]) -> dict[str, Any]:
    errors = list(validator("experiment-statistics.v1").iter_errors(document))
    assert not errors, errors[0].message
    return document


# --- one trial -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("execution", "grading", "verdict", "expected"),
    [
        ("completed", "completed", "passed", "pass"),
        ("completed", "completed", "failed", "fail"),
        ("failed", "completed", "failed", "inconclusive"),
        ("cancelled", "not_requested", "not_assessed", "inconclusive"),
        ("completed", "error", "failed", "inconclusive"),
        ("completed", "unavailable", "not_assessed", "inconclusive"),
        ("completed", "completed", "not_assessed", "inconclusive"),
    ],
)
def test_outcome_of_a_trial(execution: str, grading: str, verdict: str, expected: str) -> None:
    document = trial_document("b", "c", 1, verdict, execution=execution, grading=grading)
    assert arm_trial(document).outcome == expected


def test_activation_is_known_only_from_a_complete_observation_with_a_target() -> None:
    def activated(observation: dict[str, Any] | None) -> bool | None:
        return arm_trial(trial_document("b", "c", 1, observation=observation)).activated

    assert activated(skills("notes", read=True)) is True
    assert activated(skills("notes", read=False)) is False
    assert activated(skills(None, read=False)) is None  # no target
    assert activated(None) is None  # no observation
    assert activated(skills("notes", read=True, completeness="partial")) is None
    assert activated(skills("notes", read=False, completeness="unavailable")) is None
    not_offered = skills("notes", read=False)
    not_offered["data"]["offered"] = []
    assert activated(not_offered) is None


def test_unknown_usage_and_duration_stay_unknown() -> None:
    known = arm_trial(trial_document("b", "c", 1, tokens=(10, 4), cost=0.5, duration=12.5))
    assert (known.input_tokens, known.output_tokens, known.cost_usd, known.duration_ms) == (
        10,
        4,
        0.5,
        12.5,
    )
    unknown = arm_trial(trial_document("b", "c", 1, duration=None))
    assert (unknown.input_tokens, unknown.output_tokens, unknown.cost_usd) == (None, None, None)
    assert unknown.duration_ms is None
    partial = trial_document("b", "c", 1, tokens=(10, 4))
    partial["evidence"]["usage"]["complete"] = False  # some turns unaccounted: not a total
    assert arm_trial(partial).input_tokens is None


def test_a_plain_trial_needs_an_arm_name() -> None:
    plain = trial_document(None, "c", 2)
    with pytest.raises(ValueError, match="plain run"):
        arm_trial(plain)
    named = arm_trial(plain, "A")
    assert (named.arm, named.case_id, named.repetition) == ("A", "c", 2)


# --- per arm and case --------------------------------------------------------------------------


def test_arm_case_pass_rate_pass_at_k_and_means() -> None:
    trials = [
        arm_trial(trial_document("b", "c", 1, "passed", tokens=(10, 1), cost=0.25)),
        arm_trial(trial_document("b", "c", 2, "failed", tokens=(30, 3), cost=None)),
        arm_trial(trial_document("b", "c", 3, "passed", duration=None)),
        arm_trial(trial_document("b", "c", 4, "failed")),
        arm_trial(trial_document("b", "c", 5, "passed", execution="failed")),
    ]
    stats = valid(experiment_statistics(["b"], [], trials, 5))
    case = stats["arms"][0]["cases"][0]
    rate = case["passRate"]
    assert (rate["passes"], rate["decided"], rate["inconclusive"]) == (2, 4, 1)
    assert rate["rate"] == 0.5
    low, high = wilson_by_hand(2, 4)
    assert rate["interval"] == pytest.approx({"low": low, "high": high})
    # brute force over every choice of k of the 4 decided trials (P F P F)
    decided = ["P", "F", "P", "F"]
    for entry in case["passAtK"]:
        k = entry["k"]
        if k > 4:
            assert entry["value"] is None  # 4 decided trials cannot estimate pass@5
            continue
        picks = list(combinations(decided, k))
        assert entry["value"] == pytest.approx(sum("P" in p for p in picks) / len(picks))
    for entry in case["passHatK"]:
        k = entry["k"]
        if k <= 4:
            picks = list(combinations(decided, k))
            expected = sum(all(x == "P" for x in p) for p in picks) / len(picks)
            assert entry["value"] == pytest.approx(expected)
    assert [e["k"] for e in case["passAtK"]] == [1, 2, 3, 4, 5]
    means = case["means"]
    assert means["inputTokens"] == {"mean": 20.0, "known": 2}
    assert means["costUsd"] == {"mean": 0.25, "known": 1}
    assert means["durationMs"] == {"mean": 100.0, "known": 4}
    assert case["activation"] == {
        "activated": 0,
        "known": 0,
        "unknown": 5,
        "rate": None,
        "interval": None,
    }


def test_pass_at_k_is_listed_up_to_ten() -> None:
    stats = experiment_statistics(["b"], [], outcome_trials("b", "c", "PF" * 20), 40)
    assert [e["k"] for e in stats["arms"][0]["cases"][0]["passAtK"]] == list(range(1, 11))


def test_activation_rate_with_wilson_interval() -> None:
    trials = [
        arm_trial(trial_document("t", "c", r, observation=skills("notes", read=r <= 3)))
        for r in range(1, 5)
    ]
    trials.append(arm_trial(trial_document("t", "c", 5, observation=None)))
    activation = valid(experiment_statistics(["t"], [], trials, 5))["arms"][0]["activation"]
    low, high = wilson_by_hand(3, 4)
    assert activation["interval"] == pytest.approx({"low": low, "high": high})
    assert (activation["activated"], activation["known"], activation["unknown"]) == (3, 4, 1)
    assert activation["rate"] == 0.75


# --- comparisons -------------------------------------------------------------------------------


def newcombe_by_hand(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Newcombe (1998) method 10, written out again from the paper's formulas."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_by_hand(a + b, n)
    l2, u2 = wilson_by_hand(a + c, n)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    corrected = cross - n / 2 if cross > n / 2 else (0 if cross >= 0 else cross)
    phi = corrected / math.sqrt(margins) if margins else 0.0
    estimate = p1 - p2
    low = estimate - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = estimate + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return max(-1, low), min(1, high)


def build(cases: dict[str, tuple[str, str]], repetitions: int) -> dict[str, Any]:
    trials: list[ArmTrial] = []
    for case, (control, treatment) in cases.items():
        trials += outcome_trials("baseline", case, control)
        trials += outcome_trials("candidate", case, treatment)
    return valid(
        experiment_statistics(
            ["baseline", "candidate"], [("baseline", "candidate")], trials, repetitions
        )
    )


def test_per_case_transitions_difference_and_mcnemar() -> None:
    # case a: 1 both pass, 6 fixed, 1 broken, 2 both fail
    stats = build({"a": ("PFFFFFFPFF", "PPPPPPPFFF")}, 10)
    row = stats["comparisons"][0]["cases"][0]
    assert row["transitions"] == {
        "bothPass": 1,
        "fixed": 6,
        "broken": 1,
        "bothFail": 2,
        "inconclusive": 0,
    }
    assert row["controlRate"] == pytest.approx(0.2)
    assert row["treatmentRate"] == pytest.approx(0.7)
    assert row["difference"]["estimate"] == pytest.approx(0.5)
    low, high = newcombe_by_hand(1, 6, 1, 2)
    assert row["difference"]["interval"] == pytest.approx({"low": low, "high": high})
    mcnemar = row["mcnemar"]
    assert mcnemar["discordant"] == 7
    assert mcnemar["pTwoSided"] == pytest.approx(min(1.0, 2 * binomial_at_most(1, 7)))
    assert mcnemar["pImproved"] == pytest.approx(1 - binomial_at_most(5, 7))
    assert mcnemar["pRegressed"] == pytest.approx(binomial_at_most(6, 7))
    # p = 0.125 is not below 0.05: not detectable at this n, and the report says how many
    assert row["verdict"] == "no detectable difference"
    assert row["repetitionsNeeded"] is not None and row["repetitionsNeeded"] > 10


def test_inconclusive_and_missing_pairs_are_counted_but_never_decide() -> None:
    # repetition 2: control execution failed; repetition 4: the treatment trial is missing
    trials = outcome_trials("baseline", "a", "FXFF") + [
        t for t in outcome_trials("candidate", "a", "PPPP") if t.repetition != 4
    ]
    stats = valid(
        experiment_statistics(["baseline", "candidate"], [("baseline", "candidate")], trials, 4)
    )
    comparison = stats["comparisons"][0]
    assert comparison["pairs"] == 4
    row = comparison["cases"][0]
    assert row["transitions"] == {
        "bothPass": 0,
        "fixed": 2,
        "broken": 0,
        "bothFail": 0,
        "inconclusive": 2,
    }
    assert row["mcnemar"]["discordant"] == 2
    assert row["mcnemar"]["pTwoSided"] == pytest.approx(0.5)
    assert comparison["pooled"]["transitions"]["inconclusive"] == 2


def test_everything_inconclusive_is_unknown_not_zero() -> None:
    stats = build({"a": ("XXX", "PPP")}, 3)
    comparison = stats["comparisons"][0]
    row = comparison["cases"][0]
    assert row["difference"] is None and row["mcnemar"] is None
    assert row["controlRate"] is None and row["verdict"] == "unknown"
    assert comparison["pooled"]["verdict"] == "unknown"
    assert comparison["pooled"]["difference"] is None
    assert stats["arms"][0]["cases"][0]["passRate"]["rate"] is None
    assert not regressed(stats)


def pooled_by_hand(cases: dict[str, tuple[str, str]]) -> tuple[float, float, float]:
    """Miller (2024) clustered SE with the G/(G-1) factor, max with the iid SE, t(G-1)."""
    from scipy.stats import t

    differences: dict[str, list[int]] = {}
    for case, (control, treatment) in cases.items():
        differences[case] = [
            (y == "P") - (x == "P")
            for x, y in zip(control, treatment, strict=True)
            if "X" not in (x, y)
        ]
    every = [d for ds in differences.values() for d in ds]
    n, g = len(every), len(differences)
    mean = sum(every) / n
    clustered = math.sqrt(
        g / (g - 1) / n**2 * sum(sum(d - mean for d in ds) ** 2 for ds in differences.values())
    )
    iid = math.sqrt(sum((d - mean) ** 2 for d in every) / (n - 1) / n)
    half = float(t.ppf(0.975, g - 1)) * max(clustered, iid)
    return mean, max(-1, mean - half), min(1, mean + half)


IMPROVED = {
    "a": ("FFFFF", "PPPPP"),
    "b": ("FFFFF", "PPPPF"),
    "c": ("PFFFF", "PPPPP"),
    "d": ("FFFFF", "PPPFF"),
    "e": ("PPFFF", "PPPPP"),
}


def test_pooled_difference_with_case_clustered_errors_improved() -> None:
    stats = build(IMPROVED, 5)
    pooled = stats["comparisons"][0]["pooled"]
    mean, low, high = pooled_by_hand(IMPROVED)
    assert pooled["difference"]["estimate"] == pytest.approx(mean)
    assert pooled["difference"]["interval"] == pytest.approx({"low": low, "high": high})
    assert pooled["transitions"]["fixed"] == 19 and pooled["transitions"]["broken"] == 0
    assert pooled["mcnemar"]["pTwoSided"] == pytest.approx(2 * binomial_at_most(0, 19))
    assert pooled["verdict"] == "improved" and pooled["repetitionsNeeded"] is None
    assert pooled["casesWithDecidedPairs"] == 5
    assert not regressed(stats)


def test_regressed_when_the_treatment_breaks_what_passed() -> None:
    swapped = {case: (t, c) for case, (c, t) in IMPROVED.items()}
    stats = build(swapped, 5)
    assert stats["comparisons"][0]["pooled"]["verdict"] == "regressed"
    assert regressed(stats)


def test_no_detectable_difference_names_the_repetitions_it_would_need() -> None:
    stats = build({"a": ("PFPFP", "PPPFP"), "b": ("FFPFF", "FPPFF")}, 5)
    pooled = stats["comparisons"][0]["pooled"]
    assert pooled["verdict"] == "no detectable difference"
    assert pooled["repetitionsNeeded"] is not None and pooled["repetitionsNeeded"] > 5
    identical = build({"a": ("PFPFP", "PFPFP"), "b": ("FFPFF", "FFPFF")}, 5)
    pooled = identical["comparisons"][0]["pooled"]
    assert pooled["verdict"] == "no detectable difference"
    assert pooled["repetitionsNeeded"] is None  # no observed effect: none would detect it


def test_deltas_over_pairs_where_both_sides_are_known() -> None:
    trials = [
        arm_trial(trial_document("b", "c", 1, tokens=(100, 10), cost=1.0, duration=50)),
        arm_trial(trial_document("t", "c", 1, tokens=(160, 30), cost=1.5, duration=80)),
        arm_trial(trial_document("b", "c", 2, tokens=(100, 10), duration=None)),
        arm_trial(trial_document("t", "c", 2, duration=60)),  # tokens unknown
    ]
    stats = valid(experiment_statistics(["b", "t"], [("b", "t")], trials, 2))
    deltas = stats["comparisons"][0]["deltas"]
    assert deltas["inputTokens"] == {"mean": 60.0, "knownPairs": 1, "pairs": 2}
    assert deltas["outputTokens"] == {"mean": 20.0, "knownPairs": 1, "pairs": 2}
    assert deltas["costUsd"] == {"mean": 0.5, "knownPairs": 1, "pairs": 2}
    assert deltas["durationMs"] == {"mean": 30.0, "knownPairs": 1, "pairs": 2}
    unknown = valid(
        experiment_statistics(["b", "t"], [("b", "t")], outcome_trials("b", "c", "P"), 1)
    )
    assert unknown["comparisons"][0]["deltas"]["inputTokens"] == {
        "mean": None,
        "knownPairs": 0,
        "pairs": 1,
    }


def test_activation_per_arm_in_a_comparison() -> None:
    trials = [
        arm_trial(trial_document("b", "c", 1, observation=skills(None, read=False))),
        arm_trial(trial_document("t", "c", 1, observation=skills("notes", read=True))),
    ]
    activation = experiment_statistics(["b", "t"], [("b", "t")], trials, 1)["comparisons"][0][
        "activation"
    ]
    assert activation["control"]["rate"] is None and activation["control"]["unknown"] == 1
    assert activation["treatment"]["rate"] == 1.0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="repetitions"):
        experiment_statistics(["b"], [], [], 0)
    with pytest.raises(ValueError, match="not listed"):
        experiment_statistics(["b"], [("b", "t")], [], 1)
    with pytest.raises(ValueError, match="not listed"):
        experiment_statistics(["b"], [], outcome_trials("t", "c", "P"), 1)
    twice = outcome_trials("b", "c", "P") * 2
    with pytest.raises(ValueError, match="two trials"):
        experiment_statistics(["b"], [], twice, 1)


def test_a_case_without_trials_is_listed_unknown_and_no_trial_is_dropped() -> None:
    trials = outcome_trials("b", "late", "P") + outcome_trials("t", "late", "F")
    stats = valid(experiment_statistics(["b", "t"], [("b", "t")], trials, 1, cases=["empty"]))
    assert stats["cases"] == ["empty", "late"]
    empty, late = stats["comparisons"][0]["cases"]
    assert empty["transitions"]["inconclusive"] == 1 and empty["verdict"] == "unknown"
    assert late["transitions"]["broken"] == 1
