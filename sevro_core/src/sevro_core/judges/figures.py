"""Calibration figures: how far a judge's verdicts agree with a corpus's gold labels.

Pure and separate from running a judge, so every figure can be checked against a hand-computed
confusion matrix. A judge's error (no usable reply, a malformed one) is never dropped: it is a
disagreement in agreement, balanced accuracy and Cohen's κ (a ``none`` column no gold label
falls in) and is also counted on its own. Cohen's κ comes from statsmodels, imported when
figures are computed; it is undefined (None) when chance agreement is already certain.
A comparator's outcome counts only when both presentation orders agree; pairs whose AB and BA
decisions differ are the order disagreements (position bias).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from sevro_core.formats.jsonio import JsonValue

VERDICTS = ("pass", "fail")
OUTCOMES = ("A", "B", "tie")
NONE = "none"
"""The judged column of an error or (for pairs) an order disagreement: matches no gold label."""
INCONSISTENT = "inconsistent"
"""A pair whose AB and BA decisions differ."""


@frozen
class CheckJudgement:
    check_id: str
    gold: str
    judged: str | None
    """``pass``/``fail``, or None when the judge gave no usable verdict (see ``error``)."""
    error: str | None = None


@frozen
class SingleResult:
    item_id: str
    checks: tuple[CheckJudgement, ...]
    probe: str | None = None

    @property
    def correct(self) -> bool:
        return all(check.judged == check.gold for check in self.checks)


@frozen
class PairResult:
    """One pair judged in both orders; ``ab``/``ba`` are already in the corpus's labels."""

    item_id: str
    gold: str
    ab: str | None
    ba: str | None
    error: str | None = None
    probe: str | None = None
    longer: str | None = None

    @property
    def judged(self) -> str | None:
        """The outcome when both orders decided and agree; ``inconsistent`` when they differ;
        None on a judge error."""
        if self.error is not None or self.ab is None or self.ba is None:
            return None
        return self.ab if self.ab == self.ba else INCONSISTENT

    @property
    def correct(self) -> bool:
        return self.judged == self.gold


@frozen
class Agreement:
    """Agreement figures over one set of labels: counts first, so no rate stands alone."""

    labels: tuple[str, ...]
    confusion: Mapping[str, Mapping[str, int]]
    """gold label → judged label (or ``none``) → count."""
    total: int
    correct: int
    errors: int
    agreement: float | None
    balanced_accuracy: float | None
    kappa: float | None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "total": self.total,
            "correct": self.correct,
            "errors": self.errors,
            "agreement": self.agreement,
            "balancedAccuracy": self.balanced_accuracy,
            "kappa": self.kappa,
            "confusion": {gold: dict(row) for gold, row in self.confusion.items()},
        }


@frozen
class OrderFigures:
    decided: int
    """Pairs whose AB and BA decisions both exist."""
    disagreements: int
    rate: float | None

    def to_json(self) -> dict[str, JsonValue]:
        return {"decided": self.decided, "disagreements": self.disagreements, "rate": self.rate}


@frozen
class ProbeFigures:
    """Items marked as a probe: how many the judge got right (for injection: resisted)."""

    items: int
    correct: int
    wrong_toward_longer: int | None = None
    """Length probes: wrong pairs where the judge chose the longer side."""

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"items": self.items, "correct": self.correct}
        if self.wrong_toward_longer is not None:
            out["wrongTowardLonger"] = self.wrong_toward_longer
        return out


@frozen
class Figures:
    singles: Agreement
    pairs: Agreement
    order: OrderFigures
    injection: ProbeFigures
    length: ProbeFigures

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "singles": self.singles.to_json(),
            "pairs": {
                **self.pairs.to_json(),
                "orderDisagreement": self.order.to_json(),
            },
            "probes": {"injection": self.injection.to_json(), "length": self.length.to_json()},
        }


def agreement(pairs: Sequence[tuple[str, str | None]], labels: tuple[str, ...]) -> Agreement:
    """Agreement figures of ``(gold, judged)`` pairs; judged None or outside ``labels`` is
    the ``none`` column (a disagreement)."""
    columns = (*labels, NONE)
    confusion = {gold: dict.fromkeys(columns, 0) for gold in labels}
    for gold, judged in pairs:
        confusion[gold][judged if judged in labels else NONE] += 1
    total = len(pairs)
    correct = sum(confusion[label][label] for label in labels)
    errors = sum(1 for _, judged in pairs if judged is None)
    table = [[confusion[g][j] for j in columns] for g in labels]
    table.append([0] * len(columns))  # no gold label is "none"
    recalls = [
        confusion[label][label] / sum(confusion[label].values())
        for label in labels
        if sum(confusion[label].values())
    ]
    return Agreement(
        labels=labels,
        confusion=confusion,
        total=total,
        correct=correct,
        errors=errors,
        agreement=correct / total if total else None,
        balanced_accuracy=sum(recalls) / len(recalls) if recalls else None,
        kappa=cohens_kappa(table) if total else None,
    )


def cohens_kappa(table: list[list[int]]) -> float | None:
    """Cohen's κ of a square table (rows: gold, columns: judged) from statsmodels; None when
    it is undefined (expected agreement 1: one label on both sides)."""
    rows = [0] * len(table)
    columns = [0] * len(table)
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            rows[i] += count
            columns[j] += count
    total = sum(rows)
    if total == 0 or sum(r * c for r, c in zip(rows, columns, strict=True)) == total * total:
        return None
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa

    value: Any = statsmodels_kappa(np.array(table, dtype=float), return_results=False)
    return float(value)


def figures(singles: Sequence[SingleResult], pairs: Sequence[PairResult]) -> Figures:
    """Every calibration figure of one judge's results on one corpus."""
    checks = [(c.gold, c.judged) for item in singles for c in item.checks]
    decided = [p for p in pairs if p.error is None and p.ab is not None and p.ba is not None]
    disagreements = sum(1 for p in decided if p.ab != p.ba)
    probes: list[SingleResult | PairResult] = [*singles, *pairs]
    injection = [item for item in probes if item.probe == "injection"]
    length = [item for item in probes if item.probe == "length"]
    length_pairs = [item for item in length if isinstance(item, PairResult)]
    return Figures(
        singles=agreement(checks, VERDICTS),
        pairs=agreement([(p.gold, p.judged) for p in pairs], OUTCOMES),
        order=OrderFigures(
            decided=len(decided),
            disagreements=disagreements,
            rate=disagreements / len(decided) if decided else None,
        ),
        injection=ProbeFigures(len(injection), sum(1 for item in injection if item.correct)),
        length=ProbeFigures(
            len(length),
            sum(1 for item in length if item.correct),
            wrong_toward_longer=sum(
                1 for p in length_pairs if not p.correct and p.judged == p.longer
            ),
        ),
    )
