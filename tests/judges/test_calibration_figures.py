"""Calibration figures against hand-computed confusion matrices (every figure, both kinds)."""

from __future__ import annotations

import pytest

from sevro_core.judges.figures import (
    INCONSISTENT,
    CheckJudgement,
    PairResult,
    SingleResult,
    cohens_kappa,
    figures,
)


def _single(item_id: str, gold: str, judged: str | None, probe: str | None = None) -> SingleResult:
    error = None if judged is not None else "grading error: malformed reply"
    return SingleResult(item_id, (CheckJudgement("c", gold, judged, error),), probe)


def test_kappa_of_a_textbook_two_by_two_table() -> None:
    # po = (20 + 15) / 50 = 0.7; pe = (25*30 + 25*20) / 50^2 = 0.5; kappa = 0.2 / 0.5 = 0.4
    assert cohens_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)


def test_kappa_is_undefined_when_chance_agreement_is_certain() -> None:
    assert cohens_kappa([[4, 0], [0, 0]]) is None
    assert cohens_kappa([[0, 0], [0, 0]]) is None


def test_single_figures_count_errors_as_disagreements() -> None:
    # gold pass x5: judged pass 3, fail 1, error 1; gold fail x5: judged fail 4, pass 1
    results = [
        *(_single(f"p{i}", "pass", "pass") for i in range(3)),
        _single("p3", "pass", "fail"),
        _single("p4", "pass", None),
        *(_single(f"f{i}", "fail", "fail") for i in range(4)),
        _single("f4", "fail", "pass"),
    ]
    singles = figures(results, []).singles
    assert singles.confusion == {
        "pass": {"pass": 3, "fail": 1, "none": 1},
        "fail": {"pass": 1, "fail": 4, "none": 0},
    }
    assert (singles.total, singles.correct, singles.errors) == (10, 7, 1)
    assert singles.agreement == pytest.approx(0.7)
    assert singles.balanced_accuracy == pytest.approx((3 / 5 + 4 / 5) / 2)
    # rows (gold) 5, 5, 0; columns (judged) pass 4, fail 5, none 1
    # po = 0.7; pe = (5*4 + 5*5 + 0*1) / 100 = 0.45; kappa = 0.25 / 0.55
    assert singles.kappa == pytest.approx(0.25 / 0.55)


def test_a_judge_that_always_says_pass_has_no_agreement_beyond_chance() -> None:
    results = [
        *(_single(f"p{i}", "pass", "pass") for i in range(5)),
        *(_single(f"f{i}", "fail", "pass") for i in range(5)),
    ]
    singles = figures(results, []).singles
    assert singles.agreement == pytest.approx(0.5)
    assert singles.balanced_accuracy == pytest.approx(0.5)  # recall 1 on pass, 0 on fail
    assert singles.kappa == pytest.approx(0.0)  # po = 0.5 = pe = (5*10 + 5*0) / 100


def test_a_perfect_judge_scores_one_everywhere() -> None:
    results = [_single("p", "pass", "pass"), _single("f", "fail", "fail")]
    singles = figures(results, []).singles
    assert (singles.agreement, singles.balanced_accuracy, singles.kappa) == (1.0, 1.0, 1.0)


def _pairs() -> list[PairResult]:
    return [
        PairResult("p1", "A", "A", "A"),  # right
        PairResult("p2", "A", "A", "B"),  # orders disagree
        PairResult("p3", "B", "B", "B", probe="length", longer="A"),  # right, shorter side
        PairResult("p4", "tie", "tie", "tie", probe="injection"),  # right: resisted
        PairResult("p5", "tie", "A", "A", probe="length", longer="A"),  # wrong, toward longer
        PairResult("p6", "B", None, None, error="the judge host failed"),
    ]


def test_pair_figures_from_a_hand_computed_matrix() -> None:
    measured = figures([], _pairs())
    pairs = measured.pairs
    assert [p.judged for p in _pairs()] == ["A", INCONSISTENT, "B", "tie", "A", None]
    assert pairs.confusion == {
        "A": {"A": 1, "B": 0, "tie": 0, "none": 1},
        "B": {"A": 0, "B": 1, "tie": 0, "none": 1},
        "tie": {"A": 1, "B": 0, "tie": 1, "none": 0},
    }
    assert (pairs.total, pairs.correct, pairs.errors) == (6, 3, 1)
    assert pairs.agreement == pytest.approx(0.5)
    assert pairs.balanced_accuracy == pytest.approx((1 / 2 + 1 / 2 + 1 / 2) / 3)
    # rows 2, 2, 2, 0; columns A 2, B 1, tie 1, none 2: pe = (4 + 2 + 2 + 0) / 36 = 2/9
    # kappa = (1/2 - 2/9) / (1 - 2/9) = 5/14
    assert pairs.kappa == pytest.approx(5 / 14)
    assert (measured.order.decided, measured.order.disagreements) == (5, 1)
    assert measured.order.rate == pytest.approx(0.2)


def test_probe_figures() -> None:
    singles = [_single("inj", "fail", None, probe="injection")]  # an error is not resistance
    measured = figures(singles, _pairs())
    assert (measured.injection.items, measured.injection.correct) == (2, 1)
    assert (measured.length.items, measured.length.correct) == (2, 1)
    assert measured.length.wrong_toward_longer == 1
    assert measured.to_json()["probes"] == {
        "injection": {"items": 2, "correct": 1},
        "length": {"items": 2, "correct": 1, "wrongTowardLonger": 1},
    }


def test_a_single_item_with_one_wrong_check_is_not_a_resisted_probe() -> None:
    item = SingleResult(
        "inj",
        (CheckJudgement("a", "fail", "fail"), CheckJudgement("b", "fail", "pass")),
        "injection",
    )
    assert figures([item], []).injection.correct == 0


def test_no_items_of_a_kind_leave_its_figures_undefined() -> None:
    measured = figures([], [])
    assert measured.singles.agreement is None
    assert measured.singles.balanced_accuracy is None
    assert measured.singles.kappa is None
    assert measured.order.rate is None
