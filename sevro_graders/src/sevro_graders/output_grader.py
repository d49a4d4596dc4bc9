"""``sevro.output``: one combined final-message contract, kept as a single check outcome.

Parts run in Sevro's order and the first failure wins: ``validJson`` → ``schema`` → the
``jsonPath`` value (``expectJson`` / ``containsJson``) → ``expectExact`` → ``expectRegex`` →
``notRegex``. A failure's detail starts with the configuration key of the part that failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from attrs import frozen

from sevro_core.api import CheckOutcome, ConfigurationError, JsonValue, TrialView
from sevro_graders.checks import FinalMessageGrader, grade_final_message
from sevro_graders.configuration import check_shape, pointer_at, regex_at
from sevro_graders.json_grader import Part, ValueAssertions
from sevro_graders.jsondoc import (
    NOT_EXACT,
    NoDocument,
    ValueMatcher,
    compile_matcher,
    find_document,
)
from sevro_graders.jsregex import JsRegex

if TYPE_CHECKING:  # jsonschema loads only when a schema check is compiled
    from sevro_graders.inlineschema import InlineSchema

GRADER_ID = "sevro.output"
ASSERTION_KEYS = ("validJson", "schema", "jsonPath", "expectExact", "expectRegex", "notRegex")
_PART_KEYS = {Part.POINTER: "jsonPath", Part.EQUALS: "expectJson", Part.CONTAINS: "containsJson"}


@frozen
class OutputCheck:
    valid_json: bool = False
    schema: InlineSchema | None = None
    values: ValueAssertions | None = None
    expect_exact: str | None = None
    expect_regex: JsRegex | None = None
    not_regex: JsRegex | None = None

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        return grade_final_message(check_id, GRADER_ID, view, self.assess)

    def assess(self, text: str) -> str | None:
        failure = self.assess_json(text)
        if failure is not None:
            return failure
        if self.expect_exact is not None and text != self.expect_exact:
            return "expectExact: the final message differs from the expected text"
        if self.expect_regex is not None and not self.expect_regex.test(text):
            return "expectRegex: regex assertion failed (no match)"
        if self.not_regex is not None and self.not_regex.test(text):
            return "notRegex: regex assertion failed (matched)"
        return None

    def assess_json(self, text: str) -> str | None:
        if self.valid_json:
            first = "validJson"
        elif self.schema is not None:
            first = "schema"
        elif self.values is not None:
            first = "jsonPath"
        else:
            return None
        document = find_document(text)
        if isinstance(document, NoDocument):
            return f"{first}: {document.reason}"
        if self.valid_json and not document.exact:
            return f"validJson: {NOT_EXACT}"
        if self.schema is not None:
            violation = self.schema.first_error(document.value)
            if violation is not None:
                return f"schema: {violation}"
        if self.values is not None:
            failed = self.values.assess(document.value)
            if failed is not None:
                part, detail = failed
                return f"{_PART_KEYS[part]}: {detail}"
        return None


class OutputGrader(FinalMessageGrader):
    id = GRADER_ID

    def compile(self, configuration: Mapping[str, JsonValue]) -> OutputCheck:
        config = check_shape("output.v1", configuration)
        for key in ("expectJson", "containsJson"):
            if key in config and "jsonPath" not in config:
                raise ConfigurationError(f"{key} needs jsonPath", f"/{key}")
        if "flags" in config and "expectRegex" not in config and "notRegex" not in config:
            raise ConfigurationError("flags needs expectRegex or notRegex", "/flags")
        if config.get("validJson") is not True and not any(k in config for k in ASSERTION_KEYS[1:]):
            raise ConfigurationError(
                "declares no assertion (give validJson: true, schema, jsonPath, expectExact, "
                "expectRegex or notRegex)"
            )
        flags = config.get("flags", "")
        values = None
        if "jsonPath" in config:
            values = ValueAssertions(
                pointer=pointer_at(config["jsonPath"], "jsonPath"),
                equals=ValueMatcher(config["expectJson"]) if "expectJson" in config else None,
                contains=compile_matcher(config["containsJson"], "/containsJson")
                if "containsJson" in config
                else None,
            )
        return OutputCheck(
            valid_json=config.get("validJson") is True,
            schema=_compile_schema(config["schema"], "/schema") if "schema" in config else None,
            values=values,
            expect_exact=config.get("expectExact"),
            expect_regex=regex_at(config["expectRegex"], flags, pattern_key="expectRegex")
            if "expectRegex" in config
            else None,
            not_regex=regex_at(config["notRegex"], flags, pattern_key="notRegex")
            if "notRegex" in config
            else None,
        )


def _compile_schema(schema: Mapping[str, JsonValue], pointer: str) -> InlineSchema:
    from sevro_graders.inlineschema import compile_inline_schema

    return compile_inline_schema(schema, pointer)
