"""The blinded AB/BA pairwise comparator: one pair of trials judged in both presentation orders.

A judge that prefers whatever it reads first (or second) would hand a skill wins it did not
earn. So every pair is shown twice, once with the baseline as A and the candidate as B (``AB``)
and once swapped (``BA``); the rubric decides each reply, the BA decision is mapped back, and an
outcome counts only when both orders agree. Disagreement is ``inconclusive`` with the flag
``position-bias``; a judge that failed or answered malformed in either order is ``inconclusive``
with ``judge-error`` and the reason: never a tie, never a win. The subject the judge sees names
no arm, skill or order; this module adds nothing to it but the order.

Pure: the judge is asked through ``ask`` (the run's judge session), nothing here does I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from attrs import field, frozen, validators

from sevro_core.errors import GradingError
from sevro_core.limits import MAX_DIAGNOSTIC_CHARS
from sevro_core.models import JudgeReply
from sevro_core.plugin.protocols import ComparisonSubject, JudgedResult, Rubric

Decision = Literal["A", "B", "tie"]
DECISIONS: Final = ("A", "B", "tie")
PairOutcome = Literal["candidate", "baseline", "tie", "inconclusive"]
PAIR_OUTCOMES: Final = ("candidate", "baseline", "tie", "inconclusive")
DECIDED_OUTCOMES: Final = ("candidate", "baseline", "tie")
ORDERS: Final = ("AB", "BA")

POSITION_BIAS: Final = "position-bias"
"""The two orders decided differently: the judge's answer depended on where a result stood."""
JUDGE_ERROR: Final = "judge-error"
"""The judge failed, gave no complete reply, or the rubric refused its reply (in either order),
or the pair's evidence could not be shown to it."""
FLAGS: Final = (POSITION_BIAS, JUDGE_ERROR)

BOTH_PASSED: Final = "both-passed"
"""Judge a pair only when both trials passed their objective checks (the default): objective
results dominate, and the judge only ranks results that both did the job."""
BOTH_COMPLETED: Final = "both-completed"
"""Judge every pair whose two trials both completed with a verdict, passed or failed."""
WHEN: Final = (BOTH_PASSED, BOTH_COMPLETED)


def eligible(baseline: str, candidate: str, when: str = BOTH_PASSED) -> bool:
    """Whether a pair with these objective outcomes (``pass``, ``fail``, ``inconclusive``) is
    judged under ``when``."""
    if when not in WHEN:
        raise ValueError(f"when is one of {', '.join(WHEN)}, not {when!r}")
    accepted = ("pass",) if when == BOTH_PASSED else ("pass", "fail")
    return baseline in accepted and candidate in accepted


_MAPPED: Final[Mapping[str, Mapping[str, str]]] = {
    "AB": {"A": "baseline", "B": "candidate", "tie": "tie"},
    "BA": {"A": "candidate", "B": "baseline", "tie": "tie"},
}
"""What a decision in each order says about the arms: AB shows the baseline as A, BA as B."""

Ask = Callable[[str, str], JudgeReply]
"""The run's comparator judge: ``ask(prompt, purpose)``."""


def mapped_decision(order: str, decision: str) -> str:
    """The arm a decision in ``order`` favours: ``candidate``, ``baseline`` or ``tie``."""
    return _MAPPED[order][decision]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _optional(values: tuple[str, ...]) -> Callable[[Any, Any, Any], None]:
    return validators.optional(validators.in_(values))


@frozen
class OrderJudgement:
    """One presentation order: what the judge was shown (by digest), what it said, what it means."""

    order: str = field(validator=validators.in_(ORDERS))
    decision: str | None = field(validator=_optional(DECISIONS))
    """``A``, ``B`` or ``tie`` as the rubric decided the reply; None on an error."""
    mapped: str | None = field(validator=_optional(DECIDED_OUTCOMES))
    """The decision mapped to the arms (``candidate``, ``baseline``, ``tie``)."""
    error: str | None
    prompt_sha256: str | None
    """None when no prompt could be written (the rubric refused the subject)."""
    reply_sha256: str | None
    """None when the judge gave no reply text."""

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "decision": self.decision,
            "mapped": self.mapped,
            "error": self.error,
            "promptSha256": self.prompt_sha256,
            "replySha256": self.reply_sha256,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> OrderJudgement:
        return cls(
            order=value["order"],
            decision=value["decision"],
            mapped=value["mapped"],
            error=value["error"],
            prompt_sha256=value["promptSha256"],
            reply_sha256=value["replySha256"],
        )


@frozen
class PairJudgement:
    """The comparator's outcome for one pair of trials, with both orders for audit.

    ``outcome`` is ``candidate``, ``baseline`` or ``tie`` only when both orders agree;
    otherwise ``inconclusive`` with ``flags`` saying why and ``reason`` (for a judge error).
    ``orders`` is empty when the pair's evidence could not be shown to the judge at all.
    """

    outcome: str = field(validator=validators.in_(PAIR_OUTCOMES))
    flags: tuple[str, ...] = field(validator=validators.deep_iterable(validators.in_(FLAGS)))
    orders: tuple[OrderJudgement, ...]
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "flags": list(self.flags),
            "reason": self.reason,
            "orders": [o.to_json() for o in self.orders],
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> PairJudgement:
        """The judgement a :meth:`to_json` document records (``KeyError``/``TypeError``/
        ``ValueError`` when it is not one)."""
        return cls(
            outcome=value["outcome"],
            flags=tuple(value["flags"]),
            orders=tuple(OrderJudgement.from_json(o) for o in value["orders"]),
            reason=value["reason"],
        )


def unjudged(reason: str) -> PairJudgement:
    """The judgement of a pair the judge could not be shown (its evidence is unreadable)."""
    return PairJudgement("inconclusive", (JUDGE_ERROR,), (), _bounded(reason))


def _bounded(text: str) -> str:
    return " ".join(text.split())[:MAX_DIAGNOSTIC_CHARS]


def _judge_order(
    ask: Ask, rubric: Rubric, order: str, subject: ComparisonSubject
) -> OrderJudgement:
    """Ask the judge about ``subject`` presented in ``order`` and decide its reply."""

    def failed(error: str, prompt: str | None, reply: str | None) -> OrderJudgement:
        return OrderJudgement(
            order=order,
            decision=None,
            mapped=None,
            error=_bounded(error),
            prompt_sha256=None if prompt is None else _sha256(prompt),
            reply_sha256=None if reply is None else _sha256(reply),
        )

    try:
        prompt = rubric.prompt(subject)
    except GradingError as exc:
        return failed(f"the rubric could not write the prompt: {exc}", None, None)
    try:
        reply = ask(prompt, f"{rubric.id}:{order}")
    except GradingError as exc:
        return failed(f"the judge could not be asked: {exc}", prompt, None)
    if not reply.usable:
        why = reply.error or ("no final message" if reply.text is None else "incomplete reply")
        return failed(f"the judge failed: {why}", prompt, reply.text)
    assert reply.text is not None  # usable
    try:
        decision = rubric.decide(reply.text)
    except GradingError as exc:
        return failed(f"the rubric refused the reply: {exc}", prompt, reply.text)
    if decision not in DECISIONS:
        return failed(f"the rubric decided {decision!r}, not A, B or tie", prompt, reply.text)
    return OrderJudgement(
        order=order,
        decision=decision,
        mapped=mapped_decision(order, decision),
        error=None,
        prompt_sha256=_sha256(prompt),
        reply_sha256=_sha256(reply.text),
    )


def combine(ab: OrderJudgement, ba: OrderJudgement) -> PairJudgement:
    """The pair's outcome from its two orders: agreement counts, anything else is inconclusive."""
    errors = [f"{o.order}: {o.error}" for o in (ab, ba) if o.error is not None]
    if errors or ab.mapped is None or ba.mapped is None:
        reason = "; ".join(errors) or "an order has no decision"
        return PairJudgement("inconclusive", (JUDGE_ERROR,), (ab, ba), _bounded(reason))
    if ab.mapped != ba.mapped:
        return PairJudgement("inconclusive", (POSITION_BIAS,), (ab, ba))
    return PairJudgement(ab.mapped, (), (ab, ba))


def judge_pair(
    ask: Ask,
    rubric: Rubric,
    task: tuple[str, ...],
    base_files: Mapping[str, str],
    base_files_truncated: bool,
    baseline: JudgedResult,
    candidate: JudgedResult,
) -> PairJudgement:
    """Judge one pair blinded, in both orders (AB: baseline is A; BA: candidate is A).

    Both orders are always asked, so the evidence shows what the judge said each way even when
    one of them failed."""

    def subject(a: JudgedResult, b: JudgedResult) -> ComparisonSubject:
        return ComparisonSubject(
            task=task,
            base_files=base_files,
            base_files_truncated=base_files_truncated,
            a=a,
            b=b,
        )

    ab = _judge_order(ask, rubric, "AB", subject(baseline, candidate))
    ba = _judge_order(ask, rubric, "BA", subject(candidate, baseline))
    return combine(ab, ba)
