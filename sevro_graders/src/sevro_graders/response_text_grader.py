"""``sevro.response-text``: the agent's reply contains, equals, does not contain, or matches.

The reply is the final message; a check with a ``turn`` sees that turn's reply instead (the
engine's turn view), so "say the right thing on turn 2" is one declaration. A missing or
incomplete reply is ``unavailable``, never a pass (``notContains`` included: a reply sevro did
not see cannot be said to lack anything). Comparisons are exact: no trimming, no case folding.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import CheckOutcome, ConfigurationError, JsonValue, TrialView
from sevro_graders.checks import FinalMessageGrader, grade_final_message
from sevro_graders.configuration import check_shape, regex_at
from sevro_graders.jsregex import JsRegex

GRADER_ID = "sevro.response-text"


def _texts(value: JsonValue) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(str(item) for item in items)


@frozen
class ResponseTextCheck:
    equals: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    matches: JsRegex | None = None

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        return grade_final_message(check_id, GRADER_ID, view, self.assess)

    def assess(self, text: str) -> str | None:
        """The first assertion that does not hold: equals, contains, notContains, matches."""
        if self.equals is not None and text != self.equals:
            return "the reply does not equal the expected text"
        for index, wanted in enumerate(self.contains):
            if wanted not in text:
                return f"the reply does not contain contains[{index}] ({_quoted(wanted)})"
        for index, unwanted in enumerate(self.not_contains):
            if unwanted in text:
                return f"the reply contains notContains[{index}] ({_quoted(unwanted)})"
        if self.matches is not None and not self.matches.test(text):
            return "the reply does not match the regex"
        return None


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


class ResponseTextGrader(FinalMessageGrader):
    id = GRADER_ID

    def compile(self, configuration: Mapping[str, JsonValue]) -> ResponseTextCheck:
        config = check_shape("response-text.v1", configuration)
        equals, matches, flags = config.get("equals"), config.get("matches"), config.get("flags")
        if flags is not None and matches is None:
            raise ConfigurationError("flags needs matches", "/flags")
        return ResponseTextCheck(
            equals=str(equals) if equals is not None else None,
            contains=_texts(config["contains"]) if "contains" in config else (),
            not_contains=_texts(config["notContains"]) if "notContains" in config else (),
            matches=regex_at(str(matches), str(flags or ""), pattern_key="matches")
            if matches is not None
            else None,
        )
