"""Load-time validation of check configurations, with pointers relative to the configuration.

Shapes (types, required and unknown keys) come from the JSON Schema each grader ships in
``sevro_graders/schemas``; what a schema cannot express (regex syntax, pointer syntax, inline
schema validity) is checked here, so a bad check fails before any trial runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from sevro_core.api import ConfigurationError, JsonValue, describe_first_error, validator
from sevro_graders.jsondoc import Pointer, PointerSyntaxError
from sevro_graders.jsregex import JsFlagsError, JsRegex, JsRegexError, compile_js_regex

PACKAGE = "sevro_graders"


def check_shape(schema: str, configuration: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """Validate against ``schemas/<schema>.schema.json``; return the configuration as a dict."""
    config = dict(configuration)
    found = describe_first_error(validator(schema, package=PACKAGE).iter_errors(config))
    if found is not None:
        pointer, message = found
        raise ConfigurationError(message, pointer)
    return config


def regex_at(pattern: str, flags: str, *, pattern_key: str, flags_key: str = "flags") -> JsRegex:
    """Compile a JavaScript regex, blaming ``/flags`` or the pattern's key as appropriate."""
    try:
        return compile_js_regex(pattern, flags)
    except JsFlagsError as exc:
        raise ConfigurationError(exc.message, f"/{flags_key}") from None
    except JsRegexError as exc:
        raise ConfigurationError(exc.message, f"/{pattern_key}") from None


def pointer_at(source: str, key: str) -> Pointer:
    """Parse an RFC 6901 pointer held in the configuration at ``/key``."""
    try:
        return Pointer.parse(source)
    except PointerSyntaxError as exc:
        raise ConfigurationError(str(exc), f"/{key}") from None
