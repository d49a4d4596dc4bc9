"""``sevro.schema``: inline Draft 2020-12 schemas, checked at load time, run as Ajv runs them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.states import CheckStatus
from sevro_graders.inlineschema import InlineSchema
from sevro_graders.schema_grader import SchemaGrader
from tests.graders.helpers import view

GRADER = SchemaGrader()
P, F = CheckStatus.PASSED, CheckStatus.FAILED
STATUS_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"enum": ["ready", "blocked"]}, "count": {"type": "integer"}},
    "additionalProperties": False,
}


def grade(configuration: dict[str, Any], message: str | None, complete: bool = True) -> Any:
    return GRADER.compile(configuration).grade("check", view(message, complete=complete))


@pytest.mark.parametrize(
    ("schema", "message", "status", "detail"),
    [
        (STATUS_SCHEMA, '{"status": "ready"}', P, None),
        (STATUS_SCHEMA, '{"status": "ready", "count": 1.0}', P, None),
        (STATUS_SCHEMA, '{"status": "ready", "count": 1.5}', F, "at /count: 1.5 is not of type"),
        (STATUS_SCHEMA, '{"status": "ready", "count": true}', F, "at /count"),
        (STATUS_SCHEMA, '{"status": "done"}', F, "schema violation at /status"),
        (STATUS_SCHEMA, "{}", F, "at the document root: 'status' is a required property"),
        (STATUS_SCHEMA, '{"status": "ready", "x": 1}', F, "at the document root"),
        (STATUS_SCHEMA, 'Result:\n```json\n{"status": "ready"}\n```', P, None),
        (STATUS_SCHEMA, "ready", F, "the message is not JSON and has no ```json fence"),
        ({}, "[1, 2]", P, None),
        ({"type": "array", "items": {"type": "number"}}, "[1, 2.5]", P, None),
        ({"type": "array", "items": {"type": "number"}}, '[1, "2"]', F, "at /1"),
        ({"format": "email"}, '"not an email"', P, None),
        ({"format": "date-time"}, '"yesterday"', P, None),
        ({"const": 1}, "1.0", P, None),
        ({"const": 1}, "true", F, "at the document root"),
        ({"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}, '"x"', P, None),
        ({"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}, "1", F, "not of type"),
        ({"$ref": "#s", "$defs": {"s": {"$anchor": "s", "type": "string"}}}, "1", F, "type"),
        (
            {
                "$id": "https://example.invalid/root",
                "$defs": {"a": {"$id": "a", "minimum": 3}},
                "$ref": "a",
            },
            "2",
            F,
            "minimum of 3",
        ),
        ({"unknownKeyword": {"pattern": "("}}, "1", P, None),
        # pattern and patternProperties are JavaScript regexes with the u flag
        ({"pattern": "^ok$"}, '"ok"', P, None),
        ({"pattern": "^ok$"}, '"ok\\n"', F, "'ok\\n' does not match '^ok$'"),
        ({"pattern": "^\\d+$"}, '"\u0661\u0662"', F, "does not match"),
        ({"pattern": "^.$"}, '"😀"', P, None),
        ({"properties": {"a": {"pattern": "^x"}}}, '{"a": "yx"}', F, "at /a"),
        ({"prefixItems": [{"pattern": "^x"}]}, '["yx"]', F, "at /0"),
        ({"patternProperties": {"^x$": {"type": "string"}}}, '{"x": 1}', F, "at /x"),
        ({"patternProperties": {"^x$": {"type": "string"}}}, '{"x\\n": 1}', P, None),
        (
            {"patternProperties": {"^x$": {}}, "additionalProperties": False},
            '{"x\\n": 1}',
            F,
            "at the document root",
        ),
        ({"propertyNames": {"pattern": "^[a-z]+$"}}, '{"ab": 1}', P, None),
        ({"propertyNames": {"pattern": "^[a-z]+$"}}, '{"ab\\n": 1}', F, "does not match"),
        ({"$defs": {"p": {"pattern": "^a$"}}, "$ref": "#/$defs/p"}, '"a\\n"', F, "'^a$'"),
        ({"anyOf": [{"pattern": "^a$"}, {"pattern": "^b$"}]}, '"b\\n"', F, "root"),
        ({"not": {"pattern": "^a$"}}, '"a\\n"', P, None),
    ],
)
def test_assertions(
    schema: dict[str, Any], message: str, status: CheckStatus, detail: str | None
) -> None:
    outcome = grade({"schema": schema}, message)
    assert outcome.status is status
    assert outcome.grader == "sevro.schema"
    if detail is None:
        assert outcome.detail is None
    else:
        assert detail in outcome.detail


def test_exact_document() -> None:
    fenced = 'Result:\n```json\n{"status": "ready"}\n```'
    exact = {"schema": STATUS_SCHEMA, "exactDocument": True}
    assert grade(exact, fenced).status is CheckStatus.FAILED
    assert "not exactly one JSON document" in grade(exact, fenced).detail
    assert grade(exact, '```json\n{"status": "ready"}\n```').status is CheckStatus.PASSED
    assert grade(exact, '{"status": "ready"}').status is CheckStatus.PASSED
    assert grade({**exact, "exactDocument": False}, fenced).status is CheckStatus.PASSED


@pytest.mark.parametrize(("message", "complete"), [(None, True), ('{"status": "ready"}', False)])
def test_unavailable_final_message(message: str | None, complete: bool) -> None:
    outcome = grade({"schema": STATUS_SCHEMA}, message, complete)
    assert outcome.status is CheckStatus.UNAVAILABLE


def test_long_violation_messages_are_shortened() -> None:
    outcome = grade({"schema": {"type": "string"}}, "[" + ", ".join(["1"] * 500) + "]")
    assert outcome.status is CheckStatus.FAILED
    assert outcome.detail.endswith("...") and len(outcome.detail) < 300


@pytest.mark.parametrize(
    ("configuration", "pointer", "message"),
    [
        ({}, "", "'schema' is required"),
        ({"exactDocument": True}, "", "'schema' is required"),
        ({"schema": True}, "/schema", "must be of type object"),
        ({"schema": []}, "/schema", "must be of type object"),
        ({"schema": {}, "exactDocument": 1}, "/exactDocument", "must be of type boolean"),
        ({"schema": {}, "strict": False}, "/strict", "unknown key 'strict'"),
        ({"schema": {"type": "nope"}}, "/schema/type", "invalid JSON Schema"),
        ({"schema": {"properties": {"a": {"minimum": "3"}}}}, "/schema/properties/a/minimum", ""),
        ({"schema": {"required": "a"}}, "/schema/required", "invalid JSON Schema"),
        ({"schema": {"items": [{}]}}, "/schema/items", "invalid JSON Schema"),
        ({"schema": {"$ref": "https://example.com/s.json"}}, "/schema", "does not resolve"),
        ({"schema": {"$ref": "#/$defs/missing"}}, "/schema", "$ref '#/$defs/missing'"),
        ({"schema": {"items": {"$ref": "#nowhere"}}}, "/schema", "does not resolve"),
        (
            {"schema": {"$schema": "http://json-schema.org/draft-07/schema#"}},
            "/schema/$schema",
            "only JSON Schema Draft 2020-12",
        ),
        ({"schema": {"pattern": "("}}, "/schema/pattern", "unterminated group"),
        ({"schema": {"pattern": "\\p{L}"}}, "/schema/pattern", "Unicode property escapes"),
        ({"schema": {"pattern": "a{,2}"}}, "/schema/pattern", "lone '{'"),
        (
            {"schema": {"properties": {"a/b": {"pattern": "(?P<x>a)"}}}},
            "/schema/properties/a~1b/pattern",
            "Python-style",
        ),
        (
            {"schema": {"patternProperties": {"\\Z": {}}}},
            "/schema/patternProperties/\\Z",
            "invalid escape \\Z",
        ),
        (
            {"schema": {"anyOf": [{}, {"pattern": "a**"}]}},
            "/schema/anyOf/1/pattern",
            "nothing to repeat",
        ),
    ],
)
def test_configuration_refusals(configuration: dict[str, Any], pointer: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        GRADER.compile(configuration)
    assert refused.value.pointer == pointer
    assert message in refused.value.message


def test_draft_2020_12_declaration_is_accepted() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}
    assert grade({"schema": schema}, '"x"').status is CheckStatus.PASSED


def test_dynamic_references_resolve_inside_the_schema() -> None:
    schema = {
        "$dynamicAnchor": "node",
        "type": "object",
        "properties": {"child": {"$dynamicRef": "#node"}, "n": {"type": "integer"}},
    }
    assert grade({"schema": schema}, '{"child": {"n": 1}}').status is CheckStatus.PASSED
    assert grade({"schema": schema}, '{"child": {"n": "x"}}').status is CheckStatus.FAILED
    with pytest.raises(ConfigurationError, match=re.escape("$dynamicRef 'https://example.com/x'")):
        GRADER.compile({"schema": {"$dynamicRef": "https://example.com/x"}})


def test_an_unresolvable_reference_at_grading_time_is_a_grading_error() -> None:
    schema = {"$ref": "https://example.com/nowhere"}
    compiled = InlineSchema(Draft202012Validator(schema, registry=Registry()))
    with pytest.raises(GradingError, match="cannot be resolved"):
        compiled.first_error(1)
