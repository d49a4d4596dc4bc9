"""``sevro.tool-call``: the agent made (or did not make) a tool call, and it succeeded or failed.

It reads the host's ``sevro.tool-calls`` observation, which records for every call its turn,
ordinal, ``kind`` (``command_execution``, ``file_change``, ``mcp_tool_call``, ``tool_call``...),
the tool's name where the CLI names it (Claude Code; Codex names only MCP tools), its status, a
few bounded fields (``paths``, ``skill``, ``server``) and ``text``, the call's arguments as text
(bounded; ``textTruncated`` when cut). Only those recorded fields can be filtered: anything else
is refused at load, because a filter on an unrecorded argument could never be graded honestly;
a call whose text was cut short (or not recorded) where the rest could decide it is neither
counted nor ruled out. Missing or partial evidence is ``unavailable``; so is a success/failure
question about a call whose outcome the host did not settle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import frozen

from sevro_core.api import (
    TOOL_CALLS_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    ConfigurationError,
    GradingError,
    JsonValue,
    TrialView,
)
from sevro_graders.checks import EvidenceGrader, complete_observation
from sevro_graders.configuration import check_shape, regex_at
from sevro_graders.jsregex import JsRegex

GRADER_ID = "sevro.tool-call"
EVIDENCE_REFS = (TOOL_CALLS_OBSERVATION,)
MADE, NOT_MADE, SUCCEEDED, FAILED = "made", "not-made", "succeeded", "failed"
_SETTLED = {"completed": SUCCEEDED, "failed": FAILED}


@frozen
class ArgumentFilter:
    key: str
    exact: str | None = None
    regex: JsRegex | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()

    def matches(self, call: Mapping[str, JsonValue]) -> bool | None:
        """Whether the call matches; None when the recorded value was cut short and the part
        cut off could decide it (the call is then neither counted nor ruled out)."""
        if self.key == "text" and "text" not in call:
            return None  # every host records a call's text: without it, the call is unknown
        value = call.get(self.key)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and self._test(v) for v in values):
            return True
        if call.get(f"{self.key}Truncated") is True and not self._ruled_out(values):
            return None
        return False

    def _test(self, text: str) -> bool:
        if self.regex is not None:
            return self.regex.test(text)
        if self.exact is not None:
            return text == self.exact
        return all(t in text for t in self.contains) and not any(
            t in text for t in self.not_contains
        )

    def _ruled_out(self, values: Sequence[JsonValue]) -> bool:
        """A kept prefix already holding an unwanted text rules the call out for good."""
        return any(isinstance(v, str) and any(t in v for t in self.not_contains) for v in values)


@frozen
class ToolCallCheck:
    tools: tuple[str, ...]
    filters: tuple[ArgumentFilter, ...]
    expect: str
    minimum: int
    maximum: int | None

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        observation, missing = complete_observation(view, TOOL_CALLS_OBSERVATION, "tool-calls")
        if observation is None:
            return self._outcome(check_id, CheckStatus.UNAVAILABLE, missing)
        calls = _calls(observation.data)
        matching = [c for c in calls if self._matches(c) is True]
        undecided = [c for c in calls if self._matches(c) is None]
        if self.expect == NOT_MADE:
            if matching:
                return self._outcome(check_id, CheckStatus.FAILED, _found(matching))
            if undecided:
                return self._undecided(check_id, undecided)
            return self._outcome(check_id, CheckStatus.PASSED)
        if self.expect == MADE:
            outcome = self._counted(check_id, len(matching), "matching call(s)")
            over = self.maximum is not None and len(matching) + len(undecided) > self.maximum
            if undecided and (outcome.status is CheckStatus.FAILED or over):
                return self._undecided(check_id, undecided)
            return outcome
        wanted = [c for c in matching if _SETTLED.get(str(c.get("status"))) == self.expect]
        unsettled = [c for c in matching if str(c.get("status")) not in _SETTLED] + undecided
        outcome = self._counted(check_id, len(wanted), f"{self.expect} matching call(s)")
        over = self.maximum is not None and len(wanted) + len(unsettled) > self.maximum
        if unsettled and (outcome.status is CheckStatus.FAILED or over):
            # An unsettled call might have been the one that was needed (or one too many).
            return self._outcome(
                check_id,
                CheckStatus.UNAVAILABLE,
                f"matching call(s) without a settled outcome: {_found(unsettled)}",
            )
        return outcome

    def _counted(self, check_id: str, found: int, what: str) -> CheckOutcome:
        if found < self.minimum or (self.maximum is not None and found > self.maximum):
            bound = f"at least {self.minimum}" + (
                f" and at most {self.maximum}" if self.maximum is not None else ""
            )
            return self._outcome(check_id, CheckStatus.FAILED, f"{found} {what}, expected {bound}")
        return self._outcome(check_id, CheckStatus.PASSED)

    def _matches(self, call: Mapping[str, JsonValue]) -> bool | None:
        if call.get("tool") not in self.tools and call.get("kind") not in self.tools:
            return False
        found = [f.matches(call) for f in self.filters]
        if False in found:
            return False
        return None if None in found else True

    def _undecided(self, check_id: str, calls: Sequence[Mapping[str, JsonValue]]) -> CheckOutcome:
        detail = f"call(s) whose recorded arguments were cut short could decide it: {_found(calls)}"
        return self._outcome(check_id, CheckStatus.UNAVAILABLE, detail)

    def _outcome(
        self, check_id: str, status: CheckStatus, detail: str | None = None
    ) -> CheckOutcome:
        return CheckOutcome(check_id, GRADER_ID, status, detail=detail, evidence_refs=EVIDENCE_REFS)


def _calls(data: Mapping[str, JsonValue]) -> list[Mapping[str, JsonValue]]:
    """The observation's calls; a malformed document is a grading error, never a pass."""
    calls = data.get("calls")
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("kind"), str) for c in calls
    ):
        raise GradingError("malformed sevro.tool-calls observation")
    return [c for c in calls if isinstance(c, dict)]


def _found(calls: Sequence[Mapping[str, JsonValue]]) -> str:
    first = calls[0]
    name = first.get("tool") or first.get("kind")
    where = f"turn {first.get('turn')}, ordinal {first.get('ordinal')}"
    return f"{len(calls)} matching call(s); first {name} at {where}"


class ToolCallGrader(EvidenceGrader):
    """Plugin facts: stage 10 (host evidence); hosts that report ``sevro.tool-calls`` only."""

    id = GRADER_ID
    requires: frozenset[str] = frozenset({TOOL_CALLS_OBSERVATION})

    def compile(self, configuration: Mapping[str, JsonValue]) -> ToolCallCheck:
        config = check_shape("tool-call.v1", configuration)
        tool, expect = config["tool"], config["expect"]
        tools = (tool,) if isinstance(tool, str) else tuple(str(t) for t in tool or [])
        assert isinstance(expect, str)
        arguments = config.get("arguments") or {}
        assert isinstance(arguments, dict)
        filters = tuple(_filter(key, value) for key, value in arguments.items())
        count = config.get("count") or {}
        assert isinstance(count, dict)
        if count and expect == NOT_MADE:
            raise ConfigurationError("count does not apply to expect not-made", "/count")
        low, high = count.get("min", 1), count.get("max")
        assert isinstance(low, int) and (high is None or isinstance(high, int))
        if high is not None and high < low:
            raise ConfigurationError(f"max {high} is below min {low}", "/count/max")
        return ToolCallCheck(tools, filters, expect, low, high)


def _filter(key: str, value: JsonValue) -> ArgumentFilter:
    if isinstance(value, str):
        return ArgumentFilter(key, exact=value)
    assert isinstance(value, dict)
    if "regex" in value:
        pattern = value["regex"]
        assert isinstance(pattern, str)
        return ArgumentFilter(
            key, regex=regex_at(pattern, "", pattern_key=f"arguments/{key}/regex")
        )
    return ArgumentFilter(
        key,
        contains=_texts(value.get("contains")),
        not_contains=_texts(value.get("notContains")),
    )


def _texts(value: JsonValue) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)
