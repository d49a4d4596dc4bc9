"""``sevro.regex``: a JavaScript regex (multiline, plus the case's flags) finds the final message.

Sevro's semantics: ``new RegExp(pattern, "m" + flags).test(finalMessage)``, inverted by
``negate``. The pattern is translated and compiled at load time (:mod:`sevro_graders.jsregex`).
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import CheckOutcome, JsonValue, TrialView
from sevro_graders.checks import FinalMessageGrader, grade_final_message
from sevro_graders.configuration import check_shape, regex_at
from sevro_graders.jsregex import JsRegex

GRADER_ID = "sevro.regex"
REGEX_FAILED = "regex assertion failed"


@frozen
class RegexCheck:
    regex: JsRegex
    negate: bool

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        return grade_final_message(check_id, GRADER_ID, view, self.assess)

    def assess(self, text: str) -> str | None:
        return None if self.regex.test(text) != self.negate else REGEX_FAILED


class RegexGrader(FinalMessageGrader):
    id = GRADER_ID

    def compile(self, configuration: Mapping[str, JsonValue]) -> RegexCheck:
        config = check_shape("regex.v1", configuration)
        regex = regex_at(config["pattern"], config.get("flags", ""), pattern_key="pattern")
        return RegexCheck(regex=regex, negate=bool(config.get("negate", False)))
