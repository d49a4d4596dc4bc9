"""Inline JSON Schemas in check configurations, validated the way Sevro's Ajv does.

Sevro compiles inline schemas with Ajv (Draft 2020-12, ``strict: false``): no format assertion,
``$ref`` only inside the schema, and ``pattern`` as a JavaScript regex with the ``u`` flag.
``jsonschema`` would run ``pattern`` with Python's ``re``, where ``$`` also matches before a
final newline and ``\\d`` matches any Unicode digit; so every ``pattern`` and
``patternProperties`` key is translated with :mod:`sevro_graders.jsregex` before validation,
and the keywords that match them against the agent's document (``pattern``,
``patternProperties``, ``additionalProperties``) are replaced by versions that match within the
check's regex time limit. ``unevaluatedProperties`` next to ``patternProperties`` is refused:
``jsonschema`` matches those property names with ``re``, which no time limit can stop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from attrs import frozen
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from sevro_core.api import ConfigurationError, GradingError, JsonValue, join_pointer
from sevro_graders.jsregex import JsRegexError, search_schema_pattern, translate_schema_pattern

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
    if _uses(schema, "unevaluatedProperties") and _uses(schema, "patternProperties"):
        raise ConfigurationError(
            "unevaluatedProperties together with patternProperties is not supported: their "
            "property-name matching could not be bounded in time",
            pointer,
        )
    patterns: dict[str, str] = {}
    translated = _translate(schema, pointer, patterns)
    _check_references(translated, pointer)
    _refuse_reference_cycles(translated, pointer)
    bounded = _bounded_validator(dict(patterns))
    return InlineSchema(bounded(translated, registry=Registry()), tuple(patterns.items()))


def _uses(schema: JsonValue, keyword: str) -> bool:
    """Whether ``keyword`` is a key anywhere in ``schema`` (over-approximates: any position)."""
    if isinstance(schema, dict):
        return keyword in schema or any(_uses(value, keyword) for value in schema.values())
    if isinstance(schema, list):
        return any(_uses(item, keyword) for item in schema)
    return False


Keyword = Callable[[Any, Any, Any, Any], Iterator[ValidationError]]


def _bounded_validator(sources: dict[str, str]) -> Any:
    """Draft 2020-12 whose regex keywords match within the check's time limit."""

    def search(translated: str, text: str) -> bool:
        return search_schema_pattern(translated, text, sources.get(translated, translated))

    def pattern(
        validator: Any, patrn: str, instance: Any, _schema: Any
    ) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        validator: Any, by_pattern: dict[str, Any], instance: Any, _schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in by_pattern.items():
            for key, value in instance.items():
                if search(patrn, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    def additional_properties(
        validator: Any, additional: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        declared = schema.get("properties", {})
        by_pattern = schema.get("patternProperties", {})
        extras = [
            key
            for key in instance
            if key not in declared and not any(search(p, key) for p in by_pattern)
        ]
        if validator.is_type(additional, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif not additional and extras:
            if by_pattern:
                verb = "does" if len(extras) == 1 else "do"
                joined = ", ".join(repr(each) for each in sorted(extras))
                regexes = ", ".join(repr(each) for each in sorted(by_pattern))
                yield ValidationError(f"{joined} {verb} not match any of the regexes: {regexes}")
            else:
                listed = ", ".join(repr(each) for each in sorted(extras))
                verb = "was" if len(extras) == 1 else "were"
                yield ValidationError(
                    f"Additional properties are not allowed ({listed} {verb} unexpected)"
                )

    keywords: dict[str, Keyword] = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
    }
    return validators.extend(Draft202012Validator, keywords)  # type: ignore[no-untyped-call]


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


_IN_PLACE = ("not", "if", "then", "else")
_IN_PLACE_ARRAYS = ("allOf", "anyOf", "oneOf")
"""Applicators that apply a subschema to the same instance (no descent into the document)."""


def _in_place(
    contents: Mapping[str, Any], resolver: Any
) -> Iterator[tuple[Mapping[str, Any], Any]]:
    """The subschemas ``contents`` applies to the instance it is applied to, with resolvers."""
    for keyword in ("$ref", "$dynamicRef"):
        reference = contents.get(keyword)
        if isinstance(reference, str):
            resolved = resolver.lookup(reference)  # _check_references proved it resolves
            if isinstance(resolved.contents, Mapping):
                yield resolved.contents, resolved.resolver
    subschemas: list[Any] = [contents.get(k) for k in _IN_PLACE]
    for keyword in _IN_PLACE_ARRAYS:
        if isinstance(contents.get(keyword), list):
            subschemas.extend(contents[keyword])
    if isinstance(contents.get("dependentSchemas"), Mapping):
        subschemas.extend(contents["dependentSchemas"].values())
    for sub in subschemas:
        if isinstance(sub, Mapping):
            yield sub, resolver.in_subresource(DRAFT202012.create_resource(sub))


def _refuse_reference_cycles(schema: JsonValue, pointer: str) -> None:
    """A ``$ref`` chain that returns to itself without descending into the document would
    recurse forever on every instance; refuse it at load (``{"$ref": "#"}``, ``a -> b -> a``).
    A reference under ``properties``/``items`` descends, so recursive schemas stay allowed."""
    if not isinstance(schema, Mapping):
        return
    root: Resource[Any] = DRAFT202012.create_resource(schema)
    start_resolver = Registry().resolver_with_root(root)
    starts = [(root, start_resolver)]
    nodes: list[tuple[Mapping[str, Any], Any]] = []
    while starts:  # every subschema of the document, each with its resolver
        resource, resolver = starts.pop()
        if isinstance(resource.contents, Mapping):
            nodes.append((resource.contents, resolver))
        starts.extend((sub, resolver.in_subresource(sub)) for sub in resource.subresources())
    finished: set[int] = set()
    for node in nodes:
        if id(node[0]) in finished:
            continue
        on_path = {id(node[0])}
        stack = [(node[0], iter(list(_in_place(*node))))]
        while stack:
            contents, successors = stack[-1]
            step = next(successors, None)
            if step is None:
                stack.pop()
                on_path.discard(id(contents))
                finished.add(id(contents))
                continue
            if id(step[0]) in on_path:
                raise ConfigurationError(
                    "$ref cycle: the schema refers back to itself without descending into the "
                    "document, so validation would never end",
                    pointer,
                )
            if id(step[0]) not in finished:
                on_path.add(id(step[0]))
                stack.append((step[0], iter(list(_in_place(*step)))))


def _shorten(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
