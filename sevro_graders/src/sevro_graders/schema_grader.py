"""``sevro.schema``: the final message's JSON document satisfies an inline JSON Schema.

The document is found as for ``sevro.json``; the schema is Draft 2020-12 as Sevro's Ajv runs it
(:mod:`sevro_graders.inlineschema`), checked completely at load time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from attrs import frozen

from sevro_core.api import CheckOutcome, JsonValue, TrialView
from sevro_graders.checks import FinalMessageGrader, grade_final_message
from sevro_graders.configuration import check_shape
from sevro_graders.jsondoc import NOT_EXACT, NoDocument, find_document

if TYPE_CHECKING:  # jsonschema loads only when a schema check is compiled
    from sevro_graders.inlineschema import InlineSchema

GRADER_ID = "sevro.schema"


@frozen
class SchemaCheck:
    schema: InlineSchema
    exact_document: bool

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        return grade_final_message(check_id, GRADER_ID, view, self.assess)

    def assess(self, text: str) -> str | None:
        document = find_document(text)
        if isinstance(document, NoDocument):
            return document.reason
        if self.exact_document and not document.exact:
            return NOT_EXACT
        return self.schema.first_error(document.value)


class SchemaGrader(FinalMessageGrader):
    id = GRADER_ID

    def compile(self, configuration: Mapping[str, JsonValue]) -> SchemaCheck:
        config = check_shape("schema.v1", configuration)
        return SchemaCheck(
            schema=_compile_schema(config["schema"], "/schema"),
            exact_document=bool(config.get("exactDocument", False)),
        )


def _compile_schema(schema: Mapping[str, JsonValue], pointer: str) -> InlineSchema:
    from sevro_graders.inlineschema import compile_inline_schema

    return compile_inline_schema(schema, pointer)
