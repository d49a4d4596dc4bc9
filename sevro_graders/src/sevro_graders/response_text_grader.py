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
from sevro_graders.text_assertions import TextAssertions

GRADER_ID = "sevro.response-text"


@frozen
class ResponseTextCheck:
    assertions: TextAssertions
    matches: JsRegex | None = None

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        return grade_final_message(check_id, GRADER_ID, view, self.assess)

    def assess(self, text: str) -> str | None:
        """The first assertion that does not hold: equals, contains, notContains, matches."""
        failure = self.assertions.first_failure(text, "the reply")
        if failure is None and self.matches is not None and not self.matches.test(text):
            return "the reply does not match the regex"
        return failure


class ResponseTextGrader(FinalMessageGrader):
    id = GRADER_ID

    def compile(self, configuration: Mapping[str, JsonValue]) -> ResponseTextCheck:
        config = check_shape("response-text.v1", configuration)
        matches, flags = config.get("matches"), config.get("flags")
        if flags is not None and matches is None:
            raise ConfigurationError("flags needs matches", "/flags")
        regex = None
        if matches is not None:
            regex = regex_at(str(matches), str(flags or ""), pattern_key="matches")
        return ResponseTextCheck(assertions=TextAssertions.of(config), matches=regex)
