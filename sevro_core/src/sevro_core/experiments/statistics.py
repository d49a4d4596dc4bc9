"""The numbers of a comparison between two arms: pass rates with Wilson intervals, the transitions
of paired trials, the difference of paired proportions with Newcombe's interval, the exact
McNemar test, unbiased pass@k and pass^k, the pooled difference across cases with case-clustered
standard errors, and a verdict worded from them.

Every function is pure and returns frozen values. SciPy and statsmodels are imported inside the
functions that need them, so importing this module (and `sevro --help`) stays cheap. A quantity
that cannot be computed from the data (no trials, no decided pairs, k > n) is `None`: unknown
stays unknown and is never rounded to zero. A pair with an execution failure on either side is
*inconclusive*: counted, never a win or a loss, and left out of every test.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Final, Literal

from attrs import field, frozen, validators

Outcome = Literal["pass", "fail", "inconclusive"]
OUTCOMES: Final = ("pass", "fail", "inconclusive")
VerdictWord = Literal["improved", "regressed", "no detectable difference", "unknown"]

CONFIDENCE: Final = 0.95
POWER: Final = 0.80  # the power the repetition estimate aims for


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")


def _check_counts(successes: int, n: int) -> None:
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"counts must satisfy 0 <= {successes} <= {n}")


@frozen
class Interval:
    """A two-sided confidence interval at `confidence` (0.95 is 95 %)."""

    low: float
    high: float
    confidence: float

    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0


def wilson_interval(passes: int, n: int, confidence: float = CONFIDENCE) -> Interval | None:
    """Wilson's score interval for a pass rate (Wilson 1927; Newcombe 1998, method 3): it stays
    inside [0, 1] and keeps its coverage at 0 or n passes where the Wald interval collapses.
    None when n = 0: no trials say nothing about the rate."""
    _check_counts(passes, n)
    _check_confidence(confidence)
    if n == 0:
        return None
    from statsmodels.stats.proportion import (
        proportion_confint,
    )

    low, high = proportion_confint(passes, n, alpha=1.0 - confidence, method="wilson")
    return Interval(low=float(low), high=float(high), confidence=confidence)


@frozen
class PassRate:
    """One arm's pass rate over its decided trials (inconclusive ones are counted apart)."""

    passes: int
    decided: int
    inconclusive: int
    rate: float | None
    interval: Interval | None


def pass_rate(outcomes: Iterable[Outcome], confidence: float = CONFIDENCE) -> PassRate:
    """The pass rate of an arm with its Wilson interval; unknown (None) with no decided trial."""
    counted = list(outcomes)
    for outcome in counted:
        _check_outcome(outcome)
    passes = counted.count("pass")
    decided = passes + counted.count("fail")
    return PassRate(
        passes=passes,
        decided=decided,
        inconclusive=counted.count("inconclusive"),
        rate=passes / decided if decided else None,
        interval=wilson_interval(passes, decided, confidence),
    )


def _check_outcome(outcome: object) -> None:
    if outcome not in OUTCOMES:
        raise ValueError(f"an outcome is one of {', '.join(OUTCOMES)}, not {outcome!r}")


@frozen
class Pair:
    """Trial r of the control arm and trial r of the treatment arm on the same case."""

    control: Outcome = field(validator=validators.in_(OUTCOMES))
    treatment: Outcome = field(validator=validators.in_(OUTCOMES))


@frozen
class Transitions:
    """How paired outcomes moved from control to treatment: `fixed` passes only with the
    treatment, `broken` passes only with the control. Inconclusive pairs are counted apart."""

    both_pass: int
    fixed: int
    broken: int
    both_fail: int
    inconclusive: int

    @property
    def decided(self) -> int:
        return self.both_pass + self.fixed + self.broken + self.both_fail

    @property
    def discordant(self) -> int:
        return self.fixed + self.broken


def transitions(pairs: Iterable[Pair]) -> Transitions:
    """Count the pairs by transition; a pair with `inconclusive` on either side is inconclusive."""
    counts = {"both_pass": 0, "fixed": 0, "broken": 0, "both_fail": 0, "inconclusive": 0}
    for pair in pairs:
        if "inconclusive" in (pair.control, pair.treatment):
            counts["inconclusive"] += 1
        elif pair.control == pair.treatment:
            counts["both_pass" if pair.control == "pass" else "both_fail"] += 1
        else:
            counts["fixed" if pair.treatment == "pass" else "broken"] += 1
    return Transitions(**counts)


@frozen
class McNemar:
    """The exact (conditional binomial) McNemar test on the discordant pairs. Under "no
    difference" each discordant pair is fixed or broken with probability 1/2.

    `p_two_sided` tests any difference; `p_improved` tests "the treatment is better" (fixed
    more often than broken); `p_regressed` tests "the treatment is worse"."""

    fixed: int
    broken: int
    p_two_sided: float
    p_improved: float
    p_regressed: float


def exact_mcnemar(counts: Transitions) -> McNemar | None:
    """The exact McNemar test: two-sided p from statsmodels' `mcnemar(exact=True)`, one-sided
    p from SciPy's `binomtest(fixed, fixed + broken, 0.5)` with alternative "greater" (improved)
    or "less" (regressed). None without a decided pair. With decided pairs but no discordant
    one every p is 1: nothing moved, so nothing speaks against "no difference"."""
    if counts.decided == 0:
        return None
    if counts.discordant == 0:
        return McNemar(fixed=0, broken=0, p_two_sided=1.0, p_improved=1.0, p_regressed=1.0)
    from scipy.stats import binomtest
    from statsmodels.stats.contingency_tables import mcnemar

    table = [[counts.both_pass, counts.fixed], [counts.broken, counts.both_fail]]
    two_sided = float(mcnemar(table, exact=True).pvalue)
    n = counts.discordant
    return McNemar(
        fixed=counts.fixed,
        broken=counts.broken,
        p_two_sided=min(1.0, two_sided),
        p_improved=float(binomtest(counts.fixed, n, 0.5, alternative="greater").pvalue),
        p_regressed=float(binomtest(counts.fixed, n, 0.5, alternative="less").pvalue),
    )


def sign_test(wins: int, losses: int) -> float | None:
    """The exact two-sided sign test over decisive judged pairs: p from SciPy's
    `binomtest(wins, wins + losses, 0.5)`. Ties and inconclusive pairs say nothing about the
    direction and are left out before calling. None without a decisive pair (unknown, not 1)."""
    if wins < 0 or losses < 0:
        raise ValueError(f"counts must not be negative: {wins} wins, {losses} losses")
    if wins + losses == 0:
        return None
    from scipy.stats import binomtest

    return min(1.0, float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue))


@frozen
class PairedDifference:
    """Treatment pass rate minus control pass rate over the same decided pairs, with an
    interval that accounts for the pairing."""

    decided: int
    treatment_rate: float
    control_rate: float
    estimate: float
    interval: Interval


def paired_difference(
    counts: Transitions, confidence: float = CONFIDENCE
) -> PairedDifference | None:
    """The difference of paired proportions with Newcombe's score interval for paired data
    (Newcombe 1998, "Improved confidence intervals for the difference between binomial
    proportions based on paired data", Stat Med 17:2635, method 10; Fagerland, Lydersen & Laake
    2017 §8.5 "Newcombe square-and-add"). statsmodels has no paired-difference interval, so
    the combination is written here over statsmodels' Wilson limits. With a = both pass,
    b = fixed, c = broken, d = both fail, n = a + b + c + d:

        p1 = (a + b) / n  (treatment)   p2 = (a + c) / n  (control)   D = p1 - p2 = (b - c) / n
        (l1, u1), (l2, u2) = Wilson intervals of p1 and p2
        phi = C / sqrt((a + b)(c + d)(a + c)(b + d)), with A = ad - bc and
              C = A - n/2 if A > n/2,  0 if 0 <= A <= n/2,  A if A < 0
              (phi = 0 when any margin is 0)
        low  = D - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
        high = D + sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)

    Chosen over the Wald interval D ± z·sqrt(b + c - (b - c)^2/n)/n, which collapses to a
    point when no pair is discordant and overshoots [-1, 1] at small n. None without a
    decided pair."""
    n = counts.decided
    if n == 0:
        return None
    a, b, c, d = counts.both_pass, counts.fixed, counts.broken, counts.both_fail
    treatment, control = (a + b) / n, (a + c) / n
    treatment_limits = wilson_interval(a + b, n, confidence)
    control_limits = wilson_interval(a + c, n, confidence)
    assert treatment_limits is not None and control_limits is not None  # n > 0
    l1, u1 = treatment_limits.low, treatment_limits.high
    l2, u2 = control_limits.low, control_limits.high
    phi = _newcombe_phi(a, b, c, d)
    estimate = treatment - control
    below = (
        (treatment - l1) ** 2 - 2 * phi * (treatment - l1) * (u2 - control) + (u2 - control) ** 2
    )
    above = (
        (control - l2) ** 2 - 2 * phi * (control - l2) * (u1 - treatment) + (u1 - treatment) ** 2
    )
    return PairedDifference(
        decided=n,
        treatment_rate=treatment,
        control_rate=control,
        estimate=estimate,
        interval=Interval(
            low=max(-1.0, estimate - math.sqrt(max(0.0, below))),
            high=min(1.0, estimate + math.sqrt(max(0.0, above))),
            confidence=confidence,
        ),
    )


def _newcombe_phi(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's corrected estimate of the correlation between the paired outcomes."""
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    n = a + b + c + d
    cross = a * d - b * c
    if cross > n / 2:
        corrected = cross - n / 2
    elif cross >= 0:
        corrected = 0.0
    else:
        corrected = float(cross)
    return corrected / math.sqrt(margins)


def _check_pass_at_k(n: int, c: int, k: int) -> None:
    _check_counts(c, n)
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"):
    the chance that at least one of k trials drawn without replacement from n trials with c
    passes passes, 1 - C(n - c, k) / C(n, k). Exact binomials from `scipy.special.comb`.
    None when k > n (n trials cannot estimate it)."""
    _check_pass_at_k(n, c, k)
    if k > n:
        return None
    from scipy.special import comb

    return float(1 - Fraction(int(comb(n - c, k, exact=True)), int(comb(n, k, exact=True))))


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass^k (Yao et al. 2024, "τ-bench"): the chance that all k trials drawn without
    replacement pass, C(c, k) / C(n, k) — reliability rather than best-of-k. None when k > n."""
    _check_pass_at_k(n, c, k)
    if k > n:
        return None
    from scipy.special import comb

    return float(Fraction(int(comb(c, k, exact=True)), int(comb(n, k, exact=True))))


@frozen
class PooledDifference:
    """The mean paired difference over every decided pair of every case, with a case-clustered
    standard error. `cases` counts the cases with at least one decided pair."""

    cases: int
    decided: int
    inconclusive: int
    estimate: float
    standard_error: float | None
    interval: Interval | None


def pooled_difference(
    cases: Mapping[str, Sequence[Pair]], confidence: float = CONFIDENCE
) -> PooledDifference | None:
    """The mean paired difference across cases with case-clustered standard errors (Miller 2024,
    "Adding Error Bars to Evals", §2.2): repetitions of one case are not independent, so the
    pairs are clustered by case. Each decided pair i gives d_i = treatment passed - control
    passed (in {-1, 0, 1}); with n decided pairs, mean d̄ and cases (clusters) g = 1..G:

        SE_clustered = sqrt( G/(G-1) · (1/n²) · Σ_g ( Σ_{i in g} (d_i - d̄) )² )

    the cluster-robust (sandwich) standard error of the mean, computed by statsmodels' OLS of
    d on a constant with `cov_type="cluster"`. Miller's formula is this without the
    small-sample factor G/(G-1), which is optimistic with few cases. Two further choices keep
    the error bar honest with the few cases an eval has:

    - SE = max(SE_clustered, SE_iid), SE_iid = sqrt( Σ (d_i - d̄)² / (n - 1) / n ) (SciPy's
      `sem`): clustering should widen the error bar, but with cases whose pairs happen to
      move alike the sandwich sum is near 0 and would claim a certainty the pairs do not have;
    - the interval is d̄ ± t_{G-1, (1+confidence)/2} · SE, Student's t with G - 1 degrees of
      freedom (wider than Miller's z = 1.96 when cases are few).

    When every decided pair has the same difference (all agree, or all moved one way) both
    standard errors are 0 and the t interval would be a point, claiming a certainty no finite
    sample gives; the interval is then Newcombe's paired score interval over all decided pairs
    (:func:`paired_difference`), which is never a point.

    Unknown (None) interval with fewer than two cases; None without a decided pair."""
    _check_confidence(confidence)
    differences: list[int] = []
    clusters: list[int] = []
    inconclusive = 0
    for case_index, pairs in enumerate(cases.values()):
        for pair in pairs:
            if "inconclusive" in (pair.control, pair.treatment):
                inconclusive += 1
                continue
            differences.append((pair.treatment == "pass") - (pair.control == "pass"))
            clusters.append(case_index)
    if not differences:
        return None
    clustered_cases = len(set(clusters))
    estimate = sum(differences) / len(differences)
    standard_error = _standard_error(differences, clusters, clustered_cases)
    interval = None
    if standard_error is not None:
        from scipy.stats import t

        half = float(t.ppf((1 + confidence) / 2, clustered_cases - 1)) * standard_error
        interval = Interval(
            low=max(-1.0, estimate - half), high=min(1.0, estimate + half), confidence=confidence
        )
        if standard_error == 0.0:
            pooled = paired_difference(
                transitions(p for pairs in cases.values() for p in pairs), confidence
            )
            assert pooled is not None  # there is a decided pair
            interval = pooled.interval
    return PooledDifference(
        cases=clustered_cases,
        decided=len(differences),
        inconclusive=inconclusive,
        estimate=estimate,
        standard_error=standard_error,
        interval=interval,
    )


def _standard_error(
    differences: list[int], clusters: list[int], clustered_cases: int
) -> float | None:
    """max(SE_clustered, SE_iid); None with fewer than two cases (no cluster spread to see)."""
    if clustered_cases < 2:
        return None
    if len(set(differences)) == 1:
        return 0.0  # every pair moved alike: no spread (statsmodels would divide 0 by 0)
    import numpy
    from scipy.stats import sem
    from statsmodels.regression.linear_model import OLS

    values = numpy.asarray(differences, dtype=float)
    fitted = OLS(values, numpy.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": numpy.asarray(clusters)}
    )
    return max(float(fitted.bse[0]), float(sem(values, ddof=1)))


@frozen
class Verdict:
    """A comparison's verdict worded from the numbers, by one rule: `improved` when the whole
    interval of treatment minus control lies above 0 *and* the exact McNemar test's two-sided
    p is below 1 - confidence; `regressed` when the interval lies below 0 and p is below
    1 - confidence; otherwise `no detectable difference`; `unknown` without a decided pair.
    Requiring both keeps a score interval's optimism at tiny n (two fixed pairs out of two)
    from being called an improvement the exact test cannot support. When no difference is
    detectable and the observed effect is not zero, `pairs_needed` is a rough number of
    decided pairs that would detect the observed effect (`pairs_to_detect`, approximate)."""

    word: VerdictWord
    estimate: float | None
    interval: Interval | None
    p_two_sided: float | None
    pairs_needed: int | None = None


def pairs_to_detect(
    counts: Transitions, confidence: float = CONFIDENCE, power: float = POWER
) -> int | None:
    """Approximately how many decided pairs a two-sided paired (McNemar) test at level
    a = 1 - confidence needs to detect the observed effect with the given power, by Connor's
    normal approximation (Connor 1987, Biometrics 43:207), taking the observed discordance
    p_disc = (b + c)/n and effect D = (b - c)/n as the truth:

        n ≈ ( z_{1-a/2} · sqrt(p_disc) + z_{power} · sqrt(p_disc - D²) )² / D²

    Approximate: it trusts a small sample's estimates and ignores clustering by case. None
    when the observed effect is zero (no number of repetitions detects it)."""
    _check_confidence(confidence)
    _check_confidence(power)
    if counts.decided == 0 or counts.fixed == counts.broken:
        return None
    from scipy.stats import norm

    discordance = counts.discordant / counts.decided
    effect = (counts.fixed - counts.broken) / counts.decided
    z_alpha = float(norm.ppf(1 - (1 - confidence) / 2))
    z_power = float(norm.ppf(power))
    root = z_alpha * math.sqrt(discordance) + z_power * math.sqrt(max(0.0, discordance - effect**2))
    return math.ceil(root**2 / effect**2)


def verdict(
    interval: Interval | None,
    estimate: float | None,
    test: McNemar | None,
    pairs_needed: int | None = None,
) -> Verdict:
    """Word the verdict from an interval of treatment minus control and the exact McNemar
    test of the same pairs (the rule is `Verdict`'s)."""
    p_value = test.p_two_sided if test else None
    if interval is None or estimate is None or p_value is None:
        return Verdict(word="unknown", estimate=estimate, interval=interval, p_two_sided=p_value)
    significant = p_value < 1.0 - interval.confidence
    word: VerdictWord = "no detectable difference"
    if significant and interval.low > 0.0:
        word = "improved"
    elif significant and interval.high < 0.0:
        word = "regressed"
    return Verdict(
        word=word,
        estimate=estimate,
        interval=interval,
        p_two_sided=p_value,
        pairs_needed=pairs_needed if word == "no detectable difference" else None,
    )


@frozen
class PairedComparison:
    """Everything one comparison says about one case (or any single set of pairs)."""

    transitions: Transitions
    control: PassRate
    treatment: PassRate
    difference: PairedDifference | None
    mcnemar: McNemar | None
    verdict: Verdict


def compare_pairs(pairs: Sequence[Pair], confidence: float = CONFIDENCE) -> PairedComparison:
    """The comparison of one case's pairs: the verdict follows Newcombe's interval and the exact
    McNemar test; `verdict.pairs_needed` is then the repetitions this case would need."""
    counts = transitions(pairs)
    decided = [pair for pair in pairs if "inconclusive" not in (pair.control, pair.treatment)]
    difference = paired_difference(counts, confidence)
    test = exact_mcnemar(counts)
    return PairedComparison(
        transitions=counts,
        control=pass_rate((pair.control for pair in decided), confidence),
        treatment=pass_rate((pair.treatment for pair in decided), confidence),
        difference=difference,
        mcnemar=test,
        verdict=verdict(
            difference.interval if difference else None,
            difference.estimate if difference else None,
            test,
            pairs_to_detect(counts, confidence),
        ),
    )


@frozen
class PooledComparison:
    """A comparison across cases: the per-case comparisons, the pooled transitions, the exact
    McNemar test over all pooled pairs, the pooled difference, and a verdict that follows the
    case-clustered interval and that test. `repetitions_needed` spreads `pairs_to_detect` of
    the pooled transitions evenly over the cases (approximate)."""

    per_case: Mapping[str, PairedComparison]
    transitions: Transitions
    mcnemar: McNemar | None
    difference: PooledDifference | None
    verdict: Verdict
    repetitions_needed: int | None


def compare_cases(
    cases: Mapping[str, Sequence[Pair]], confidence: float = CONFIDENCE
) -> PooledComparison:
    """Compare two arms over every case: per case, and pooled with case-clustered errors. With
    one case (with decided pairs) there is nothing to cluster: the verdict follows that case's
    Newcombe interval, as `compare_pairs` words it."""
    per_case = {name: compare_pairs(pairs, confidence) for name, pairs in cases.items()}
    pooled_counts = transitions(pair for pairs in cases.values() for pair in pairs)
    pooled = pooled_difference(cases, confidence)
    test = exact_mcnemar(pooled_counts)
    interval = pooled.interval if pooled else None
    if pooled is not None and interval is None:
        single = paired_difference(pooled_counts, confidence)
        interval = single.interval if single else None
    judged = verdict(
        interval,
        pooled.estimate if pooled else None,
        test,
        pairs_to_detect(pooled_counts, confidence),
    )
    repetitions = None
    if judged.pairs_needed is not None and pooled is not None:
        repetitions = math.ceil(judged.pairs_needed / pooled.cases)
    return PooledComparison(
        per_case=per_case,
        transitions=pooled_counts,
        mcnemar=test,
        difference=pooled,
        verdict=judged,
        repetitions_needed=repetitions,
    )
