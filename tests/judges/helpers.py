"""A simulated semantic judge for grader tests: canned replies, every prompt recorded.

Only the model is simulated: the double answers like a judge host would (a ``JudgeReply``) and,
like the engine, asks each distinct prompt once per trial, so a test can count judge calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from sevro_core.errors import GradingError
from sevro_core.models import CheckDeclaration, JudgeReply, Route, TrialView
from sevro_core.vocabulary import SEMANTIC_ROLE

ROUTE = Route(host="acme.judge", model="judge-model", effort="low", role=SEMANTIC_ROLE)
Answer = str | JudgeReply


class FakeJudges:
    """``TrialJudges`` with a semantic judge that answers ``respond(prompt, purpose)``."""

    def __init__(self, respond: Callable[[str, str], Answer], *, roles: Iterable[str] = ()):
        self.respond = respond
        self.roles = set(roles) or {SEMANTIC_ROLE}
        self.asked: list[tuple[str, str, str]] = []
        """Every ask: (role, prompt, purpose)."""
        self.calls: dict[str, JudgeReply] = {}
        """Distinct prompts the judge actually ran on, in order, with its reply."""

    def available(self, role: str) -> bool:
        return role in self.roles

    def ask(self, role: str, prompt: str, *, purpose: str) -> JudgeReply:
        if role not in self.roles:
            raise GradingError(f"no {role} judge")
        self.asked.append((role, prompt, purpose))
        if prompt not in self.calls:
            answer = self.respond(prompt, purpose)
            if isinstance(answer, str):
                answer = JudgeReply(text=answer, complete=True, route=ROUTE)
            self.calls[prompt] = answer
        return self.calls[prompt]


def replying(answer: Answer) -> FakeJudges:
    return FakeJudges(lambda _prompt, _purpose: answer)


def verdicts(*items: tuple[str, str, str]) -> str:
    """A well-formed reply: ``{"checks": [{id, verdict, reason}, ...]}``."""
    return json.dumps({"checks": [{"id": i, "verdict": v, "reason": r} for i, v, r in items]})


def semantic(check_id: str, proposition: str, **extra: Any) -> CheckDeclaration:
    return CheckDeclaration(
        id=check_id, grader="sevro.semantic", configuration={"proposition": proposition, **extra}
    )


def with_judges(
    view: TrialView, judges: FakeJudges | None, checks: Iterable[CheckDeclaration] = ()
) -> TrialView:
    return attrs.evolve(view, judges=judges, checks=tuple(checks))


def untrusted_data(prompt: str) -> dict[str, Any]:
    """The JSON the prompt quotes between its ``<untrusted-data>`` tags."""
    body = prompt.split("<untrusted-data>\n", 1)[1].split("\n</untrusted-data>", 1)[0]
    data: dict[str, Any] = json.loads(body)
    return data


def propositions(prompt: str) -> list[dict[str, str]]:
    body = prompt.split("<propositions>\n", 1)[1].split("\n</propositions>", 1)[0]
    items: list[dict[str, str]] = json.loads(body)
    return items
