"""``sevro.tool-call``: the agent made (or did not make) a tool call, and it succeeded or failed.

It reads the host's ``sevro.tool-calls`` observation, which records for every call its turn,
ordinal, ``kind`` (``command_execution``, ``file_change``, ``mcp_tool_call``, ``tool_call``...),
the tool's name where the CLI names it (Claude Code; Codex names only MCP tools), its status and a
few bounded fields (``paths``, ``skill``, ``server``). Only those recorded fields can be filtered:
anything else is refused at load, because a filter on an unrecorded argument could never be
graded honestly. Missing or partial evidence is ``unavailable``; so is a success/failure question
about a call whose outcome the host did not settle.
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
from sevro_graders.checks import complete_observation
from sevro_graders.configuration import check_shape, regex_at
from sevro_graders.jsregex import JsRegex

GRADER_ID = "sevro.tool-call"
EVIDENCE_REFS = (TOOL_CALLS_OBSERVATION,)
MADE, NOT_MADE, SUCCEEDED, FAILED = "made", "not-made", "succeeded", "failed"
_SETTLED = {"completed": SUCCEEDED, "failed": FAILED}


@frozen
class ArgumentFilter:
    key: str
    exact: str | None
    regex: JsRegex | None

    def matches(self, call: Mapping[str, JsonValue]) -> bool:
        value = call.get(self.key)
        values = value if isinstance(value, list) else [value]
        return any(isinstance(v, str) and self._test(v) for v in values)

    def _test(self, text: str) -> bool:
        return text == self.exact if self.regex is None else self.regex.test(text)


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
        matching = [c for c in _calls(observation.data) if self._matches(c)]
        if self.expect == NOT_MADE:
            if not matching:
                return self._outcome(check_id, CheckStatus.PASSED)
            return self._outcome(check_id, CheckStatus.FAILED, _found(matching))
        if self.expect == MADE:
            return self._counted(check_id, len(matching), "matching call(s)")
        wanted = [c for c in matching if _SETTLED.get(str(c.get("status"))) == self.expect]
        unsettled = [c for c in matching if str(c.get("status")) not in _SETTLED]
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

    def _matches(self, call: Mapping[str, JsonValue]) -> bool:
        named = call.get("tool") in self.tools or call.get("kind") in self.tools
        return named and all(f.matches(call) for f in self.filters)

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


class ToolCallGrader:
    """Plugin facts: stage 10 (host evidence); hosts that report ``sevro.tool-calls`` only."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset({TOOL_CALLS_OBSERVATION})
    stage = 10

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
        return ArgumentFilter(key, value, None)
    assert isinstance(value, dict) and isinstance(value["regex"], str)
    regex = regex_at(value["regex"], "", pattern_key=f"arguments/{key}/regex")
    return ArgumentFilter(key, None, regex)
