"""``sevro.context-text``: what the model was sent contains, does not contain or equals a text.

skill-eval's ``context-text``. It reads the host's ``sevro.host.context`` observation: per turn
the system prompt and each model request's provider context rendered as text. ``surface``
picks one (``system-prompt`` by default); ``request`` picks a provider-context request of the
turn (``first``, ``last`` by default, or its 1-based number); the check's ``turn`` picks the
turn, by default the case's last. A turn or request the observation does not hold, a system
prompt the host could not record, and a partial observation (a bound cut some text) are all
``unavailable``: text sevro did not see can neither contain nor lack anything.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import (
    CONTEXT_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    ConfigurationError,
    GradingError,
    JsonValue,
    TrialView,
)
from sevro_graders.checks import EvidenceGrader, complete_observation
from sevro_graders.configuration import check_shape
from sevro_graders.text_assertions import TextAssertions

GRADER_ID = "sevro.context-text"
EVIDENCE_REFS = (CONTEXT_OBSERVATION,)
SYSTEM_PROMPT, PROVIDER_CONTEXT = "system-prompt", "provider-context"


@frozen
class ContextTextCheck:
    surface: str
    request: str | int
    assertions: TextAssertions

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        observation, missing = complete_observation(view, CONTEXT_OBSERVATION, "context")
        if observation is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, missing)
        turns = _turns(observation.data)
        number = view.turn if view.turn is not None else _last_turn(view, turns)
        turn = turns.get(number) if number is not None else None
        if turn is None:
            return self._outcome(
                check_id, CheckStatus.UNAVAILABLE, f"the context of turn {number} was not observed"
            )
        text, where = self._select(turn, number)
        if text is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, f"{where} was not observed")
        failure = self.assertions.first_failure(text, where)
        if failure is not None:
            return self._outcome(check_id, CheckStatus.FAILED, failure)
        return self._outcome(check_id, CheckStatus.PASSED)

    def _select(self, turn: Mapping[str, JsonValue], number: int | None) -> tuple[str | None, str]:
        if self.surface == SYSTEM_PROMPT:
            prompt = turn.get("systemPrompt")
            return (prompt if isinstance(prompt, str) else None), f"turn {number}'s system prompt"
        requests = _requests(turn)
        if not requests:
            return None, f"turn {number}'s provider context (no model request)"
        if self.request == "first":
            chosen: int = min(requests)
        elif self.request == "last":
            chosen = max(requests)
        else:
            chosen = int(self.request)
        return requests.get(chosen), f"turn {number}'s provider context of request {chosen}"

    def _outcome(
        self, check_id: str, status: CheckStatus, detail: str | None = None
    ) -> CheckOutcome:
        return CheckOutcome(check_id, GRADER_ID, status, detail=detail, evidence_refs=EVIDENCE_REFS)


def _last_turn(view: TrialView, turns: Mapping[int, object]) -> int | None:
    """The case's last turn (its prompts), not merely the last one observed: a turn the host
    never reached is missing, never replaced by an earlier one."""
    if view.prompts:
        return len(view.prompts)
    return max(turns) if turns else None


def _turns(data: Mapping[str, JsonValue]) -> dict[int, Mapping[str, JsonValue]]:
    """The observation's turns by number; a malformed document is a grading error."""
    turns = data.get("turns")
    if not isinstance(turns, list):
        raise GradingError("malformed sevro.host.context observation: no turns list")
    out: dict[int, Mapping[str, JsonValue]] = {}
    for entry in turns:
        number = entry.get("turn") if isinstance(entry, dict) else None
        prompt = entry.get("systemPrompt") if isinstance(entry, dict) else None
        if (
            not isinstance(entry, dict)
            or type(number) is not int
            or number in out
            or not (prompt is None or isinstance(prompt, str))
        ):
            raise GradingError("malformed sevro.host.context observation: a bad turn entry")
        out[number] = entry
    return out


def _requests(turn: Mapping[str, JsonValue]) -> dict[int, str]:
    requests = turn.get("requests")
    if not isinstance(requests, list):
        raise GradingError("malformed sevro.host.context observation: no requests list")
    out: dict[int, str] = {}
    for entry in requests:
        number = entry.get("request") if isinstance(entry, dict) else None
        text = entry.get("text") if isinstance(entry, dict) else None
        if type(number) is not int or number < 1 or number in out or not isinstance(text, str):
            raise GradingError("malformed sevro.host.context observation: a bad request entry")
        out[number] = text
    return out


class ContextTextGrader(EvidenceGrader):
    """Plugin facts: stage 10 (host evidence); hosts that report ``sevro.host.context`` only."""

    id = GRADER_ID
    requires: frozenset[str] = frozenset({CONTEXT_OBSERVATION})

    def compile(self, configuration: Mapping[str, JsonValue]) -> ContextTextCheck:
        config = check_shape("context-text.v1", configuration)
        surface = str(config.get("surface", SYSTEM_PROMPT))
        if "request" in config and surface != PROVIDER_CONTEXT:
            raise ConfigurationError("request selects a provider-context request only", "/request")
        request = config.get("request", "last")
        assert isinstance(request, (str, int))
        return ContextTextCheck(surface, request, TextAssertions.of(config))
