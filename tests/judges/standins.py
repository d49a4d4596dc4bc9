"""Small local stand-ins for the judge session, the semantic grader and the two-order pair
judge, for the tests of calibration's own logic (its figures, records and requirements), which
should not depend on a prompt format. Each stand-in's ``answer`` plays the judge model,
everything around it is calibration's. ``sevro judge calibrate`` itself is tested end to end
with the real grader, ``judge_pair`` and rubric (``test_calibration_cli``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from sevro_core.api import (
    CheckOutcome,
    CheckStatus,
    ComparisonSubject,
    ConfigurationError,
    GradingError,
    JudgeReply,
    Route,
    TrialJudges,
    TrialView,
)
from sevro_core.judges.calibration import PairDecisions
from sevro_core.judges.corpus import Corpus

ROUTE = Route("sevro.host.scripted", "judge-model", "low")


class Judges:
    """``TrialJudges``: every prompt goes to ``answer(role, prompt)``; None is a failed call."""

    def __init__(self, answer: Callable[[str, str], str | None], roles: set[str]) -> None:
        self.answer = answer
        self.roles = roles
        self.calls: list[tuple[str, str, str]] = []

    def available(self, role: str) -> bool:
        return role in self.roles

    def ask(self, role: str, prompt: str, *, purpose: str) -> JudgeReply:
        self.calls.append((role, purpose, prompt))
        text = self.answer(role, prompt)
        if text is None:
            return JudgeReply(None, False, ROUTE, error="the judge host failed")
        return JudgeReply(text, True, ROUTE)


class SemanticCheck:
    def __init__(self, proposition: str) -> None:
        self.proposition = proposition

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        assert view.judges is not None and view.final_message_complete
        propositions = {d.id: d.configuration["proposition"] for d in view.checks}
        prompt = json.dumps({"propositions": propositions, "response": view.final_message})
        reply = view.judges.ask("semantic", prompt, purpose="sevro.semantic:response")
        if not reply.usable or reply.text is None:
            raise GradingError(reply.error or "no reply")
        try:
            verdicts = {c["id"]: c["verdict"] for c in json.loads(reply.text)["checks"]}
        except (ValueError, KeyError, TypeError) as exc:
            raise GradingError(f"malformed judge reply: {exc}") from None
        status = {"pass": CheckStatus.PASSED, "fail": CheckStatus.FAILED}[verdicts[check_id]]
        return CheckOutcome(check_id, "sevro.semantic", status)


class SemanticGrader:
    """The shape of ``sevro.semantic``: batches the view's checks into one judge prompt."""

    id = "sevro.semantic"
    version = "0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    stage = 40

    def compile(self, configuration: Mapping[str, Any]) -> SemanticCheck:
        proposition = configuration.get("proposition")
        if not isinstance(proposition, str) or not proposition.strip():
            raise ConfigurationError("proposition must be a nonblank string")
        return SemanticCheck(proposition)


def _order_prompt(first: Any, second: Any, task: tuple[str, ...]) -> str:
    return json.dumps(
        {
            "task": task,
            "A": first.diff,
            "B": second.diff,
            "AText": first.final_message,
            "BText": second.final_message,
        }
    )


def pair_judge(subject: ComparisonSubject, judges: TrialJudges) -> PairDecisions:
    """Asks the comparator in both orders and maps the BA answer back (the core's job)."""
    ab = judges.ask("comparator", _order_prompt(subject.a, subject.b, subject.task), purpose="ab")
    ba = judges.ask("comparator", _order_prompt(subject.b, subject.a, subject.task), purpose="ba")
    if not (ab.usable and ba.usable):
        return PairDecisions(None, None, ab.error or ba.error)
    back = {"A": "B", "B": "A", "tie": "tie"}
    return PairDecisions(ab.text, back[str(ba.text)])


def oracle(corpus: Corpus) -> Callable[[str, str], str | None]:
    """A judge model that knows the gold labels (the positive control)."""
    gold_checks = {(c.proposition): c.gold for item in corpus.singles for c in item.checks}
    gold_pairs: dict[tuple[str, str], str] = {}
    for pair in corpus.pairs:
        gold_pairs[(pair.a.diff, pair.b.diff)] = pair.gold
        gold_pairs[(pair.b.diff, pair.a.diff)] = {"A": "B", "B": "A", "tie": "tie"}[pair.gold]

    def answer(role: str, prompt: str) -> str | None:
        asked = json.loads(prompt)
        if role == "semantic":
            checks = [
                {"id": check_id, "verdict": gold_checks[text], "reason": "gold"}
                for check_id, text in asked["propositions"].items()
            ]
            return json.dumps({"checks": checks})
        return gold_pairs[(asked["A"], asked["B"])]

    return answer
