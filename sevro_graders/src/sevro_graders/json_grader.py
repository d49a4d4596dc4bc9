"""``sevro.json``: the final message carries a JSON document whose selected value is as expected.

The document is the whole message parsed as JSON, or else the content of its only
```` ```json ```` fence. ``pointer`` selects a value; ``equals`` demands deep equality,
``contains`` an array item that matches as a recursive subset. Both may be given; then both must
hold. With neither, the check asserts that the document (and the selected value) exists.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import CheckOutcome, JsonValue, TrialView
from sevro_graders.checks import FinalMessageGrader, grade_final_message
from sevro_graders.configuration import check_shape, pointer_at
from sevro_graders.jsondoc import (
    MISSING,
    NOT_EXACT,
    Matcher,
    NoDocument,
    Pointer,
    ValueMatcher,
    compile_matcher,
    find_document,
)

GRADER_ID = "sevro.json"


class Part(enum.Enum):
    """Which assertion about the selected value failed."""

    POINTER = "pointer"
    EQUALS = "equals"
    CONTAINS = "contains"


@frozen
class ValueAssertions:
    """Select a value with a pointer, then check equality and/or array containment."""

    pointer: Pointer
    equals: ValueMatcher | None = None
    contains: Matcher | None = None

    def assess(self, document: JsonValue) -> tuple[Part, str] | None:
        """The first failing part and its detail, or ``None`` when everything holds."""
        selected = self.pointer.resolve(document)
        if selected is MISSING:
            return Part.POINTER, f"pointer {self.pointer.source} not found"
        subject = self.pointer.subject()
        if self.equals is not None and not self.equals.matches(selected):
            return Part.EQUALS, f"{subject} does not equal the expected value"
        if self.contains is not None:
            if not isinstance(selected, list):
                return Part.CONTAINS, f"{subject} is not an array"
            if not any(self.contains.matches(item) for item in selected):
                return Part.CONTAINS, f"{subject} has no item matching the expected subset"
        return None


@frozen
class JsonCheck:
    values: ValueAssertions
    exact_document: bool

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        return grade_final_message(check_id, GRADER_ID, view, self.assess)

    def assess(self, text: str) -> str | None:
        document = find_document(text)
        if isinstance(document, NoDocument):
            return document.reason
        if self.exact_document and not document.exact:
            return NOT_EXACT
        failure = self.values.assess(document.value)
        return None if failure is None else failure[1]


class JsonGrader(FinalMessageGrader):
    id = GRADER_ID

    def compile(self, configuration: Mapping[str, JsonValue]) -> JsonCheck:
        config = check_shape("json.v1", configuration)
        values = ValueAssertions(
            pointer=pointer_at(config.get("pointer", ""), "pointer"),
            equals=ValueMatcher(config["equals"]) if "equals" in config else None,
            contains=compile_matcher(config["contains"], "/contains")
            if "contains" in config
            else None,
        )
        return JsonCheck(values=values, exact_document=bool(config.get("exactDocument", False)))
