"""Inline JSON Schemas in check configurations, validated the way Sevro's Ajv does.

Sevro compiles inline schemas with Ajv (Draft 2020-12, ``strict: false``): no format assertion,
``$ref`` only inside the schema, and ``pattern`` as a JavaScript regex with the ``u`` flag.
``jsonschema`` would run ``pattern`` with Python's ``re``, where ``$`` also matches before a
final newline and ``\\d`` matches any Unicode digit; so every ``pattern`` and
``patternProperties`` key is translated with :mod:`sevro_graders.jsregex` before validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from sevro_core.errors import ConfigurationError, GradingError, join_pointer
from sevro_core.jsonio import JsonValue
from sevro_graders.jsregex import JsRegexError, translate_schema_pattern

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_MAX_MESSAGE = 200

# Draft 2020-12 keywords whose values are subschemas (``dependencies`` and ``definitions`` are
# the legacy spellings the 2020-12 meta-schema still describes).
_SUBSCHEMA = (
    "additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)  # fmt: skip
_SUBSCHEMA_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "dependentSchemas", "$defs", "definitions", "dependencies")


@frozen
class InlineSchema:
    """A compiled inline schema."""

    validator: Any
    patterns: tuple[tuple[str, str], ...] = ()
    """Each translated regex with the source the case wrote, so details quote the source."""

    def first_error(self, instance: JsonValue) -> str | None:
        """A short description of the most relevant violation, or ``None`` when valid."""
        try:
            error: ValidationError | None = best_match(self.validator.iter_errors(instance))
        except Unresolvable as exc:  # compile() resolves every $ref, so this is a defect
            raise GradingError(f"schema reference cannot be resolved: {exc}") from None
        if error is None:
            return None
        where = join_pointer("", *error.absolute_path) or "the document root"
        message = error.message
        for translated, source in self.patterns:
            message = message.replace(repr(translated), repr(source))
        return f"schema violation at {where}: {_shorten(message)}"


def compile_inline_schema(schema: Mapping[str, JsonValue], pointer: str) -> InlineSchema:
    """Check an inline schema at load time; every problem is refused at ``pointer`` or below."""
    declared = schema.get("$schema")
    if declared is not None and declared not in (DIALECT, DIALECT + "#"):
        raise ConfigurationError(
            f"only JSON Schema Draft 2020-12 ({DIALECT}) is supported",
            join_pointer(pointer, "$schema"),
        )
    try:
        Draft202012Validator.check_schema(schema, format_checker=FormatChecker(formats=()))
    except SchemaError as exc:
        raise ConfigurationError(
            f"invalid JSON Schema: {_shorten(exc.message)}",
            join_pointer(pointer, *exc.absolute_path),
        ) from None
    patterns: dict[str, str] = {}
    translated = _translate(schema, pointer, patterns)
    _check_references(translated, pointer)
    return InlineSchema(
        Draft202012Validator(translated, registry=Registry()), tuple(patterns.items())
    )


def _translate(schema: JsonValue, pointer: str, patterns: dict[str, str]) -> JsonValue:
    """A copy of ``schema`` whose regexes are Python patterns with JavaScript's meaning.

    ``patterns`` collects each translation with its source.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, JsonValue] = dict(schema)
    if isinstance(schema.get("pattern"), str):
        out["pattern"] = _pattern(schema["pattern"], join_pointer(pointer, "pattern"), patterns)
    for key in _SUBSCHEMA:
        if key in schema:
            out[key] = _translate(schema[key], join_pointer(pointer, key), patterns)
    for key in _SUBSCHEMA_ARRAYS:
        if isinstance(schema.get(key), list):
            out[key] = [
                _translate(item, join_pointer(pointer, key, index), patterns)
                for index, item in enumerate(schema[key])
            ]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            out[key] = {
                name: _translate(sub, join_pointer(pointer, key, name), patterns)
                for name, sub in schema[key].items()
            }
    if isinstance(schema.get("patternProperties"), dict):
        base = join_pointer(pointer, "patternProperties")
        out["patternProperties"] = {
            _pattern(regex, join_pointer(base, regex), patterns): _translate(
                sub, join_pointer(base, regex), patterns
            )
            for regex, sub in schema["patternProperties"].items()
        }
    return out


def _pattern(source: str, pointer: str, patterns: dict[str, str]) -> str:
    try:
        translated = translate_schema_pattern(source)
    except JsRegexError as exc:
        raise ConfigurationError(exc.message, pointer) from None
    patterns[translated] = source
    return translated


def _check_references(schema: JsonValue, pointer: str) -> None:
    """Resolve every reference now, so that a dangling or remote one fails before any trial."""
    root: Resource[Any] = DRAFT202012.create_resource(schema)
    resolver = Registry().resolver_with_root(root)
    pending = [(root, resolver)]
    while pending:
        resource, current = pending.pop()
        contents = resource.contents
        for keyword in ("$ref", "$dynamicRef"):
            reference = contents.get(keyword) if isinstance(contents, dict) else None
            if not isinstance(reference, str):
                continue
            try:
                current.lookup(reference)
            except Unresolvable:
                raise ConfigurationError(
                    f"{keyword} {reference!r} does not resolve inside the inline schema "
                    "(remote references are not retrieved)",
                    pointer,
                ) from None
        pending.extend((sub, current.in_subresource(sub)) for sub in resource.subresources())


def _shorten(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
