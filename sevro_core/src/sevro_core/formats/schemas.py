"""Published JSON Schemas (Draft 2020-12): loading, caching and pointer-precise diagnostics.

Schemas ship inside the package (``sevro_core/schemas``) and are linked from `docs/schemas/`.
Validators are compiled once per process. sevro's own evidence schemas also get a compiled
(fastjsonschema) validator that decides validity; jsonschema then only explains a refusal.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.jsonio import JsonValue


def schema_text(name: str, package: str = "sevro_core") -> str:
    return resources.files(package).joinpath("schemas", f"{name}.schema.json").read_text("utf-8")


@functools.cache
def load_schema(name: str, package: str = "sevro_core") -> Mapping[str, Any]:
    loaded: Mapping[str, Any] = json.loads(schema_text(name, package))
    return loaded


@functools.cache
def _package_registry(package: str) -> Any:
    """All schemas a package publishes, so ``urn:sevro:schema:*`` references resolve offline."""
    from referencing import Registry, Resource

    folder = resources.files(package).joinpath("schemas")
    entries = []
    for entry in folder.iterdir():
        if entry.name.endswith(".schema.json"):
            contents = json.loads(entry.read_text("utf-8"))
            entries.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(entries)


@functools.cache
def validator(name: str, package: str = "sevro_core") -> Any:
    # Packaged schemas are checked against the metaschema by the test suite, not at start-up.
    return compile_schema(load_schema(name, package), _package_registry(package), trusted=True)


FAST_SCHEMAS = frozenset({"trial-evidence.v1", "run-evidence.v1", "cli-result.v1", "report.v1"})
"""Schemas validated at scale (every trial on write, resume and report) by compiled code."""
_DRAFT7 = "http://json-schema.org/draft-07/schema#"


def as_draft7(schema: Any, base: str = "") -> Any:
    """The same constraints in draft-07 terms, which fastjsonschema compiles.

    Only ``prefixItems`` differs among the keywords sevro's schemas use (a test checks that no
    other 2020-12-only keyword appears and that both validators agree on mutated documents);
    ``const`` becomes a one-value ``enum`` to work around a fastjsonschema code-generation bug.
    Local ``#/...`` references become absolute, as fastjsonschema cannot join them to a
    ``urn:`` base.
    """
    if isinstance(schema, list):
        return [as_draft7(item, base) for item in schema]
    if not isinstance(schema, dict):
        return schema
    base = schema.get("$id", base) if isinstance(schema.get("$id"), str) else base
    out = {key: as_draft7(value, base) for key, value in schema.items()}
    if isinstance(out.get("$ref"), str) and out["$ref"].startswith("#"):
        out["$ref"] = base + out["$ref"]
    if out.get("$schema"):
        out["$schema"] = _DRAFT7
    if "const" in out:  # equivalent, and compiles without fastjsonschema's detailed errors
        out["enum"] = [out.pop("const")]
    if "prefixItems" in out:
        out["additionalItems"] = out.pop("items", True)
        out["items"] = out.pop("prefixItems")
    return out


@functools.cache
def fast_validator(name: str, package: str = "sevro_core") -> Any:
    """A compiled validator for one of sevro's packaged schemas; raises on the first error."""
    import fastjsonschema

    def resolve(uri: str) -> Any:
        return as_draft7(load_schema(uri.removeprefix("urn:sevro:schema:"), package))

    return fastjsonschema.compile(
        as_draft7(load_schema(name, package)),
        handlers={"urn": resolve},
        use_default=False,
        use_formats=False,
        detailed_exceptions=False,  # a refusal is explained by jsonschema, not here
    )


COMPILE_AFTER = 16
"""Compiling costs about as much as 30 jsonschema validations, so a one-trial run never pays."""
LARGE_DOCUMENT_ITEMS = 64
"""A run or report with more trials or rows than this is worth compiling a validator for."""
_validations: dict[str, int] = {}


def is_valid(
    name: str, instance: JsonValue, package: str = "sevro_core", *, compiled: bool = False
) -> bool:
    """Whether ``instance`` matches the packaged schema ``name``.

    A hot schema (``FAST_SCHEMAS``, after ``COMPILE_AFTER`` validations or when ``compiled``)
    is checked by compiled code; both validators decide the same (see the tests).
    """
    count = _validations[name] = _validations.get(name, 0) + 1
    if name not in FAST_SCHEMAS or (count <= COMPILE_AFTER and not compiled):
        return bool(validator(name, package).is_valid(instance))
    from fastjsonschema import JsonSchemaException

    try:
        fast_validator(name, package)(instance)
    except JsonSchemaException:
        return False
    return True


def compile_schema(
    schema: Mapping[str, Any], registry: Any = None, *, trusted: bool = False
) -> Any:
    """A Draft 2020-12 validator; no format assertions and no retrieval of remote ``$ref``s."""
    from jsonschema import Draft202012Validator
    from referencing import Registry

    if not trusted:
        Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=registry if registry is not None else Registry())


def describe_first_error(errors: Iterable[Any], base: str = "") -> tuple[str, str] | None:
    """Pick the most relevant schema error and return ``(pointer, message)``.

    Unknown keys point at the key itself, so a typo is reported where it is.
    """
    from jsonschema.exceptions import best_match

    error = best_match(errors)
    if error is None:
        return None
    pointer = join_pointer(base, *error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in known)
        if extra:
            return join_pointer(pointer, extra[0]), f"unknown key {extra[0]!r}"
    return pointer, _message(error)


def _message(error: Any) -> str:
    kind = error.validator
    if kind == "required":
        return str(error.message).replace(" is a required property", " is required")
    if kind == "pattern" and isinstance(error.instance, str):
        return f"{_short(error.instance)} does not match {error.validator_value}"
    if kind == "maxLength":
        return f"longer than {error.validator_value} characters"
    if kind == "maxItems":
        return f"has more than {error.validator_value} items"
    if kind == "maxProperties":
        return f"has more than {error.validator_value} entries"
    if kind == "type":
        return f"must be of type {error.validator_value}, not {_json_type(error.instance)}"
    return str(error.message) if len(str(error.message)) < 300 else f"fails '{kind}'"


def _short(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:57] + "...")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def validate_input(
    name: str,
    instance: JsonValue,
    *,
    source: str | Path,
    base: str = "",
    package: str = "sevro_core",
    compiled: bool = False,
) -> None:
    """Validate user input; raise an exit-64 error naming the file and pointer."""
    if name in FAST_SCHEMAS and is_valid(name, instance, package, compiled=compiled):
        return
    found = describe_first_error(validator(name, package).iter_errors(instance), base)
    if found is None and name in FAST_SCHEMAS:
        found = base, f"does not match {name}"  # the compiled validator refused it
    if found is not None:
        pointer, message = found
        raise InvocationError(message, source=source, pointer=pointer)


class EvidenceSchemaError(RuntimeError):
    """sevro produced a document its own schema refuses: an internal error (exit 70)."""


def validate_output(name: str, instance: JsonValue, *, compiled: bool = False) -> None:
    """Validate a document sevro is about to write."""
    if name in FAST_SCHEMAS and is_valid(name, instance, compiled=compiled):
        return
    found = describe_first_error(validator(name).iter_errors(instance))
    if found is None and name in FAST_SCHEMAS:
        found = "", f"refused by the compiled {name} validator"
    if found is not None:
        pointer, message = found
        raise EvidenceSchemaError(f"{name} document invalid at '{pointer}': {message}")
