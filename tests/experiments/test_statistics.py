"""The statistics of a comparison, each checked against values computed independently here
(closed forms with the standard library, brute-force enumeration) and against published
worked examples, plus the edge cases where the answer is unknown and the verdict's controls."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from statistics import NormalDist

import pytest

from sevro_core.experiments.statistics import (
    Interval,
    Pair,
    Transitions,
    compare_cases,
    compare_pairs,
    exact_mcnemar,
    paired_difference,
    pairs_to_detect,
    pass_at_k,
    pass_hat_k,
    pass_rate,
    pooled_difference,
    transitions,
    verdict,
    wilson_interval,
)

Z95 = NormalDist().inv_cdf(0.975)


def wilson_by_hand(x: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = x / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


def binomial_tail_at_most(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly."""
    return float(Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n))


def pairs_from(both_pass: int, fixed: int, broken: int, both_fail: int) -> list[Pair]:
    return (
        [Pair("pass", "pass")] * both_pass
        + [Pair("fail", "pass")] * fixed
        + [Pair("pass", "fail")] * broken
        + [Pair("fail", "fail")] * both_fail
    )


# --- Wilson interval -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passes", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Stat Med
        # 17:857, Table II, method 3 (Wilson score interval without continuity correction)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_newcombes_table(
    passes: int, n: int, low: float, high: float
) -> None:
    interval = wilson_interval(passes, n)
    assert interval is not None
    assert interval.low == pytest.approx(low, abs=5e-5)
    assert interval.high == pytest.approx(high, abs=5e-5)
    assert interval.confidence == 0.95


@pytest.mark.parametrize(("passes", "n"), [(0, 1), (1, 1), (3, 7), (5, 5), (17, 40), (999, 1000)])
def test_wilson_interval_matches_the_closed_form(passes: int, n: int) -> None:
    interval = wilson_interval(passes, n)
    assert interval is not None
    low, high = wilson_by_hand(passes, n)
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)


def test_wilson_interval_at_another_confidence() -> None:
    interval = wilson_interval(7, 10, confidence=0.90)
    assert interval is not None
    low, high = wilson_by_hand(7, 10, NormalDist().inv_cdf(0.95))
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)


def test_wilson_interval_of_no_trials_is_unknown() -> None:
    assert wilson_interval(0, 0) is None


def test_wilson_interval_of_all_passes_reaches_one() -> None:
    interval = wilson_interval(5, 5)
    assert interval is not None
    assert interval.high == pytest.approx(1.0)
    assert 0.0 < interval.low < 1.0


@pytest.mark.parametrize(("passes", "n", "confidence"), [(3, 2, 0.95), (-1, 2, 0.95), (1, 2, 1.0)])
def test_wilson_interval_refuses_impossible_input(passes: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(passes, n, confidence)


def test_pass_rate_leaves_inconclusive_trials_out() -> None:
    rate = pass_rate(["pass", "pass", "fail", "inconclusive"])
    assert (rate.passes, rate.decided, rate.inconclusive) == (2, 3, 1)
    assert rate.rate == pytest.approx(2 / 3)
    assert rate.interval == wilson_interval(2, 3)


def test_pass_rate_of_only_inconclusive_trials_is_unknown() -> None:
    rate = pass_rate(["inconclusive", "inconclusive"])
    assert rate.rate is None and rate.interval is None and rate.inconclusive == 2


def test_unknown_outcomes_are_refused() -> None:
    with pytest.raises(ValueError):
        pass_rate(["pass", "maybe"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        Pair("pass", "maybe")  # type: ignore[arg-type]


# --- transitions -----------------------------------------------------------------------------


def test_transitions_count_each_kind_and_set_inconclusive_apart() -> None:
    pairs = [
        *pairs_from(both_pass=2, fixed=3, broken=1, both_fail=4),
        Pair("inconclusive", "pass"),
        Pair("fail", "inconclusive"),
        Pair("inconclusive", "inconclusive"),
    ]
    counts = transitions(pairs)
    assert counts == Transitions(both_pass=2, fixed=3, broken=1, both_fail=4, inconclusive=3)
    assert counts.decided == 10 and counts.discordant == 4


# --- paired difference (Newcombe) ------------------------------------------------------------

# Cavo et al. (2012), complete response before and after consolidation therapy, the worked
# example of Fagerland, Lydersen & Laake (2017), "Statistical Analysis of Contingency Tables",
# chapter 8: table [[59, 6], [16, 80]]; Newcombe square-and-add -0.0621 (-0.1186 to -0.0046),
# exact conditional McNemar p = 0.052.
CAVO = Transitions(both_pass=59, fixed=6, broken=16, both_fail=80, inconclusive=0)


def newcombe_by_hand(a: int, b: int, c: int, d: int) -> tuple[float, float, float]:
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_by_hand(a + b, n)
    l2, u2 = wilson_by_hand(a + c, n)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > 0 else cross) / math.sqrt(margins)
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = p1 - p2 + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return p1 - p2, low, high


def test_paired_difference_matches_the_published_example() -> None:
    difference = paired_difference(CAVO)
    assert difference is not None
    assert difference.estimate == pytest.approx(-0.0621, abs=5e-5)
    assert difference.interval.low == pytest.approx(-0.1186, abs=5e-5)
    assert difference.interval.high == pytest.approx(-0.0046, abs=5e-5)
    assert difference.decided == 161


@pytest.mark.parametrize(
    "table",
    [(1, 1, 7, 12), (10, 0, 0, 10), (0, 5, 0, 0), (3, 2, 2, 3), (40, 1, 9, 2), (5, 6, 0, 1)],
)
def test_paired_difference_matches_the_formula(table: tuple[int, int, int, int]) -> None:
    a, b, c, d = table
    difference = paired_difference(Transitions(a, b, c, d, inconclusive=0))
    assert difference is not None
    estimate, low, high = newcombe_by_hand(a, b, c, d)
    assert difference.estimate == pytest.approx(estimate, abs=1e-12)
    assert difference.interval.low == pytest.approx(max(-1.0, low), abs=1e-12)
    assert difference.interval.high == pytest.approx(min(1.0, high), abs=1e-12)
    assert difference.interval.low <= difference.estimate <= difference.interval.high


def test_paired_difference_without_decided_pairs_is_unknown() -> None:
    assert paired_difference(Transitions(0, 0, 0, 0, inconclusive=4)) is None


# --- exact McNemar ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "published"),
    [
        (CAVO, 0.052),  # Fagerland et al. (2017), chapter 8, exact conditional test
        # Bentur et al. (2009), airway hyper-responsiveness, ibid.: [[1, 1], [7, 12]], p = 0.070
        (Transitions(both_pass=1, fixed=1, broken=7, both_fail=12, inconclusive=0), 0.070),
    ],
)
def test_exact_mcnemar_matches_the_published_p_values(
    counts: Transitions, published: float
) -> None:
    test = exact_mcnemar(counts)
    assert test is not None
    assert test.p_two_sided == pytest.approx(published, abs=5e-4)
    smaller = min(counts.fixed, counts.broken)
    assert test.p_two_sided == pytest.approx(
        min(1.0, 2 * binomial_tail_at_most(smaller, counts.discordant)), rel=1e-12
    )


@pytest.mark.parametrize(("fixed", "broken"), [(6, 16), (16, 6), (9, 1), (3, 3), (0, 5), (1, 0)])
def test_exact_mcnemar_one_sided_p_values(fixed: int, broken: int) -> None:
    test = exact_mcnemar(Transitions(4, fixed, broken, 4, inconclusive=0))
    assert test is not None
    n = fixed + broken
    # improved: P(X >= fixed) = P(X <= broken) under X ~ Binomial(n, 1/2), by symmetry
    assert test.p_improved == pytest.approx(binomial_tail_at_most(broken, n), rel=1e-12)
    assert test.p_regressed == pytest.approx(binomial_tail_at_most(fixed, n), rel=1e-12)
    assert (test.fixed, test.broken) == (fixed, broken)


def test_exact_mcnemar_without_discordant_pairs_finds_nothing() -> None:
    test = exact_mcnemar(Transitions(5, 0, 0, 5, inconclusive=0))
    assert test is not None
    assert (test.p_two_sided, test.p_improved, test.p_regressed) == (1.0, 1.0, 1.0)


def test_exact_mcnemar_without_decided_pairs_is_unknown() -> None:
    assert exact_mcnemar(Transitions(0, 0, 0, 0, inconclusive=3)) is None


# --- pass@k and pass^k -----------------------------------------------------------------------


def brute_force(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Over every k-subset of n trials of which c pass: the share with at least one pass
    (pass@k, Chen et al. 2021) and the share where all pass (pass^k)."""
    trials = [True] * c + [False] * (n - c)
    subsets = list(combinations(trials, k))
    any_pass = sum(1 for subset in subsets if any(subset))
    all_pass = sum(1 for subset in subsets if all(subset))
    return Fraction(any_pass, len(subsets)), Fraction(all_pass, len(subsets))


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(n, c, k) for n in (1, 2, 5, 8) for c in range(n + 1) for k in range(1, n + 1)],
)
def test_pass_at_k_and_pass_hat_k_match_enumeration(n: int, c: int, k: int) -> None:
    at_k, hat_k = brute_force(n, c, k)
    assert pass_at_k(n, c, k) == pytest.approx(float(at_k), rel=1e-12, abs=1e-15)
    assert pass_hat_k(n, c, k) == pytest.approx(float(hat_k), rel=1e-12, abs=1e-15)


def test_pass_at_k_matches_the_codex_papers_stable_product() -> None:
    # Chen et al. (2021), figure 3: 1 - prod_{i=n-c+1}^{n} (1 - k / i)
    n, c, k = 200, 13, 10
    product = math.prod(1 - k / i for i in range(n - c + 1, n + 1))
    assert pass_at_k(n, c, k) == pytest.approx(1 - product, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (0, 0, 1)])
def test_pass_at_k_beyond_the_trials_is_unknown(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) is None
    assert pass_hat_k(n, c, k) is None


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, -1, 1)])
def test_pass_at_k_refuses_impossible_input(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


# --- pooled difference with case-clustered errors --------------------------------------------


def clustered_by_hand(cases: Sequence[Sequence[int]]) -> tuple[float, float]:
    """Miller (2024) clustered SE with the G/(G-1) factor, floored at the i.i.d. SE."""
    values = [d for case in cases for d in case]
    n, groups = len(values), len(cases)
    mean = sum(values) / n
    sandwich = sum(sum(d - mean for d in case) ** 2 for case in cases) / n**2
    clustered = math.sqrt(groups / (groups - 1) * sandwich)
    independent = math.sqrt(sum((d - mean) ** 2 for d in values) / (n - 1) / n)
    return mean, max(clustered, independent)


def differences_to_pairs(differences: Sequence[int]) -> list[Pair]:
    kinds = {1: Pair("fail", "pass"), -1: Pair("pass", "fail"), 0: Pair("pass", "pass")}
    return [kinds[d] for d in differences]


# Student's t 0.975 quantiles from the table (Fisher & Yates): 3 and 4 degrees of freedom
T_975 = {3: 3.182446305, 4: 2.776445105}


@pytest.mark.parametrize(
    "cases",
    [
        # cases differ a lot: clustering widens the error bar beyond the i.i.d. one
        [[1, 1, 1, 1], [1, 1, 1, 0], [0, 0, 0, 0], [-1, -1, 0, 0]],
        # cases alike: the i.i.d. floor applies
        [[1, -1, 0, 1], [1, -1, 0, 1], [1, -1, 0, 1], [1, -1, 0, 1]],
        [[1, 0, 0], [0, 1, 0, 0, 1], [1, 1], [0, -1, 1, 0], [1]],
    ],
)
def test_pooled_difference_matches_the_clustered_formula(cases: list[list[int]]) -> None:
    pooled = pooled_difference(
        {f"case-{index}": differences_to_pairs(case) for index, case in enumerate(cases)}
    )
    assert pooled is not None and pooled.interval is not None
    mean, standard_error = clustered_by_hand(cases)
    assert pooled.estimate == pytest.approx(mean, abs=1e-12)
    assert pooled.standard_error == pytest.approx(standard_error, rel=1e-9)
    half = T_975[len(cases) - 1] * standard_error
    assert pooled.interval.low == pytest.approx(max(-1.0, mean - half), rel=1e-8)
    assert pooled.interval.high == pytest.approx(min(1.0, mean + half), rel=1e-8)
    assert pooled.cases == len(cases)


def test_clustering_widens_the_error_bar_when_cases_differ() -> None:
    cases = [[1, 1, 1, 1], [1, 1, 1, 0], [0, 0, 0, 0], [-1, -1, 0, 0]]
    values = [d for case in cases for d in case]
    mean = sum(values) / len(values)
    independent = math.sqrt(sum((d - mean) ** 2 for d in values) / (len(values) - 1) / len(values))
    pooled = pooled_difference({str(i): differences_to_pairs(c) for i, c in enumerate(cases)})
    assert pooled is not None and pooled.standard_error is not None
    assert pooled.standard_error > independent * 1.2


@pytest.mark.parametrize("difference", [0, 1, -1])
def test_pairs_that_all_agree_never_give_a_point_interval(difference: int) -> None:
    """Every pair the same: both standard errors are 0, so the interval is Newcombe's paired
    score interval over the pooled pairs (here 10 pairs in 5 cases), never a point."""
    cases = {f"case-{i}": differences_to_pairs([difference] * 2) for i in range(5)}
    pooled = pooled_difference(cases)
    assert pooled is not None and pooled.interval is not None
    assert pooled.standard_error == 0.0 and pooled.estimate == difference
    newcombe = paired_difference(transitions(p for pairs in cases.values() for p in pairs))
    assert newcombe is not None
    assert pooled.interval == newcombe.interval
    assert pooled.interval.high - pooled.interval.low > 0.2
    assert pooled.interval.low <= difference <= pooled.interval.high


def test_pooled_difference_sets_inconclusive_pairs_apart() -> None:
    pooled = pooled_difference(
        {
            "a": [Pair("fail", "pass"), Pair("inconclusive", "pass")],
            "b": [Pair("pass", "pass"), Pair("fail", "inconclusive")],
            "c": [Pair("inconclusive", "inconclusive")],
        }
    )
    assert pooled is not None
    assert (pooled.decided, pooled.inconclusive, pooled.cases) == (2, 3, 2)
    assert pooled.estimate == pytest.approx(0.5)


def test_pooled_difference_of_one_case_has_no_interval() -> None:
    pooled = pooled_difference({"only": pairs_from(1, 3, 0, 1)})
    assert pooled is not None
    assert pooled.interval is None and pooled.standard_error is None


def test_pooled_difference_of_only_inconclusive_pairs_is_unknown() -> None:
    assert pooled_difference({"a": [Pair("inconclusive", "fail")]}) is None
    assert pooled_difference({}) is None


# --- power approximation ---------------------------------------------------------------------


def test_pairs_to_detect_follows_connors_approximation() -> None:
    counts = Transitions(both_pass=3, fixed=3, broken=1, both_fail=3, inconclusive=0)
    discordance, effect = 4 / 10, 2 / 10
    z_power = NormalDist().inv_cdf(0.80)
    expected = (Z95 * math.sqrt(discordance) + z_power * math.sqrt(discordance - effect**2)) ** 2
    assert pairs_to_detect(counts) == math.ceil(expected / effect**2)


def test_pairs_to_detect_a_zero_effect_is_unknown() -> None:
    assert pairs_to_detect(Transitions(3, 2, 2, 3, inconclusive=0)) is None
    assert pairs_to_detect(Transitions(0, 0, 0, 0, inconclusive=2)) is None


# --- verdicts: controls ----------------------------------------------------------------------


def better_treatment() -> dict[str, list[Pair]]:
    """Six cases, ten repetitions each: the treatment fixes most control failures."""
    return {
        f"case-{index}": pairs_from(
            both_pass=2, fixed=6 + index % 2, broken=0, both_fail=2 - index % 2
        )
        for index in range(6)
    }


def swapped(cases: dict[str, list[Pair]]) -> dict[str, list[Pair]]:
    return {
        name: [Pair(pair.treatment, pair.control) for pair in pairs]
        for name, pairs in cases.items()
    }


def test_a_clearly_better_treatment_is_improved() -> None:
    comparison = compare_cases(better_treatment())
    assert comparison.verdict.word == "improved"
    assert comparison.verdict.interval is not None and comparison.verdict.interval.low > 0
    assert comparison.verdict.pairs_needed is None and comparison.repetitions_needed is None
    assert comparison.mcnemar is not None and comparison.mcnemar.p_improved < 1e-6
    for case in comparison.per_case.values():
        assert case.verdict.word == "improved"


def test_the_swapped_comparison_is_regressed() -> None:
    comparison = compare_cases(swapped(better_treatment()))
    assert comparison.verdict.word == "regressed"
    assert comparison.verdict.interval is not None and comparison.verdict.interval.high < 0
    for case in comparison.per_case.values():
        assert case.verdict.word == "regressed"


def test_identical_arms_show_no_detectable_difference() -> None:
    cases = {
        f"case-{index}": [Pair(outcome, outcome) for outcome in ("pass", "fail", "pass")]
        for index in range(4)
    }
    comparison = compare_cases(cases)
    assert comparison.verdict.word == "no detectable difference"
    assert comparison.verdict.estimate == 0.0
    assert comparison.verdict.pairs_needed is None  # a zero effect needs no number of repetitions


def test_a_small_effect_on_few_repetitions_says_how_many_it_would_need() -> None:
    cases = {f"case-{index}": pairs_from(1, 2, 1, 1) for index in range(3)}
    comparison = compare_cases(cases)
    assert comparison.verdict.word == "no detectable difference"
    pairs_needed = pairs_to_detect(comparison.transitions)
    assert pairs_needed is not None and comparison.verdict.pairs_needed == pairs_needed
    assert comparison.repetitions_needed == math.ceil(pairs_needed / 3)
    assert comparison.repetitions_needed > 5


def test_two_fixed_pairs_are_not_an_improvement_yet() -> None:
    # Newcombe's interval excludes 0 here, but the exact test (p = 0.5) cannot support it
    comparison = compare_pairs([Pair("fail", "pass"), Pair("fail", "pass")])
    assert comparison.difference is not None and comparison.difference.interval.low > 0
    assert comparison.verdict.word == "no detectable difference"
    assert comparison.verdict.p_two_sided == pytest.approx(0.5)
    assert comparison.verdict.pairs_needed is not None


def test_one_case_is_judged_by_its_own_interval() -> None:
    only = pairs_from(both_pass=1, fixed=9, broken=0, both_fail=0)
    comparison = compare_cases({"only": only, "nothing-decided": [Pair("inconclusive", "pass")]})
    assert comparison.difference is not None and comparison.difference.interval is None
    assert comparison.verdict.word == "improved"
    assert comparison.verdict == comparison.per_case["only"].verdict


def test_all_inconclusive_pairs_give_an_unknown_verdict() -> None:
    pairs = [Pair("inconclusive", "pass"), Pair("fail", "inconclusive")]
    comparison = compare_pairs(pairs)
    assert comparison.verdict.word == "unknown"
    assert comparison.difference is None and comparison.mcnemar is None
    assert comparison.transitions.inconclusive == 2
    assert comparison.control.rate is None and comparison.treatment.rate is None
    pooled = compare_cases({"a": pairs, "b": pairs})
    assert pooled.verdict.word == "unknown" and pooled.difference is None


def test_verdict_rule_needs_interval_and_exact_test() -> None:
    above = Interval(0.1, 0.5, 0.95)
    strong = exact_mcnemar(Transitions(0, 9, 0, 0, inconclusive=0))
    weak = exact_mcnemar(Transitions(0, 2, 0, 0, inconclusive=0))
    assert verdict(above, 0.3, strong).word == "improved"
    assert verdict(above, 0.3, weak).word == "no detectable difference"
    assert verdict(Interval(-0.1, 0.5, 0.95), 0.3, strong).word == "no detectable difference"
    assert verdict(None, None, None).word == "unknown"


def test_importing_the_module_does_not_import_scipy_or_statsmodels() -> None:
    code = (
        "import sys, sevro_core.experiments.statistics\n"
        "heavy = ('scipy', 'statsmodels', 'numpy')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
