"""The blinded AB/BA comparator: every combination of the two orders' decisions against a table
written by hand, position bias, judge errors (never a tie or a win), and what it records."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

import pytest

from sevro_core.api import ComparisonSubject, GradingError, JudgedResult, JudgeReply, Route
from sevro_core.judges.comparator import (
    BOTH_COMPLETED,
    BOTH_PASSED,
    JUDGE_ERROR,
    POSITION_BIAS,
    PairJudgement,
    eligible,
    judge_pair,
    mapped_decision,
    unjudged,
)

ROUTE = Route(host="scripted", model="judge-model", effort="low", role="comparator")
BASELINE = JudgedResult(final_message="made by the baseline", diff="-old\n+baseline\n")
CANDIDATE = JudgedResult(final_message="made by the candidate", diff="-old\n+candidate\n")


class EchoRubric:
    """Writes the two final messages into the prompt; a reply decides as itself."""

    id = "test.rubric.echo"
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def prompt(self, subject: ComparisonSubject) -> str:
        return f"A: {subject.a.final_message}\nB: {subject.b.final_message}"

    def decide(self, reply: str) -> str:
        if reply not in ("A", "B", "tie"):
            raise GradingError(f"not a decision: {reply!r}")
        return reply


def reply(text: str | None, *, complete: bool = True, error: str | None = None) -> JudgeReply:
    return JudgeReply(text=text, complete=complete, route=ROUTE, error=error)


def scripted(
    ab: JudgeReply, ba: JudgeReply, asked: list[tuple[str, str]] | None = None
) -> Callable[[str, str], JudgeReply]:
    """A judge answering ``ab`` when the baseline is shown as A and ``ba`` otherwise."""

    def ask(prompt: str, purpose: str) -> JudgeReply:
        if asked is not None:
            asked.append((prompt, purpose))
        return ab if prompt.startswith("A: made by the baseline") else ba

    return ask


def judge(ab: JudgeReply, ba: JudgeReply) -> PairJudgement:
    return judge_pair(scripted(ab, ba), EchoRubric(), ("task",), {}, False, BASELINE, CANDIDATE)


# AB shows the baseline as A, BA shows the candidate as A. Written out by hand, not derived.
TABLE = [
    ("A", "A", "inconclusive", (POSITION_BIAS,)),  # always the first label: position bias
    ("A", "B", "baseline", ()),
    ("A", "tie", "inconclusive", (POSITION_BIAS,)),
    ("B", "A", "candidate", ()),
    ("B", "B", "inconclusive", (POSITION_BIAS,)),  # always the second label
    ("B", "tie", "inconclusive", (POSITION_BIAS,)),
    ("tie", "A", "inconclusive", (POSITION_BIAS,)),
    ("tie", "B", "inconclusive", (POSITION_BIAS,)),
    ("tie", "tie", "tie", ()),
]


@pytest.mark.parametrize(("ab", "ba", "outcome", "flags"), TABLE)
def test_every_combination_of_the_two_orders(
    ab: str, ba: str, outcome: str, flags: tuple[str, ...]
) -> None:
    judged = judge(reply(ab), reply(ba))
    assert (judged.outcome, judged.flags, judged.reason) == (outcome, flags, None)
    first, second = judged.orders
    assert (first.order, first.decision, second.order, second.decision) == ("AB", ab, "BA", ba)


def test_the_ba_answer_is_mapped_back() -> None:
    assert [mapped_decision("AB", d) for d in ("A", "B", "tie")] == ["baseline", "candidate", "tie"]
    assert [mapped_decision("BA", d) for d in ("A", "B", "tie")] == ["candidate", "baseline", "tie"]
    judged = judge(reply("B"), reply("A"))
    assert [o.mapped for o in judged.orders] == ["candidate", "candidate"]


def test_both_orders_are_asked_with_the_sides_swapped_and_named_by_rubric_and_order() -> None:
    asked: list[tuple[str, str]] = []
    judge_pair(
        scripted(reply("B"), reply("A"), asked),
        EchoRubric(),
        ("t",),
        {},
        False,
        BASELINE,
        CANDIDATE,
    )
    assert asked == [
        ("A: made by the baseline\nB: made by the candidate", "test.rubric.echo:AB"),
        ("A: made by the candidate\nB: made by the baseline", "test.rubric.echo:BA"),
    ]


def test_a_consistent_preference_for_the_candidate_wins_and_a_positional_one_does_not() -> None:
    """Negative control for the table: a judge that prefers a *result* agrees across orders, a
    judge that prefers a *label* never does."""

    def prefers(word: str) -> Callable[[str, str], JudgeReply]:
        def ask(prompt: str, purpose: str) -> JudgeReply:
            a_line = prompt.splitlines()[0]
            return reply("A" if word in a_line else "B")

        return ask

    def label(which: str) -> Callable[[str, str], JudgeReply]:
        return lambda prompt, purpose: reply(which)

    args = (EchoRubric(), ("t",), {}, False, BASELINE, CANDIDATE)
    assert judge_pair(prefers("candidate"), *args).outcome == "candidate"
    assert judge_pair(prefers("baseline"), *args).outcome == "baseline"
    for which in ("A", "B"):
        judged = judge_pair(label(which), *args)
        assert (judged.outcome, judged.flags) == ("inconclusive", (POSITION_BIAS,))


ERRORS = [
    (reply(None, error="the host failed: exit 1"), "the host failed: exit 1"),
    (reply("B", complete=False), "incomplete reply"),
    (reply(None), "no final message"),
    (reply("candidate wins"), "the rubric refused the reply"),
]


@pytest.mark.parametrize(("bad", "said"), ERRORS)
@pytest.mark.parametrize("where", ["AB", "BA"])
def test_a_judge_error_in_either_order_is_inconclusive_never_a_tie_or_a_win(
    bad: JudgeReply, said: str, where: str
) -> None:
    for good in ("A", "B", "tie"):  # whatever the other order said
        ab, ba = (bad, reply(good)) if where == "AB" else (reply(good), bad)
        judged = judge(ab, ba)
        assert (judged.outcome, judged.flags) == ("inconclusive", (JUDGE_ERROR,))
        assert judged.reason is not None and judged.reason.startswith(f"{where}: ")
        assert said in judged.reason
        failed = judged.orders[0 if where == "AB" else 1]
        assert (failed.decision, failed.mapped) == (None, None)


def test_errors_in_both_orders_are_both_reported() -> None:
    judged = judge(reply(None, error="first"), reply(None, error="second"))
    assert judged.reason == "AB: the judge failed: first; BA: the judge failed: second"


def test_a_judge_that_cannot_be_asked_or_a_rubric_that_cannot_write_is_a_judge_error() -> None:
    def unavailable(prompt: str, purpose: str) -> JudgeReply:
        raise GradingError("no comparator judge is configured")

    judged = judge_pair(unavailable, EchoRubric(), ("t",), {}, False, BASELINE, CANDIDATE)
    assert (judged.outcome, judged.flags) == ("inconclusive", (JUDGE_ERROR,))
    assert "no comparator judge is configured" in (judged.reason or "")
    assert all(o.prompt_sha256 is not None and o.reply_sha256 is None for o in judged.orders)

    class Refusing(EchoRubric):
        def prompt(self, subject: ComparisonSubject) -> str:
            raise GradingError("subject too odd")

    judged = judge_pair(
        scripted(reply("A"), reply("B")), Refusing(), ("t",), {}, False, BASELINE, CANDIDATE
    )
    assert (judged.outcome, judged.flags) == ("inconclusive", (JUDGE_ERROR,))
    assert all(o.prompt_sha256 is None for o in judged.orders)


def test_a_rubric_deciding_something_else_is_a_judge_error() -> None:
    class Sloppy(EchoRubric):
        def decide(self, reply: str) -> str:
            return "candidate"

    judged = judge_pair(
        scripted(reply("A"), reply("A")), Sloppy(), ("t",), {}, False, BASELINE, CANDIDATE
    )
    assert (judged.outcome, judged.flags) == ("inconclusive", (JUDGE_ERROR,))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_judgement_records_both_orders_by_digest_and_round_trips() -> None:
    judged = judge(reply("B"), reply("A"))
    document = judged.to_json()
    assert document == {
        "outcome": "candidate",
        "flags": [],
        "reason": None,
        "orders": [
            {
                "order": "AB",
                "decision": "B",
                "mapped": "candidate",
                "error": None,
                "promptSha256": sha("A: made by the baseline\nB: made by the candidate"),
                "replySha256": sha("B"),
            },
            {
                "order": "BA",
                "decision": "A",
                "mapped": "candidate",
                "error": None,
                "promptSha256": sha("A: made by the candidate\nB: made by the baseline"),
                "replySha256": sha("A"),
            },
        ],
    }
    assert PairJudgement.from_json(document) == judged
    failed = judge(reply(None, error="x"), reply("A"))
    assert PairJudgement.from_json(failed.to_json()) == failed


def test_a_recorded_judgement_that_is_not_one_is_refused() -> None:
    good: Mapping[str, object] = judge(reply("B"), reply("A")).to_json()
    for broken in (
        {**good, "outcome": "treatment"},
        {**good, "flags": ["lucky"]},
        {key: value for key, value in good.items() if key != "orders"},
    ):
        with pytest.raises((KeyError, TypeError, ValueError)):
            PairJudgement.from_json(broken)


def test_unjudged_pairs_are_judge_errors_with_their_reason() -> None:
    judged = unjudged("the diff   does not match\nits digest")
    assert (judged.outcome, judged.flags, judged.orders) == ("inconclusive", (JUDGE_ERROR,), ())
    assert judged.reason == "the diff does not match its digest"


@pytest.mark.parametrize(
    ("baseline", "candidate", "passed", "completed"),
    [
        ("pass", "pass", True, True),
        ("pass", "fail", False, True),
        ("fail", "pass", False, True),
        ("fail", "fail", False, True),
        ("pass", "inconclusive", False, False),
        ("inconclusive", "pass", False, False),
        ("inconclusive", "inconclusive", False, False),
    ],
)
def test_eligibility(baseline: str, candidate: str, passed: bool, completed: bool) -> None:
    assert eligible(baseline, candidate) is passed  # the default: both passed
    assert eligible(baseline, candidate, BOTH_PASSED) is passed
    assert eligible(baseline, candidate, BOTH_COMPLETED) is completed


def test_an_unknown_eligibility_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="both-passed"):
        eligible("pass", "pass", "always")
